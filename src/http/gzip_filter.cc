#include "gzip_filter.h"

#include <algorithm>

namespace accelgate::http {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// parse_qvalue reads RFC 9110 §12.4.2's qvalue: "0" ["." 0*3DIGIT] / "1" ["." 0*3("0")], in
// thousandths; -1 when malformed.
int parse_qvalue(std::string_view v) {
  if (v.empty() || (v[0] != '0' && v[0] != '1')) return -1;
  int q = (v[0] - '0') * 1000;
  if (v.size() == 1) return q;
  if (v[1] != '.' || v.size() > 5) return -1;
  int scale = 100;
  for (char c : v.substr(2)) {
    if (c < '0' || c > '9') return -1;
    q += (c - '0') * scale;
    scale /= 10;
  }
  return q > 1000 ? -1 : q;
}

// coding_quality returns the q-value (thousandths) of one Accept-Encoding element
// ("gzip;q=0.5"), or -1 when its parameters are malformed; |name| gets the coding.
int coding_quality(std::string_view element, std::string_view* name) {
  size_t semi = element.find(';');
  *name = trim(element.substr(0, semi));
  int q = 1000;
  while (semi != std::string_view::npos) {
    size_t next = element.find(';', semi + 1);
    std::string_view param = trim(element.substr(
        semi + 1, next == std::string_view::npos ? std::string_view::npos : next - semi - 1));
    size_t eq = param.find('=');
    if (eq != std::string_view::npos && iequals(trim(param.substr(0, eq)), "q")) {
      q = parse_qvalue(trim(param.substr(eq + 1)));
      if (q < 0) return -1;
    }
    semi = next;
  }
  return q;
}

bool contains(std::string_view hay, std::string_view needle) {
  return hay.find(needle) != std::string_view::npos;
}

}  // namespace

bool accepts_gzip(std::string_view accept_encoding) {
  int gzip_q = -2;  // -2: not listed
  int star_q = -2;
  size_t start = 0;
  while (start <= accept_encoding.size()) {
    size_t comma = accept_encoding.find(',', start);
    std::string_view element = accept_encoding.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    std::string_view name;
    int q = coding_quality(element, &name);
    if (iequals(name, "gzip") || iequals(name, "x-gzip")) {
      if (q < 0) return false;  // "gzip;q=x": refused, as nginx does
      gzip_q = std::max(gzip_q, q);
    } else if (name == "*") {
      star_q = std::max(star_q, q);
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (gzip_q != -2) return gzip_q > 0;
  return star_q > 0;
}

bool is_msie6(std::string_view ua) {
  if (contains(ua, "Opera")) return false;
  size_t msie = ua.find("MSIE ");
  // nginx requires a few bytes after "MSIE " before it looks at the version.
  if (msie == std::string_view::npos || msie + 7 >= ua.size()) return false;
  if (ua[msie + 6] != '.') return false;
  switch (ua[msie + 5]) {
    case '4':
    case '5':
      return true;
    case '6':
      return !contains(ua.substr(msie + 8), "SV1");
    default:
      return false;
  }
}

bool type_listed(const config::GzipSettings& s, std::string_view content_type) {
  if (s.any_type) return true;
  std::string_view type = trim(content_type.substr(0, content_type.find(';')));
  return std::any_of(s.types.begin(), s.types.end(),
                     [&](const std::string& t) { return iequals(t, type); });
}

bool request_allows_gzip(const config::GzipSettings& s, const RequestHead& head,
                         const ResponseFacts& response) {
  const HeaderField* ae = find_header(head, "Accept-Encoding");
  if (ae == nullptr || !accepts_gzip(ae->value)) return false;
  const HeaderField* ua = find_header(head, "User-Agent");
  if (s.disable_msie6 && ua != nullptr && is_msie6(ua->value)) return false;
  if (head.version_major == 1 && head.version_minor < s.http_version_minor) return false;
  if (find_header(head, "Via") != nullptr) {
    using G = config::GzipSettings;
    uint32_t p = s.proxied;
    if (p & G::kProxiedOff) return false;
    bool ok = (p & G::kProxiedAny) != 0 ||
              ((p & G::kProxiedAuth) != 0 && find_header(head, "Authorization") != nullptr);
    // nginx's next tests read the response's Expires and Cache-Control, which no accelgate
    // handler sends, so they pass as in nginx for such a response; then Last-Modified and ETag.
    if (!ok && (p & G::kProxiedNoLastModified) != 0 && response.last_modified) return false;
    if (!ok && (p & G::kProxiedNoEtag) != 0 && response.etag) return false;
  }
  if (ua != nullptr) {
    for (const auto& regex : s.disable) {
      if (regex->search(ua->value)) return false;
    }
  }
  return true;
}

GzipPlan plan_gzip(const config::GzipSettings& s, const RequestHead& head,
                   const ResponseFacts& response) {
  GzipPlan plan;
  if (!s.enabled || response.encoded) return plan;
  if (response.status != 200 && response.status != 403 && response.status != 404) return plan;
  if (response.length < s.min_length || !type_listed(s, response.content_type)) return plan;
  plan.vary = s.vary;
  plan.compress = !response.header_only && request_allows_gzip(s, head, response);
  return plan;
}

std::string weak_etag(std::string_view etag) {
  if (etag.starts_with("W/")) return std::string(etag);
  std::string weak = "W/";
  weak.append(etag);
  return weak;
}

}  // namespace accelgate::http

#pragma once

// The gzip filter's decisions, apart from the connection so they are tested on their own: whether
// a response qualifies (nginx's ngx_http_gzip_filter_module header filter: gzip on, status 200,
// 403 or 404, a type in gzip_types, at least gzip_min_length bytes, not already encoded), and
// whether the request allows it (nginx's ngx_http_gzip_ok: Accept-Encoding, gzip_http_version,
// gzip_proxied for requests with Via, gzip_disable).

#include <cstdint>
#include <string>
#include <string_view>

#include "accelgate/config/config.h"
#include "accelgate/http/parser.h"

namespace accelgate::http {

// accepts_gzip says whether an Accept-Encoding value (RFC 9110 §12.5.3) allows gzip: "gzip" or
// "x-gzip" (§8.4.1.3) listed with a q-value above 0 (no q-value means 1), or, when neither is
// listed, "*" with a q-value above 0. "gzip;q=0" refuses it. A malformed q-value refuses it, as
// nginx does.
bool accepts_gzip(std::string_view accept_encoding);

// is_msie6 is nginx's test for Internet Explorer 4 to 6: "MSIE 4.", "MSIE 5." or "MSIE 6."
// (6 only without "SV1" after it, the service pack that fixed gzip), and not Opera, which
// claimed to be MSIE.
bool is_msie6(std::string_view user_agent);

// type_listed says whether |content_type| (its parameters, after ';', ignored; case folded) is
// in gzip_types (text/html always is; `*` lists everything).
bool type_listed(const config::GzipSettings& s, std::string_view content_type);

// ResponseFacts are what the filter reads from the response being made.
struct ResponseFacts {
  int status = 200;
  std::string_view content_type;
  uint64_t length = 0;         // of the uncompressed body
  bool header_only = false;    // a HEAD request: no body is sent
  bool encoded = false;        // the response already has a Content-Encoding
  bool last_modified = false;  // it has Last-Modified (gzip_proxied no_last_modified)
  bool etag = false;           // it has an ETag (gzip_proxied no_etag)
};

// request_allows_gzip is nginx's ngx_http_gzip_ok for |head|: Accept-Encoding allows gzip, the
// client is not MSIE 4-6 when `gzip_disable msie6`, the HTTP version is at least
// gzip_http_version, a request with Via passes gzip_proxied, and no gzip_disable pattern matches
// the User-Agent. (gzip_proxied's expired, no-cache, no-store and private read the response's
// Expires and Cache-Control, which no accelgate handler sends yet; without them nginx lets the
// proxied request through, and so does this.)
bool request_allows_gzip(const config::GzipSettings& s, const RequestHead& head,
                         const ResponseFacts& response);

// GzipPlan is what the filter does with one response.
struct GzipPlan {
  bool vary = false;      // send "Vary: Accept-Encoding" (gzip_vary on and the response qualifies)
  bool compress = false;  // compress the body
};

// plan_gzip decides for |response| to |head|. A response that qualifies gets Vary (with gzip_vary
// on) whether or not this client gets gzip, as nginx does; a HEAD response is never compressed.
GzipPlan plan_gzip(const config::GzipSettings& s, const RequestHead& head,
                   const ResponseFacts& response);

// weak_etag returns |etag| as a weak validator (W/"..."; RFC 9110 §8.8.1): a compressed body
// is not byte-identical to the file the strong tag names.
std::string weak_etag(std::string_view etag);

}  // namespace accelgate::http

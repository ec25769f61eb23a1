#include "static_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "accelgate/common/log.h"
#include "response.h"

namespace accelgate::http {
namespace {

// append_hex appends |v| in lower-case hex without leading zeros ("0" for zero).
void append_hex(unsigned long long v, std::string* out) {
  char buf[16];
  int n = 0;
  do {
    buf[n++] = "0123456789abcdef"[v & 0xf];
    v >>= 4;
  } while (v != 0);
  while (n > 0) out->push_back(buf[--n]);
}

// make_etag is nginx's ETag, "mtime-size" in hex. Formatted by hand: it runs for every static
// response, and snprintf cost about 2,500 instructions of a full handshake's request (callgrind).
std::string make_etag(time_t mtime, off_t size) {
  std::string etag = "\"";
  append_hex(static_cast<unsigned long long>(mtime), &etag);
  etag.push_back('-');
  append_hex(static_cast<unsigned long long>(size), &etag);
  etag.push_back('"');
  return etag;
}

std::string content_type_for(const config::LocationSettings& settings, const std::string& path) {
  size_t slash = path.rfind('/');
  size_t dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) {
    return settings.default_type;
  }
  std::string ext = path.substr(dot + 1);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto it = settings.types->find(ext);
  return it == settings.types->end() ? settings.default_type : it->second;
}

// etag_matches implements If-None-Match's weak comparison (RFC 9110 §13.1.2): "*" or any listed
// tag equal to ours once W/ is ignored.
bool etag_matches(std::string_view list, const std::string& etag) {
  size_t i = 0;
  while (i < list.size()) {
    while (i < list.size() && (list[i] == ' ' || list[i] == '\t' || list[i] == ',')) ++i;
    if (i >= list.size()) break;
    if (list[i] == '*') return true;
    if (list.substr(i, 2) == "W/") i += 2;
    size_t end = list.find(',', i);
    std::string_view tag = list.substr(i, end == std::string_view::npos ? end : end - i);
    while (!tag.empty() && (tag.back() == ' ' || tag.back() == '\t')) tag.remove_suffix(1);
    if (tag == etag) return true;
    if (end == std::string_view::npos) break;
    i = end + 1;
  }
  return false;
}

// parse_range reads a single "bytes=a-b" / "bytes=a-" / "bytes=-n" range (RFC 9110 §14.1.2).
// Returns 1 for a satisfiable range, 0 for an unsatisfiable one, -1 to ignore the header
// (malformed or several ranges: a server may ignore Range, and then sends the whole file).
int parse_range(std::string_view value, off_t size, off_t* start, off_t* length) {
  if (value.substr(0, 6) != "bytes=") return -1;
  value.remove_prefix(6);
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  if (value.find(',') != std::string_view::npos) return -1;
  size_t dash = value.find('-');
  if (dash == std::string_view::npos) return -1;
  auto parse = [](std::string_view s, off_t* out) {
    if (s.empty() || s.size() > 18) return false;
    off_t v = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    *out = v;
    return true;
  };
  std::string_view first = value.substr(0, dash), last = value.substr(dash + 1);
  off_t a = 0, b = 0;
  if (first.empty()) {
    if (!parse(last, &b)) return -1;
    if (b == 0) return 0;
    if (b > size) b = size;
    *start = size - b;
    *length = b;
    return size == 0 ? 0 : 1;
  }
  if (!parse(first, &a)) return -1;
  if (!last.empty()) {
    if (!parse(last, &b) || b < a) return -1;
  } else {
    b = size - 1;
  }
  if (a >= size) return 0;
  if (b >= size) b = size - 1;
  *start = a;
  *length = b - a + 1;
  return 1;
}

StaticFile error(int status) {
  StaticFile f;
  f.status = status;
  return f;
}

int status_for_errno(int err) {
  switch (err) {
    case ENOENT:
    case ENOTDIR:
    case ENAMETOOLONG:
      return 404;
    case EACCES:
    case ELOOP:
      return 403;
    default:
      return 500;
  }
}

}  // namespace

StaticFile open_static_file(const config::LocationSettings& settings, const std::string& path,
                            const RequestHead& head, std::string_view suffix) {
  std::string full = settings.root + path;
  std::string type_path;  // with a suffix: the name the content type comes from
  if (!suffix.empty() && path.back() != '/') {
    type_path = full;
    full.append(suffix);
  }
  int fd = -1;
  struct stat st {};
  if (path.back() == '/') {
    // A directory request: the first index file that exists; no listings (403 without one).
    bool dir_exists = ::stat(full.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    if (!dir_exists) return error(404);
    for (const std::string& index : settings.index) {
      std::string candidate = full + index;
      fd = ::open(candidate.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
      if (fd >= 0) {
        if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
          full = std::move(candidate);
          break;
        }
        ::close(fd);
        fd = -1;
      } else if (errno != ENOENT) {
        return error(status_for_errno(errno));
      }
    }
    if (fd < 0) return error(403);
  } else {
    fd = ::open(full.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
      int err = errno;
      if (err != ENOENT && err != ENOTDIR) {
        AG_LOG_ERROR("open() \"%s\" failed: %s", full.c_str(), std::strerror(err));
      }
      return error(status_for_errno(err));
    }
    if (::fstat(fd, &st) != 0) {
      ::close(fd);
      return error(500);
    }
    if (S_ISDIR(st.st_mode)) {
      ::close(fd);
      StaticFile f;
      f.status = 301;  // as nginx: a directory without its trailing slash is redirected
      f.redirect = path + "/";
      return f;
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      return error(403);
    }
  }

  StaticFile f;
  f.fd = fd;
  f.file_size = st.st_size;
  f.mtime = st.st_mtime;
  f.etag = make_etag(st.st_mtime, st.st_size);
  f.content_type = content_type_for(settings, type_path.empty() ? full : type_path);
  f.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  f.inode = st.st_ino;
  f.device = st.st_dev;
  f.file_path = std::move(full);
  f.offset = 0;
  f.length = st.st_size;
  f.status = 200;

  // RFC 9110 §13.2.2: If-None-Match is evaluated first; If-Modified-Since only without it.
  if (const HeaderField* inm = find_header(head, "If-None-Match")) {
    if (etag_matches(inm->value, f.etag)) f.status = 304;
  } else if (const HeaderField* ims = find_header(head, "If-Modified-Since")) {
    time_t since = parse_http_date(ims->value);
    if (since != -1 && since >= f.mtime) f.status = 304;
  }
  if (f.status == 304) return f;

  if (const HeaderField* range = find_header(head, "Range"); range && head.method == Method::kGet) {
    bool use_range = true;
    if (const HeaderField* if_range = find_header(head, "If-Range")) {
      // If-Range holds an entity tag (strong comparison) or a date (exact match).
      std::string_view v = if_range->value;
      use_range = !v.empty() && v.front() == '"' ? v == f.etag : parse_http_date(v) == f.mtime;
    }
    if (use_range) {
      off_t start = 0, length = 0;
      int r = parse_range(range->value, f.file_size, &start, &length);
      if (r == 1) {
        f.status = 206;
        f.offset = start;
        f.length = length;
      } else if (r == 0) {
        f.status = 416;
      }
    }
  }
  return f;
}

}  // namespace accelgate::http

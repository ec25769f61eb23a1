#include <string>
#include <string_view>

#include "accelgate/http/parser.h"
#include "char_class.h"

namespace accelgate::http {

namespace {

// finish_segment resolves the segment that starts at out[seg_start] and has just ended (RFC 3986
// §5.2.4): "." is dropped, ".." drops the segment before it, an empty one ("//") is merged. On
// return |out| ends with '/' unless |at_end|, and *seg_start is where the next segment starts.
// Returns false when ".." would climb above the root (nginx answers 400 there too).
bool finish_segment(std::string* out, size_t* seg_start, bool at_end) {
  const std::string_view seg = std::string_view(*out).substr(*seg_start);
  if (seg.empty()) return true;  // merged slash: out already ends with '/'
  if (seg == ".") {
    out->resize(*seg_start);
  } else if (seg == "..") {
    if (*seg_start == 1) return false;
    // out is ".../parent/..": keep everything up to and including the '/' before "parent".
    out->resize(*seg_start - 1);
    out->resize(out->rfind('/') + 1);
  } else if (!at_end) {
    out->push_back('/');
  }
  *seg_start = out->size();
  return true;
}

}  // namespace

bool decode_path(std::string_view path, std::string* out) {
  out->clear();
  if (path.empty() || path[0] != '/') return false;
  out->reserve(path.size());
  out->push_back('/');
  size_t seg_start = 1;
  // One pass: decode each byte first, so that "%2e%2e" and "%2f" are resolved like ".." and "/"
  // (the file system sees the decoded name, so that is what must be normalised).
  for (size_t i = 1; i < path.size(); ++i) {
    char c = path[i];
    if (c == '%') {
      if (path.size() - i < 3 || !internal::has_class(path[i + 1], internal::kHexChar) ||
          !internal::has_class(path[i + 2], internal::kHexChar)) {
        return false;
      }
      c = static_cast<char>(internal::hex_value(path[i + 1]) << 4 |
                            internal::hex_value(path[i + 2]));
      i += 2;
    }
    // A NUL would truncate the name at the open() call: refuse it, encoded or not.
    if (c == '\0') return false;
    if (c == '/') {
      if (!finish_segment(out, &seg_start, false)) return false;
    } else {
      out->push_back(c);
    }
  }
  return finish_segment(out, &seg_start, true);
}

}  // namespace accelgate::http

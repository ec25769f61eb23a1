#pragma once

// Helpers for writing responses: reason phrases, HTTP dates, nginx-style error pages.

#include <ctime>
#include <string>
#include <string_view>

namespace accelgate::http {

// reason_phrase returns the standard reason for |code| ("Not Found"), or "" for unknown codes.
std::string_view reason_phrase(int code);

// format_http_date writes an IMF-fixdate (RFC 9110 §5.6.7) for |t| into |out| (29 chars).
void format_http_date(time_t t, std::string* out);

// parse_http_date parses an IMF-fixdate (and, as RFC 9110 §5.6.7 requires recipients to, the
// obsolete RFC 850 and asctime forms); returns -1 when it is not a date.
time_t parse_http_date(std::string_view s);

// error_page_body returns the small HTML body nginx sends for error statuses.
std::string error_page_body(int code);

// is_redirect says whether |code| takes a Location (301, 302, 303, 307, 308).
inline bool is_redirect(int code) {
  return code == 301 || code == 302 || code == 303 || code == 307 || code == 308;
}

}  // namespace accelgate::http

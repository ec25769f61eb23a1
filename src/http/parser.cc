#include "accelgate/http/parser.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "char_class.h"

namespace accelgate::http {

using internal::has_class;
using internal::hex_value;
using internal::kCtlChar;
using internal::kDigitChar;
using internal::kHexChar;
using internal::kHostChar;
using internal::kTargetChar;
using internal::kTokenChar;
using internal::kValueChar;

namespace {

// RFC 9112 §2.2 lets a server skip empty lines before the request line; we bound how many.
constexpr int kMaxLeadingEmptyLines = 4;

// RFC 9112 §7.1.1 does not bound chunk extensions or trailers; we do, as nginx bounds every line.
constexpr size_t kMaxChunkExtensionBytes = 4096;
constexpr size_t kMaxTrailerBytes = 8192;
constexpr int kMaxChunkSizeDigits = 16;  // 16 hex digits fill a uint64_t exactly

constexpr std::string_view kRootPath = "/";

inline bool is_ows(char c) { return c == ' ' || c == '\t'; }

inline char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c | 0x20) : c; }

// Method names are case-sensitive (RFC 9110 §9.1): "get" is a valid token but not GET.
Method lookup_method(std::string_view m) {
  switch (m.size()) {
    case 3:
      if (m == "GET") return Method::kGet;
      if (m == "PUT") return Method::kPut;
      break;
    case 4:
      if (m == "HEAD") return Method::kHead;
      if (m == "POST") return Method::kPost;
      break;
    case 5:
      if (m == "PATCH") return Method::kPatch;
      if (m == "TRACE") return Method::kTrace;
      break;
    case 6:
      if (m == "DELETE") return Method::kDelete;
      break;
    case 7:
      if (m == "OPTIONS") return Method::kOptions;
      if (m == "CONNECT") return Method::kConnect;
      break;
    default:
      break;
  }
  return Method::kOther;
}

// valid_host checks a Host value or an authority (RFC 3986 §3.2.2, without userinfo). Like nginx
// (ngx_http_validate_host) it refuses ".." and path separators, since the host often ends up in
// file paths ($host in root) and log names.
bool valid_host(std::string_view h) {
  if (h.empty()) return false;
  char prev = '\0';
  for (char c : h) {
    if (!has_class(c, kHostChar)) return false;
    if (c == '.' && prev == '.') return false;
    prev = c;
  }
  return true;
}

// parse_content_length reads 1*DIGIT (RFC 9110 §8.6). A sign, a list ("5, 5") or whitespace inside
// is refused: a recipient that took a different reading from ours could be smuggled a request.
bool parse_content_length(std::string_view v, uint64_t* out) {
  if (v.empty()) return false;
  uint64_t n = 0;
  for (char c : v) {
    if (!has_class(c, kDigitChar)) return false;
    const auto d = static_cast<uint64_t>(c - '0');
    if (n > (UINT64_MAX - d) / 10) return false;
    n = n * 10 + d;
  }
  *out = n;
  return true;
}

// Targets and field values are most of a head's bytes. These scans test 8 bytes at a time with
// SWAR arithmetic (any byte below n: (x - n*ones) & ~x & highs; any byte equal to m: below 1 after
// x ^ m*ones), then finish byte by byte with the table, which stays the single definition of each
// class: a word only passes when every byte in it is in the class.
constexpr uint64_t kOnes = 0x0101010101010101ULL;
constexpr uint64_t kHighs = 0x8080808080808080ULL;

inline uint64_t load_word(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

inline uint64_t bytes_below(uint64_t x, uint8_t n) { return (x - n * kOnes) & ~x & kHighs; }
inline uint64_t bytes_equal(uint64_t x, uint8_t m) { return bytes_below(x ^ (m * kOnes), 1); }

// skip_value_chars returns the first byte in [p, lim) that is not a field-value byte.
const char* skip_value_chars(const char* p, const char* lim) {
  // Stops at CTLs (CR included; HTAB too, conservatively) and DEL; obs-text passes.
  while (lim - p >= 8) {
    const uint64_t w = load_word(p);
    if ((bytes_below(w, 0x20) | bytes_equal(w, 0x7f)) != 0) break;
    p += 8;
  }
  while (p < lim && has_class(*p, kValueChar)) ++p;
  return p;
}

// skip_target_chars returns the first byte in [p, lim) that is not a request-target byte.
const char* skip_target_chars(const char* p, const char* lim) {
  // Stops at CTLs, SP, '#', DEL and bytes >= 0x80.
  while (lim - p >= 8) {
    const uint64_t w = load_word(p);
    if ((bytes_below(w, 0x21) | bytes_equal(w, '#') | bytes_equal(w, 0x7f) | (w & kHighs)) != 0) {
      break;
    }
    p += 8;
  }
  while (p < lim && has_class(*p, kTargetChar)) ++p;
  return p;
}

// Outcome of parsing one line of the head.
enum class Step { kDone, kMore, kBad };

enum class TargetForm { kOrigin, kAbsolute, kAuthority, kAsterisk };

// HeadParser holds the state of one parse_request_head call. It lives on the stack and keeps
// nothing between calls (the contract in parser.h).
class HeadParser {
 public:
  HeadParser(const char* data, size_t len, const ParseLimits& limits, RequestHead* head)
      : begin_(data), end_(data + len), limits_(limits), head_(head) {}

  ParseResult run();

 private:
  Step parse_request_line(const char** pos, const char* lim);
  Step classify_target();
  Step parse_header_line(const char** pos, const char* lim, bool* end_of_head);
  Step process_field(std::string_view name, std::string_view value);
  Step finish();
  ParseResult need_more(const char* line, const char* lim, size_t line_limit, int code,
                        const char* reason);

  Step fail(int code, const char* reason) {
    result_.status = ParseStatus::kError;
    result_.error_code = code;
    result_.reason = reason;
    return Step::kBad;
  }

  const char* const begin_;
  const char* const end_;
  const ParseLimits& limits_;
  RequestHead* const head_;
  ParseResult result_;

  TargetForm form_ = TargetForm::kOrigin;
  std::string_view authority_;  // of an absolute-form target
  bool host_seen_ = false;
  bool transfer_encoding_seen_ = false;
  bool connection_close_ = false;
  bool connection_keep_alive_ = false;
};

ParseResult HeadParser::run() {
  // Reset every field but keep the headers vector's storage: the caller reuses it.
  std::vector<HeaderField> headers = std::move(head_->headers);
  headers.clear();
  *head_ = RequestHead{};
  head_->headers = std::move(headers);

  const char* p = begin_;
  for (int i = 0; i < kMaxLeadingEmptyLines && p < end_ && *p == '\r'; ++i) {
    if (end_ - p < 2) return ParseResult{};
    if (p[1] != '\n') {
      fail(400, "bare CR before request line");
      return result_;
    }
    p += 2;
  }
  if (p < end_ && (*p == '\r' || *p == '\n')) {
    fail(400, *p == '\n' ? "bare LF before request line" : "too many empty lines before request");
    return result_;
  }

  // RFC 9112 §3: the request line must fit in one large buffer (nginx answers 414 otherwise). The
  // scan never looks past that bound, so an over-long line is refused however many bytes follow.
  const char* line = p;
  const char* lim = line + std::min(static_cast<size_t>(end_ - line), limits_.large_buffer_size);
  Step s = parse_request_line(&p, lim);
  if (s == Step::kMore) {
    return need_more(line, lim, limits_.large_buffer_size, 414, "request line too long");
  }
  if (s == Step::kBad || classify_target() == Step::kBad) return result_;

  size_t total_limit = 0;
  if (__builtin_mul_overflow(limits_.max_buffers, limits_.large_buffer_size, &total_limit)) {
    total_limit = SIZE_MAX;
  }
  for (;;) {
    line = p;
    const auto used = static_cast<size_t>(line - begin_);
    const size_t head_room = total_limit > used ? total_limit - used : 0;
    const auto room = static_cast<size_t>(end_ - line);
    const size_t cap = std::min({room, limits_.large_buffer_size, head_room});
    lim = line + cap;
    bool end_of_head = false;
    s = parse_header_line(&p, lim, &end_of_head);
    if (s == Step::kBad) return result_;
    if (s == Step::kMore) {
      const bool head_bound = head_room < limits_.large_buffer_size;
      return need_more(line, lim, limits_.large_buffer_size, 431,
                       head_bound ? "request head too large" : "header line too long");
    }
    if (end_of_head) break;
  }
  head_->head_length = static_cast<size_t>(p - begin_);
  if (finish() == Step::kBad) return result_;
  result_.status = ParseStatus::kComplete;
  return result_;
}

// need_more turns "ran out of bytes at |lim|" into kIncomplete, or into |code| when the line
// starting at |line| can no longer fit in |line_limit| bytes with its CRLF.
ParseResult HeadParser::need_more(const char* line, const char* lim, size_t line_limit, int code,
                                  const char* reason) {
  if (lim < end_) {
    fail(code, reason);
    return result_;
  }
  const auto seen = static_cast<size_t>(end_ - line);
  const size_t min_total = seen + ((seen > 0 && end_[-1] == '\r') ? 1 : 2);
  if (min_total > line_limit) {
    fail(code, reason);
    return result_;
  }
  return ParseResult{};
}

// parse_request_line reads "method SP request-target SP HTTP-version CRLF" (RFC 9112 §3) from
// [*pos, lim) and moves *pos past the CRLF. Exactly one SP separates the parts: RFC 9112 §3 lets a
// server accept other whitespace, but a lenient split is a known request smuggling vector.
Step HeadParser::parse_request_line(const char** pos, const char* lim) {
  const char* p = *pos;
  const char* q = p;
  while (q < lim && has_class(*q, kTokenChar)) ++q;
  if (q == lim) return Step::kMore;
  if (q == p || *q != ' ') return fail(400, "invalid method");
  head_->method_name = std::string_view(p, static_cast<size_t>(q - p));
  head_->method = lookup_method(head_->method_name);

  const char* t = ++q;
  q = skip_target_chars(q, lim);
  if (q == lim) return Step::kMore;
  if (*q == '#') return fail(400, "fragment in request target");
  if (q == t) return fail(400, "empty request target");
  if (*q != ' ') {
    // "GET /\r\n" is an HTTP/0.9 request, which we do not serve.
    if (*q == '\r' || *q == '\n') return fail(400, "missing HTTP version");
    return fail(400, "invalid character in request target");
  }
  head_->target = std::string_view(t, static_cast<size_t>(q - t));
  ++q;

  // RFC 9112 §2.3: HTTP-version = "HTTP/" DIGIT "." DIGIT, case-sensitive.
  constexpr std::string_view kProto = "HTTP/";
  for (char c : kProto) {
    if (q == lim) return Step::kMore;
    if (*q != c) return fail(400, "invalid HTTP version");
    ++q;
  }
  if (q == lim) return Step::kMore;
  if (!has_class(*q, kDigitChar)) return fail(400, "invalid HTTP version");
  const int major = *q++ - '0';
  if (q == lim) return Step::kMore;
  if (*q != '.') return fail(400, "invalid HTTP version");
  ++q;
  if (q == lim) return Step::kMore;
  if (!has_class(*q, kDigitChar)) return fail(400, "invalid HTTP version");
  const int minor = *q++ - '0';
  if (q == lim) return Step::kMore;
  if (*q != '\r') {
    return fail(400, *q == '\n' ? "bare LF in request line" : "invalid HTTP version");
  }
  ++q;
  if (q == lim) return Step::kMore;
  if (*q != '\n') return fail(400, "bare CR in request line");
  ++q;

  // RFC 9110 §6.2: a higher minor version of a major version we implement is processed as the
  // highest minor we implement (HTTP/1.2 as HTTP/1.1, as nginx does); another major version gets
  // 505.
  if (major != 1) return fail(505, "HTTP version not supported");
  head_->version_major = major;
  head_->version_minor = minor > 1 ? 1 : minor;
  head_->keep_alive = head_->version_minor == 1;
  *pos = q;
  return Step::kDone;
}

// classify_target splits the request-target into its form (RFC 9112 §3.2) and path/query.
Step HeadParser::classify_target() {
  const std::string_view target = head_->target;
  std::string_view rest;  // path and query

  if (head_->method == Method::kConnect) {
    // RFC 9112 §3.2.3: CONNECT uses authority-form (host ":" port) and nothing else.
    const size_t colon = target.rfind(':');
    if (colon == std::string_view::npos || colon + 1 == target.size() ||
        !valid_host(target.substr(0, colon))) {
      return fail(400, "invalid CONNECT target");
    }
    for (char c : target.substr(colon + 1)) {
      if (!has_class(c, kDigitChar)) return fail(400, "invalid CONNECT target");
    }
    form_ = TargetForm::kAuthority;
    return Step::kDone;
  }

  if (target[0] == '/') {
    form_ = TargetForm::kOrigin;
    rest = target;
  } else if (target == "*") {
    // RFC 9112 §3.2.4: asterisk-form is only for a server-wide OPTIONS.
    if (head_->method != Method::kOptions) return fail(400, "asterisk-form without OPTIONS");
    form_ = TargetForm::kAsterisk;
    head_->path = target;
    return Step::kDone;
  } else {
    // RFC 9112 §3.2.2: absolute-form. Only the http and https schemes name something we serve.
    size_t scheme_len = 0;
    if (target.size() >= 7 && iequals(target.substr(0, 7), "http://")) {
      scheme_len = 7;
    } else if (target.size() >= 8 && iequals(target.substr(0, 8), "https://")) {
      scheme_len = 8;
    } else {
      return fail(400, "invalid request target");
    }
    const std::string_view after = target.substr(scheme_len);
    const size_t auth_end = std::min(after.find('/'), after.find('?'));
    authority_ = after.substr(0, std::min(auth_end, after.size()));
    // valid_host also refuses '@': userinfo is deprecated in http URIs (RFC 9110 §4.2.4).
    if (!valid_host(authority_)) return fail(400, "invalid host in request target");
    form_ = TargetForm::kAbsolute;
    rest = auth_end == std::string_view::npos ? std::string_view() : after.substr(auth_end);
  }

  const size_t qmark = rest.find('?');
  if (qmark == std::string_view::npos) {
    head_->path = rest;
  } else {
    head_->path = rest.substr(0, qmark);
    head_->query = rest.substr(qmark + 1);
  }
  // "http://h?x" has an empty path, which means "/" (RFC 9110 §4.2.3).
  if (head_->path.empty()) head_->path = kRootPath;
  return Step::kDone;
}

// parse_header_line reads one field line (RFC 9112 §5) from [*pos, lim), or the empty line that
// ends the head, and moves *pos past its CRLF.
Step HeadParser::parse_header_line(const char** pos, const char* lim, bool* end_of_head) {
  const char* p = *pos;
  if (p == lim) return Step::kMore;
  if (*p == '\r') {
    if (p + 1 == lim) return Step::kMore;
    if (p[1] != '\n') return fail(400, "bare CR in header section");
    *pos = p + 2;
    *end_of_head = true;
    return Step::kDone;
  }
  if (*p == '\n') return fail(400, "bare LF in header section");
  // RFC 9112 §5.2: obs-fold is refused with 400; so is whitespace before the first field (§2.2).
  if (is_ows(*p)) return fail(400, "obsolete line folding");
  if (head_->headers.size() >= limits_.max_headers) return fail(431, "too many header fields");

  const char* q = p;
  while (q < lim && has_class(*q, kTokenChar)) ++q;
  if (q == lim) return Step::kMore;
  if (q == p) return fail(400, "empty header name");
  if (*q != ':') {
    // RFC 9112 §5.1: whitespace between the name and the colon must be refused with 400.
    if (is_ows(*q)) return fail(400, "whitespace before colon");
    return fail(400, "invalid character in header name");
  }
  const std::string_view name(p, static_cast<size_t>(q - p));
  ++q;
  while (q < lim && is_ows(*q)) ++q;
  const char* v = q;
  q = skip_value_chars(q, lim);
  if (q == lim) return Step::kMore;
  if (*q != '\r') {
    return fail(400,
                *q == '\n' ? "bare LF in header section" : "invalid character in header value");
  }
  const char* v_end = q;
  while (v_end > v && is_ows(v_end[-1])) --v_end;
  ++q;
  if (q == lim) return Step::kMore;
  if (*q != '\n') return fail(400, "bare CR in header section");
  *pos = q + 1;

  const std::string_view value(v, static_cast<size_t>(v_end - v));
  head_->headers.push_back(HeaderField{name, value});
  return process_field(name, value);
}

// process_field derives RequestHead's fields from the headers that frame or route the request.
Step HeadParser::process_field(std::string_view name, std::string_view value) {
  switch (name.size()) {
    case 4:
      if (iequals(name, "host")) {
        // RFC 9112 §3.2: more than one Host field, or an invalid one, gets 400.
        if (host_seen_) return fail(400, "duplicate Host header");
        if (!valid_host(value)) return fail(400, "invalid Host header");
        host_seen_ = true;
        head_->host = value;  // as sent; the router lower-cases it
      }
      break;
    case 6:
      // RFC 9110 §10.1.1: 100-continue is ignored in HTTP/1.0. Other expectations could be
      // answered 417; like nginx we ignore them and read the body as usual.
      if (iequals(name, "expect") && head_->version_minor == 1 && iequals(value, "100-continue")) {
        head_->expect_continue = true;
      }
      break;
    case 10:
      if (iequals(name, "connection")) {
        // RFC 9110 §7.6.1: a comma-separated list of case-insensitive tokens.
        size_t start = 0;
        while (start <= value.size()) {
          size_t comma = value.find(',', start);
          if (comma == std::string_view::npos) comma = value.size();
          std::string_view item = value.substr(start, comma - start);
          while (!item.empty() && is_ows(item.front())) item.remove_prefix(1);
          while (!item.empty() && is_ows(item.back())) item.remove_suffix(1);
          if (iequals(item, "close")) connection_close_ = true;
          if (iequals(item, "keep-alive")) connection_keep_alive_ = true;
          start = comma + 1;
        }
      }
      break;
    case 14:
      if (iequals(name, "content-length")) {
        // RFC 9112 §6.3: a recipient may accept repeated equal values; we refuse any repeat, so
        // that no intermediary's reading can differ from ours.
        if (head_->has_content_length) return fail(400, "duplicate Content-Length header");
        if (!parse_content_length(value, &head_->content_length)) {
          return fail(400, "invalid Content-Length header");
        }
        head_->has_content_length = true;
      }
      break;
    case 17:
      if (iequals(name, "transfer-encoding")) {
        // RFC 9112 §6.1: Transfer-Encoding is HTTP/1.1 only; a 1.0 message that has it is faulty.
        if (head_->version_minor == 0) return fail(400, "Transfer-Encoding in HTTP/1.0 request");
        // chunked is the only coding we implement and it must be the last one (§6.3), applied
        // once. A second Transfer-Encoding field appends to the list, so it is refused as well.
        if (transfer_encoding_seen_ || !iequals(value, "chunked")) {
          return fail(400, "unsupported Transfer-Encoding");
        }
        transfer_encoding_seen_ = true;
        head_->chunked = true;
      }
      break;
    default:
      break;
  }
  return Step::kDone;
}

// finish applies the checks that need the whole header section.
Step HeadParser::finish() {
  // RFC 9112 §6.1: a server may reject a request with both; nginx does, and so do we.
  if (head_->chunked && head_->has_content_length) {
    return fail(400, "both Transfer-Encoding and Content-Length");
  }
  // RFC 9112 §3.2: an HTTP/1.1 request without Host gets 400, whatever the target's form (nginx
  // also insists on Host with an absolute-form target).
  if (head_->version_minor == 1 && !host_seen_) return fail(400, "missing Host header");
  // RFC 9112 §3.2.2: the authority of an absolute-form target overrides Host.
  if (form_ == TargetForm::kAbsolute) head_->host = authority_;
  if (connection_close_) {
    head_->keep_alive = false;
  } else if (head_->version_minor == 0 && connection_keep_alive_) {
    head_->keep_alive = true;
  }
  return Step::kDone;
}

}  // namespace

ParseResult parse_request_head(const char* data, size_t len, const ParseLimits& limits,
                               RequestHead* head) {
  return HeadParser(data, len, limits, head).run();
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}

const HeaderField* find_header(const RequestHead& head, std::string_view name) {
  for (const HeaderField& f : head.headers) {
    if (iequals(f.name, name)) return &f;
  }
  return nullptr;
}

// ChunkedDecoder::step consumes control bytes (sizes, extensions, CRLFs, trailers) one at a time
// until it reaches chunk data, the end of the body, an error or the end of the input; chunk data
// is returned as one span so payload is never copied byte by byte.
ChunkedDecoder::Status ChunkedDecoder::step(const char* data, size_t len, size_t* pos,
                                            const char** out, size_t* out_len) {
  size_t i = *pos;
  auto fail = [&](const char* why) {
    error_ = why;
    state_ = State::kError;
    *pos = i;
    return Status::kError;
  };
  while (i < len) {
    const char c = data[i];
    switch (state_) {
      case State::kData: {
        const size_t n = static_cast<size_t>(
            std::min<uint64_t>(chunk_remaining_, static_cast<uint64_t>(len - i)));
        *out = data + i;
        *out_len = n;
        chunk_remaining_ -= n;
        body_bytes_ += n;
        if (chunk_remaining_ == 0) state_ = State::kDataCr;
        *pos = i + n;
        return Status::kNeedMore;
      }
      case State::kSize:
        // RFC 9112 §7.1: chunk-size = 1*HEXDIG. We allow at most 16 digits, leading zeros
        // included, so the size always fits in 64 bits and a line of zeros cannot go on forever.
        if (has_class(c, kHexChar)) {
          if (size_digits_ == kMaxChunkSizeDigits) return fail("chunk size too large");
          chunk_remaining_ = (chunk_remaining_ << 4) | hex_value(c);
          ++size_digits_;
        } else if (size_digits_ > 0 && c == '\r') {
          state_ = State::kSizeLf;
        } else if (size_digits_ > 0 && c == ';') {
          state_ = State::kExt;
        } else if (size_digits_ > 0 && is_ows(c)) {
          state_ = State::kSizeWs;  // BWS before ";" (RFC 9112 §7.1.1)
        } else if (c == '\n') {
          return fail("bare LF after chunk size");
        } else {
          return fail("invalid chunk size");
        }
        break;
      case State::kSizeWs:
        // Whitespace after the size is only allowed as BWS before an extension.
        if (c == ';') {
          state_ = State::kExt;
        } else if (!is_ows(c)) {
          return fail("invalid chunk size");
        }
        if (++ext_bytes_ > kMaxChunkExtensionBytes) return fail("chunk extension too long");
        break;
      case State::kExt:
        // Extensions are skipped (RFC 9112 §7.1.1 lets us ignore them), but bounded and free of
        // CTLs so they cannot hide a line break.
        if (c == '\r') {
          state_ = State::kSizeLf;
        } else if (c == '\n') {
          return fail("bare LF in chunk extension");
        } else if (has_class(c, kCtlChar)) {
          return fail("invalid character in chunk extension");
        } else if (++ext_bytes_ > kMaxChunkExtensionBytes) {
          return fail("chunk extension too long");
        }
        break;
      case State::kSizeLf:
        if (c != '\n') return fail("bare CR after chunk size");
        state_ = chunk_remaining_ == 0 ? State::kTrailer : State::kData;
        size_digits_ = 0;
        ext_bytes_ = 0;
        break;
      case State::kDataCr:
        if (c != '\r') return fail("missing CRLF after chunk data");
        state_ = State::kDataLf;
        break;
      case State::kDataLf:
        if (c != '\n') return fail("missing CRLF after chunk data");
        state_ = State::kSize;
        break;
      case State::kTrailer:
      case State::kTrailerLf:
      case State::kTrailerLine:
      case State::kTrailerLineLf:
        // RFC 9112 §7.1.2: trailer fields are dropped, but their section is bounded.
        if (++trailer_bytes_ > kMaxTrailerBytes) return fail("trailer section too large");
        if (state_ == State::kTrailer) {
          if (c == '\r') {
            state_ = State::kTrailerLf;
          } else if (c == '\n') {
            return fail("bare LF in trailer section");
          } else if (!has_class(c, kTokenChar)) {
            // A field line starts with its name; SP/HTAB here would be obs-fold (RFC 9112 §5.2).
            return fail("invalid trailer field");
          } else {
            state_ = State::kTrailerLine;
          }
        } else if (state_ == State::kTrailerLf) {
          if (c != '\n') return fail("bare CR in trailer section");
          state_ = State::kDone;
          *pos = i + 1;
          return Status::kDone;
        } else if (state_ == State::kTrailerLine) {
          if (c == '\r') {
            state_ = State::kTrailerLineLf;
          } else if (c == '\n') {
            return fail("bare LF in trailer section");
          } else if (has_class(c, kCtlChar)) {
            return fail("invalid character in trailer field");
          }
        } else {
          if (c != '\n') return fail("bare CR in trailer section");
          state_ = State::kTrailer;
        }
        break;
      case State::kDone:
        *pos = i;
        return Status::kDone;
      case State::kError:
        *pos = i;
        return Status::kError;
    }
    ++i;
  }
  *pos = i;
  return Status::kNeedMore;
}

}  // namespace accelgate::http

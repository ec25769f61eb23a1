#pragma once

// The HTTP/1.x request parser (RFC 9110, RFC 9112). Strict by design: anything a smuggling attack
// could use (bare CR, obs-fold, Transfer-Encoding with Content-Length, duplicate Content-Length,
// unknown transfer codings, bad token characters) is refused with the status nginx would send, and
// the connection is then closed by the caller.
//
// The parser works on the bytes the connection has buffered so far. It keeps no pointers between
// calls: parse_request_head() is called again from the start of the buffer when more bytes arrive
// (heads are small, and nginx's limits bound the work). The returned RequestHead's string_views
// point into the caller's buffer and stay valid while that buffer is unchanged.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace accelgate::http {

enum class Method { kGet, kHead, kPost, kPut, kDelete, kOptions, kPatch, kTrace, kConnect, kOther };

struct HeaderField {
  std::string_view name;   // as sent (case preserved); compare with iequals()
  std::string_view value;  // leading and trailing whitespace removed
};

struct RequestHead {
  Method method = Method::kOther;
  std::string_view method_name;
  std::string_view target;  // request-target as sent ("/a%20b?x=1", "http://h/p", "*")
  std::string_view path;    // target's path part, still percent-encoded; "/" for an absolute
                            // target without one, "*" for asterisk-form, empty for CONNECT
  std::string_view query;   // after '?', without it; empty if none
  int version_major = 1;
  int version_minor = 1;
  std::vector<HeaderField> headers;

  // Derived from the headers while parsing:
  std::string_view host;  // Host header value, or the authority of an absolute target
  bool has_content_length = false;
  uint64_t content_length = 0;
  bool chunked = false;          // Transfer-Encoding: chunked (the only coding accepted)
  bool keep_alive = true;        // HTTP/1.1 default, or 1.0 with "Connection: keep-alive"
  bool expect_continue = false;  // Expect: 100-continue
  size_t head_length = 0;        // bytes of the head, including the final CRLF CRLF
};

// Limits mirror nginx: the request line must fit in one large header buffer (else 414), every
// header line must fit in one large header buffer and the whole head in |max_buffers| of them
// (else 431; nginx says 400 "Request Header Or Cookie Too Large", we send 431 as RFC 6585 says).
struct ParseLimits {
  size_t large_buffer_size = 8192;
  size_t max_buffers = 4;
  size_t max_headers = 100;
};

enum class ParseStatus { kComplete, kIncomplete, kError };

struct ParseResult {
  ParseStatus status = ParseStatus::kIncomplete;
  int error_code = 0;       // with kError: 400, 414, 431, 501 or 505
  const char* reason = "";  // with kError: a short static text for the error log
};

// parse_request_head parses [data, data+len). kComplete fills |head| (head->head_length says where
// the body starts); kIncomplete means more bytes are needed (and none seen so far is invalid);
// kError gives the status to answer with. Leading empty lines before a request line are skipped,
// as RFC 9112 §2.2 allows (at most a few; the count is in head_length).
ParseResult parse_request_head(const char* data, size_t len, const ParseLimits& limits,
                               RequestHead* head);

// ChunkedDecoder decodes a chunked request body (RFC 9112 §7.1) incrementally. Chunk extensions
// are skipped, trailer fields are read and dropped. Sizes that overflow 64 bits, bad hex, missing
// CRLFs, bare LFs are errors.
class ChunkedDecoder {
 public:
  enum class Status { kNeedMore, kDone, kError };

  // decode consumes input from [data, data+len): *consumed says how many bytes were used; payload
  // bytes are appended by calling |sink(ptr, n)|. kDone when the last chunk and trailers ended
  // (bytes after that are the next request, not consumed). kError is final: error() says why and
  // the caller answers 400 and closes.
  template <typename Sink>
  Status decode(const char* data, size_t len, size_t* consumed, Sink&& sink);

  uint64_t body_bytes() const { return body_bytes_; }
  const char* error() const { return error_; }

 private:
  // step consumes bytes from *pos until it has a payload span to sink (set in *out, *out_len), the
  // body ends (kDone), an error (kError, sticky) or the input ends.
  Status step(const char* data, size_t len, size_t* pos, const char** out, size_t* out_len);

  enum class State {
    kSize,
    kSizeWs,
    kExt,
    kSizeLf,
    kData,
    kDataCr,
    kDataLf,
    kTrailer,
    kTrailerLf,
    kTrailerLine,
    kTrailerLineLf,
    kDone,
    kError
  };
  State state_ = State::kSize;
  uint64_t chunk_remaining_ = 0;
  uint64_t body_bytes_ = 0;
  int size_digits_ = 0;
  size_t ext_bytes_ = 0;  // of the current chunk's extensions (bounded)
  size_t trailer_bytes_ = 0;
  const char* error_ = "";
};

template <typename Sink>
ChunkedDecoder::Status ChunkedDecoder::decode(const char* data, size_t len, size_t* consumed,
                                              Sink&& sink) {
  size_t pos = 0;
  while (pos < len) {
    const char* out = nullptr;
    size_t out_len = 0;
    Status s = step(data, len, &pos, &out, &out_len);
    if (out_len > 0) sink(out, out_len);
    if (s != Status::kNeedMore) {
      *consumed = pos;
      return s;
    }
  }
  *consumed = pos;
  if (state_ == State::kDone) return Status::kDone;
  return state_ == State::kError ? Status::kError : Status::kNeedMore;
}

// iequals compares ASCII case-insensitively.
bool iequals(std::string_view a, std::string_view b);

// find_header returns the first header named |name| (case-insensitive), or nullptr.
const HeaderField* find_header(const RequestHead& head, std::string_view name);

// decode_path percent-decodes |path| into |out| and normalises it as nginx does by default: dot
// segments resolved (RFC 3986 §5.2.4), runs of '/' merged (merge_slashes on). Returns false for
// paths that must be refused with 400: a NUL (encoded or not), a dot segment that climbs above the
// root, a bad percent escape, a path not starting with '/'.
bool decode_path(std::string_view path, std::string* out);

}  // namespace accelgate::http

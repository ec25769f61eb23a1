// fuzz_http_parser: feeds arbitrary bytes to parse_request_head (small and default limits), then,
// for a complete chunked head, runs ChunkedDecoder over the rest of the input whole and split at
// points taken from the input; decode_path runs on every parsed path. Checks the invariants the
// connection code relies on, so a violation aborts (and libFuzzer reports it).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "accelgate/http/parser.h"

namespace {

using accelgate::http::ChunkedDecoder;
using accelgate::http::ParseLimits;
using accelgate::http::ParseResult;
using accelgate::http::ParseStatus;
using accelgate::http::RequestHead;

void check(bool ok) {
  if (!ok) std::abort();
}

// decode_body runs the decoder over |body| cut at |split| and returns its payload and status.
ChunkedDecoder::Status decode_body(std::string_view body, size_t split, std::string* payload,
                                   size_t* used) {
  ChunkedDecoder d;
  auto sink = [&](const char* p, size_t n) {
    check(p >= body.data() && p + n <= body.data() + body.size());
    payload->append(p, n);
  };
  *used = 0;
  size_t consumed = 0;
  ChunkedDecoder::Status st = d.decode(body.data(), split, &consumed, sink);
  check(consumed <= split);
  *used += consumed;
  if (st == ChunkedDecoder::Status::kNeedMore) {
    check(consumed == split);
    st = d.decode(body.data() + split, body.size() - split, &consumed, sink);
    check(consumed <= body.size() - split);
    *used += consumed;
  }
  if (st == ChunkedDecoder::Status::kError) check(d.error()[0] != '\0');
  check(d.body_bytes() == payload->size());
  return st;
}

void parse_with(const char* data, size_t size, const ParseLimits& limits) {
  static RequestHead head;  // reused, as the connection reuses it
  ParseResult r = accelgate::http::parse_request_head(data, size, limits, &head);
  if (r.status == ParseStatus::kError) {
    check(r.error_code == 400 || r.error_code == 414 || r.error_code == 431 || r.error_code == 505);
    return;
  }
  if (r.status != ParseStatus::kComplete) return;
  check(head.head_length > 0 && head.head_length <= size);
  check(head.headers.size() <= limits.max_headers);
  check(!(head.chunked && head.has_content_length));
  // Every view points into the input (or at a static "/").
  auto inside = [&](std::string_view v) {
    return v.empty() || v == "/" ||
           (v.data() >= data && v.data() + v.size() <= data + head.head_length);
  };
  check(inside(head.method_name) && inside(head.target) && inside(head.path) &&
        inside(head.query) && inside(head.host));
  for (const auto& f : head.headers) check(inside(f.name) && inside(f.value));
  const size_t head_length = head.head_length;
  const bool chunked = head.chunked;

  // A strict prefix of a complete head is incomplete: never an error, never complete too early.
  const size_t cuts[] = {head_length - 1, head_length / 2, size % head_length};
  for (size_t cut : cuts) {
    RequestHead prefix_head;
    check(accelgate::http::parse_request_head(data, cut, limits, &prefix_head).status ==
          ParseStatus::kIncomplete);
  }

  std::string path;
  if (accelgate::http::decode_path(head.path, &path)) {
    check(!path.empty() && path[0] == '/');
    check(path.find('\0') == std::string::npos);
    check(path.find("/../") == std::string::npos && path.find("//") == std::string::npos);
  }

  if (!chunked) return;
  const std::string_view body(data + head_length, size - head_length);
  std::string whole;
  size_t whole_used = 0;
  const ChunkedDecoder::Status st = decode_body(body, body.size(), &whole, &whole_used);
  // Split points from the body's own bytes, so the fuzzer can steer them.
  const size_t splits[] = {0, body.size() / 2, body.empty() ? 0 : body[0] % (body.size() + 1),
                           body.size() > 1 ? static_cast<uint8_t>(body[1]) % body.size() : 0};
  for (size_t split : splits) {
    std::string part;
    size_t used = 0;
    check(decode_body(body, split, &part, &used) == st);
    if (st == ChunkedDecoder::Status::kDone) check(used == whole_used);
    if (st != ChunkedDecoder::Status::kError) check(part == whole);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* p = reinterpret_cast<const char*>(data);
  parse_with(p, size, ParseLimits{.large_buffer_size = 64, .max_buffers = 4, .max_headers = 8});
  parse_with(p, size, ParseLimits{});
  // decode_path on raw input as well, not only on paths the parser accepted.
  std::string out;
  (void)accelgate::http::decode_path(std::string_view(p, size), &out);
  return 0;
}

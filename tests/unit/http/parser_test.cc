#include "accelgate/http/parser.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace accelgate::http {
namespace {

ParseResult parse(std::string_view in, RequestHead* head, const ParseLimits& limits = {}) {
  return parse_request_head(in.data(), in.size(), limits, head);
}

// ---------------------------------------------------------------------------------------------
// Valid requests

struct ValidCase {
  const char* name;
  std::string input;
  Method method = Method::kGet;
  std::string_view method_name = "GET";
  std::string_view target = "/";
  std::string_view path = "/";
  std::string_view query = "";
  std::string_view host = "example.com";
  int minor = 1;
  size_t num_headers = 1;
  bool has_content_length = false;
  uint64_t content_length = 0;
  bool chunked = false;
  bool keep_alive = true;
  bool expect_continue = false;
  size_t head_length = 0;  // 0: the whole input
};

std::string long_request_line(size_t total_with_crlf) {
  // "GET /aaaa HTTP/1.1\r\n" with as many 'a's as needed for the given total length.
  const size_t fixed = std::string_view("GET / HTTP/1.1\r\n").size();
  return "GET /" + std::string(total_with_crlf - fixed, 'a') + " HTTP/1.1\r\n";
}

const std::vector<ValidCase>& valid_cases() {
  static const std::vector<ValidCase> cases = {
      {.name = "simple_get", .input = "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"},
      {.name = "head_with_query",
       .input = "HEAD /a/b%20c?x=1&y=2 HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n",
       .method = Method::kHead,
       .method_name = "HEAD",
       .target = "/a/b%20c?x=1&y=2",
       .path = "/a/b%20c",
       .query = "x=1&y=2",
       .num_headers = 2},
      {.name = "empty_query",
       .input = "GET /p? HTTP/1.1\r\nHost: example.com\r\n\r\n",
       .target = "/p?",
       .path = "/p"},
      {.name = "post_content_length",
       .input =
           "POST /submit HTTP/1.1\r\nHost: example.com\r\nContent-Length: 11\r\n\r\nhello world",
       .method = Method::kPost,
       .method_name = "POST",
       .target = "/submit",
       .path = "/submit",
       .num_headers = 2,
       .has_content_length = true,
       .content_length = 11,
       .head_length = 64},
      {.name = "content_length_zero_padded",
       .input = "PUT /x HTTP/1.1\r\nHost: example.com\r\ncontent-length: 007\r\n\r\n",
       .method = Method::kPut,
       .method_name = "PUT",
       .target = "/x",
       .path = "/x",
       .num_headers = 2,
       .has_content_length = true,
       .content_length = 7},
      {.name = "content_length_max",
       .input =
           "PUT /x HTTP/1.1\r\nHost: example.com\r\nContent-Length: 18446744073709551615\r\n\r\n",
       .method = Method::kPut,
       .method_name = "PUT",
       .target = "/x",
       .path = "/x",
       .num_headers = 2,
       .has_content_length = true,
       .content_length = UINT64_MAX},
      {.name = "chunked",
       .input = "POST /up HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: ChunKed\r\n\r\n",
       .method = Method::kPost,
       .method_name = "POST",
       .target = "/up",
       .path = "/up",
       .num_headers = 2,
       .chunked = true},
      {.name = "absolute_form_overrides_host",
       .input = "GET http://Origin.example:8080/p/q?z HTTP/1.1\r\nHost: other.example\r\n\r\n",
       .target = "http://Origin.example:8080/p/q?z",
       .path = "/p/q",
       .query = "z",
       .host = "Origin.example:8080"},
      {.name = "absolute_form_no_path",
       .input = "GET HTTPS://h.example HTTP/1.1\r\nHost: h.example\r\n\r\n",
       .target = "HTTPS://h.example",
       .path = "/",
       .host = "h.example"},
      {.name = "absolute_form_query_no_path",
       .input = "GET http://h.example?a=b HTTP/1.1\r\nHost: h.example\r\n\r\n",
       .target = "http://h.example?a=b",
       .path = "/",
       .query = "a=b",
       .host = "h.example"},
      {.name = "options_asterisk",
       .input = "OPTIONS * HTTP/1.1\r\nHost: example.com\r\n\r\n",
       .method = Method::kOptions,
       .method_name = "OPTIONS",
       .target = "*",
       .path = "*"},
      {.name = "connect_authority",
       .input = "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
       .method = Method::kConnect,
       .method_name = "CONNECT",
       .target = "example.com:443",
       .path = "",
       .host = "example.com:443"},
      {.name = "pipelined",
       .input =
           "GET /one HTTP/1.1\r\nHost: example.com\r\n\r\nGET /two HTTP/1.1\r\nHost: b\r\n\r\n",
       .target = "/one",
       .path = "/one",
       .head_length = 40},
      {.name = "leading_empty_lines",
       .input = "\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: example.com\r\n\r\n"},
      {.name = "http10_default_close",
       .input = "GET / HTTP/1.0\r\n\r\n",
       .host = "",
       .minor = 0,
       .num_headers = 0,
       .keep_alive = false},
      {.name = "http10_keep_alive",
       .input = "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\nHost: example.com\r\n\r\n",
       .minor = 0,
       .num_headers = 2,
       .keep_alive = true},
      {.name = "connection_close",
       .input = "GET / HTTP/1.1\r\nHost: example.com\r\nConnection: upgrade, CLOSE\r\n\r\n",
       .num_headers = 2,
       .keep_alive = false},
      {.name = "connection_close_beats_keep_alive",
       .input = "GET / HTTP/1.0\r\nConnection: keep-alive\r\nConnection: ,close,\r\n\r\n",
       .host = "",
       .minor = 0,
       .num_headers = 2,
       .keep_alive = false},
      {.name = "expect_continue",
       .input = "PUT /f HTTP/1.1\r\nHost: example.com\r\nExpect: 100-Continue\r\n"
                "Content-Length: 5\r\n\r\n",
       .method = Method::kPut,
       .method_name = "PUT",
       .target = "/f",
       .path = "/f",
       .num_headers = 3,
       .has_content_length = true,
       .content_length = 5,
       .expect_continue = true},
      {.name = "expect_other_ignored",
       .input = "GET / HTTP/1.1\r\nHost: example.com\r\nExpect: something-else\r\n\r\n",
       .num_headers = 2},
      {.name = "expect_ignored_in_http10",
       .input = "GET / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n",
       .host = "",
       .minor = 0,
       .num_headers = 1,
       .keep_alive = false},
      {.name = "other_methods",
       .input = "PROPFIND /dav HTTP/1.1\r\nHost: example.com\r\n\r\n",
       .method = Method::kOther,
       .method_name = "PROPFIND",
       .target = "/dav",
       .path = "/dav"},
      {.name = "lowercase_method_is_other",
       .input = "get / HTTP/1.1\r\nHost: example.com\r\n\r\n",
       .method = Method::kOther,
       .method_name = "get"},
      {.name = "value_whitespace_trimmed_obs_text_kept",
       .input = "GET / HTTP/1.1\r\nHost:example.com  \r\nX-Name: \t caf\xc3\xa9 \t\r\n"
                "X-Empty:\r\nX-Inner: a \t b\r\n\r\n",
       .num_headers = 4},
      {.name = "unusual_target_chars",
       .input = "GET /a|b{c}?q=\"x\"&y=[1] HTTP/1.1\r\nHost: example.com\r\n\r\n",
       .target = "/a|b{c}?q=\"x\"&y=[1]",
       .path = "/a|b{c}",
       .query = "q=\"x\"&y=[1]"},
      {.name = "ipv6_host",
       .input = "GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n",
       .host = "[::1]:8080"},
      {.name = "request_line_at_limit",
       .input = long_request_line(8192) + "Host: example.com\r\n\r\n",
       .target = "",  // checked in the test body
       .path = ""},
  };
  return cases;
}

void PrintTo(const ValidCase& c, std::ostream* os) { *os << c.name; }

class ValidRequestTest : public testing::TestWithParam<ValidCase> {};

TEST_P(ValidRequestTest, ParsesFields) {
  const ValidCase& c = GetParam();
  RequestHead head;
  ParseResult r = parse(c.input, &head);
  ASSERT_EQ(r.status, ParseStatus::kComplete) << r.error_code << " " << r.reason;
  EXPECT_EQ(head.method, c.method);
  EXPECT_EQ(head.method_name, c.method_name);
  if (!c.target.empty()) {
    EXPECT_EQ(head.target, c.target);
    EXPECT_EQ(head.path, c.path);
  }
  EXPECT_EQ(head.query, c.query);
  EXPECT_EQ(head.host, c.host);
  EXPECT_EQ(head.version_major, 1);
  EXPECT_EQ(head.version_minor, c.minor);
  EXPECT_EQ(head.headers.size(), c.num_headers);
  EXPECT_EQ(head.has_content_length, c.has_content_length);
  EXPECT_EQ(head.content_length, c.content_length);
  EXPECT_EQ(head.chunked, c.chunked);
  EXPECT_EQ(head.keep_alive, c.keep_alive);
  EXPECT_EQ(head.expect_continue, c.expect_continue);
  EXPECT_EQ(head.head_length, c.head_length ? c.head_length : c.input.size());
}

// Every strict prefix of a valid head is kIncomplete: never an error, never complete too early.
TEST_P(ValidRequestTest, EveryPrefixIsIncomplete) {
  const ValidCase& c = GetParam();
  const size_t head_length = c.head_length ? c.head_length : c.input.size();
  RequestHead head;
  for (size_t cut = 0; cut < head_length; ++cut) {
    ParseResult r = parse(std::string_view(c.input).substr(0, cut), &head);
    ASSERT_EQ(r.status, ParseStatus::kIncomplete)
        << "cut at " << cut << ": " << r.error_code << " " << r.reason;
  }
  EXPECT_EQ(parse(std::string_view(c.input).substr(0, head_length), &head).status,
            ParseStatus::kComplete);
}

INSTANTIATE_TEST_SUITE_P(Table, ValidRequestTest, testing::ValuesIn(valid_cases()),
                         [](const testing::TestParamInfo<ValidCase>& i) { return i.param.name; });

TEST(ParserTest, HeadersAreFieldsAsSent) {
  RequestHead head;
  const std::string in =
      "GET / HTTP/1.1\r\nHost: example.com\r\nX-Name: \t caf\xc3\xa9 \t\r\nX-Empty:\r\n"
      "X-Inner: a \t b\r\n\r\n";
  ASSERT_EQ(parse(in, &head).status, ParseStatus::kComplete);
  ASSERT_EQ(head.headers.size(), 4u);
  EXPECT_EQ(head.headers[0].name, "Host");
  EXPECT_EQ(head.headers[1].name, "X-Name");
  EXPECT_EQ(head.headers[1].value, "caf\xc3\xa9");
  EXPECT_EQ(head.headers[2].value, "");
  EXPECT_EQ(head.headers[3].value, "a \t b");
  ASSERT_NE(find_header(head, "x-inner"), nullptr);
  EXPECT_EQ(find_header(head, "x-inner")->value, "a \t b");
  EXPECT_EQ(find_header(head, "x-missing"), nullptr);
}

TEST(ParserTest, PipelinedSecondRequestParsesFromHeadLength) {
  const std::string in =
      "GET /one HTTP/1.1\r\nHost: a\r\n\r\nPOST /two HTTP/1.1\r\nHost: b\r\nContent-Length: "
      "0\r\n\r\n";
  RequestHead head;
  ASSERT_EQ(parse(in, &head).status, ParseStatus::kComplete);
  EXPECT_EQ(head.path, "/one");
  const std::string_view rest = std::string_view(in).substr(head.head_length);
  ASSERT_EQ(parse(rest, &head).status, ParseStatus::kComplete);
  EXPECT_EQ(head.method, Method::kPost);
  EXPECT_EQ(head.path, "/two");
  EXPECT_EQ(head.host, "b");
  EXPECT_EQ(head.headers.size(), 2u);  // the reused vector was cleared first
  EXPECT_EQ(head.head_length, rest.size());
}

TEST(ParserTest, ReuseResetsDerivedFields) {
  RequestHead head;
  ASSERT_EQ(parse("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                  "Expect: 100-continue\r\nConnection: close\r\n\r\n",
                  &head)
                .status,
            ParseStatus::kComplete);
  EXPECT_TRUE(head.chunked);
  ASSERT_EQ(parse("GET / HTTP/1.1\r\nHost: a\r\n\r\n", &head).status, ParseStatus::kComplete);
  EXPECT_FALSE(head.chunked);
  EXPECT_FALSE(head.expect_continue);
  EXPECT_TRUE(head.keep_alive);
  EXPECT_EQ(head.headers.size(), 1u);
}

TEST(ParserTest, RequestLineAtLimitFits) {
  RequestHead head;
  const std::string line = long_request_line(8192);
  EXPECT_EQ(parse(line + "Host: h\r\n\r\n", &head).status, ParseStatus::kComplete);
  EXPECT_EQ(head.target.size(), 8192u - 16u + 1u);
}

// ---------------------------------------------------------------------------------------------
// Malformed requests

struct BadCase {
  BadCase(const char* n, std::string in, int c, ParseLimits l = {})
      : name(n), input(std::move(in)), code(c), limits(l) {}
  const char* name;
  std::string input;
  int code;
  ParseLimits limits;
};

// with_nul makes a std::string from a literal that holds NUL bytes.
template <size_t N>
std::string with_nul(const char (&s)[N]) {
  return std::string(s, N - 1);
}

const ParseLimits kSmall = {.large_buffer_size = 64, .max_buffers = 2, .max_headers = 3};

const std::vector<BadCase>& bad_cases() {
  static const std::vector<BadCase> cases = {
      {"bad_method_char", "GE(T / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"method_with_slash", "G/ET / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"empty_method", " / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"double_space_after_method", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"double_space_before_version", "GET /  HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"tab_separator", "GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"trailing_space_after_version", "GET / HTTP/1.1 \r\nHost: a\r\n\r\n", 400},
      {"lowercase_http", "GET / http/1.1\r\nHost: a\r\n\r\n", 400},
      {"http_2_0", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505},
      {"http_0_9_version", "GET / HTTP/0.9\r\n\r\n", 505},
      {"version_two_digits", "GET / HTTP/10.1\r\nHost: a\r\n\r\n", 400},
      {"version_no_minor", "GET / HTTP/1\r\nHost: a\r\n\r\n", 400},
      {"missing_version", "GET /\r\nHost: a\r\n\r\n", 400},
      {"http09_bare_lf", "GET /\n", 400},
      {"bare_lf_request_line", "GET / HTTP/1.1\nHost: a\r\n\r\n", 400},
      {"bare_lf_header", "GET / HTTP/1.1\r\nHost: a\nX: y\r\n\r\n", 400},
      {"bare_lf_end", "GET / HTTP/1.1\r\nHost: a\r\n\n", 400},
      {"bare_cr_request_line", "GET / HTTP/1.1\rHost: a\r\n\r\n", 400},
      {"bare_cr_in_value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n", 400},
      {"bare_cr_end", "GET / HTTP/1.1\r\nHost: a\r\n\rX", 400},
      {"bare_cr_leading", "\rGET / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"bare_lf_leading", "\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"too_many_leading_lines", "\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"obs_fold", "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n", 400},
      {"obs_fold_tab", "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n\tb\r\n\r\n", 400},
      {"space_before_first_header", "GET / HTTP/1.1\r\n Host: a\r\n\r\n", 400},
      {"space_before_colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400},
      {"empty_header_name", "GET / HTTP/1.1\r\nHost: a\r\n: x\r\n\r\n", 400},
      {"no_colon", "GET / HTTP/1.1\r\nHost: a\r\nX-Foo\r\n\r\n", 400},
      {"bad_name_char", "GET / HTTP/1.1\r\nHost: a\r\nX(y): z\r\n\r\n", 400},
      {"ctl_in_value",
       "GET / HTTP/1.1\r\nHost: a\r\nX: a\x01"
       "b\r\n\r\n",
       400},
      {"nul_in_value", with_nul("GET / HTTP/1.1\r\nHost: a\r\nX: a\0b\r\n\r\n"), 400},
      {"del_in_value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\x7f\r\n\r\n", 400},
      {"missing_host_11", "GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", 400},
      {"missing_host_absolute", "GET http://a/ HTTP/1.1\r\n\r\n", 400},
      {"two_hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400},
      {"empty_host", "GET / HTTP/1.1\r\nHost: \r\n\r\n", 400},
      {"host_with_slash", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400},
      {"host_with_dotdot", "GET / HTTP/1.1\r\nHost: a..b\r\n\r\n", 400},
      {"host_with_space", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400},
      {"cl_and_te",
       "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
       400},
      {"te_and_cl",
       "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
       400},
      {"te_gzip", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 400},
      {"te_gzip_chunked", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
       400},
      {"te_chunked_chunked",
       "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 400},
      {"te_two_fields",
       "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
       "chunked\r\n\r\n",
       400},
      {"te_identity", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n", 400},
      {"te_http10", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"dup_cl_equal",
       "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", 400},
      {"dup_cl_different",
       "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400},
      {"cl_plus", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n", 400},
      {"cl_list", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1,1\r\n\r\n", 400},
      {"cl_list_spaces", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n", 400},
      {"cl_overflow", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 18446744073709551616\r\n\r\n",
       400},
      {"cl_negative", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400},
      {"cl_empty", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n", 400},
      {"cl_hex", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x10\r\n\r\n", 400},
      {"fragment_in_target", "GET /a#frag HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"nul_in_target", with_nul("GET /a\0b HTTP/1.1\r\nHost: a\r\n\r\n"), 400},
      {"ctl_in_target", "GET /a\x01 HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"del_in_target", "GET /a\x7f HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"high_byte_in_target", "GET /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"asterisk_with_get", "GET * HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"authority_with_get", "GET example.com:80 HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"connect_origin_form", "CONNECT / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"connect_no_port", "CONNECT example.com HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"absolute_ftp", "GET ftp://a/ HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"absolute_userinfo", "GET http://u@a/ HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"absolute_empty_host", "GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      {"relative_target", "GET a/b HTTP/1.1\r\nHost: a\r\n\r\n", 400},
      // Limits.
      {"request_line_too_long", long_request_line(8193) + "Host: a\r\n\r\n", 414},
      {"request_line_too_long_incomplete", "GET /" + std::string(9000, 'a'), 414},
      {"request_line_too_long_small", "GET /" + std::string(60, 'a') + " HTTP/1.1\r\n\r\n", 414,
       kSmall},
      {"request_line_too_long_small_incomplete", "GET /" + std::string(60, 'a'), 414, kSmall},
      {"header_too_long", "GET / HTTP/1.1\r\nHost: a\r\nX: " + std::string(9000, 'b') + "\r\n\r\n",
       431},
      {"header_too_long_incomplete", "GET / HTTP/1.1\r\nHost: a\r\nX: " + std::string(9000, 'b'),
       431},
      {"header_too_long_small", "GET / HTTP/1.1\r\nX: " + std::string(70, 'b') + "\r\n\r\n", 431,
       kSmall},
      {"too_many_headers", "GET / HTTP/1.0\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", 431, kSmall},
      {"too_many_headers_default",
       [] {
         std::string s = "GET / HTTP/1.1\r\nHost: a\r\n";
         for (int i = 0; i < 100; ++i) s += "X: " + std::to_string(i) + "\r\n";
         return s + "\r\n";
       }(),
       431},
      {"head_too_large_small",
       "GET / HTTP/1.0\r\nA: " + std::string(55, 'a') + "\r\nB: " + std::string(55, 'b') +
           "\r\n\r\n",
       431, kSmall},
      {"head_too_large_default",
       [] {
         std::string s = "GET / HTTP/1.1\r\nHost: a\r\n";
         for (int i = 0; i < 5; ++i) s += "X: " + std::string(8000, 'x') + "\r\n";
         return s + "\r\n";
       }(),
       431},
  };
  return cases;
}

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class BadRequestTest : public testing::TestWithParam<BadCase> {};

TEST_P(BadRequestTest, RefusedWithCode) {
  const BadCase& c = GetParam();
  RequestHead head;
  ParseResult r = parse(c.input, &head, c.limits);
  ASSERT_EQ(r.status, ParseStatus::kError);
  EXPECT_EQ(r.error_code, c.code) << r.reason;
  EXPECT_STRNE(r.reason, "");
  RecordProperty("reason", r.reason);
}

INSTANTIATE_TEST_SUITE_P(Table, BadRequestTest, testing::ValuesIn(bad_cases()),
                         [](const testing::TestParamInfo<BadCase>& i) { return i.param.name; });

TEST(ParserLimitsTest, RequestLineDetectedAsSoonAsItCannotFit) {
  // With a 64-byte limit, 62 bytes without a line end could still end in CRLF; 63 cannot.
  RequestHead head;
  EXPECT_EQ(parse("GET /" + std::string(57, 'a'), &head, kSmall).status, ParseStatus::kIncomplete);
  ParseResult r = parse("GET /" + std::string(58, 'a'), &head, kSmall);
  ASSERT_EQ(r.status, ParseStatus::kError);
  EXPECT_EQ(r.error_code, 414);
  // A 63-byte line ending in CR can still be completed by its LF to exactly 64.
  const std::string line = "GET /" + std::string(48, 'a') + " HTTP/1.0\r";
  ASSERT_EQ(line.size(), 63u);
  EXPECT_EQ(parse(line, &head, kSmall).status, ParseStatus::kIncomplete);
  EXPECT_EQ(parse(line + "\n\r\n", &head, kSmall).status, ParseStatus::kComplete);
  r = parse("GET /" + std::string(49, 'a') + " HTTP/1.0\r", &head, kSmall);
  ASSERT_EQ(r.status, ParseStatus::kError);
  EXPECT_EQ(r.error_code, 414);
}

TEST(ParserLimitsTest, HeaderLineAtLimitFits) {
  RequestHead head;
  const std::string field = "X: " + std::string(59, 'v') + "\r\n";  // 64 bytes
  ASSERT_EQ(field.size(), 64u);
  EXPECT_EQ(parse("GET / HTTP/1.0\r\n" + field + "\r\n", &head, kSmall).status,
            ParseStatus::kComplete);
  const std::string longer = "X: " + std::string(60, 'v') + "\r\n";
  ParseResult r = parse("GET / HTTP/1.0\r\n" + longer + "\r\n", &head, kSmall);
  ASSERT_EQ(r.status, ParseStatus::kError);
  EXPECT_EQ(r.error_code, 431);
}

TEST(ParserLimitsTest, MaxHeadersExactlyFits) {
  RequestHead head;
  EXPECT_EQ(parse("GET / HTTP/1.0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", &head, kSmall).status,
            ParseStatus::kComplete);
  EXPECT_EQ(head.headers.size(), 3u);
}

// The target and value scans work a word at a time; put each special byte at every offset so it
// lands in every lane of a word and in the byte-by-byte tail.
TEST(ParserScanTest, SpecialBytesAtEveryOffset) {
  RequestHead head;
  for (size_t pos = 0; pos < 40; ++pos) {
    for (char bad : {'\x01', '\x7f', '\0', '\n', '\r'}) {
      std::string value(40, 'v');
      value[pos] = bad;
      ParseResult r = parse("GET / HTTP/1.1\r\nHost: a\r\nX: " + value + "\r\n\r\n", &head);
      EXPECT_EQ(r.status, ParseStatus::kError) << "value byte " << int(bad) << " at " << pos;
    }
    for (char ok : {'\t', '\x80', '\xff', ' ', '~'}) {
      std::string value(40, 'v');
      value[pos] = ok;
      const std::string in = "GET / HTTP/1.1\r\nHost: a\r\nX: " + value + "\r\n\r\n";
      ASSERT_EQ(parse(in, &head).status, ParseStatus::kComplete)
          << "value byte " << int(ok) << " at " << pos;
      std::string trimmed = value;
      while (trimmed.back() == ' ' || trimmed.back() == '\t') trimmed.pop_back();
      size_t start = trimmed.find_first_not_of(" \t");
      EXPECT_EQ(head.headers[1].value, trimmed.substr(start));
    }
    for (char bad : {'\x01', '\x7f', '\0', '#', '\x80', '\xff', '\t', '\n'}) {
      std::string path = "/" + std::string(40, 'p');
      path[pos + 1] = bad;
      ParseResult r = parse("GET " + path + " HTTP/1.1\r\nHost: a\r\n\r\n", &head);
      EXPECT_EQ(r.status, ParseStatus::kError) << "target byte " << int(bad) << " at " << pos;
      EXPECT_EQ(r.error_code, 400);
    }
    std::string path = "/" + std::string(40, 'p');
    path[pos + 1] = '!';
    const std::string in = "GET " + path + " HTTP/1.1\r\nHost: a\r\n\r\n";
    ASSERT_EQ(parse(in, &head).status, ParseStatus::kComplete);
    EXPECT_EQ(head.target, path);
  }
}

// ---------------------------------------------------------------------------------------------
// ChunkedDecoder

struct ChunkedCase {
  const char* name;
  std::string body;
  std::string payload;
};

const std::vector<ChunkedCase>& chunked_cases() {
  static const std::vector<ChunkedCase> cases = {
      {"empty", "0\r\n\r\n", ""},
      {"one_chunk", "5\r\nhello\r\n0\r\n\r\n", "hello"},
      {"two_chunks_hex", "5\r\nhello\r\nA\r\n0123456789\r\n0\r\n\r\n", "hello0123456789"},
      {"lower_and_upper_hex", "b\r\nhello world\r\n0\r\n\r\n", "hello world"},
      {"leading_zeros", "0005\r\nhello\r\n000\r\n\r\n", "hello"},
      {"extensions", "5;name=value;flag\r\nhello\r\n3 ; q=\"x y\"\r\nabc\r\n0;last\r\n\r\n",
       "helloabc"},
      {"trailers", "5\r\nhello\r\n0\r\nChecksum: abc\r\nX-Other: 1\r\n\r\n", "hello"},
      {"data_with_crlf_inside", "4\r\n\r\n\r\n\r\n0\r\n\r\n", "\r\n\r\n"},
      {"sixteen_digits", "0000000000000003\r\nabc\r\n0\r\n\r\n", "abc"},
  };
  return cases;
}

void PrintTo(const ChunkedCase& c, std::ostream* os) { *os << c.name; }

class ChunkedTest : public testing::TestWithParam<ChunkedCase> {};

TEST_P(ChunkedTest, AllAtOnce) {
  const ChunkedCase& c = GetParam();
  const std::string in = c.body + "GET /next";  // the next request must not be consumed
  ChunkedDecoder d;
  std::string out;
  size_t consumed = 0;
  auto st =
      d.decode(in.data(), in.size(), &consumed, [&](const char* p, size_t n) { out.append(p, n); });
  ASSERT_EQ(st, ChunkedDecoder::Status::kDone) << d.error();
  EXPECT_EQ(consumed, c.body.size());
  EXPECT_EQ(out, c.payload);
  EXPECT_EQ(d.body_bytes(), c.payload.size());
}

TEST_P(ChunkedTest, ByteByByte) {
  const ChunkedCase& c = GetParam();
  ChunkedDecoder d;
  std::string out;
  for (size_t i = 0; i < c.body.size(); ++i) {
    size_t consumed = 0;
    auto st = d.decode(c.body.data() + i, 1, &consumed,
                       [&](const char* p, size_t n) { out.append(p, n); });
    ASSERT_EQ(consumed, 1u);
    ASSERT_EQ(st, i + 1 == c.body.size() ? ChunkedDecoder::Status::kDone
                                         : ChunkedDecoder::Status::kNeedMore)
        << "at byte " << i << ": " << d.error();
  }
  EXPECT_EQ(out, c.payload);
}

TEST_P(ChunkedTest, EverySplitPoint) {
  const ChunkedCase& c = GetParam();
  for (size_t split = 0; split <= c.body.size(); ++split) {
    ChunkedDecoder d;
    std::string out;
    auto sink = [&](const char* p, size_t n) { out.append(p, n); };
    size_t consumed = 0;
    auto st = d.decode(c.body.data(), split, &consumed, sink);
    ASSERT_EQ(consumed, split);
    if (split < c.body.size()) {
      ASSERT_EQ(st, ChunkedDecoder::Status::kNeedMore);
      st = d.decode(c.body.data() + split, c.body.size() - split, &consumed, sink);
      ASSERT_EQ(consumed, c.body.size() - split);
    }
    ASSERT_EQ(st, ChunkedDecoder::Status::kDone);
    EXPECT_EQ(out, c.payload);
  }
}

INSTANTIATE_TEST_SUITE_P(Table, ChunkedTest, testing::ValuesIn(chunked_cases()),
                         [](const testing::TestParamInfo<ChunkedCase>& i) { return i.param.name; });

struct ChunkedBadCase {
  const char* name;
  std::string body;
};

const std::vector<ChunkedBadCase>& chunked_bad_cases() {
  static const std::vector<ChunkedBadCase> cases = {
      {"bad_hex", "5g\r\nhello\r\n0\r\n\r\n"},
      {"no_size", "\r\nhello\r\n0\r\n\r\n"},
      {"negative", "-5\r\nhello\r\n0\r\n\r\n"},
      {"hex_prefix", "0x5\r\nhello\r\n0\r\n\r\n"},
      {"size_overflow", "10000000000000000\r\n"},
      {"seventeen_digits_leading_zero", "00000000000000005\r\nhello\r\n0\r\n\r\n"},
      {"bare_lf_after_size", "5\nhello\r\n0\r\n\r\n"},
      {"bare_cr_after_size", "5\rhello\r\n0\r\n\r\n"},
      {"space_without_extension", "5 \r\nhello\r\n0\r\n\r\n"},
      {"missing_crlf_after_data", "5\r\nhelloX\r\n0\r\n\r\n"},
      {"bare_lf_after_data", "5\r\nhello\n0\r\n\r\n"},
      {"data_longer_than_size", "3\r\nhello\r\n0\r\n\r\n"},
      {"bare_lf_in_extension", "5;a=b\nhello\r\n0\r\n\r\n"},
      {"ctl_in_extension", "5;a=\x01\r\nhello\r\n0\r\n\r\n"},
      {"oversized_extension", "5;" + std::string(5000, 'x') + "\r\nhello\r\n0\r\n\r\n"},
      {"bare_lf_last_chunk", "0\r\n\n"},
      {"bare_lf_in_trailer", "0\r\nX: y\n\r\n"},
      {"obs_fold_in_trailer", "0\r\nX: y\r\n z\r\n\r\n"},
      {"ctl_in_trailer", "0\r\nX: \x01\r\n\r\n"},
      {"oversized_trailer", "0\r\nX: " + std::string(9000, 'y') + "\r\n\r\n"},
      {"many_trailers",
       [] {
         std::string s = "0\r\n";
         for (int i = 0; i < 1000; ++i) s += "X: 12345678\r\n";
         return s + "\r\n";
       }()},
  };
  return cases;
}

void PrintTo(const ChunkedBadCase& c, std::ostream* os) { *os << c.name; }

class ChunkedBadTest : public testing::TestWithParam<ChunkedBadCase> {};

TEST_P(ChunkedBadTest, AllAtOnceAndByteByByte) {
  const ChunkedBadCase& c = GetParam();
  auto sink = [](const char*, size_t) {};
  {
    ChunkedDecoder d;
    size_t consumed = 0;
    EXPECT_EQ(d.decode(c.body.data(), c.body.size(), &consumed, sink),
              ChunkedDecoder::Status::kError);
    EXPECT_STRNE(d.error(), "");
    // The error is final.
    EXPECT_EQ(d.decode("0\r\n\r\n", 5, &consumed, sink), ChunkedDecoder::Status::kError);
    EXPECT_EQ(d.decode("", 0, &consumed, sink), ChunkedDecoder::Status::kError);
  }
  ChunkedDecoder d;
  ChunkedDecoder::Status st = ChunkedDecoder::Status::kNeedMore;
  for (size_t i = 0; i < c.body.size() && st == ChunkedDecoder::Status::kNeedMore; ++i) {
    size_t consumed = 0;
    st = d.decode(c.body.data() + i, 1, &consumed, sink);
  }
  EXPECT_EQ(st, ChunkedDecoder::Status::kError);
}

INSTANTIATE_TEST_SUITE_P(Table, ChunkedBadTest, testing::ValuesIn(chunked_bad_cases()),
                         [](const testing::TestParamInfo<ChunkedBadCase>& i) {
                           return i.param.name;
                         });

TEST(ChunkedDecoderTest, MaxSizeChunkStreams) {
  // A 2^64-1 byte chunk is legal; the decoder passes through what it gets.
  ChunkedDecoder d;
  const std::string in = "ffffffffffffffff\r\nabcdef";
  size_t consumed = 0;
  std::string out;
  EXPECT_EQ(
      d.decode(in.data(), in.size(), &consumed, [&](const char* p, size_t n) { out.append(p, n); }),
      ChunkedDecoder::Status::kNeedMore);
  EXPECT_EQ(consumed, in.size());
  EXPECT_EQ(out, "abcdef");
  EXPECT_EQ(d.body_bytes(), 6u);
}

// ---------------------------------------------------------------------------------------------
// decode_path

struct PathCase {
  const char* name;
  std::string in;
  bool ok;
  std::string out;
};

const std::vector<PathCase>& path_cases() {
  static const std::vector<PathCase> cases = {
      {"root", "/", true, "/"},
      {"plain", "/a/b/c.html", true, "/a/b/c.html"},
      {"percent_space", "/a%20b", true, "/a b"},
      {"percent_upper_lower", "/%41%6a%7E", true, "/Aj~"},
      {"encoded_dotdot", "/%2e%2e/etc/passwd", false, ""},
      {"encoded_dotdot_upper", "/a/%2E%2E/%2E%2E/etc", false, ""},
      {"encoded_dotdot_inside", "/a/b/%2e%2e/c", true, "/a/c"},
      {"encoded_slash_dotdot", "/a%2f..%2f..%2fetc", false, ""},
      {"dotdot_above_root", "/a/../../b", false, ""},
      {"dotdot_root", "/..", false, ""},
      {"dotdot", "/a/../b", true, "/b"},
      {"dotdot_end", "/a/..", true, "/"},
      {"dotdot_end_slash", "/a/b/../", true, "/a/"},
      {"dot_end", "/a/b/.", true, "/a/b/"},
      {"dot_only", "/.", true, "/"},
      {"dot_middle", "/a/./b/", true, "/a/b/"},
      {"merge_slashes", "//a///b", true, "/a/b"},
      {"merge_trailing_slashes", "/a//", true, "/a/"},
      {"triple_dot_is_name", "/a/.../b", true, "/a/.../b"},
      {"dot_prefix_name", "/.well-known/x", true, "/.well-known/x"},
      {"dotdot_prefix_name", "/..a/b..", true, "/..a/b.."},
      {"nul_encoded", "/%00", false, ""},
      {"nul_raw", std::string("/a\0b", 4), false, ""},
      {"short_escape", "/a%2", false, ""},
      {"short_escape_end", "/a%", false, ""},
      {"bad_escape", "/a%zz", false, ""},
      {"bad_escape_second", "/a%2g", false, ""},
      {"no_leading_slash", "a/b", false, ""},
      {"empty", "", false, ""},
      {"asterisk", "*", false, ""},
      {"trailing_slash_kept", "/dir/", true, "/dir/"},
      {"high_bytes", "/caf%C3%A9", true, "/caf\xc3\xa9"},
  };
  return cases;
}

void PrintTo(const PathCase& c, std::ostream* os) { *os << c.name; }

class DecodePathTest : public testing::TestWithParam<PathCase> {};

TEST_P(DecodePathTest, Decodes) {
  const PathCase& c = GetParam();
  std::string out = "garbage";
  EXPECT_EQ(decode_path(c.in, &out), c.ok);
  if (c.ok) {
    EXPECT_EQ(out, c.out);
  }
}

INSTANTIATE_TEST_SUITE_P(Table, DecodePathTest, testing::ValuesIn(path_cases()),
                         [](const testing::TestParamInfo<PathCase>& i) { return i.param.name; });

TEST(IequalsTest, AsciiOnly) {
  EXPECT_TRUE(iequals("Content-Length", "content-length"));
  EXPECT_TRUE(iequals("", ""));
  EXPECT_FALSE(iequals("Host", "Hos"));
  EXPECT_FALSE(iequals("a", "b"));
  EXPECT_FALSE(iequals("[", "{"));  // 0x5b vs 0x7b: only letters fold
  EXPECT_FALSE(iequals("\xc3", "\xe3"));
}

TEST(ParserTest, HigherMinorVersionIsProcessedAsHttp11) {
  // RFC 9110 §6.2: HTTP/1.2 is answered as HTTP/1.1 (nginx does the same); HTTP/2.0 is 505.
  const std::string req = "GET / HTTP/1.2\r\nHost: a\r\n\r\n";
  RequestHead head;
  ParseResult r = parse_request_head(req.data(), req.size(), ParseLimits{}, &head);
  ASSERT_EQ(r.status, ParseStatus::kComplete);
  EXPECT_EQ(head.version_major, 1);
  EXPECT_EQ(head.version_minor, 1);
  EXPECT_TRUE(head.keep_alive);
}

}  // namespace
}  // namespace accelgate::http

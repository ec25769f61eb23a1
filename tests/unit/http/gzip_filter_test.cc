// The gzip filter's decisions: Accept-Encoding with q-values, MSIE 4-6, gzip_types, the request
// tests of nginx's ngx_http_gzip_ok (version, Via and gzip_proxied, gzip_disable) and the
// response tests (status, length, HEAD, already encoded), and weak ETags.

#include "gzip_filter.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace accelgate::http {
namespace {

// Request keeps the raw bytes the parsed head points into.
struct Request {
  std::string raw;
  RequestHead head;
};

std::unique_ptr<Request> request(const std::string& headers, const char* version = "1.1",
                                 const char* method = "GET") {
  auto r = std::make_unique<Request>();
  r->raw = std::string(method) + " /a.html HTTP/" + version + "\r\nHost: x\r\n" + headers + "\r\n";
  ParseResult pr = parse_request_head(r->raw.data(), r->raw.size(), ParseLimits(), &r->head);
  EXPECT_EQ(pr.status, ParseStatus::kComplete) << r->raw;
  return r;
}

config::GzipSettings on() {
  config::GzipSettings s;
  s.enabled = true;
  return s;
}

ResponseFacts html(uint64_t length = 1000) {
  ResponseFacts f;
  f.content_type = "text/html";
  f.length = length;
  f.last_modified = true;
  f.etag = true;
  return f;
}

TEST(AcceptsGzip, TokensAndQValues) {
  for (const char* yes : {"gzip", "gzip, deflate", "deflate, gzip", "br;q=1.0, gzip;q=0.8", "GZIP",
                          "x-gzip", "gzip;q=1", "gzip;q=0.001", "gzip ; q=0.5", "*", "br, *;q=0.1",
                          "identity, gzip;Q=1.000", "deflate,gzip"}) {
    EXPECT_TRUE(accepts_gzip(yes)) << yes;
  }
  for (const char* no : {"", "deflate", "br", "gzip;q=0", "gzip;q=0.000", "gzip;q=0.0", "*;q=0",
                         "gzip;q=0, *", "identity", "gzipx", "xgzip", "gzip;q=2", "gzip;q=1.5",
                         "gzip;q=0.0001", "gzip;q=abc", "gzip;q=", "*, gzip;q=0"}) {
    EXPECT_FALSE(accepts_gzip(no)) << no;
  }
}

TEST(IsMsie6, NginxsTest) {
  EXPECT_TRUE(is_msie6("Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1)"));
  EXPECT_TRUE(is_msie6("Mozilla/4.0 (compatible; MSIE 5.5; Windows 98)"));
  EXPECT_TRUE(is_msie6("Mozilla/4.0 (compatible; MSIE 4.01; Windows 95)"));
  EXPECT_FALSE(is_msie6("Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1; SV1)"));
  EXPECT_FALSE(is_msie6("Mozilla/4.0 (compatible; MSIE 7.0; Windows NT 6.0)"));
  EXPECT_FALSE(is_msie6("Mozilla/4.0 (compatible; MSIE 10.0)"));
  EXPECT_FALSE(is_msie6("Opera/9.0 (compatible; MSIE 6.0; Windows NT 5.1)"));
  EXPECT_FALSE(is_msie6("curl/7.88.1"));
  EXPECT_FALSE(is_msie6("MSIE 6."));  // too short for nginx's test
}

TEST(TypeListed, TextHtmlAlwaysParametersIgnoredStarForAll) {
  config::GzipSettings s = on();
  EXPECT_TRUE(type_listed(s, "text/html"));
  EXPECT_TRUE(type_listed(s, "text/html; charset=utf-8"));
  EXPECT_TRUE(type_listed(s, "Text/HTML"));
  EXPECT_FALSE(type_listed(s, "text/css"));
  s.types.push_back("text/css");
  EXPECT_TRUE(type_listed(s, "text/css"));
  EXPECT_FALSE(type_listed(s, "image/png"));
  s.any_type = true;
  EXPECT_TRUE(type_listed(s, "image/png"));
}

TEST(RequestAllowsGzip, AcceptEncodingAndHttpVersion) {
  config::GzipSettings s = on();
  EXPECT_TRUE(request_allows_gzip(s, request("Accept-Encoding: gzip\r\n")->head, html()));
  EXPECT_FALSE(request_allows_gzip(s, request("")->head, html()));
  EXPECT_FALSE(request_allows_gzip(s, request("Accept-Encoding: gzip;q=0\r\n")->head, html()));
  auto v10 = request("Accept-Encoding: gzip\r\n", "1.0");
  EXPECT_FALSE(request_allows_gzip(s, v10->head, html()));  // gzip_http_version 1.1
  s.http_version_minor = 0;
  EXPECT_TRUE(request_allows_gzip(s, v10->head, html()));
}

TEST(RequestAllowsGzip, ProxiedRequests) {
  config::GzipSettings s = on();
  auto via = request("Accept-Encoding: gzip\r\nVia: 1.1 cache\r\n");
  auto via_auth = request("Accept-Encoding: gzip\r\nVia: 1.1 cache\r\nAuthorization: Basic x\r\n");
  EXPECT_FALSE(request_allows_gzip(s, via->head, html()));  // gzip_proxied off (the default)
  s.proxied = config::GzipSettings::kProxiedAny;
  EXPECT_TRUE(request_allows_gzip(s, via->head, html()));
  s.proxied = config::GzipSettings::kProxiedAny | config::GzipSettings::kProxiedOff;
  EXPECT_FALSE(request_allows_gzip(s, via->head, html()));  // off wins
  s.proxied = config::GzipSettings::kProxiedAuth | config::GzipSettings::kProxiedNoEtag;
  EXPECT_TRUE(request_allows_gzip(s, via_auth->head, html()));
  EXPECT_FALSE(request_allows_gzip(s, via->head, html()));  // has an ETag
  ResponseFacts no_etag = html();
  no_etag.etag = false;
  EXPECT_TRUE(request_allows_gzip(s, via->head, no_etag));
  s.proxied = config::GzipSettings::kProxiedNoLastModified;
  EXPECT_FALSE(request_allows_gzip(s, via->head, html()));
  s.proxied = config::GzipSettings::kProxiedExpired;  // no Expires in any response: passes
  EXPECT_TRUE(request_allows_gzip(s, via->head, html()));
}

TEST(RequestAllowsGzip, GzipDisable) {
  config::GzipSettings s = on();
  auto ie6 = request("Accept-Encoding: gzip\r\nUser-Agent: Mozilla/4.0 (compatible; MSIE 6.0)\r\n");
  auto bot = request("Accept-Encoding: gzip\r\nUser-Agent: ExampleBot/1.0\r\n");
  EXPECT_TRUE(request_allows_gzip(s, ie6->head, html()));
  s.disable_msie6 = true;
  EXPECT_FALSE(request_allows_gzip(s, ie6->head, html()));
  EXPECT_TRUE(request_allows_gzip(s, bot->head, html()));
  auto regex = Regex::compile("examplebot", true);
  ASSERT_TRUE(regex.ok());
  s.disable.push_back(*regex);
  EXPECT_FALSE(request_allows_gzip(s, bot->head, html()));
  EXPECT_TRUE(request_allows_gzip(s, request("Accept-Encoding: gzip\r\n")->head, html()));
}

TEST(PlanGzip, ResponseTests) {
  config::GzipSettings s = on();
  s.vary = true;
  auto r = request("Accept-Encoding: gzip\r\n");
  GzipPlan p = plan_gzip(s, r->head, html());
  EXPECT_TRUE(p.compress);
  EXPECT_TRUE(p.vary);
  for (int status : {403, 404}) {
    ResponseFacts f = html();
    f.status = status;
    EXPECT_TRUE(plan_gzip(s, r->head, f).compress) << status;
  }
  for (int status : {201, 206, 301, 304, 500}) {
    ResponseFacts f = html();
    f.status = status;
    GzipPlan q = plan_gzip(s, r->head, f);
    EXPECT_FALSE(q.compress) << status;
    EXPECT_FALSE(q.vary) << status;
  }
  EXPECT_FALSE(plan_gzip(s, r->head, html(19)).compress);  // under gzip_min_length (20)
  EXPECT_TRUE(plan_gzip(s, r->head, html(20)).compress);
  ResponseFacts css = html();
  css.content_type = "text/css";
  EXPECT_FALSE(plan_gzip(s, r->head, css).vary);  // not in gzip_types: not even Vary
  ResponseFacts head_only = html();
  head_only.header_only = true;
  GzipPlan h = plan_gzip(s, r->head, head_only);
  EXPECT_FALSE(h.compress);
  EXPECT_TRUE(h.vary);
  ResponseFacts encoded = html();
  encoded.encoded = true;
  EXPECT_FALSE(plan_gzip(s, r->head, encoded).compress);
  // A client without gzip still gets Vary: the response varies on Accept-Encoding.
  GzipPlan plain = plan_gzip(s, request("")->head, html());
  EXPECT_FALSE(plain.compress);
  EXPECT_TRUE(plain.vary);
  s.enabled = false;
  EXPECT_FALSE(plan_gzip(s, r->head, html()).compress);
  EXPECT_FALSE(plan_gzip(s, r->head, html()).vary);
}

TEST(WeakEtag, PrefixesOnce) {
  EXPECT_EQ(weak_etag("\"5e-14\""), "W/\"5e-14\"");
  EXPECT_EQ(weak_etag("W/\"5e-14\""), "W/\"5e-14\"");
}

}  // namespace
}  // namespace accelgate::http

// The gzip directives: nginx's defaults, every directive and value, inheritance http -> server ->
// location, the shared cache size, and errors with file:line.

#include <gtest/gtest.h>

#include "config_fixture.h"

namespace accelgate::config {
namespace {

const GzipSettings& server_gzip(const std::shared_ptr<const Config>& c, size_t server = 0) {
  return c->http.servers.at(server).fallback.settings.gzip;
}

const GzipSettings& location_gzip(const std::shared_ptr<const Config>& c, size_t location) {
  return c->http.servers.at(0).locations.at(location).settings.gzip;
}

TEST_F(ConfigTest, GzipDefaultsAreNginxs) {
  auto c = ok("http { server { listen 8080; } }");
  const GzipSettings& g = server_gzip(c);
  EXPECT_FALSE(g.enabled);
  EXPECT_EQ(g.level, 1);
  EXPECT_EQ(g.min_length, 20u);
  EXPECT_EQ(g.types, std::vector<std::string>{"text/html"});
  EXPECT_FALSE(g.any_type);
  EXPECT_FALSE(g.vary);
  EXPECT_EQ(g.http_version_minor, 1);
  EXPECT_EQ(g.proxied, GzipSettings::kProxiedOff);
  EXPECT_FALSE(g.disable_msie6);
  EXPECT_TRUE(g.disable.empty());
  EXPECT_EQ(g.buffers_num, 32u);
  EXPECT_EQ(g.buffers_size, 4096u);
  EXPECT_EQ(g.static_mode, GzipSettings::Static::kOff);
  EXPECT_EQ(g.engine, GzipSettings::Engine::kAuto);
  EXPECT_EQ(g.offload_min_length, 64u * 1024);
  EXPECT_EQ(g.cache_size, 64u * 1024 * 1024);
  EXPECT_EQ(c->http.gzip_cache_size, 0u);  // gzip is off everywhere: no cache
}

TEST_F(ConfigTest, GzipEveryDirective) {
  auto c = ok(R"(http {
    gzip on;
    gzip_comp_level 6;
    gzip_min_length 1k;
    gzip_types text/css Application/JavaScript text/html;
    gzip_vary on;
    gzip_http_version 1.0;
    gzip_proxied expired no-cache no-store private no_last_modified no_etag auth;
    gzip_disable msie6 "^Mozilla/4\.0 \(compatible; Foo" bot;
    gzip_buffers 16 8k;
    gzip_static always;
    gzip_engine libdeflate;
    gzip_offload_min_length 256k;
    gzip_cache 16m;
    server { listen 8080; }
  })");
  const GzipSettings& g = server_gzip(c);
  EXPECT_TRUE(g.enabled);
  EXPECT_EQ(g.level, 6);
  EXPECT_EQ(g.min_length, 1024u);
  EXPECT_EQ(g.types, (std::vector<std::string>{"text/html", "text/css", "application/javascript"}));
  EXPECT_TRUE(g.vary);
  EXPECT_EQ(g.http_version_minor, 0);
  EXPECT_EQ(g.proxied, GzipSettings::kProxiedExpired | GzipSettings::kProxiedNoCache |
                           GzipSettings::kProxiedNoStore | GzipSettings::kProxiedPrivate |
                           GzipSettings::kProxiedNoLastModified | GzipSettings::kProxiedNoEtag |
                           GzipSettings::kProxiedAuth);
  EXPECT_TRUE(g.disable_msie6);
  ASSERT_EQ(g.disable.size(), 2u);
  EXPECT_TRUE(g.disable[0]->search("mozilla/4.0 (compatible; foo)"));  // caseless
  EXPECT_TRUE(g.disable[1]->search("GoogleBot"));
  EXPECT_EQ(g.buffers_num, 16u);
  EXPECT_EQ(g.buffers_size, 8192u);
  EXPECT_EQ(g.static_mode, GzipSettings::Static::kAlways);
  EXPECT_EQ(g.engine, GzipSettings::Engine::kLibdeflate);
  EXPECT_EQ(g.offload_min_length, 256u * 1024);
  EXPECT_EQ(g.cache_size, 16u * 1024 * 1024);
  EXPECT_EQ(c->http.gzip_cache_size, 16u * 1024 * 1024);

  EXPECT_TRUE(ok("http { gzip_types *; server { listen 1; } }")
                  ->http.servers[0]
                  .fallback.settings.gzip.any_type);
  EXPECT_EQ(ok("http { gzip_cache off; server { listen 1; } }")
                ->http.servers[0]
                .fallback.settings.gzip.cache_size,
            0u);
  for (const char* e : {"auto", "isal", "zlib"}) {
    auto cfg = ok(std::string("http { gzip_engine ") + e + "; server { listen 1; } }");
    EXPECT_EQ(server_gzip(cfg).engine, std::string(e) == "auto"   ? GzipSettings::Engine::kAuto
                                       : std::string(e) == "isal" ? GzipSettings::Engine::kIsal
                                                                  : GzipSettings::Engine::kZlib);
  }
  EXPECT_EQ(server_gzip(ok("http { gzip_static on; server { listen 1; } }")).static_mode,
            GzipSettings::Static::kOn);
  EXPECT_EQ(server_gzip(ok("http { gzip_proxied any; server { listen 1; } }")).proxied,
            GzipSettings::kProxiedAny);
}

TEST_F(ConfigTest, GzipIsInheritedInwardAndInnerBlocksWin) {
  auto c = ok(R"(http {
    gzip on;
    gzip_comp_level 4;
    gzip_disable msie6;
    gzip_cache 8m;
    server {
      listen 8080;
      gzip_comp_level 5;
      location /a { gzip off; }
      location /b { gzip_disable bot; gzip_disable spider; gzip_cache 32m; }
      location /c { }
    }
  })");
  EXPECT_TRUE(server_gzip(c).enabled);
  EXPECT_EQ(server_gzip(c).level, 5);
  EXPECT_FALSE(location_gzip(c, 0).enabled);
  EXPECT_EQ(location_gzip(c, 0).level, 5);
  // /b's own gzip_disable replaces the http block's; its two directives add up.
  EXPECT_FALSE(location_gzip(c, 1).disable_msie6);
  EXPECT_EQ(location_gzip(c, 1).disable.size(), 2u);
  EXPECT_TRUE(location_gzip(c, 2).disable_msie6);
  EXPECT_EQ(location_gzip(c, 2).cache_size, 8u * 1024 * 1024);
  // The one shared cache is as large as the largest gzip_cache where gzip is on.
  EXPECT_EQ(c->http.gzip_cache_size, 32u * 1024 * 1024);
}

TEST_F(ConfigTest, GzipErrorsNameTheLine) {
  EXPECT_CONFIG_ERROR(error("http {\n gzip maybe;\n}"), "test.conf:2: ", "\"on\" or \"off\"");
  EXPECT_CONFIG_ERROR(error("http {\n gzip_comp_level 10;\n}"), "test.conf:2: ", "1 to 9");
  EXPECT_CONFIG_ERROR(error("http {\n gzip_comp_level 0;\n}"), "test.conf:2: ", "1 to 9");
  EXPECT_CONFIG_ERROR(error("http {\n gzip_min_length 1x;\n}"), "test.conf:2: ", "size");
  EXPECT_CONFIG_ERROR(error("http {\n gzip_types css;\n}"), "test.conf:2: ", "MIME type");
  EXPECT_CONFIG_ERROR(error("http {\n gzip_http_version 2.0;\n}"), "test.conf:2: ", "1.0");
  EXPECT_CONFIG_ERROR(error("http {\n gzip_proxied sometimes;\n}"),
                      "test.conf:2: ", "no_last_modified");
  EXPECT_CONFIG_ERROR(error("http {\n gzip_disable \"a(b\";\n}"),
                      "test.conf:2: ", "invalid regular expression");
  EXPECT_CONFIG_ERROR(error("http {\n gzip_buffers 0 4k;\n}"), "test.conf:2: ", "from 1");
  EXPECT_CONFIG_ERROR(error("http {\n gzip_buffers 32 0;\n}"), "test.conf:2: ", "not be 0");
  EXPECT_CONFIG_ERROR(error("http {\n gzip_buffers 32;\n}"),
                      "test.conf:2: ", "invalid number of arguments");
  EXPECT_CONFIG_ERROR(error("http {\n gzip_static sometimes;\n}"), "test.conf:2: ", "always");
  EXPECT_CONFIG_ERROR(error("http {\n gzip_engine qat;\n}"), "test.conf:2: ", "libdeflate");
  EXPECT_CONFIG_ERROR(error("http {\n gzip_cache lots;\n}"), "test.conf:2: ", "size");
  EXPECT_CONFIG_ERROR(error("http {\n gzip on;\n gzip off;\n}"), "test.conf:3: ", "duplicate");
  EXPECT_CONFIG_ERROR(error("gzip on;\n"), "test.conf:1: ", "not allowed here");
  EXPECT_CONFIG_ERROR(error("http {\n gzip_window 4k;\n}"), "test.conf:2: ", "unknown directive");
}

}  // namespace
}  // namespace accelgate::config

// Loading nginx-syntax configuration files into the typed Config tree: the good files, the
// defaults and inheritance, includes, and one case per kind of error with its file:line.

#include "accelgate/config/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "config_fixture.h"

namespace accelgate::config {
namespace {

namespace fs = std::filesystem;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

TEST_F(ConfigTest, EmptyFileGivesDefaults) {
  auto c = ok("");
  EXPECT_EQ(c->file, dir_ + "/test.conf");
  EXPECT_EQ(c->prefix, cwd_);
  EXPECT_EQ(c->worker_processes, 1);
  EXPECT_EQ(c->pid_path, cwd_ + "/var/accelgate.pid");
  EXPECT_EQ(c->error_log_path, cwd_ + "/var/error.log");
  EXPECT_EQ(c->error_log_level, LogLevel::kError);
  EXPECT_EQ(c->worker_connections, 512u);
  EXPECT_FALSE(c->http.present);
  EXPECT_TRUE(c->http.servers.empty());
}

TEST_F(ConfigTest, MainAndEventsDirectives) {
  auto c = ok(R"(
    worker_processes 4;
    pid run/ag.pid;
    error_log /var/log/ag.log warn;
    worker_rlimit_nofile 65536;
    daemon off;
    events {
      worker_connections 4096;
      use epoll;
      multi_accept on;
    }
    http { }
  )");
  EXPECT_EQ(c->worker_processes, 4);
  EXPECT_EQ(c->pid_path, cwd_ + "/run/ag.pid");
  EXPECT_EQ(c->error_log_path, "/var/log/ag.log");
  EXPECT_EQ(c->error_log_level, LogLevel::kWarn);
  EXPECT_EQ(c->worker_rlimit_nofile, 65536u);
  EXPECT_EQ(c->worker_connections, 4096u);
  EXPECT_TRUE(c->multi_accept);
  EXPECT_TRUE(c->http.present);
}

TEST_F(ConfigTest, WorkerProcessesAutoAndStderr) {
  auto c = ok("worker_processes auto; error_log stderr;");
  long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  EXPECT_EQ(c->worker_processes, cpus > 0 ? cpus : 1);
  EXPECT_EQ(c->error_log_path, "stderr");
  EXPECT_EQ(c->error_log_level, LogLevel::kError);
}

TEST_F(ConfigTest, ServerListenAndNames) {
  auto c = ok(R"(
    http {
      server {
        listen 8080;
        listen 127.0.0.1:8081 default_server reuseport backlog=1024;
        listen *:8082;
        listen [::]:8083;
        listen [::1];
        listen localhost:0;
        listen 10.0.0.1;
        server_name example.com *.example.org .example.net www.* _ "";
      }
      server { }
    }
  )");
  ASSERT_EQ(c->http.servers.size(), 2u);
  const Server& s = c->http.servers[0];
  ASSERT_EQ(s.listen.size(), 7u);
  EXPECT_EQ(s.listen[0].host, "");
  EXPECT_EQ(s.listen[0].port, 8080);
  EXPECT_FALSE(s.listen[0].default_server);
  EXPECT_EQ(s.listen[0].where.line, 4);
  EXPECT_EQ(s.listen[0].where.file, "test.conf");
  EXPECT_EQ(s.listen[1].host, "127.0.0.1");
  EXPECT_EQ(s.listen[1].port, 8081);
  EXPECT_TRUE(s.listen[1].default_server);
  EXPECT_TRUE(s.listen[1].reuseport);
  EXPECT_EQ(s.listen[1].backlog, 1024);
  EXPECT_EQ(s.listen[2].host, "");
  EXPECT_EQ(s.listen[2].port, 8082);
  EXPECT_EQ(s.listen[2].backlog, 511);
  EXPECT_TRUE(s.listen[3].ipv6);
  EXPECT_EQ(s.listen[3].host, "::");
  EXPECT_EQ(s.listen[3].port, 8083);
  EXPECT_TRUE(s.listen[4].ipv6);
  EXPECT_EQ(s.listen[4].host, "::1");
  EXPECT_EQ(s.listen[4].port, 80);
  EXPECT_EQ(s.listen[5].host, "127.0.0.1");
  EXPECT_EQ(s.listen[5].port, 0);
  EXPECT_EQ(s.listen[6].host, "10.0.0.1");
  EXPECT_EQ(s.listen[6].port, 80);

  ASSERT_EQ(s.server_names.size(), 6u);
  EXPECT_EQ(s.server_names[0].kind, ServerName::Kind::kExact);
  EXPECT_EQ(s.server_names[0].name, "example.com");
  EXPECT_EQ(s.server_names[1].kind, ServerName::Kind::kLeadingWildcard);
  EXPECT_EQ(s.server_names[1].name, "example.org");
  EXPECT_FALSE(s.server_names[1].dot_form);
  EXPECT_EQ(s.server_names[2].kind, ServerName::Kind::kLeadingWildcard);
  EXPECT_EQ(s.server_names[2].name, "example.net");
  EXPECT_TRUE(s.server_names[2].dot_form);
  EXPECT_EQ(s.server_names[3].kind, ServerName::Kind::kTrailingWildcard);
  EXPECT_EQ(s.server_names[3].name, "www.");
  EXPECT_EQ(s.server_names[4].name, "_");
  EXPECT_EQ(s.server_names[5].name, "");

  // A server without `listen` listens on *:80, as nginx's does when run as root.
  const Server& bare = c->http.servers[1];
  ASSERT_EQ(bare.listen.size(), 1u);
  EXPECT_EQ(bare.listen[0].host, "");
  EXPECT_EQ(bare.listen[0].port, 80);
  EXPECT_EQ(bare.where.line, 13);
}

TEST_F(ConfigTest, ServerNamesAreLowerCase) {
  auto c = ok("http { server { server_name WWW.Example.COM; } }");
  EXPECT_EQ(c->http.servers[0].server_names[0].name, "www.example.com");
}

TEST_F(ConfigTest, LocationsAndReturn) {
  auto c = ok(R"(
    http {
      server {
        return 301 https://$host$request_uri;
        location / { }
        location = /metrics { metrics; }
        location =/exact { }
        location ^~ /static/ { }
        location /status { stub_status; }
        location /old { stub_status on; }
        location /teapot { return 418 "I'm a teapot\n"; }
        location /go { return https://example.com${request_uri}; }
        location /gone { return 410; }
        location /again { return $scheme://$server_name:$server_port$uri?$args; }
      }
    }
  )");
  const Server& s = c->http.servers[0];
  ASSERT_TRUE(s.fallback.return_action);
  EXPECT_EQ(s.fallback.return_action->code, 301);
  EXPECT_EQ(s.fallback.return_action->text, "https://$host$request_uri");
  ASSERT_EQ(s.locations.size(), 10u);
  EXPECT_EQ(s.locations[0].match, Location::Match::kPrefix);
  EXPECT_EQ(s.locations[0].path, "/");
  EXPECT_FALSE(s.locations[0].return_action);
  EXPECT_EQ(s.locations[1].match, Location::Match::kExact);
  EXPECT_EQ(s.locations[1].path, "/metrics");
  EXPECT_TRUE(s.locations[1].metrics);
  EXPECT_FALSE(s.locations[1].stub_status);
  EXPECT_EQ(s.locations[1].where.line, 6);
  EXPECT_EQ(s.locations[2].match, Location::Match::kExact);
  EXPECT_EQ(s.locations[2].path, "/exact");
  EXPECT_EQ(s.locations[3].match, Location::Match::kPrefixNoRegex);
  EXPECT_EQ(s.locations[3].path, "/static/");
  EXPECT_TRUE(s.locations[4].stub_status);
  EXPECT_TRUE(s.locations[5].stub_status);
  ASSERT_TRUE(s.locations[6].return_action);
  EXPECT_EQ(s.locations[6].return_action->code, 418);
  EXPECT_EQ(s.locations[6].return_action->text, "I'm a teapot\n");
  EXPECT_TRUE(s.locations[6].return_action->has_text);
  EXPECT_EQ(s.locations[7].return_action->code, 302);
  EXPECT_EQ(s.locations[7].return_action->text, "https://example.com${request_uri}");
  EXPECT_EQ(s.locations[8].return_action->code, 410);
  EXPECT_FALSE(s.locations[8].return_action->has_text);
  EXPECT_EQ(s.locations[9].return_action->code, 302);
}

TEST_F(ConfigTest, LocationDefaults) {
  auto c = ok("http { server { location / { } } }");
  const LocationSettings& s = c->http.servers[0].locations[0].settings;
  EXPECT_EQ(s.root, cwd_ + "/html");
  EXPECT_EQ(s.index, std::vector<std::string>{"index.html"});
  ASSERT_NE(s.types, nullptr);
  EXPECT_EQ(s.types->size(), 3u);  // nginx's built-in text/html, image/gif, image/jpeg
  EXPECT_EQ(s.types->at("html"), "text/html");
  EXPECT_EQ(s.types->at("jpg"), "image/jpeg");
  EXPECT_EQ(s.default_type, "text/plain");
  EXPECT_TRUE(s.access_log.enabled);
  EXPECT_EQ(s.access_log.path, cwd_ + "/var/access.log");
  EXPECT_EQ(s.access_log.buffer_size, 0u);
  EXPECT_FALSE(s.sendfile);
  EXPECT_EQ(s.keepalive_timeout, seconds(75));
  EXPECT_FALSE(s.keepalive_header);
  EXPECT_EQ(s.keepalive_requests, 1000u);
  EXPECT_EQ(s.client_max_body_size, 1u << 20);
  ASSERT_NE(c->http.servers[0].fallback.settings.types, nullptr);
}

TEST_F(ConfigTest, SettingsInheritHttpServerLocation) {
  auto c = ok(R"(
    http {
      root /srv/www/;
      index index.htm default.html;
      sendfile on;
      client_max_body_size 10m;
      keepalive_timeout 30s 25s;
      server {
        listen 8080;
        keepalive_requests 50;
        client_header_timeout 10s;
        location / { }
        location /docs/ {
          root docs;
          index start.html;
          sendfile off;
          client_max_body_size 0;
          default_type application/octet-stream;
        }
      }
      # Set after the server block: still applies to it, as in nginx.
      send_timeout 5s;
      large_client_header_buffers 8 16k;
    }
  )");
  const Server& s = c->http.servers[0];
  const LocationSettings& a = s.locations[0].settings;
  const LocationSettings& b = s.locations[1].settings;
  EXPECT_EQ(a.root, "/srv/www");
  EXPECT_EQ(a.index, (std::vector<std::string>{"index.htm", "default.html"}));
  EXPECT_TRUE(a.sendfile);
  EXPECT_EQ(a.client_max_body_size, 10u << 20);
  EXPECT_EQ(a.keepalive_timeout, seconds(30));
  EXPECT_EQ(a.keepalive_header, seconds(25));
  EXPECT_EQ(a.keepalive_requests, 50u);
  EXPECT_EQ(a.send_timeout, seconds(5));
  EXPECT_EQ(b.root, cwd_ + "/docs");
  EXPECT_EQ(b.index, std::vector<std::string>{"start.html"});
  EXPECT_FALSE(b.sendfile);
  EXPECT_EQ(b.client_max_body_size, 0u);
  EXPECT_EQ(b.default_type, "application/octet-stream");
  EXPECT_EQ(b.keepalive_requests, 50u);
  EXPECT_EQ(b.send_timeout, seconds(5));
  EXPECT_EQ(s.fallback.settings.root, "/srv/www");
  EXPECT_EQ(s.client_header_timeout, seconds(10));
  EXPECT_EQ(s.large_client_header_buffers_num, 8u);
  EXPECT_EQ(s.large_client_header_buffers_size, 16u * 1024);
  EXPECT_EQ(s.client_header_buffer_size, 1024u);
}

TEST_F(ConfigTest, TimeUnitsInDirectives) {
  auto c = ok(R"(http {
    keepalive_timeout "1h 30m";
    client_body_timeout 1500ms;
    send_timeout 2m;
    server { client_header_timeout 90; }
  })");
  const Server& s = c->http.servers[0];
  EXPECT_EQ(s.fallback.settings.keepalive_timeout, minutes(90));
  EXPECT_EQ(s.fallback.settings.client_body_timeout, Millis(1500));
  EXPECT_EQ(s.fallback.settings.send_timeout, minutes(2));
  EXPECT_EQ(s.client_header_timeout, seconds(90));
}

TEST_F(ConfigTest, AccessLogForms) {
  auto c = ok(R"(http {
    access_log logs/a.log combined buffer=64k flush=5s;
    server {
      location / { }
      location /quiet { access_log off; }
      location /plain { access_log /tmp/p.log; }
    }
  })");
  const Server& s = c->http.servers[0];
  const AccessLog& a = s.locations[0].settings.access_log;
  EXPECT_TRUE(a.enabled);
  EXPECT_EQ(a.path, cwd_ + "/logs/a.log");
  EXPECT_EQ(a.buffer_size, 64u * 1024);
  EXPECT_EQ(a.flush, seconds(5));
  EXPECT_FALSE(s.locations[1].settings.access_log.enabled);
  EXPECT_EQ(s.locations[2].settings.access_log.path, "/tmp/p.log");
  EXPECT_EQ(s.locations[2].settings.access_log.buffer_size, 0u);
}

TEST_F(ConfigTest, TypesBlockReplacesInheritedTypes) {
  auto c = ok(R"(http {
    types { text/html html; text/css css; }
    types { application/javascript js; }
    server {
      location / { }
      location /raw { types { } default_type text/plain; }
      location /x { types { application/x-thing THING thg; } }
    }
  })");
  const Server& s = c->http.servers[0];
  const MimeTypes& http_types = *s.locations[0].settings.types;
  EXPECT_EQ(http_types.size(), 3u);  // two blocks in one context add up
  EXPECT_EQ(http_types.at("css"), "text/css");
  EXPECT_EQ(http_types.at("js"), "application/javascript");
  EXPECT_TRUE(s.locations[1].settings.types->empty());
  const MimeTypes& x = *s.locations[2].settings.types;
  EXPECT_EQ(x.size(), 2u);
  EXPECT_EQ(x.at("thing"), "application/x-thing");  // extensions are lower-cased
  EXPECT_EQ(s.locations[0].settings.types, s.fallback.settings.types);  // shared, not copied
}

TEST_F(ConfigTest, DuplicateExtensionWarns) {
  auto c = ok("http { types { text/plain txt; text/x-other txt; } server { } }");
  EXPECT_EQ(c->http.servers[0].fallback.settings.types->at("txt"), "text/x-other");
  ASSERT_EQ(c->warnings.size(), 1u);
  EXPECT_EQ(c->warnings[0].substr(0, 12), "test.conf:1:");
  EXPECT_NE(c->warnings[0].find("duplicate extension \"txt\""), std::string::npos);
}

TEST_F(ConfigTest, ShippedMimeTypes) {
  auto result = parse_config_text("http { include mime.types; server { } }", "accelgate.conf",
                                  std::string(AG_SOURCE_DIR) + "/conf");
  ASSERT_TRUE(result.ok()) << result.error().message;
  const MimeTypes& t = *(*result)->http.servers[0].fallback.settings.types;
  EXPECT_EQ(t.at("html"), "text/html");
  EXPECT_EQ(t.at("css"), "text/css");
  EXPECT_EQ(t.at("js"), "application/javascript");
  EXPECT_EQ(t.at("json"), "application/json");
  EXPECT_EQ(t.at("svg"), "image/svg+xml");
  EXPECT_EQ(t.at("woff2"), "font/woff2");
  EXPECT_EQ(t.at("wasm"), "application/wasm");
  EXPECT_EQ(t.at("jpeg"), "image/jpeg");
  EXPECT_TRUE((*result)->warnings.empty()) << (*result)->warnings[0];
}

TEST_F(ConfigTest, ShippedConfig) {
  std::string file = std::string(AG_SOURCE_DIR) + "/conf/accelgate.conf";
  if (!fs::exists(file)) GTEST_SKIP() << file << " is not written yet";
  auto result = load_config(LoadOptions{file, AG_SOURCE_DIR});
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ((*result)->file, file);
  const Config& c = **result;
  EXPECT_TRUE(c.http.present);
  ASSERT_FALSE(c.http.servers.empty());
  // DESIGN.md: the demo serves HTTP on 127.0.0.1:8080 from html/, with mime.types included.
  const Server& s = c.http.servers[0];
  ASSERT_FALSE(s.listen.empty());
  EXPECT_EQ(s.listen[0].host, "127.0.0.1");
  EXPECT_EQ(s.listen[0].port, 8080);
  EXPECT_EQ(s.fallback.settings.root, std::string(AG_SOURCE_DIR) + "/html");
  EXPECT_EQ(s.fallback.settings.types->at("css"), "text/css");
  EXPECT_TRUE(c.warnings.empty());
}

TEST_F(ConfigTest, Quoting) {
  auto c = ok(R"(
    http {
      root "/srv/with space";  # a comment; with { braces }
      index 'single quoted' "esc\"aped" 'it\'s' "back\\slash" "tab\there" a#b;
      default_type "text/plain; charset=utf-8";
      server { location "/a b" { } }
    }
  )");
  const LocationSettings& s = c->http.servers[0].locations[0].settings;
  EXPECT_EQ(s.root, "/srv/with space");
  EXPECT_EQ(s.index, (std::vector<std::string>{"single quoted", "esc\"aped", "it's", "back\\slash",
                                               "tab\there", "a#b"}));
  EXPECT_EQ(s.default_type, "text/plain; charset=utf-8");
  EXPECT_EQ(c->http.servers[0].locations[0].path, "/a b");
}

TEST_F(ConfigTest, IncludeWithGlobs) {
  write("conf.d/b.conf", "server { listen 8002; }\n");
  write("conf.d/a.conf", "server { listen 8001; }\n");
  write("conf.d/skip.txt", "garbage\n");
  write("events.conf", "worker_connections 100;\n");
  auto c = ok(R"(
    events { include events.conf; }
    http {
      include conf.d/*.conf;
      include nothing/*.conf;
    }
  )");
  EXPECT_EQ(c->worker_connections, 100u);
  ASSERT_EQ(c->http.servers.size(), 2u);
  EXPECT_EQ(c->http.servers[0].listen[0].port, 8001);  // glob order is sorted
  EXPECT_EQ(c->http.servers[1].listen[0].port, 8002);
  EXPECT_EQ(c->http.servers[0].listen[0].where.file, dir_ + "/conf.d/a.conf");
  EXPECT_EQ(c->http.servers[0].listen[0].where.line, 1);
}

TEST_F(ConfigTest, LoadConfigResolvesPrefixAndIncludes) {
  write("conf/main.conf", "pid ag.pid;\nhttp { include extra/*.conf; root www; server { } }\n");
  write("conf/extra/x.conf", "sendfile on;\n");
  auto result = load_config(LoadOptions{dir_ + "/conf/main.conf", dir_ + "/prefix"});
  ASSERT_TRUE(result.ok()) << result.error().message;
  const Config& c = **result;
  EXPECT_EQ(c.file, dir_ + "/conf/main.conf");
  EXPECT_EQ(c.prefix, dir_ + "/prefix");
  EXPECT_EQ(c.pid_path, dir_ + "/prefix/ag.pid");
  EXPECT_EQ(c.error_log_path, dir_ + "/prefix/var/error.log");
  EXPECT_EQ(c.http.servers[0].fallback.settings.root, dir_ + "/prefix/www");
  EXPECT_TRUE(c.http.servers[0].fallback.settings.sendfile);
}

TEST_F(ConfigTest, LoadConfigMissingFile) {
  auto result = load_config(LoadOptions{dir_ + "/none.conf", ""});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().message.find("none.conf"), std::string::npos);
  EXPECT_NE(result.error().message.find("No such file"), std::string::npos);
}

TEST_F(ConfigTest, ErrorsInLoadConfigNameTheAbsoluteFile) {
  std::string file = write("bad.conf", "\n\nworker_processes x;\n");
  auto result = load_config(LoadOptions{file, ""});
  ASSERT_FALSE(result.ok());
  EXPECT_CONFIG_ERROR(result.error().message, file + ":3: ", "invalid value \"x\"");
}

TEST_F(ConfigTest, ConflictingServerNameWarns) {
  auto c = ok(R"(http {
    server { listen 80; server_name a.test; }
    server { listen 80; server_name a.test; }
    server { listen 81; server_name a.test; }
  })");
  ASSERT_EQ(c->warnings.size(), 1u);
  EXPECT_EQ(c->warnings[0].substr(0, 12), "test.conf:3:");
  EXPECT_NE(c->warnings[0].find("conflicting server name \"a.test\" on 0.0.0.0:80"),
            std::string::npos);
}

TEST_F(ConfigTest, DefaultServersOnDifferentAddresses) {
  auto c = ok(R"(http {
    server { listen 80 default_server; }
    server { listen 127.0.0.1:80 default; listen [::]:80 default_server; }
  })");
  EXPECT_TRUE(c->http.servers[1].listen[0].default_server);
}

TEST_F(ConfigTest, ParseAndLoadAreRepeatable) {
  // The server reloads from another thread: two loads at once share no state.
  std::string text = "http { server { listen 1; location / { root /a; } } }";
  std::thread t([&] {
    for (int i = 0; i < 50; ++i) (void)parse_config_text(text, "t", dir_);
  });
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(parse_config_text(text, "t", dir_).ok());
  t.join();
}

}  // namespace
}  // namespace accelgate::config

// One case per kind of configuration error: each checks the exact "file:line: " prefix and the
// part of the message that says what was wrong.

#include <gtest/gtest.h>

#include "config_fixture.h"

namespace accelgate::config {
namespace {

struct BadCase {
  const char* name;
  const char* text;
  const char* where;  // expected message prefix
  const char* what;   // expected substring
};

// kBadCases are parsed as "test.conf"; line numbers count from the first line of |text|.
const BadCase kBadCases[] = {
    // Syntax.
    {"MissingSemicolonAtEnd", "worker_processes 2",
     "test.conf:1: ", "unexpected end of file, expecting ';' or '}'"},
    {"MissingSemicolonBeforeBlock", "http {\n  sendfile on\n  server { }\n}",
     "test.conf:3: ", "directive \"sendfile\" is not terminated by ';'"},
    {"MissingCloseBrace", "http {\n  server {\n  }\n",
     "test.conf:4: ", "unexpected end of file, expecting '}' to close \"http\" opened on line 1"},
    {"ExtraCloseBrace", "http {\n}\n}\n", "test.conf:3: ", "unexpected '}'"},
    {"CloseBraceAfterWords", "http {\n  sendfile on }\n", "test.conf:2: ", "unexpected '}'"},
    {"StraySemicolon", "events { ; }", "test.conf:1: ", "unexpected ';'"},
    {"StrayOpenBrace", "\n{ }", "test.conf:2: ", "unexpected '{'"},
    {"UnterminatedDoubleQuote", "pid \"a.pid;\n\n", "test.conf:1: ", "unterminated quoted string"},
    {"UnterminatedSingleQuote", "\npid 'a.pid;", "test.conf:2: ", "unterminated quoted string"},
    {"GlueAfterQuote", "pid \"a\"b;", "test.conf:1: ", "unexpected 'b' after a quoted string"},
    {"NoOpeningBrace", "events;", "test.conf:1: ", "directive \"events\" has no opening '{'"},
    {"TooDeep", "a{a{a{a{a{a{a{a{a{a{a{a{a{a{a{a{a{a{a{a{a{a{a{a{a{a{a{a{a{a{a{a{a{",
     "test.conf:1: ", "blocks nested deeper than"},

    // Directives and contexts.
    {"UnknownDirective", "events { }\nfoo bar;", "test.conf:2: ", "unknown directive \"foo\""},
    {"UnknownLogFormatDirective", "http {\n log_format main '$remote_addr';\n}",
     "test.conf:2: ", "unknown directive \"log_format\""},
    {"ListenInHttp", "http {\n  listen 80;\n}",
     "test.conf:2: ", "\"listen\" directive is not allowed here"},
    {"WorkerConnectionsInHttp", "http {\n\n  worker_connections 10;\n}",
     "test.conf:3: ", "\"worker_connections\" directive is not allowed here"},
    {"ErrorLogInHttp", "http { error_log x.log; }",
     "test.conf:1: ", "\"error_log\" directive is not allowed here"},
    {"HeaderBuffersInLocation", "http { server { location / { client_header_timeout 5s; } } }",
     "test.conf:1: ", "\"client_header_timeout\" directive is not allowed here"},
    {"MetricsInServer", "http { server { metrics; } }",
     "test.conf:1: ", "\"metrics\" directive is not allowed here"},
    {"DuplicateDirective", "events {\n worker_connections 1;\n worker_connections 2;\n}",
     "test.conf:3: ", "\"worker_connections\" directive is duplicate"},
    {"DuplicateHttp", "http { }\nhttp { }", "test.conf:2: ", "\"http\" directive is duplicate"},
    {"DuplicateReturn", "http { server { location / { return 200; return 204; } } }",
     "test.conf:1: ", "\"return\" directive is duplicate"},
    {"DuplicateAccessLog", "http { access_log a.log; access_log b.log; }",
     "test.conf:1: ", "only one \"access_log\" per block"},
    {"DaemonOn", "daemon on;", "test.conf:1: ", "\"daemon on\" is not supported"},
    {"UseKqueue", "events { use kqueue; }",
     "test.conf:1: ", R"(invalid value "kqueue" in "use" directive, only "epoll" is supported)"},

    // Argument counts.
    {"RootTooMany", "http {\n  root /a /b;\n}",
     "test.conf:2: ", "invalid number of arguments in \"root\" directive"},
    {"RootTooFew", "http {\n  root;\n}",
     "test.conf:2: ", "invalid number of arguments in \"root\" directive"},
    {"ListenNone", "http { server { listen; } }",
     "test.conf:1: ", "invalid number of arguments in \"listen\" directive"},
    {"EventsWithArgs", "events x { }",
     "test.conf:1: ", "invalid number of arguments in \"events\" directive"},
    {"EmptyTypeEntry", "http { types {\n text/html;\n} }",
     "test.conf:2: ", "invalid number of arguments in \"text/html\" type"},

    // Values.
    {"BadNumber", "events {\n  worker_connections abc;\n}",
     "test.conf:2: ", R"(invalid value "abc" in "worker_connections" directive)"},
    {"WorkerProcessesZero", "worker_processes 0;",
     "test.conf:1: ", R"(invalid value "0" in "worker_processes")"},
    {"WorkerProcessesAbc", "worker_processes abc;",
     "test.conf:1: ", R"(invalid value "abc" in "worker_processes")"},
    {"BadSize", "http {\n  client_max_body_size 10q;\n}",
     "test.conf:2: ", R"(invalid value "10q" in "client_max_body_size" directive)"},
    {"SizeOverflow", "http { client_max_body_size 99999999999999999999; }",
     "test.conf:1: ", "invalid value \"99999999999999999999\""},
    {"BadTime", "http {\n  keepalive_timeout 10x;\n}",
     "test.conf:2: ", R"(invalid value "10x" in "keepalive_timeout" directive)"},
    {"TimeWrongOrder", "http { send_timeout \"1m 1h\"; }",
     "test.conf:1: ", R"(invalid value "1m 1h" in "send_timeout")"},
    {"BadFlag", "http { sendfile yes; }",
     "test.conf:1: ", R"(invalid value "yes" in "sendfile" directive, it must be "on" or "off")"},
    {"BadLogLevel", "error_log x.log loud;",
     "test.conf:1: ", R"(invalid value "loud" in "error_log")"},
    {"AccessLogFormat", "http { access_log a.log main; }",
     "test.conf:1: ", "unknown log format \"main\""},
    {"AccessLogFlushWithoutBuffer", "http { access_log a.log flush=5s; }",
     "test.conf:1: ", "no buffer is defined for access_log"},
    {"RootVariable", "http { root /srv/$host; }",
     "test.conf:1: ", "variables in \"root\" are not supported"},

    // listen and server_name.
    {"ListenPortTooBig", "http {\n server {\n  listen 70000;\n }\n}",
     "test.conf:3: ", R"(invalid port in "70000" of the "listen" directive)"},
    {"ListenAddressPortTooBig", "http { server { listen 127.0.0.1:65536; } }",
     "test.conf:1: ", "invalid port"},
    {"ListenBadHost", "http { server { listen example.com:80; } }",
     "test.conf:1: ", "invalid host \"example.com\""},
    {"ListenBareIpv6", "http { server { listen ::1:80; } }", "test.conf:1: ", "in brackets"},
    {"ListenSslWithoutCertificate", "http { server { listen 443 ssl; } }",
     "test.conf:1: ", R"(no "ssl_certificate" is defined for the "listen ... ssl" directive)"},
    {"ListenHttp2", "http { server { listen 443 http2; } }", "test.conf:1: ", "not supported yet"},
    {"ListenUnknownParam", "http { server { listen 80 deferred; } }",
     "test.conf:1: ", R"(the "deferred" parameter of "listen" is not supported)"},
    {"ListenBadBacklog", "http { server { listen 80 backlog=x; } }",
     "test.conf:1: ", "invalid value \"backlog=x\""},
    {"DuplicateDefaultServer",
     "http {\n server { listen 8080 default_server; }\n server { listen *:8080 default; }\n}",
     "test.conf:3: ", "a duplicate default server for 0.0.0.0:8080"},
    {"DuplicateListenInServer", "http { server {\n listen 80;\n listen 0.0.0.0:80;\n} }",
     "test.conf:3: ", "a duplicate listen 0.0.0.0:80"},
    {"RegexServerName", "http { server { server_name ~^www\\d+$; } }",
     "test.conf:1: ", "regular expressions in \"server_name\" are not supported"},
    {"BadWildcard", "http { server { server_name www.*.com; } }",
     "test.conf:1: ", R"(invalid value "www.*.com" in "server_name")"},

    // location and return.
    {"RegexLocation", "http { server {\n location ~ \\.php$ { }\n} }",
     "test.conf:2: ", R"(regular expression locations ("~ \.php$") are not supported)"},
    {"CaselessRegexLocation", "http { server { location ~* \\.JPG$ { } } }",
     "test.conf:1: ", "regular expression locations"},
    {"NamedLocation", "http { server { location @fallback { } } }",
     "test.conf:1: ", "named locations (\"@fallback\") are not supported"},
    {"NestedLocation", "http { server { location / {\n location /a { } } } }",
     "test.conf:2: ", "nested locations are not supported"},
    {"DuplicateLocation", "http { server {\n location /a { }\n location /a { }\n} }",
     "test.conf:3: ", "duplicate location \"/a\""},
    {"DuplicateExactLocation", "http { server { location = /a { } location =/a { } } }",
     "test.conf:1: ", "duplicate location \"/a\""},
    {"BadLocationModifier", "http { server { location ! /a { } } }",
     "test.conf:1: ", "invalid location modifier \"!\""},
    {"ReturnUnknownVariable", "http { server { location / {\n return 200 \"$foo\";\n} } }",
     "test.conf:2: ", "unknown \"foo\" variable"},
    {"ReturnUnknownBracedVariable", "http { server { return 301 https://${hostname}/; } }",
     "test.conf:1: ", "unknown \"hostname\" variable"},
    {"ReturnEmptyVariable", "http { server { return 200 \"cost: $\"; } }",
     "test.conf:1: ", "invalid variable name"},
    {"ReturnCodeTooBig", "http { server { return 1000; } }",
     "test.conf:1: ", "invalid return code \"1000\""},
    {"ReturnRelativeUrlAlone", "http { server { return /elsewhere; } }",
     "test.conf:1: ", "invalid return code \"/elsewhere\""},

    // include.
    {"IncludeMissingFile", "http {\n  include missing.conf;\n}",
     "test.conf:2: ", "cannot open included file"},
    {"IncludeNoArgs", "include;",
     "test.conf:1: ", "invalid number of arguments in \"include\" directive"},
};

class BadConfigTest : public ConfigTest, public ::testing::WithParamInterface<BadCase> {};

TEST_P(BadConfigTest, ReportsFileLineAndReason) {
  const BadCase& c = GetParam();
  EXPECT_CONFIG_ERROR(error(c.text), c.where, c.what);
}

INSTANTIATE_TEST_SUITE_P(Errors, BadConfigTest, ::testing::ValuesIn(kBadCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(ConfigTest, IncludeOfMissingFileNamesThePath) {
  EXPECT_CONFIG_ERROR(error("include nope.conf;"), "test.conf:1: ",
                      "cannot open included file \"" + dir_ + "/nope.conf\": No such file");
}

TEST_F(ConfigTest, IncludeRecursion) {
  write("a.conf", "include b.conf;\n");
  write("b.conf", "\n\ninclude a.conf;\n");
  EXPECT_CONFIG_ERROR(error("include a.conf;"), dir_ + "/b.conf:3: ", "recursive include of");
}

TEST_F(ConfigTest, IncludeOfItself) {
  // The main file is known by its path too.
  write("self.conf", "include self.conf;\n");
  auto result = load_config(LoadOptions{dir_ + "/self.conf", ""});
  ASSERT_FALSE(result.ok());
  EXPECT_CONFIG_ERROR(result.error().message, dir_ + "/self.conf:1: ", "recursive include");
}

TEST_F(ConfigTest, IncludeOfDirectoryFails) {
  write("sub/x.conf", "");
  EXPECT_CONFIG_ERROR(error("include sub;"), "test.conf:1: ", "is a directory");
}

TEST_F(ConfigTest, ErrorInIncludedFileNamesThatFile) {
  write("conf.d/site.conf", "server {\n  listen 80;\n  root /srv;\n  bogus on;\n}\n");
  EXPECT_CONFIG_ERROR(error("http {\n  include conf.d/*.conf;\n}"),
                      dir_ + "/conf.d/site.conf:4: ", "unknown directive \"bogus\"");
}

TEST_F(ConfigTest, SyntaxErrorInIncludedFileNamesThatFile) {
  write("inc.conf", "\nsendfile on;\n}\n");
  EXPECT_CONFIG_ERROR(error("http { include inc.conf; }"),
                      dir_ + "/inc.conf:3: ", "unexpected '}'");
}

TEST_F(ConfigTest, ContextOfIncludedDirectiveIsWhereTheIncludeStands) {
  write("listen.conf", "listen 80;\n");
  EXPECT_CONFIG_ERROR(error("http {\n include listen.conf;\n}"),
                      dir_ + "/listen.conf:1: ", "\"listen\" directive is not allowed here");
  EXPECT_TRUE(parse_config_text("http { server { include listen.conf; } }", "t", dir_).ok());
}

TEST_F(ConfigTest, GarbageNeverCrashes) {
  // A few inputs the fuzzer liked: each must fail cleanly, not crash or hang.
  for (const char* text : {"\"", "'", "\\", "{", "}", ";", "a", "a{", "a}", "${", "$", "a \"b\\",
                           "http{server{location", "http{server{listen [",
                           "http{server{listen [::", "http{server{return 200 ${", "\x01\x02\xff"}) {
    EXPECT_FALSE(parse_config_text(text, "t", dir_).ok()) << text;
  }
}

}  // namespace
}  // namespace accelgate::config

// The ssl_* directives and `listen ... ssl`: values, defaults, http -> server inheritance, list
// replacement, the load-time checks that span servers, and one case per error with its file:line.

#include <gtest/gtest.h>

#include "accelgate/config/config.h"
#include "config_fixture.h"

namespace accelgate::config {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using Cache = TlsSettings::SessionCache;
using Commands = std::vector<std::pair<std::string, std::string>>;

// kCert is the certificate pair most tests need to make a `listen ... ssl` valid.
constexpr const char* kCert = "ssl_certificate a.crt; ssl_certificate_key a.key;";

std::string server_with(const std::string& body) {
  return "http { server { listen 443 ssl; " + std::string(kCert) + " " + body + " } }";
}

TEST_F(ConfigTest, TlsDefaults) {
  auto c = ok("http {\n server {\n  listen 80;\n }\n}");
  ASSERT_EQ(c->http.servers.size(), 1u);
  const Server& s = c->http.servers[0];
  EXPECT_FALSE(s.listen[0].ssl);
  const TlsSettings& t = s.tls;
  EXPECT_TRUE(t.certificates.empty());
  EXPECT_EQ(t.protocols, kTlsV12 | kTlsV13);
  EXPECT_EQ(t.ciphers, "HIGH:!aNULL:!MD5");
  EXPECT_TRUE(t.conf_commands.empty());
  EXPECT_EQ(t.ecdh_curve, "auto");
  EXPECT_FALSE(t.prefer_server_ciphers);
  EXPECT_EQ(t.session_cache, Cache::kNone);
  EXPECT_EQ(t.session_cache_name, "");
  EXPECT_EQ(t.session_cache_size, 0u);
  EXPECT_EQ(t.session_timeout, minutes(5));
  EXPECT_TRUE(t.session_tickets);
  EXPECT_TRUE(t.session_ticket_keys.empty());
  EXPECT_EQ(t.handshake_timeout, seconds(60));
  // No ssl_* directive: messages name the server block.
  EXPECT_EQ(t.where.file, "test.conf");
  EXPECT_EQ(t.where.line, 2);
}

TEST_F(ConfigTest, TlsEveryDirectiveInServer) {
  auto c = ok(R"(http {
  server {
    listen 127.0.0.1:8443 ssl default_server backlog=64;
    ssl_certificate certs/rsa.crt;
    ssl_certificate_key certs/rsa.key;
    ssl_certificate /etc/ssl/ecdsa.crt;
    ssl_certificate_key /etc/ssl/ecdsa.key;
    ssl_protocols TLSv1.3;
    ssl_ciphers ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256;
    ssl_conf_command Options PrioritizeChaCha;
    ssl_conf_command Ciphersuites TLS_AES_256_GCM_SHA384;
    ssl_ecdh_curve X25519:prime256v1;
    ssl_prefer_server_ciphers on;
    ssl_session_cache shared:SSL:10m;
    ssl_session_timeout 1h;
    ssl_session_tickets off;
    ssl_session_ticket_key keys/current.key;
    ssl_session_ticket_key /etc/keys/previous.key;
    ssl_handshake_timeout 5s;
  }
})");
  const Server& s = c->http.servers[0];
  ASSERT_EQ(s.listen.size(), 1u);
  EXPECT_TRUE(s.listen[0].ssl);
  EXPECT_TRUE(s.listen[0].default_server);
  EXPECT_EQ(s.listen[0].backlog, 64);
  EXPECT_EQ(s.listen[0].port, 8443);
  const TlsSettings& t = s.tls;
  ASSERT_EQ(t.certificates.size(), 2u);
  EXPECT_EQ(t.certificates[0].certificate, dir_ + "/certs/rsa.crt");
  EXPECT_EQ(t.certificates[0].key, dir_ + "/certs/rsa.key");
  EXPECT_EQ(t.certificates[0].where.file, "test.conf");
  EXPECT_EQ(t.certificates[0].where.line, 4);
  EXPECT_EQ(t.certificates[1].certificate, "/etc/ssl/ecdsa.crt");
  EXPECT_EQ(t.certificates[1].key, "/etc/ssl/ecdsa.key");
  EXPECT_EQ(t.certificates[1].where.line, 6);
  EXPECT_EQ(t.protocols, kTlsV13);
  EXPECT_EQ(t.ciphers, "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256");
  EXPECT_EQ(t.conf_commands, (Commands{{"Options", "PrioritizeChaCha"},
                                       {"Ciphersuites", "TLS_AES_256_GCM_SHA384"}}));
  EXPECT_EQ(t.ecdh_curve, "X25519:prime256v1");
  EXPECT_TRUE(t.prefer_server_ciphers);
  EXPECT_EQ(t.session_cache, Cache::kShared);
  EXPECT_EQ(t.session_cache_name, "SSL");
  EXPECT_EQ(t.session_cache_size, 10u << 20);
  EXPECT_EQ(t.session_timeout, minutes(60));
  EXPECT_FALSE(t.session_tickets);
  EXPECT_EQ(t.session_ticket_keys,
            (std::vector<std::string>{dir_ + "/keys/current.key", "/etc/keys/previous.key"}));
  EXPECT_EQ(t.handshake_timeout, seconds(5));
  EXPECT_EQ(t.where.line, 4);  // the first ssl_* directive
}

TEST_F(ConfigTest, TlsInheritedFromHttp) {
  // An http-level directive applies to servers before and after it, as in nginx.
  auto c = ok(R"(http {
  ssl_protocols TLSv1.2;
  ssl_certificate site.crt;
  ssl_certificate_key site.key;
  server { listen 443 ssl; }
  server {
    listen 8443 ssl;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_timeout 10m;
  }
  ssl_ciphers ECDHE+AESGCM;
  ssl_session_cache shared:all:1m;
  ssl_session_timeout 2m;
  ssl_session_tickets off;
  ssl_prefer_server_ciphers on;
  ssl_ecdh_curve prime256v1;
  ssl_handshake_timeout 15s;
  ssl_conf_command Options ServerPreference;
  ssl_session_ticket_key ticket.key;
})");
  ASSERT_EQ(c->http.servers.size(), 2u);
  for (const Server& s : c->http.servers) {
    const TlsSettings& t = s.tls;
    ASSERT_EQ(t.certificates.size(), 1u);
    EXPECT_EQ(t.certificates[0].certificate, dir_ + "/site.crt");
    EXPECT_EQ(t.certificates[0].key, dir_ + "/site.key");
    EXPECT_EQ(t.certificates[0].where.line, 3);  // the http block's ssl_certificate
    EXPECT_EQ(t.ciphers, "ECDHE+AESGCM");
    EXPECT_EQ(t.session_cache, Cache::kShared);
    EXPECT_EQ(t.session_cache_name, "all");
    EXPECT_EQ(t.session_cache_size, 1u << 20);
    EXPECT_FALSE(t.session_tickets);
    EXPECT_TRUE(t.prefer_server_ciphers);
    EXPECT_EQ(t.ecdh_curve, "prime256v1");
    EXPECT_EQ(t.handshake_timeout, seconds(15));
    EXPECT_EQ(t.conf_commands, (Commands{{"Options", "ServerPreference"}}));
    EXPECT_EQ(t.session_ticket_keys, std::vector<std::string>{dir_ + "/ticket.key"});
  }
  const TlsSettings& first = c->http.servers[0].tls;
  EXPECT_EQ(first.protocols, kTlsV12);
  EXPECT_EQ(first.session_timeout, minutes(2));
  EXPECT_EQ(first.where.line, 2);  // inherited: the http block's first ssl_* directive
  const TlsSettings& second = c->http.servers[1].tls;
  EXPECT_EQ(second.protocols, kTlsV12 | kTlsV13);  // the server's value wins
  EXPECT_EQ(second.session_timeout, minutes(10));
  EXPECT_EQ(second.where.line, 8);  // its own first ssl_* directive
}

TEST_F(ConfigTest, TlsServerCertificatesReplaceInheritedList) {
  auto c = ok(R"(http {
  ssl_certificate rsa.crt;
  ssl_certificate_key rsa.key;
  ssl_certificate ecdsa.crt;
  ssl_certificate_key ecdsa.key;
  server {
    listen 443 ssl;
    ssl_certificate own.crt;
    ssl_certificate_key own.key;
  }
  server { listen 8443 ssl; }
})");
  const auto& own = c->http.servers[0].tls.certificates;
  ASSERT_EQ(own.size(), 1u);
  EXPECT_EQ(own[0].certificate, dir_ + "/own.crt");
  EXPECT_EQ(own[0].key, dir_ + "/own.key");
  EXPECT_EQ(own[0].where.line, 8);
  const auto& inherited = c->http.servers[1].tls.certificates;
  ASSERT_EQ(inherited.size(), 2u);
  EXPECT_EQ(inherited[0].certificate, dir_ + "/rsa.crt");
  EXPECT_EQ(inherited[0].key, dir_ + "/rsa.key");
  EXPECT_EQ(inherited[1].certificate, dir_ + "/ecdsa.crt");
  EXPECT_EQ(inherited[1].key, dir_ + "/ecdsa.key");
  EXPECT_EQ(inherited[1].where.line, 4);
}

TEST_F(ConfigTest, TlsKeysAndCertificatesAreInheritedSeparately) {
  // nginx merges the two lists independently: a key given once in http pairs with each server's
  // own certificate.
  auto c = ok(R"(http {
  ssl_certificate_key shared.key;
  server { listen 443 ssl; ssl_certificate a.crt; }
  server { listen 8443 ssl; ssl_certificate b.crt; }
})");
  EXPECT_EQ(c->http.servers[0].tls.certificates[0].certificate, dir_ + "/a.crt");
  EXPECT_EQ(c->http.servers[0].tls.certificates[0].key, dir_ + "/shared.key");
  EXPECT_EQ(c->http.servers[1].tls.certificates[0].certificate, dir_ + "/b.crt");
  EXPECT_EQ(c->http.servers[1].tls.certificates[0].key, dir_ + "/shared.key");
  EXPECT_EQ(c->http.servers[1].tls.certificates[0].where.line, 4);
}

TEST_F(ConfigTest, TlsCertificatePathsAreNormalised) {
  auto c = ok(server_with("ssl_session_ticket_key ./keys/../t.key;"));
  EXPECT_EQ(c->http.servers[0].tls.session_ticket_keys, std::vector<std::string>{dir_ + "/t.key"});
  EXPECT_EQ(c->http.servers[0].tls.certificates[0].certificate, dir_ + "/a.crt");
}

TEST_F(ConfigTest, TlsListsInServerReplaceHttpLists) {
  auto c = ok(R"(http {
  ssl_conf_command Options ServerPreference;
  ssl_conf_command MinProtocol TLSv1.2;
  ssl_session_ticket_key old1.key;
  ssl_session_ticket_key old2.key;
  server {
    ssl_conf_command Options -ServerPreference;
    ssl_session_ticket_key new.key;
  }
  server { }
})");
  const TlsSettings& own = c->http.servers[0].tls;
  EXPECT_EQ(own.conf_commands, (Commands{{"Options", "-ServerPreference"}}));
  EXPECT_EQ(own.session_ticket_keys, std::vector<std::string>{dir_ + "/new.key"});
  const TlsSettings& inherited = c->http.servers[1].tls;
  EXPECT_EQ(inherited.conf_commands,
            (Commands{{"Options", "ServerPreference"}, {"MinProtocol", "TLSv1.2"}}));
  EXPECT_EQ(inherited.session_ticket_keys,
            (std::vector<std::string>{dir_ + "/old1.key", dir_ + "/old2.key"}));
}

TEST_F(ConfigTest, TlsProtocols) {
  EXPECT_EQ(ok(server_with("ssl_protocols TLSv1.2;"))->http.servers[0].tls.protocols, kTlsV12);
  EXPECT_EQ(ok(server_with("ssl_protocols TLSv1.3;"))->http.servers[0].tls.protocols, kTlsV13);
  EXPECT_EQ(ok(server_with("ssl_protocols TLSv1.3 TLSv1.2;"))->http.servers[0].tls.protocols,
            kTlsV12 | kTlsV13);
  // nginx compares protocol names without regard to case.
  EXPECT_EQ(ok(server_with("ssl_protocols tlsv1.2 TLSV1.3;"))->http.servers[0].tls.protocols,
            kTlsV12 | kTlsV13);
}

TEST_F(ConfigTest, TlsDuplicateProtocolWarns) {
  auto c = ok("http {\n ssl_protocols TLSv1.2 TLSv1.2;\n}");
  ASSERT_EQ(c->warnings.size(), 1u);
  EXPECT_EQ(c->warnings[0], "test.conf:2: duplicate value \"TLSv1.2\"");
}

TEST_F(ConfigTest, TlsOldProtocolsAreRefused) {
  for (const char* name : {"SSLv2", "SSLv3", "TLSv1", "TLSv1.1", "tlsv1"}) {
    std::string text = "http {\n server {\n  ssl_protocols TLSv1.2 " + std::string(name) + ";\n}}";
    EXPECT_CONFIG_ERROR(error(text), "test.conf:3: ",
                        "the protocol \"" + std::string(name) +
                            "\" in \"ssl_protocols\" is not supported: TLS 1.2 or later only");
  }
}

TEST_F(ConfigTest, TlsSessionCacheForms) {
  auto cache = [&](const std::string& value) {
    return ok(server_with("ssl_session_cache " + value + ";"))->http.servers[0].tls;
  };
  EXPECT_EQ(cache("off").session_cache, Cache::kOff);
  EXPECT_EQ(cache("none").session_cache, Cache::kNone);

  TlsSettings shared = cache("shared:TLS:64k");
  EXPECT_EQ(shared.session_cache, Cache::kShared);
  EXPECT_EQ(shared.session_cache_name, "TLS");
  EXPECT_EQ(shared.session_cache_size, 64u << 10);
  EXPECT_EQ(cache("shared:x:2M").session_cache_size, 2u << 20);
  EXPECT_EQ(cache("shared:x:32768").session_cache_size, 32768u);

  // builtin[:N] is one cache for every worker thread too: N sessions of 256 bytes.
  TlsSettings builtin = cache("builtin");
  EXPECT_EQ(builtin.session_cache, Cache::kShared);
  EXPECT_EQ(builtin.session_cache_name, "builtin");
  EXPECT_EQ(builtin.session_cache_size, 20480u * 256);
  EXPECT_EQ(cache("builtin:1000").session_cache_size, 1000u * 256);

  // Several caches in one directive: shared wins over builtin; off and none win over both.
  TlsSettings both = cache("builtin:1000 shared:x:1m");
  EXPECT_EQ(both.session_cache, Cache::kShared);
  EXPECT_EQ(both.session_cache_name, "x");
  EXPECT_EQ(both.session_cache_size, 1u << 20);
  EXPECT_EQ(cache("shared:x:1m builtin").session_cache_name, "x");
  EXPECT_EQ(cache("shared:x:1m off").session_cache, Cache::kOff);
  EXPECT_EQ(cache("none builtin").session_cache, Cache::kNone);
}

TEST_F(ConfigTest, TlsSessionCacheOneNameOneSize) {
  // The same shared cache named in two servers is one cache.
  auto c = ok(R"(http {
  server { ssl_session_cache shared:s:1m; }
  server { ssl_session_cache shared:s:1m; }
})");
  EXPECT_EQ(c->http.servers[1].tls.session_cache_size, 1u << 20);
  // builtin caches of several servers are one cache, as large as the largest asked for.
  auto b = ok(R"(http {
  server { ssl_session_cache builtin:1000; }
  server { ssl_session_cache builtin:4000; }
  server { ssl_session_cache off; }
})");
  EXPECT_EQ(b->http.servers[0].tls.session_cache_size, 4000u * 256);
  EXPECT_EQ(b->http.servers[1].tls.session_cache_size, 4000u * 256);
  EXPECT_EQ(b->http.servers[2].tls.session_cache, Cache::kOff);
  EXPECT_CONFIG_ERROR(error("http {\n server { ssl_session_cache shared:s:1m; }\n"
                            " server {\n ssl_session_cache shared:s:2m; }\n}"),
                      "test.conf:4: ",
                      "the size 2097152 of session cache \"s\" conflicts with the size 1048576 "
                      "given on line 2 of test.conf");
}

TEST_F(ConfigTest, TlsListenSslWithInheritedCertificate) {
  auto c = ok(R"(http {
  ssl_certificate a.crt;
  ssl_certificate_key a.key;
  server { listen 443 ssl; listen 80; }
  server { listen 443 ssl; listen [::]:443 ssl; server_name b.example; }
  server { listen 127.0.0.1:443; }
})");
  EXPECT_TRUE(c->http.servers[0].listen[0].ssl);
  EXPECT_FALSE(c->http.servers[0].listen[1].ssl);
  EXPECT_TRUE(c->http.servers[1].listen[1].ssl);
  // Another address on the same port is another socket: it may be plain.
  EXPECT_FALSE(c->http.servers[2].listen[0].ssl);
}

TEST_F(ConfigTest, TlsSslOffIsDeprecatedButAccepted) {
  auto c = ok("http {\n server {\n  ssl off;\n }\n}");
  ASSERT_EQ(c->warnings.size(), 1u);
  EXPECT_EQ(c->warnings[0].substr(0, 12), "test.conf:3:");
  EXPECT_NE(c->warnings[0].find("\"ssl\" directive is deprecated"), std::string::npos);
}

TEST_F(ConfigTest, TlsMixedListenAcrossServers) {
  EXPECT_CONFIG_ERROR(error("http {\n server { listen 443 ssl; " + std::string(kCert) +
                            " }\n server {\n  listen 0.0.0.0:443;\n }\n}"),
                      "test.conf:4: ", "ssl and non-ssl listen on the same address 0.0.0.0:443");
  EXPECT_CONFIG_ERROR(error("http {\n server { listen [::1]:8443; }\n"
                            " server { " +
                            std::string(kCert) + "\n  listen [::1]:8443 ssl; }\n}"),
                      "test.conf:4: ", "ssl and non-ssl listen on the same address [::1]:8443");
}

TEST_F(ConfigTest, TlsNoCertificateForListenSsl) {
  EXPECT_CONFIG_ERROR(
      error("http {\n server {\n  server_name a;\n  listen 443 ssl;\n }\n}"),
      "test.conf:4: ", "no \"ssl_certificate\" is defined for the \"listen ... ssl\" directive");
  // A key alone is no certificate: the key is reported first.
  EXPECT_CONFIG_ERROR(error("http {\n server {\n  listen 443 ssl;\n  ssl_certificate_key x.key;\n"
                            " }\n}"),
                      "test.conf:4: ", "no \"ssl_certificate\" is defined for certificate key");
}

TEST_F(ConfigTest, TlsErrorInIncludedFileNamesThatFile) {
  write("sites/a.conf", "server {\n  listen 8443 ssl;\n}\n");
  EXPECT_CONFIG_ERROR(error("http {\n include sites/*.conf;\n}"), dir_ + "/sites/a.conf:2: ",
                      "no \"ssl_certificate\" is defined for the \"listen ... ssl\" directive");
}

struct BadTlsCase {
  const char* name;
  const char* text;
  const char* where;  // expected message prefix
  const char* what;   // expected substring
};

// kBadTlsCases are parsed as "test.conf"; line numbers count from the first line of |text|.
const BadTlsCase kBadTlsCases[] = {
    // Certificates and keys must pair up.
    {"CertificateWithoutKey",
     "http {\n server {\n  ssl_certificate a.crt;\n  ssl_certificate_key a.key;\n"
     "  ssl_certificate b.crt;\n }\n}",
     "test.conf:5: ", R"(no "ssl_certificate_key" is defined for certificate ")"},
    {"KeyWithoutCertificate",
     "http {\n server {\n  ssl_certificate_key a.key;\n  ssl_certificate a.crt;\n"
     "  ssl_certificate_key b.key;\n }\n}",
     "test.conf:5: ", R"(no "ssl_certificate" is defined for certificate key ")"},
    {"HttpCertificateWithoutKey", "http {\n ssl_certificate a.crt;\n server { }\n}",
     "test.conf:2: ", R"(no "ssl_certificate_key" is defined for certificate ")"},

    // Not allowed in location or main.
    {"CertificateInLocation", "http { server { location / {\n ssl_certificate a.crt; } } }",
     "test.conf:2: ", "\"ssl_certificate\" directive is not allowed here"},
    {"KeyInLocation", "http { server { location / {\n\n ssl_certificate_key a.key; } } }",
     "test.conf:3: ", "\"ssl_certificate_key\" directive is not allowed here"},
    {"ProtocolsInLocation", "http { server { location / {\n ssl_protocols TLSv1.3; } } }",
     "test.conf:2: ", "\"ssl_protocols\" directive is not allowed here"},
    {"CiphersInLocation", "http { server { location / {\n ssl_ciphers HIGH; } } }",
     "test.conf:2: ", "\"ssl_ciphers\" directive is not allowed here"},
    {"ConfCommandInLocation", "http { server { location / {\n ssl_conf_command a b; } } }",
     "test.conf:2: ", "\"ssl_conf_command\" directive is not allowed here"},
    {"EcdhCurveInLocation", "http { server { location / {\n ssl_ecdh_curve auto; } } }",
     "test.conf:2: ", "\"ssl_ecdh_curve\" directive is not allowed here"},
    {"PreferInLocation", "http { server { location / {\n ssl_prefer_server_ciphers on; } } }",
     "test.conf:2: ", "\"ssl_prefer_server_ciphers\" directive is not allowed here"},
    {"CacheInLocation", "http { server { location / {\n ssl_session_cache off; } } }",
     "test.conf:2: ", "\"ssl_session_cache\" directive is not allowed here"},
    {"TimeoutInLocation", "http { server { location / {\n ssl_session_timeout 1m; } } }",
     "test.conf:2: ", "\"ssl_session_timeout\" directive is not allowed here"},
    {"TicketsInLocation", "http { server { location / {\n ssl_session_tickets on; } } }",
     "test.conf:2: ", "\"ssl_session_tickets\" directive is not allowed here"},
    {"TicketKeyInLocation", "http { server { location / {\n ssl_session_ticket_key k; } } }",
     "test.conf:2: ", "\"ssl_session_ticket_key\" directive is not allowed here"},
    {"HandshakeTimeoutInLocation", "http { server { location / {\n ssl_handshake_timeout 5s; } } }",
     "test.conf:2: ", "\"ssl_handshake_timeout\" directive is not allowed here"},
    {"SslInLocation", "http { server { location / {\n ssl off; } } }",
     "test.conf:2: ", "\"ssl\" directive is not allowed here"},
    {"CertificateInMain", "\nssl_certificate a.crt;",
     "test.conf:2: ", "\"ssl_certificate\" directive is not allowed here"},

    // `ssl on`.
    {"SslOn", "http {\n server {\n  ssl on;\n }\n}",
     "test.conf:3: ", R"("ssl on" directive is not supported: use the "ssl" parameter)"},
    {"SslBadFlag", "http { ssl yes; }", "test.conf:1: ", R"(invalid value "yes" in "ssl")"},

    // Values.
    {"UnknownProtocol", "http {\n ssl_protocols TLSv1.2 TLSv1.4;\n}", "test.conf:2: ",
     R"(invalid value "TLSv1.4" in "ssl_protocols" directive, expecting TLSv1.2 or TLSv1.3)"},
    {"ProtocolsNone", "http { ssl_protocols; }",
     "test.conf:1: ", "invalid number of arguments in \"ssl_protocols\" directive"},
    {"ProtocolsTwice", "http {\n ssl_protocols TLSv1.2;\n ssl_protocols TLSv1.3;\n}",
     "test.conf:3: ", "\"ssl_protocols\" directive is duplicate"},
    {"CertificateVariable", "http { server {\n ssl_certificate $ssl_server_name.crt; } }",
     "test.conf:2: ", "variables in \"ssl_certificate\" are not supported"},
    {"CertificateData", "http { ssl_certificate data:-----BEGIN; }",
     "test.conf:1: ", R"(inline "data:" "ssl_certificate" is not supported)"},
    {"KeyEngine", "http { ssl_certificate_key engine:pkcs11:id; }",
     "test.conf:1: ", R"("engine:" keys in "ssl_certificate_key" are not supported)"},
    {"CertificateEmpty", "http { ssl_certificate \"\"; }",
     "test.conf:1: ", R"(invalid value "" in "ssl_certificate" directive, expecting a path)"},
    {"CertificateTwoArgs", "http { ssl_certificate a b; }",
     "test.conf:1: ", "invalid number of arguments in \"ssl_certificate\" directive"},
    {"CiphersEmpty", "http { ssl_ciphers \"\"; }",
     "test.conf:1: ", R"(invalid value "" in "ssl_ciphers")"},
    {"ConfCommandOneArg", "http { ssl_conf_command Options; }",
     "test.conf:1: ", "invalid number of arguments in \"ssl_conf_command\" directive"},
    {"ConfCommandEmptyName", "http { ssl_conf_command \"\" x; }",
     "test.conf:1: ", R"(invalid value "" in "ssl_conf_command")"},
    {"EcdhCurveEmptyPart", "http { ssl_ecdh_curve X25519::prime256v1; }",
     "test.conf:1: ", R"(invalid value "X25519::prime256v1" in "ssl_ecdh_curve")"},
    {"EcdhCurveTrailingColon", "http { ssl_ecdh_curve X25519:; }",
     "test.conf:1: ", R"(invalid value "X25519:" in "ssl_ecdh_curve")"},
    {"PreferBadFlag", "http { ssl_prefer_server_ciphers yes; }",
     "test.conf:1: ", R"(invalid value "yes" in "ssl_prefer_server_ciphers" directive)"},
    {"TicketsBadFlag", "http {\n ssl_session_tickets 1;\n}",
     "test.conf:2: ", R"(invalid value "1" in "ssl_session_tickets" directive)"},
    {"SessionTimeoutBad", "http { ssl_session_timeout 5x; }",
     "test.conf:1: ", R"(invalid value "5x" in "ssl_session_timeout")"},
    {"HandshakeTimeoutBad", "http { ssl_handshake_timeout fast; }",
     "test.conf:1: ", R"(invalid value "fast" in "ssl_handshake_timeout")"},
    {"TicketKeyVariable", "http { ssl_session_ticket_key $x; }",
     "test.conf:1: ", "variables in \"ssl_session_ticket_key\" are not supported"},

    // ssl_session_cache forms.
    {"CacheUnknown", "http {\n ssl_session_cache on;\n}", "test.conf:2: ",
     "invalid value \"on\" in \"ssl_session_cache\" directive, expecting off, none, builtin[:N] "
     "or shared:NAME:SIZE"},
    {"CacheNoName", "http { ssl_session_cache shared::1m; }",
     "test.conf:1: ", R"(invalid value "shared::1m" in "ssl_session_cache")"},
    {"CacheNoSize", "http { ssl_session_cache shared:x; }",
     "test.conf:1: ", R"(invalid value "shared:x" in "ssl_session_cache")"},
    {"CacheBadSize", "http { ssl_session_cache shared:x:lots; }",
     "test.conf:1: ", R"(invalid value "shared:x:lots" in "ssl_session_cache")"},
    {"CacheEmptySize", "http { ssl_session_cache shared:x:; }",
     "test.conf:1: ", R"(invalid value "shared:x:" in "ssl_session_cache")"},
    {"CacheTooSmall", "http { ssl_session_cache shared:x:1k; }",
     "test.conf:1: ", "session cache \"shared:x:1k\" is too small"},
    {"CacheBuiltinBad", "http { ssl_session_cache builtin:many; }",
     "test.conf:1: ", R"(invalid value "builtin:many" in "ssl_session_cache")"},
    {"CacheBuiltinZero", "http { ssl_session_cache builtin:0; }",
     "test.conf:1: ", R"(invalid value "builtin:0" in "ssl_session_cache")"},
    {"CacheThreeArgs", "http { ssl_session_cache off none builtin; }",
     "test.conf:1: ", "invalid number of arguments in \"ssl_session_cache\" directive"},
    {"CacheTwice", "http {\n ssl_session_cache off;\n ssl_session_cache none;\n}",
     "test.conf:3: ", "\"ssl_session_cache\" directive is duplicate"},

    // listen.
    {"ListenHttp2StillUnsupported", "http { server { listen 443 ssl http2; } }",
     "test.conf:1: ", R"(the "http2" parameter of "listen" is not supported yet)"},
    {"ListenQuicStillUnsupported", "http { server { listen 443 quic; } }",
     "test.conf:1: ", R"(the "quic" parameter of "listen" is not supported yet)"},
    {"ListenProxyProtocolStillUnsupported", "http { server { listen 443 proxy_protocol; } }",
     "test.conf:1: ", R"(the "proxy_protocol" parameter of "listen" is not supported yet)"},
    {"DuplicateSslListenInServer",
     "http { server {\n ssl_certificate a; ssl_certificate_key b;\n listen 443 ssl;\n"
     " listen *:443 ssl;\n} }",
     "test.conf:4: ", "a duplicate listen 0.0.0.0:443"},
};

class BadTlsConfigTest : public ConfigTest, public ::testing::WithParamInterface<BadTlsCase> {};

TEST_P(BadTlsConfigTest, ReportsFileLineAndReason) {
  const BadTlsCase& c = GetParam();
  EXPECT_CONFIG_ERROR(error(c.text), c.where, c.what);
}

INSTANTIATE_TEST_SUITE_P(TlsErrors, BadTlsConfigTest, ::testing::ValuesIn(kBadTlsCases),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace accelgate::config

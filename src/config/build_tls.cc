// The ssl_* directives of http and server blocks, their http -> server merge, and the session
// cache checks that span servers. Files named here (certificates, keys, ticket keys) are only
// resolved; src/tls opens and checks them when it builds the SSL_CTX, naming the directive's line.

#include <strings.h>

#include <algorithm>
#include <map>

#include "builder.h"
#include "units.h"

namespace accelgate::config {
namespace {

using SessionCache = TlsSettings::SessionCache;

// kMinSessionCacheSize is nginx's smallest shared cache (8 pages of 4 KiB).
constexpr uint64_t kMinSessionCacheSize = uint64_t{32} * 1024;
// kSessionBytes is what one cached session costs, as src/tls sizes the cache (nginx: 1m holds
// about 4000 sessions); `builtin:N` becomes N sessions' worth of bytes.
constexpr uint64_t kSessionBytes = 256;
// kBuiltinSessions is OpenSSL's default cache size, nginx's for a bare `builtin`.
constexpr uint64_t kBuiltinSessions = 20480;

// tls_draft is the draft of the block |d| stands in, with |d| noted as its first ssl_* directive.
TlsDraft& tls_draft(Builder& b, const Directive& d) {
  TlsDraft& tls = b.tls();
  if (!tls.where) tls.where = d.where;
  return tls;
}

// file_arg is a certificate or key path: `data:` (inline PEM) and `engine:` keys are refused.
std::string file_arg(Builder& b, const Directive& d) {
  const std::string& file = d.args[0];
  if (file.starts_with("data:")) {
    fail(d.where, "inline \"data:\" " + quote(d.name) + " is not supported: give a file");
  }
  if (file.starts_with("engine:")) {
    fail(d.where, "\"engine:\" keys in " + quote(d.name) + " are not supported");
  }
  return conf_path_arg(b, d, 0);
}

void ssl_certificate(Builder& b, const Directive& d) {
  auto& list = tls_draft(b, d).certificates;
  if (!list) list.emplace();
  list->push_back({file_arg(b, d), d.where});
}

void ssl_certificate_key(Builder& b, const Directive& d) {
  auto& list = tls_draft(b, d).keys;
  if (!list) list.emplace();
  list->push_back({file_arg(b, d), d.where});
}

void ssl_protocols(Builder& b, const Directive& d) {
  uint32_t protocols = 0;
  for (const std::string& arg : d.args) {
    uint32_t bit = 0;
    // nginx compares the names without regard to case.
    if (::strcasecmp(arg.c_str(), "TLSv1.2") == 0) {
      bit = kTlsV12;
    } else if (::strcasecmp(arg.c_str(), "TLSv1.3") == 0) {
      bit = kTlsV13;
    } else if (::strcasecmp(arg.c_str(), "SSLv2") == 0 || ::strcasecmp(arg.c_str(), "SSLv3") == 0 ||
               ::strcasecmp(arg.c_str(), "TLSv1") == 0 ||
               ::strcasecmp(arg.c_str(), "TLSv1.1") == 0) {
      fail(d.where, "the protocol " + quote(arg) +
                        " in \"ssl_protocols\" is not supported: TLS 1.2 or later only");
    } else {
      invalid_value(d, arg, "expecting TLSv1.2 or TLSv1.3");
    }
    if ((protocols & bit) != 0) b.warn(d.where, "duplicate value " + quote(arg));
    protocols |= bit;
  }
  tls_draft(b, d).protocols = protocols;
}

void ssl_ciphers(Builder& b, const Directive& d) {
  if (d.args[0].empty()) invalid_value(d, d.args[0], "expecting an OpenSSL cipher list");
  tls_draft(b, d).ciphers = d.args[0];
}

void ssl_conf_command(Builder& b, const Directive& d) {
  if (d.args[0].empty()) invalid_value(d, d.args[0], "expecting a command name");
  auto& list = tls_draft(b, d).conf_commands;
  if (!list) list.emplace();
  list->emplace_back(d.args[0], d.args[1]);
}

void ssl_ecdh_curve(Builder& b, const Directive& d) {
  const std::string& curves = d.args[0];
  if (curves.empty() || curves.front() == ':' || curves.back() == ':' ||
      curves.find("::") != std::string::npos) {
    invalid_value(d, curves, "expecting \"auto\" or curve names separated by ':'");
  }
  tls_draft(b, d).ecdh_curve = curves;
}

void ssl_prefer_server_ciphers(Builder& b, const Directive& d) {
  tls_draft(b, d).prefer_server_ciphers = flag_arg(d, 0);
}

// ssl_session_cache follows nginx: the arguments are read in order, `off` and `none` win over a
// cache given with them, and `shared:` wins over `builtin`.
void ssl_session_cache(Builder& b, const Directive& d) {
  std::optional<SessionCache> off_or_none;
  std::optional<TlsDraft::SessionCache> shared;
  std::optional<uint64_t> builtin_sessions;
  for (const std::string& arg : d.args) {
    if (arg == "off") {
      off_or_none = SessionCache::kOff;
    } else if (arg == "none") {
      off_or_none = SessionCache::kNone;
    } else if (arg == "builtin") {
      builtin_sessions = kBuiltinSessions;
    } else if (arg.starts_with("builtin:")) {
      auto n = parse_number(std::string_view(arg).substr(8));
      if (!n || *n == 0 || *n > UINT32_MAX) {
        invalid_value(d, arg, "expecting builtin:NUMBER (of sessions)");
      }
      builtin_sessions = *n;
    } else if (arg.starts_with("shared:")) {
      size_t colon = arg.find(':', 7);
      std::string name = arg.substr(7, colon == std::string::npos ? std::string::npos : colon - 7);
      if (name.empty() || colon == std::string::npos) {
        invalid_value(d, arg, "expecting shared:NAME:SIZE");
      }
      auto size = parse_size(std::string_view(arg).substr(colon + 1));
      if (!size) invalid_value(d, arg, "expecting shared:NAME:SIZE");
      if (*size < kMinSessionCacheSize) {
        fail(d.where, "session cache " + quote(arg) + " is too small (at least 32k)");
      }
      shared = TlsDraft::SessionCache{SessionCache::kShared, name, *size, false, d.where};
    } else {
      invalid_value(d, arg, "expecting off, none, builtin[:N] or shared:NAME:SIZE");
    }
  }
  TlsDraft::SessionCache cache;
  cache.where = d.where;
  if (off_or_none) {
    cache.kind = *off_or_none;
  } else if (shared) {
    cache = *shared;
  } else {
    // One cache serves every worker thread, so `builtin` is a shared cache of that many sessions.
    cache = TlsDraft::SessionCache{SessionCache::kShared, "builtin",
                                   *builtin_sessions * kSessionBytes, true, d.where};
  }
  tls_draft(b, d).session_cache = std::move(cache);
}

void ssl_session_timeout(Builder& b, const Directive& d) {
  tls_draft(b, d).session_timeout = time_arg(d, 0);
}

void ssl_session_tickets(Builder& b, const Directive& d) {
  tls_draft(b, d).session_tickets = flag_arg(d, 0);
}

void ssl_session_ticket_key(Builder& b, const Directive& d) {
  auto& list = tls_draft(b, d).session_ticket_keys;
  if (!list) list.emplace();
  list->push_back(conf_path_arg(b, d, 0));
  tls_draft(b, d).session_ticket_key_where.push_back(d.where);
}

void ssl_handshake_timeout(Builder& b, const Directive& d) {
  tls_draft(b, d).handshake_timeout = time_arg(d, 0);
}

// ssl is nginx's `ssl on|off;`, deprecated since 1.15.0 and gone in 1.25.1.
void ssl(Builder& b, const Directive& d) {
  if (flag_arg(d, 0)) {
    fail(d.where,
         "the \"ssl on\" directive is not supported: use the \"ssl\" parameter of the "
         "\"listen\" directive (listen 443 ssl;)");
  }
  b.warn(d.where, R"(the "ssl" directive is deprecated and "ssl off" does nothing; remove it)");
}

template <typename T>
void inherit(std::optional<T>& inner, const std::optional<T>& outer) {
  if (!inner && outer) inner = outer;
}

using F = DirectiveSpec::Flags;
constexpr uint32_t kHttpServer = kHttp | kServer;

constexpr DirectiveSpec kTlsDirectives[] = {
    {"ssl_certificate", kHttpServer, 1, 1, F::kNone, ssl_certificate},
    {"ssl_certificate_key", kHttpServer, 1, 1, F::kNone, ssl_certificate_key},
    {"ssl_protocols", kHttpServer, 1, kAnyArgs, F::kOnce, ssl_protocols},
    {"ssl_ciphers", kHttpServer, 1, 1, F::kOnce, ssl_ciphers},
    {"ssl_conf_command", kHttpServer, 2, 2, F::kNone, ssl_conf_command},
    {"ssl_ecdh_curve", kHttpServer, 1, 1, F::kOnce, ssl_ecdh_curve},
    {"ssl_prefer_server_ciphers", kHttpServer, 1, 1, F::kOnce, ssl_prefer_server_ciphers},
    {"ssl_session_cache", kHttpServer, 1, 2, F::kOnce, ssl_session_cache},
    {"ssl_session_timeout", kHttpServer, 1, 1, F::kOnce, ssl_session_timeout},
    {"ssl_session_tickets", kHttpServer, 1, 1, F::kOnce, ssl_session_tickets},
    {"ssl_session_ticket_key", kHttpServer, 1, 1, F::kNone, ssl_session_ticket_key},
    {"ssl_handshake_timeout", kHttpServer, 1, 1, F::kOnce, ssl_handshake_timeout},
    {"ssl", kHttpServer, 1, 1, F::kOnce, ssl},
};

}  // namespace

std::span<const DirectiveSpec> tls_directives() { return kTlsDirectives; }

TlsSettings finish_tls(TlsDraft& inner, const TlsDraft& outer, const SourceLocation& server_where) {
  // As in nginx, certificates and keys are inherited as two lists, each replaced as a whole by a
  // block that gives any; the n-th certificate then pairs with the n-th key.
  inherit(inner.where, outer.where);
  inherit(inner.certificates, outer.certificates);
  inherit(inner.keys, outer.keys);
  inherit(inner.protocols, outer.protocols);
  inherit(inner.ciphers, outer.ciphers);
  inherit(inner.conf_commands, outer.conf_commands);
  inherit(inner.ecdh_curve, outer.ecdh_curve);
  inherit(inner.prefer_server_ciphers, outer.prefer_server_ciphers);
  inherit(inner.session_cache, outer.session_cache);
  inherit(inner.session_timeout, outer.session_timeout);
  inherit(inner.session_tickets, outer.session_tickets);
  if (!inner.session_ticket_keys) inner.session_ticket_key_where = outer.session_ticket_key_where;
  inherit(inner.session_ticket_keys, outer.session_ticket_keys);
  inherit(inner.handshake_timeout, outer.handshake_timeout);

  TlsSettings t;
  t.where = inner.where ? *inner.where : server_where;
  size_t certificates = inner.certificates ? inner.certificates->size() : 0;
  size_t keys = inner.keys ? inner.keys->size() : 0;
  if (keys < certificates) {
    const TlsDraft::Path& cert = (*inner.certificates)[keys];
    fail(cert.where,
         "no \"ssl_certificate_key\" is defined for certificate " + quote(cert.path) +
             R"( (each "ssl_certificate" needs its own "ssl_certificate_key", in the same order))");
  }
  if (certificates < keys) {
    const TlsDraft::Path& key = (*inner.keys)[certificates];
    fail(key.where, "no \"ssl_certificate\" is defined for certificate key " + quote(key.path) +
                        R"( (each "ssl_certificate_key" needs its own "ssl_certificate"))");
  }
  for (size_t i = 0; i < certificates; ++i) {
    const TlsDraft::Path& cert = (*inner.certificates)[i];
    t.certificates.push_back({cert.path, (*inner.keys)[i].path, cert.where});
  }
  if (inner.protocols) t.protocols = *inner.protocols;
  if (inner.ciphers) t.ciphers = *inner.ciphers;
  if (inner.conf_commands) t.conf_commands = *inner.conf_commands;
  if (inner.ecdh_curve) t.ecdh_curve = *inner.ecdh_curve;
  if (inner.prefer_server_ciphers) t.prefer_server_ciphers = *inner.prefer_server_ciphers;
  if (inner.session_cache) {
    t.session_cache = inner.session_cache->kind;
    t.session_cache_name = inner.session_cache->name;
    t.session_cache_size = inner.session_cache->size;
  }
  if (inner.session_timeout) t.session_timeout = *inner.session_timeout;
  if (inner.session_tickets) t.session_tickets = *inner.session_tickets;
  if (inner.session_ticket_keys) {
    t.session_ticket_keys = *inner.session_ticket_keys;
    t.session_ticket_key_where = inner.session_ticket_key_where;
  }
  if (inner.handshake_timeout) t.handshake_timeout = *inner.handshake_timeout;
  return t;
}

// check_session_caches runs after finish_tls has merged every server's draft (http_.servers[i]
// is config_->http.servers[i]). A cache name is one cache, so it has one size: `builtin` caches
// take the largest size asked for, and two `shared:` caches of one name with different sizes are
// an error, as nginx's shared memory zones are.
void Builder::check_session_caches() {
  auto& servers = config_->http.servers;
  uint64_t builtin_size = 0;
  for (const ServerDraft& sd : http_.servers) {
    const auto& cache = sd.tls.session_cache;
    if (cache && cache->kind == SessionCache::kShared && cache->builtin) {
      builtin_size = std::max(builtin_size, cache->size);
    }
  }
  std::map<std::string, const TlsDraft::SessionCache*> by_name;
  for (size_t i = 0; i < http_.servers.size(); ++i) {
    const auto& cache = http_.servers[i].tls.session_cache;
    if (!cache || cache->kind != SessionCache::kShared) continue;
    uint64_t size = cache->builtin ? builtin_size : cache->size;
    servers[i].tls.session_cache_size = size;
    auto [it, first] = by_name.emplace(cache->name, &*cache);
    uint64_t other = it->second->builtin ? builtin_size : it->second->size;
    if (!first && other != size) {
      fail(cache->where,
           "the size " + std::to_string(size) + " of session cache " + quote(cache->name) +
               " conflicts with the size " + std::to_string(other) + " given on line " +
               std::to_string(it->second->where.line) + " of " + it->second->where.file);
    }
  }
}

}  // namespace accelgate::config

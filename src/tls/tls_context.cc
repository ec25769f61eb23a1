#include "accelgate/tls/tls_context.h"

#include <openssl/conf.h>
#include <openssl/err.h>
#include <openssl/provider.h>
#include <sys/stat.h>

#include <atomic>
#include <cstring>
#include <mutex>

#include "accelgate/provider/provider.h"
#include "accelgate/tls/tls_transport.h"
#include "async_test_hook.h"
#include "ticket_keys.h"

namespace accelgate::tls {
namespace {

std::string where_of(const config::SourceLocation& where) {
  return where.file + ":" + std::to_string(where.line) + ": ";
}

// openssl_error drains OpenSSL's error queue into one readable line.
std::string openssl_error() {
  std::string out;
  unsigned long e;
  while ((e = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

// select_alpn picks http/1.1 when the client offers it (RFC 7301 §3.2: no overlap is a fatal
// no_application_protocol alert, as nginx answers).
int select_alpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                unsigned int inlen, void*) {
  static const unsigned char kProtocols[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, outlen, kProtocols, sizeof(kProtocols), in, inlen) !=
      OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

// switch_server_by_sni moves the handshake to the SSL_CTX of the server named in the client's
// SNI (certificates and settings of that server); unknown names keep the default server's.
int switch_server_by_sni(SSL* ssl, int*, void*) {
  const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  if (name == nullptr) return SSL_TLSEXT_ERR_NOACK;
  TlsTransport* transport = TlsTransport::from_ssl(ssl);
  if (transport == nullptr) return SSL_TLSEXT_ERR_NOACK;
  SSL_CTX* ctx = transport->resolve_server_name(name);
  if (ctx != nullptr && ctx != SSL_get_SSL_CTX(ssl)) {
    SSL_set_SSL_CTX(ssl, ctx);
    // SSL_set_SSL_CTX copies the certificates but not the options and verify settings; the
    // protocol limits and cipher list must follow the chosen server too.
    SSL_clear_options(ssl, SSL_get_options(ssl) ^ SSL_CTX_get_options(ctx));
    SSL_set_options(ssl, SSL_CTX_get_options(ctx));
    SSL_set_min_proto_version(ssl, SSL_CTX_get_min_proto_version(ctx));
    SSL_set_max_proto_version(ssl, SSL_CTX_get_max_proto_version(ctx));
  }
  return SSL_TLSEXT_ERR_OK;
}

Status load_certificate(SSL_CTX* ctx, const config::CertificateKey& pair,
                        std::vector<std::string>* warnings) {
  std::string where = where_of(pair.where);
  if (SSL_CTX_use_certificate_chain_file(ctx, pair.certificate.c_str()) != 1) {
    return Error{where + "cannot load certificate \"" + pair.certificate +
                 "\": " + openssl_error()};
  }
  struct stat st {};
  if (::stat(pair.key.c_str(), &st) == 0 && (st.st_mode & S_IROTH)) {
    warnings->push_back(where + "private key \"" + pair.key +
                        "\" is readable by every user; make it readable by its owner only");
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, pair.key.c_str(), SSL_FILETYPE_PEM) != 1) {
    return Error{where + "cannot load certificate key \"" + pair.key + "\": " + openssl_error()};
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return Error{where + "certificate \"" + pair.certificate + "\" does not match key \"" +
                 pair.key + "\": " + openssl_error()};
  }
  return {};
}

Status apply_conf_commands(SSL_CTX* ctx, const config::TlsSettings& tls) {
  if (tls.conf_commands.empty()) return {};
  SSL_CONF_CTX* cctx = SSL_CONF_CTX_new();
  SSL_CONF_CTX_set_flags(cctx, SSL_CONF_FLAG_FILE | SSL_CONF_FLAG_SERVER |
                                   SSL_CONF_FLAG_CERTIFICATE | SSL_CONF_FLAG_SHOW_ERRORS);
  SSL_CONF_CTX_set_ssl_ctx(cctx, ctx);
  Status status;
  for (const auto& [name, value] : tls.conf_commands) {
    if (SSL_CONF_cmd(cctx, name.c_str(), value.c_str()) <= 0) {
      status = Error{where_of(tls.where)
                         .append("ssl_conf_command \"")
                         .append(name)
                         .append("\" \"")
                         .append(value)
                         .append("\" failed: ")
                         .append(openssl_error())};
      break;
    }
  }
  if (status && SSL_CONF_CTX_finish(cctx) != 1) {
    status = Error{where_of(tls.where) + "ssl_conf_command failed: " + openssl_error()};
  }
  SSL_CONF_CTX_free(cctx);
  return status;
}

Result<SSL_CTX*> build_context(const config::Server& server, std::vector<std::string>* warnings,
                               std::unique_ptr<TicketKeys>* keys_out) {
  const config::TlsSettings& tls = server.tls;
  std::string where = where_of(tls.where);
  SSL_CTX* ctx = SSL_CTX_new_ex(server_lib_ctx(), nullptr, TLS_server_method());
  if (ctx == nullptr) return Error{where + "SSL_CTX_new_ex() failed: " + openssl_error()};
  auto fail = [ctx](Error e) -> Result<SSL_CTX*> {
    SSL_CTX_free(ctx);
    ERR_clear_error();
    return e;
  };

  // Every handshake may be paused by an offload engine (DESIGN.md, "TLS and the provider").
  // SSL_MODE_NO_AUTO_CHAIN: the chain sent is the one in the ssl_certificate file, as nginx
  // sends it; without it OpenSSL builds a chain from the store in every handshake.
  SSL_CTX_set_mode(ctx, SSL_MODE_ASYNC | SSL_MODE_RELEASE_BUFFERS | SSL_MODE_NO_AUTO_CHAIN |
                            SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_ENABLE_PARTIAL_WRITE);
  // Renegotiation is refused (OpenSSL 3 refuses client-initiated renegotiation by default;
  // SSL_OP_NO_RENEGOTIATION refuses it in every direction).
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  if (tls.prefer_server_ciphers) SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
  // Read whole socket buffers instead of a record header and then its body: a handshake takes
  // 3 reads instead of 10 (measured with strace -c; nginx reads ahead too).
  SSL_CTX_set_read_ahead(ctx, 1);
  SSL_CTX_set_min_proto_version(
      ctx, (tls.protocols & config::kTlsV12) ? TLS1_2_VERSION : TLS1_3_VERSION);
  SSL_CTX_set_max_proto_version(
      ctx, (tls.protocols & config::kTlsV13) ? TLS1_3_VERSION : TLS1_2_VERSION);
  if (SSL_CTX_set_cipher_list(ctx, tls.ciphers.c_str()) != 1) {
    return fail(Error{where + "invalid ssl_ciphers \"" + tls.ciphers + "\": " + openssl_error()});
  }
  if (tls.ecdh_curve != "auto" && SSL_CTX_set1_groups_list(ctx, tls.ecdh_curve.c_str()) != 1) {
    return fail(
        Error{where + "invalid ssl_ecdh_curve \"" + tls.ecdh_curve + "\": " + openssl_error()});
  }
  for (const config::CertificateKey& pair : tls.certificates) {
    if (Status st = load_certificate(ctx, pair, warnings); !st) return fail(st.error());
  }

  // Sessions. nginx's "none" lets clients believe sessions may be reused but stores nothing;
  // "off" says so; shared keeps OpenSSL's internal cache, which every worker thread uses.
  static const unsigned char kSessionContext[] = "accelgate";
  SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof(kSessionContext) - 1);
  switch (tls.session_cache) {
    case config::TlsSettings::SessionCache::kShared:
      SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
      // nginx's rule of thumb: one megabyte holds about 4000 sessions.
      SSL_CTX_sess_set_cache_size(
          ctx, static_cast<long>(std::max<uint64_t>(1, tls.session_cache_size / 256)));
      break;
    case config::TlsSettings::SessionCache::kNone:
    case config::TlsSettings::SessionCache::kOff:
      SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
      break;
  }
  SSL_CTX_set_timeout(ctx, static_cast<long>(tls.session_timeout.count() / 1000));
  if (!tls.session_tickets) {
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    if (tls.session_cache != config::TlsSettings::SessionCache::kShared) {
      SSL_CTX_set_num_tickets(ctx, 0);
    }
  } else if (!tls.session_ticket_keys.empty()) {
    auto keys = TicketKeys::load(tls.session_ticket_keys, tls.session_ticket_key_where);
    if (!keys) return fail(keys.error());
    if (Status st = (*keys)->install(ctx); !st) return fail(Error{where + st.error().message});
    *keys_out = std::move(*keys);
  }

  SSL_CTX_set_alpn_select_cb(ctx, select_alpn, nullptr);
  SSL_CTX_set_tlsext_servername_callback(ctx, switch_server_by_sni);
  if (Status st = apply_conf_commands(ctx, tls); !st) return fail(st.error());
  install_async_test_hook(ctx);
  return ctx;
}

}  // namespace

namespace {
std::atomic<bool> g_with_provider{false};
}  // namespace

void use_offload_provider(bool on) { g_with_provider = on; }

OSSL_LIB_CTX* server_lib_ctx() {
  static OSSL_LIB_CTX* ctx = [] {
    OSSL_LIB_CTX* c = OSSL_LIB_CTX_new();
    Status st = c == nullptr ? Status(Error{"OSSL_LIB_CTX_new() failed"}) : Status();
    if (st && g_with_provider) {
      st = provider::load_builtin(c);
    } else if (st && OSSL_PROVIDER_load(c, "default") == nullptr) {
      st = Error{"cannot load the default provider: " + openssl_error()};
    }
    if (!st) {
      // Without a library context no TLS can work at all: an impossible state on a sane system.
      std::fprintf(stderr, "accelgate: [emerg] cannot create the OpenSSL library context: %s\n",
                   st.error().message.c_str());
      std::abort();
    }
    return c;
  }();
  return ctx;
}

Result<std::shared_ptr<const TlsContexts>> TlsContexts::create(
    const std::shared_ptr<const config::Config>& config, std::vector<std::string>* warnings) {
  std::shared_ptr<TlsContexts> contexts(new TlsContexts());
  contexts->config_ = config;
  for (const config::Server& server : config->http.servers) {
    if (server.tls.certificates.empty()) continue;
    std::unique_ptr<TicketKeys> keys;
    auto ctx = build_context(server, warnings, &keys);
    if (!ctx) return ctx.error();
    contexts->contexts_.emplace(&server, *ctx);
    if (keys) contexts->ticket_keys_.push_back(std::move(keys));
  }
  return std::shared_ptr<const TlsContexts>(std::move(contexts));
}

TlsContexts::~TlsContexts() {
  for (auto& [server, ctx] : contexts_) SSL_CTX_free(ctx);
}

SSL_CTX* TlsContexts::for_server(const config::Server* server) const {
  auto it = contexts_.find(server);
  return it == contexts_.end() ? nullptr : it->second;
}

}  // namespace accelgate::tls

#pragma once

// TlsContexts: the SSL_CTXs of one configuration snapshot, one per server block that has
// certificates. Built on the main thread (start, reload, `accelgate -t`), then shared read-only
// by all workers; OpenSSL's SSL_CTX is safe to use from many threads once configured.
//
// Every SSL_CTX runs with SSL_MODE_ASYNC, in the server's own OSSL_LIB_CTX (not the global
// default one), so the offload provider can later be placed in front of the default provider.

#include <openssl/ssl.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "accelgate/common/result.h"
#include "accelgate/config/config.h"

namespace accelgate::tls {

// server_lib_ctx returns the process's OSSL_LIB_CTX for TLS, created on first use with the
// default provider loaded and, when use_offload_provider(true) was called before, the in-process
// `accelgate` provider in front of it (DESIGN.md, "TLS and the provider"). Never freed (it
// outlives every SSL_CTX).
OSSL_LIB_CTX* server_lib_ctx();
// use_offload_provider decides, before the first server_lib_ctx() call, whether private-key
// operations go through the offload provider (`crypto` other than `off`).
void use_offload_provider(bool on);

class TicketKeys;

class TlsContexts {
 public:
  // create builds an SSL_CTX for every server of |config| that has certificates. Errors name the
  // directive's file:line (a key that does not match its certificate, an unreadable file, a
  // ticket key file of the wrong size, a bad cipher list). Warnings (a world-readable key) are
  // appended to |warnings|.
  static Result<std::shared_ptr<const TlsContexts>> create(
      const std::shared_ptr<const config::Config>& config, std::vector<std::string>* warnings);
  ~TlsContexts();
  TlsContexts(const TlsContexts&) = delete;
  TlsContexts& operator=(const TlsContexts&) = delete;

  // for_server returns the SSL_CTX of |server|, or nullptr if it has no certificates.
  SSL_CTX* for_server(const config::Server* server) const;

 private:
  TlsContexts() = default;
  std::shared_ptr<const config::Config> config_;
  std::map<const config::Server*, SSL_CTX*> contexts_;
  std::vector<std::unique_ptr<TicketKeys>> ticket_keys_;
};

}  // namespace accelgate::tls

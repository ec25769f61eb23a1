#pragma once

// VirtualHosts is what a listening socket serves: the servers that listen on its address, from
// one configuration snapshot, with the default among them. A connection holds a
// shared_ptr<const VirtualHosts> for its whole life, which keeps its Config alive across reloads.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "accelgate/config/config.h"
#include "accelgate/tls/tls_context.h"

namespace accelgate::http {

struct VirtualHosts {
  std::shared_ptr<const config::Config> config;
  std::vector<const config::Server*> servers;  // in file order
  const config::Server* default_server = nullptr;
  std::string address;                          // "127.0.0.1:8080", for logs
  uint16_t port = 0;                            // the bound port (resolved when the config said 0)
  bool ssl = false;                             // `listen ... ssl`
  std::shared_ptr<const tls::TlsContexts> tls;  // with ssl: the snapshot's SSL_CTXs

  // find_server picks the server for a Host value (port and trailing dot ignored, case-folded):
  // exact name, then the longest leading wildcard, then the longest trailing wildcard, then the
  // default server (nginx's order, without regex names).
  const config::Server* find_server(std::string_view host) const;
};

// find_location picks the location for a decoded |path|: an exact match (`=`) first, then the
// longest prefix; the server's own settings when none matches.
const config::Location& find_location(const config::Server& server, std::string_view path);

}  // namespace accelgate::http

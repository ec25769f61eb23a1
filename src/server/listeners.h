#pragma once

// Listening sockets. Every configured address is bound once per worker with SO_REUSEPORT, so each
// worker accepts on its own socket and the kernel spreads connections (DESIGN.md, "Threads").

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "accelgate/common/result.h"
#include "accelgate/config/config.h"
#include "accelgate/http/virtual_hosts.h"

namespace accelgate::server {

// BoundAddress is one listen address with its sockets, fds[i] belonging to worker i.
struct BoundAddress {
  config::ListenAddress address;
  uint16_t port = 0;     // the real port (the kernel's choice when the config said 0)
  std::vector<int> fds;  // one per worker; the worker owns and closes its fd
};

// address_key is "host:port" as configured ("*:8080", "127.0.0.1:0", "[::1]:8443").
std::string address_key(const config::ListenAddress& address);

// bind_address creates |workers| SO_REUSEPORT sockets for |address|.
Result<BoundAddress> bind_address(const config::ListenAddress& address, int workers);

// build_virtual_hosts returns, for every listen address key of |config|, the servers that listen
// there with the default one.
// |tls| holds the SSL_CTXs of |config| (for addresses with `listen ... ssl`).
std::map<std::string, std::shared_ptr<http::VirtualHosts>> build_virtual_hosts(
    const std::shared_ptr<const config::Config>& config,
    const std::shared_ptr<const tls::TlsContexts>& tls);

}  // namespace accelgate::server

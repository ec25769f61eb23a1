#include "listeners.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace accelgate::server {

std::string address_key(const config::ListenAddress& address) {
  std::string host = address.host.empty() ? "*" : address.host;
  if (address.ipv6) host = "[" + host + "]";
  return host + ":" + std::to_string(address.port);
}

namespace {

Result<int> bind_one(const config::ListenAddress& address, uint16_t port) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  if (address.ipv6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    const char* host = address.host.empty() ? "::" : address.host.c_str();
    if (::inet_pton(AF_INET6, host, &in6->sin6_addr) != 1) {
      return Error{"invalid IPv6 address \"" + address.host + "\""};
    }
    len = sizeof(sockaddr_in6);
  } else {
    auto* in = reinterpret_cast<sockaddr_in*>(&ss);
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    if (address.host.empty()) {
      in->sin_addr.s_addr = htonl(INADDR_ANY);
    } else if (::inet_pton(AF_INET, address.host.c_str(), &in->sin_addr) != 1) {
      return Error{"invalid IPv4 address \"" + address.host + "\""};
    }
    len = sizeof(sockaddr_in);
  }
  int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return sys_error("socket()", errno);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  if (address.ipv6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) < 0 || ::listen(fd, address.backlog) < 0) {
    int err = errno;
    ::close(fd);
    return sys_error("bind() to " + address_key(address) + " failed (" + address.where.file + ":" +
                         std::to_string(address.where.line) + ")",
                     err);
  }
  return fd;
}

}  // namespace

Result<BoundAddress> bind_address(const config::ListenAddress& address, int workers) {
  BoundAddress bound;
  bound.address = address;
  bound.port = address.port;
  for (int i = 0; i < workers; ++i) {
    auto fd = bind_one(address, bound.port);
    if (!fd) {
      for (int open_fd : bound.fds) ::close(open_fd);
      return fd.error();
    }
    if (bound.port == 0) {
      // Port 0: the first socket gets the kernel's port, the others share it.
      sockaddr_storage ss{};
      socklen_t len = sizeof(ss);
      ::getsockname(*fd, reinterpret_cast<sockaddr*>(&ss), &len);
      bound.port = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                                  : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    }
    bound.fds.push_back(*fd);
  }
  return bound;
}

std::map<std::string, std::shared_ptr<http::VirtualHosts>> build_virtual_hosts(
    const std::shared_ptr<const config::Config>& config,
    const std::shared_ptr<const tls::TlsContexts>& tls) {
  std::map<std::string, std::shared_ptr<http::VirtualHosts>> out;
  for (const config::Server& server : config->http.servers) {
    for (const config::ListenAddress& listen : server.listen) {
      std::string key = address_key(listen);
      auto& hosts = out[key];
      if (!hosts) {
        hosts = std::make_shared<http::VirtualHosts>();
        hosts->config = config;
        hosts->address = key;
        hosts->port = listen.port;
        hosts->ssl = listen.ssl;
        hosts->tls = tls;
      }
      if (hosts->servers.empty() || hosts->servers.back() != &server) {
        hosts->servers.push_back(&server);
      }
      // nginx: the server marked default_server, else the first one listening there.
      if (listen.default_server || hosts->default_server == nullptr)
        hosts->default_server = &server;
    }
  }
  return out;
}

}  // namespace accelgate::server

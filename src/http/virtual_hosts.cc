#include "accelgate/http/virtual_hosts.h"

#include <cctype>

namespace accelgate::http {
namespace {

std::string normalise_host(std::string_view host) {
  // Strip the port: "[::1]:80" keeps its brackets, "example.com:80" loses ":80".
  if (!host.empty() && host.front() == '[') {
    size_t end = host.find(']');
    if (end != std::string_view::npos) host = host.substr(0, end + 1);
  } else if (size_t colon = host.rfind(':'); colon != std::string_view::npos) {
    host = host.substr(0, colon);
  }
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  std::string out(host);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

const config::Server* VirtualHosts::find_server(std::string_view host_header) const {
  if (host_header.empty() || servers.size() == 1) return default_server;
  std::string host = normalise_host(host_header);
  const config::Server* leading = nullptr;
  size_t leading_len = 0;
  const config::Server* trailing = nullptr;
  size_t trailing_len = 0;
  for (const config::Server* server : servers) {
    for (const config::ServerName& name : server->server_names) {
      switch (name.kind) {
        case config::ServerName::Kind::kExact:
          if (name.name == host) return server;
          break;
        case config::ServerName::Kind::kLeadingWildcard:
          // "*.example.com" and ".example.com" match "a.example.com"; the dot form also
          // matches "example.com" itself. name.name is "example.com".
          if ((ends_with(host, name.name) && host.size() > name.name.size() &&
               host[host.size() - name.name.size() - 1] == '.') ||
              (name.dot_form && host == name.name)) {
            if (name.name.size() > leading_len) {
              leading = server;
              leading_len = name.name.size();
            }
          }
          break;
        case config::ServerName::Kind::kTrailingWildcard:
          // "www.*": name.name is "www."
          if (host.size() > name.name.size() && host.compare(0, name.name.size(), name.name) == 0 &&
              name.name.size() > trailing_len) {
            trailing = server;
            trailing_len = name.name.size();
          }
          break;
      }
    }
  }
  if (leading) return leading;
  if (trailing) return trailing;
  return default_server;
}

const config::Location& find_location(const config::Server& server, std::string_view path) {
  const config::Location* best = nullptr;
  for (const config::Location& loc : server.locations) {
    if (loc.match == config::Location::Match::kExact) {
      if (loc.path == path) return loc;
      continue;
    }
    if (path.substr(0, loc.path.size()) == loc.path &&
        (!best || loc.path.size() > best->path.size())) {
      best = &loc;
    }
  }
  return best ? *best : server.fallback;
}

}  // namespace accelgate::http

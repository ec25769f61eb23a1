// `server { }`, `listen`, `server_name`, `location { }`, `return`, `metrics` and `stub_status`.

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>

#include "builder.h"
#include "units.h"

namespace accelgate::config {
namespace {

// kReturnVariables are the variables `return` text may hold; the http layer expands them.
constexpr std::string_view kReturnVariables[] = {
    "scheme", "host", "request_uri", "uri", "args", "server_name", "server_port", "remote_addr",
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

uint16_t listen_port(const Directive& d, const std::string& text) {
  auto port = parse_number(text);
  if (!port || *port > 65535) {
    fail(d.where, "invalid port in " + quote(d.args[0]) + " of the \"listen\" directive");
  }
  return static_cast<uint16_t>(*port);
}

// parse_listen_address fills |l| from `[addr:]port`, `addr`, `*:port` or `[ipv6][:port]`.
void parse_listen_address(const Directive& d, ListenAddress& l) {
  const std::string& text = d.args[0];
  if (text.starts_with("unix:")) {
    fail(d.where, "unix domain sockets in \"listen\" are not supported");
  }
  if (text.starts_with("[")) {
    size_t close = text.find(']');
    if (close == std::string::npos) {
      fail(d.where, "missing ']' in " + quote(text) + " of the \"listen\" directive");
    }
    std::string host = text.substr(1, close - 1);
    std::string rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') fail(d.where, "invalid address " + quote(text) + " in \"listen\"");
      l.port = listen_port(d, rest.substr(1));
    }
    in6_addr addr{};
    if (::inet_pton(AF_INET6, host.c_str(), &addr) != 1) {
      fail(d.where, "invalid IPv6 address " + quote(host) + " in \"listen\"");
    }
    char buf[INET6_ADDRSTRLEN];
    l.host = ::inet_ntop(AF_INET6, &addr, buf, sizeof buf);
    l.ipv6 = true;
    return;
  }
  std::string host;
  size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    if (!text.empty() &&
        std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      l.port = listen_port(d, text);
      return;
    }
    host = text;
  } else {
    host = text.substr(0, colon);
    if (host.find(':') != std::string::npos) {
      fail(d.where, R"(an IPv6 address in "listen" must be in brackets: "[)" + host + R"(]:port")");
    }
    l.port = listen_port(d, text.substr(colon + 1));
  }
  if (host == "*") return;
  if (lower(host) == "localhost") {
    l.host = "127.0.0.1";
    return;
  }
  in_addr addr{};
  if (::inet_pton(AF_INET, host.c_str(), &addr) != 1) {
    fail(d.where, "invalid host " + quote(host) +
                      R"( in "listen": use a numeric IPv4 address, [IPv6], "*" or localhost)");
  }
  char buf[INET_ADDRSTRLEN];
  l.host = ::inet_ntop(AF_INET, &addr, buf, sizeof buf);
  if (l.host == "0.0.0.0") l.host.clear();
}

void listen(Builder& b, const Directive& d) {
  ListenAddress l;
  l.where = d.where;
  parse_listen_address(d, l);
  for (size_t i = 1; i < d.args.size(); ++i) {
    const std::string& arg = d.args[i];
    if (arg == "default_server" || arg == "default") {
      l.default_server = true;
    } else if (arg == "reuseport") {
      l.reuseport = true;
    } else if (arg.starts_with("backlog=")) {
      auto n = parse_number(std::string_view(arg).substr(8));
      if (!n || *n < 1 || *n > INT32_MAX) invalid_value(d, arg, "expecting backlog=NUMBER");
      l.backlog = static_cast<int>(*n);
    } else if (arg == "ssl") {
      l.ssl = true;
    } else if (arg == "http2" || arg == "quic" || arg == "proxy_protocol") {
      fail(d.where, "the " + quote(arg) + " parameter of \"listen\" is not supported yet");
    } else {
      std::string name = arg.substr(0, arg.find('='));
      fail(d.where, "the " + quote(name) + " parameter of \"listen\" is not supported");
    }
  }
  b.server().server.listen.push_back(std::move(l));
}

void server_name(Builder& b, const Directive& d) {
  for (const std::string& arg : d.args) {
    if (arg.starts_with("~")) {
      fail(d.where,
           "regular expressions in \"server_name\" are not supported (" + quote(arg) + ")");
    }
    if (arg.find('$') != std::string::npos) {
      fail(d.where, "variables in \"server_name\" are not supported (" + quote(arg) + ")");
    }
    ServerName n;
    std::string name = lower(arg);
    if (name.starts_with("*.")) {
      n.kind = ServerName::Kind::kLeadingWildcard;
      n.name = name.substr(2);
    } else if (name.starts_with(".")) {
      n.kind = ServerName::Kind::kLeadingWildcard;
      n.name = name.substr(1);
      n.dot_form = true;
    } else if (name.ends_with(".*")) {
      n.kind = ServerName::Kind::kTrailingWildcard;
      n.name = name.substr(0, name.size() - 1);
    } else {
      n.name = name;
    }
    bool empty_wildcard = n.kind != ServerName::Kind::kExact && n.name.size() <= 1;
    if (empty_wildcard || n.name.find('*') != std::string::npos || n.name.starts_with(".")) {
      invalid_value(d, arg, "expecting a name, *.name, .name or name.*");
    }
    b.server().server.server_names.push_back(std::move(n));
  }
}

void server(Builder& b, const Directive& d) {
  auto& servers = b.http().servers;
  servers.emplace_back();
  servers.back().server.where = d.where;
  b.set_server(&servers.back());
  b.run_block(d, kServer);
  b.set_server(nullptr);
}

void location(Builder& b, const Directive& d) {
  if (b.context() == kLocation) fail(d.where, "nested locations are not supported");
  std::string modifier;
  std::string path;
  if (d.args.size() == 2) {
    modifier = d.args[0];
    path = d.args[1];
  } else {
    path = d.args[0];
    for (const char* m : {"^~", "~*", "=", "~", "@"}) {
      if (path.starts_with(m)) {
        modifier = m;
        path.erase(0, modifier.size());
        break;
      }
    }
  }
  Location::Match match = Location::Match::kPrefix;
  if (modifier == "=") {
    match = Location::Match::kExact;
  } else if (modifier == "^~") {
    match = Location::Match::kPrefixNoRegex;
  } else if (modifier == "~" || modifier == "~*") {
    fail(d.where,
         "regular expression locations (\"" + modifier + " " + path + "\") are not supported");
  } else if (modifier == "@") {
    fail(d.where, "named locations (\"@" + path + "\") are not supported");
  } else if (!modifier.empty()) {
    fail(d.where, "invalid location modifier " + quote(modifier));
  }
  if (path.empty()) fail(d.where, "a location needs a path");
  ServerDraft& server = b.server();
  bool exact = match == Location::Match::kExact;
  if (!server.location_keys.emplace(exact, path).second) {
    fail(d.where, "duplicate location " + quote(path));
  }
  server.locations.emplace_back();
  LocationDraft& draft = server.locations.back();
  draft.location.match = match;
  draft.location.path = path;
  draft.location.where = d.where;
  b.set_location(&draft);
  b.run_block(d, kLocation);
  b.set_location(nullptr);
}

// check_variables accepts |text| when every `$name` / `${name}` in it is one the http layer can
// expand.
void check_variables(const Directive& d, const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$') continue;
    std::string name;
    if (i + 1 < text.size() && text[i + 1] == '{') {
      size_t close = text.find('}', i + 2);
      if (close == std::string::npos) {
        fail(d.where, "the closing bracket of a \"${\" variable is missing in " + quote(text));
      }
      name = text.substr(i + 2, close - i - 2);
      i = close;
    } else {
      size_t j = i + 1;
      while (j < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) {
        ++j;
      }
      name = text.substr(i + 1, j - i - 1);
      i = j - 1;
    }
    if (name.empty()) fail(d.where, "invalid variable name in " + quote(text));
    if (std::find(std::begin(kReturnVariables), std::end(kReturnVariables), name) ==
        std::end(kReturnVariables)) {
      fail(d.where, "unknown " + quote(name) + " variable");
    }
  }
}

void return_(Builder& b, const Directive& d) {
  ReturnAction r;
  const std::string& first = d.args[0];
  if (auto code = parse_number(first)) {
    if (*code > 999) fail(d.where, "invalid return code " + quote(first));
    r.code = static_cast<int>(*code);
    if (d.args.size() == 2) {
      r.text = d.args[1];
      r.has_text = true;
    }
  } else if (d.args.size() == 1 &&
             (first.starts_with("http://") || first.starts_with("https://") ||
              first.starts_with("$scheme") || first.starts_with("${scheme}"))) {
    r.code = 302;
    r.text = first;
    r.has_text = true;
  } else {
    fail(d.where, "invalid return code " + quote(first));
  }
  check_variables(d, r.text);
  if (LocationDraft* loc = b.location()) {
    loc->location.return_action = std::move(r);
  } else {
    b.server().return_action = std::move(r);
  }
}

void metrics(Builder& b, const Directive&) { b.location()->location.metrics = true; }

// stub_status takes no argument since nginx 1.7.5; older configs say `stub_status on;`, and
// nginx still accepts and ignores that argument, so we do too.
void stub_status(Builder& b, const Directive&) { b.location()->location.stub_status = true; }

using F = DirectiveSpec::Flags;

constexpr DirectiveSpec kServerDirectives[] = {
    {"server", kHttp, 0, 0, F::kBlock, server},
    {"listen", kServer, 1, kAnyArgs, F::kNone, listen},
    {"server_name", kServer, 1, kAnyArgs, F::kNone, server_name},
    {"location", kServer | kLocation, 1, 2, F::kBlock, location},
    {"return", kServer | kLocation, 1, 2, F::kOnce, return_},
    {"metrics", kLocation, 0, 0, F::kOnce, metrics},
    {"stub_status", kLocation, 0, 1, F::kOnce, stub_status},
};

}  // namespace

std::span<const DirectiveSpec> server_directives() { return kServerDirectives; }

}  // namespace accelgate::config

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "builder.h"
#include "units.h"

namespace accelgate::config {
namespace {

// kTables lists every directive table; a new group of directives adds its table here.
std::span<const DirectiveSpec> (*const kTables[])() = {
    main_directives, http_directives,    server_directives,
    tls_directives,  offload_directives, gzip_directives,
};

const DirectiveSpec* find_directive(const std::string& name) {
  for (auto table : kTables) {
    for (const DirectiveSpec& spec : table()) {
      if (name == spec.name) return &spec;
    }
  }
  return nullptr;
}

// listen_key is the address:port a listen binds, as nginx prints it ("0.0.0.0:80", "[::1]:443").
std::string listen_key(const ListenAddress& l) {
  std::string host = l.ipv6 ? "[" + l.host + "]" : (l.host.empty() ? "0.0.0.0" : l.host);
  return host + ":" + std::to_string(l.port);
}

std::string server_name_text(const ServerName& n) {
  switch (n.kind) {
    case ServerName::Kind::kExact:
      return n.name;
    case ServerName::Kind::kLeadingWildcard:
      return (n.dot_form ? "." : "*.") + n.name;
    case ServerName::Kind::kTrailingWildcard:
      return n.name + "*";
  }
  return n.name;
}

template <typename T>
void inherit(std::optional<T>& inner, const std::optional<T>& outer) {
  if (!inner && outer) inner = outer;
}

}  // namespace

std::string quote(const std::string& s) { return "\"" + s + "\""; }

void invalid_value(const Directive& d, const std::string& value, const std::string& hint) {
  std::string message = "invalid value " + quote(value) + " in " + quote(d.name) + " directive";
  if (!hint.empty()) message += ", " + hint;
  fail(d.where, message);
}

uint64_t number_arg(const Directive& d, size_t i, uint64_t min, uint64_t max) {
  auto value = parse_number(d.args[i]);
  if (!value || *value < min || *value > max) {
    invalid_value(d, d.args[i],
                  "expecting a number from " + std::to_string(min) + " to " + std::to_string(max));
  }
  return *value;
}

uint64_t size_arg(const Directive& d, size_t i) {
  auto value = parse_size(d.args[i]);
  if (!value) invalid_value(d, d.args[i], "expecting a size such as 512, 16k, 1m or 1g");
  return *value;
}

Millis time_arg(const Directive& d, size_t i) {
  auto value = parse_time(d.args[i]);
  if (!value) invalid_value(d, d.args[i], "expecting a time such as 500ms, 30s, 5m or \"1h 30m\"");
  return *value;
}

bool flag_arg(const Directive& d, size_t i) {
  auto value = parse_flag(d.args[i]);
  if (!value) invalid_value(d, d.args[i], R"(it must be "on" or "off")");
  return *value;
}

namespace {
std::string checked_path_arg(const Directive& d, size_t i) {
  const std::string& path = d.args[i];
  if (path.empty()) invalid_value(d, path, "expecting a path");
  if (path.find('$') != std::string::npos) {
    fail(d.where, "variables in " + quote(d.name) + " are not supported");
  }
  return path;
}
}  // namespace

std::string path_arg(Builder& b, const Directive& d, size_t i) {
  return b.resolve_path(checked_path_arg(d, i));
}

std::string conf_path_arg(Builder& b, const Directive& d, size_t i) {
  return b.resolve_conf_path(checked_path_arg(d, i));
}

void merge_settings(SettingsDraft& inner, const SettingsDraft& outer) {
  inherit(inner.root, outer.root);
  inherit(inner.index, outer.index);
  if (!inner.types) inner.types = outer.types;
  inherit(inner.default_type, outer.default_type);
  inherit(inner.access_log, outer.access_log);
  inherit(inner.sendfile, outer.sendfile);
  inherit(inner.keepalive_timeout, outer.keepalive_timeout);
  inherit(inner.keepalive_requests, outer.keepalive_requests);
  inherit(inner.client_body_timeout, outer.client_body_timeout);
  inherit(inner.send_timeout, outer.send_timeout);
  inherit(inner.client_max_body_size, outer.client_max_body_size);
  merge_gzip(inner.gzip, outer.gzip);
}

Builder::Builder(std::string prefix, std::string conf_dir)
    : prefix_(std::move(prefix)),
      conf_dir_(std::move(conf_dir)),
      config_(std::make_shared<Config>()) {
  config_->prefix = prefix_;
  // nginx's built-in types, used where no `types` block (or included mime.types) applies.
  default_types_ = std::make_shared<const MimeTypes>(
      MimeTypes{{"html", "text/html"}, {"gif", "image/gif"}, {"jpg", "image/jpeg"}});
}

SettingsDraft& Builder::settings() {
  if (location_ != nullptr) return location_->settings;
  if (server_ != nullptr) return server_->settings;
  return http_.settings;
}

ServerLimitsDraft& Builder::limits() {
  if (server_ != nullptr) return server_->limits;
  return http_.limits;
}

TlsDraft& Builder::tls() {
  if (server_ != nullptr) return server_->tls;
  return http_.tls;
}

std::string Builder::resolve_conf_path(const std::string& path) const {
  std::filesystem::path p(path);
  if (p.is_relative()) p = std::filesystem::path(conf_dir_) / p;
  return p.lexically_normal().string();
}

std::string Builder::resolve_path(const std::string& path) const {
  std::filesystem::path p(path);
  if (p.is_relative()) p = std::filesystem::path(prefix_) / p;
  std::string out = p.lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

void Builder::warn(const SourceLocation& where, const std::string& message) {
  config_->warnings.push_back(where.file + ":" + std::to_string(where.line) + ": " + message);
}

void Builder::build(const std::vector<Directive>& top) {
  std::vector<const char*> seen;
  context_ = kMain;
  for (const Directive& d : top) dispatch(d, seen);
}

void Builder::run_block(const Directive& block, Context context) {
  Context outer = context_;
  context_ = context;
  std::vector<const char*> seen;
  for (const Directive& d : block.children) dispatch(d, seen);
  context_ = outer;
}

void Builder::dispatch(const Directive& d, std::vector<const char*>& seen) {
  const DirectiveSpec* spec = find_directive(d.name);
  if (spec == nullptr) fail(d.where, "unknown directive " + quote(d.name));
  if ((spec->contexts & context_) == 0) {
    fail(d.where, quote(d.name) + " directive is not allowed here");
  }
  bool block = (spec->flags & DirectiveSpec::kBlock) != 0;
  if (block && !d.has_block) fail(d.where, "directive " + quote(d.name) + " has no opening '{'");
  if (!block && d.has_block) {
    fail(d.block_where, "directive " + quote(d.name) + " is not terminated by ';'");
  }
  int n = static_cast<int>(d.args.size());
  if (n < spec->min_args || (spec->max_args != kAnyArgs && n > spec->max_args)) {
    fail(d.where, "invalid number of arguments in " + quote(d.name) + " directive");
  }
  if ((spec->flags & DirectiveSpec::kOnce) != 0) {
    for (const char* name : seen) {
      if (name == spec->name) fail(d.where, quote(d.name) + " directive is duplicate");
    }
    seen.push_back(spec->name);
  }
  spec->handler(*this, d);
}

LocationSettings Builder::finish_settings(const SettingsDraft& draft) const {
  LocationSettings s;
  s.root = draft.root ? *draft.root : resolve_path("html");
  if (draft.index) s.index = *draft.index;
  s.types = draft.types ? std::shared_ptr<const MimeTypes>(draft.types) : default_types_;
  if (draft.default_type) s.default_type = *draft.default_type;
  if (draft.access_log) {
    s.access_log = *draft.access_log;
  } else {
    s.access_log.path = resolve_path("var/access.log");
  }
  if (draft.sendfile) s.sendfile = *draft.sendfile;
  if (draft.keepalive_timeout) {
    s.keepalive_timeout = draft.keepalive_timeout->first;
    s.keepalive_header = draft.keepalive_timeout->second;
  }
  if (draft.keepalive_requests) s.keepalive_requests = *draft.keepalive_requests;
  if (draft.client_body_timeout) s.client_body_timeout = *draft.client_body_timeout;
  if (draft.send_timeout) s.send_timeout = *draft.send_timeout;
  if (draft.client_max_body_size) s.client_max_body_size = *draft.client_max_body_size;
  s.gzip = finish_gzip(draft.gzip);
  return s;
}

std::shared_ptr<Config> Builder::finish() {
  Config& c = *config_;
  if (c.pid_path.empty()) c.pid_path = resolve_path("var/accelgate.pid");
  if (c.error_log_path.empty()) c.error_log_path = resolve_path("var/error.log");
  c.http.present = http_.present;
  for (ServerDraft& sd : http_.servers) {
    merge_settings(sd.settings, http_.settings);
    inherit(sd.limits.client_header_timeout, http_.limits.client_header_timeout);
    inherit(sd.limits.client_header_buffer_size, http_.limits.client_header_buffer_size);
    inherit(sd.limits.large_client_header_buffers, http_.limits.large_client_header_buffers);
    Server s = std::move(sd.server);
    if (s.listen.empty()) {
      // nginx's default for a server without `listen` (as root): every IPv4 address, port 80.
      ListenAddress l;
      l.where = s.where;
      s.listen.push_back(l);
    }
    s.fallback.settings = finish_settings(sd.settings);
    s.fallback.return_action = sd.return_action;
    s.fallback.where = s.where;
    for (LocationDraft& ld : sd.locations) {
      merge_settings(ld.settings, sd.settings);
      ld.location.settings = finish_settings(ld.settings);
      s.locations.push_back(std::move(ld.location));
    }
    s.tls = finish_tls(sd.tls, http_.tls, s.where);
    if (sd.limits.client_header_timeout) s.client_header_timeout = *sd.limits.client_header_timeout;
    if (sd.limits.client_header_buffer_size) {
      s.client_header_buffer_size = *sd.limits.client_header_buffer_size;
    }
    if (sd.limits.large_client_header_buffers) {
      s.large_client_header_buffers_num = sd.limits.large_client_header_buffers->first;
      s.large_client_header_buffers_size = sd.limits.large_client_header_buffers->second;
    }
    auto note_cache = [&c](const LocationSettings& ls) {
      if (ls.gzip.enabled)
        c.http.gzip_cache_size = std::max(c.http.gzip_cache_size, ls.gzip.cache_size);
    };
    note_cache(s.fallback.settings);
    for (const Location& l : s.locations) note_cache(l.settings);
    c.http.servers.push_back(std::move(s));
  }
  check_session_caches();
  http_.servers.clear();
  check_listens();
  return config_;
}

void Builder::check_listens() {
  std::set<std::string> defaults;          // address:port with a default server
  std::set<std::string> names;             // "address:port name"
  std::map<std::string, bool> ssl_by_key;  // address:port -> its first listen says ssl
  for (const Server& s : config_->http.servers) {
    std::set<std::string> own;
    for (const ListenAddress& l : s.listen) {
      std::string key = listen_key(l);
      if (!own.insert(key).second) fail(l.where, "a duplicate listen " + key);
      if (l.default_server && !defaults.insert(key).second) {
        fail(l.where, "a duplicate default server for " + key);
      }
      // One socket serves every server on an address:port, so it is TLS for all or for none.
      auto [it, first] = ssl_by_key.emplace(key, l.ssl);
      if (!first && it->second != l.ssl) {
        std::string message = "ssl and non-ssl listen on the same address ";
        message += key;
        message += R"(: one socket cannot be both (say "ssl" on every listen of it, or on none))";
        fail(l.where, message);
      }
      if (l.ssl && s.tls.certificates.empty()) {
        fail(l.where, R"(no "ssl_certificate" is defined for the "listen ... ssl" directive)");
      }
      for (const ServerName& n : s.server_names) {
        std::string text = server_name_text(n);
        std::string name_key = key;
        name_key += ' ';
        name_key += text;
        bool inserted = names.insert(std::move(name_key)).second;
        if (!inserted) {
          warn(s.where, "conflicting server name " + quote(text) + " on " + key + ", ignored");
        }
      }
    }
  }
}

}  // namespace accelgate::config

// The settings http, server and location blocks share (merged inward), the ones http and server
// blocks share, and the `types { }` block.

#include <algorithm>
#include <cctype>

#include "builder.h"
#include "units.h"

namespace accelgate::config {
namespace {

void root(Builder& b, const Directive& d) { b.settings().root = path_arg(b, d, 0); }

void index(Builder& b, const Directive& d) {
  auto& index = b.settings().index;
  if (!index) index.emplace();
  for (const std::string& name : d.args) {
    if (name.empty()) invalid_value(d, name, "an index file name cannot be empty");
    if (name.find('$') != std::string::npos) {
      fail(d.where, "variables in \"index\" are not supported");
    }
    index->push_back(name);
  }
}

void default_type(Builder& b, const Directive& d) { b.settings().default_type = d.args[0]; }

void types(Builder& b, const Directive& d) {
  auto& types = b.settings().types;
  // Several `types` blocks (or an included mime.types plus a local block) in one block add up;
  // a block of its own replaces what an outer block set, as in nginx.
  if (!types) types = std::make_shared<MimeTypes>();
  for (const Directive& entry : d.children) {
    if (entry.has_block) {
      fail(entry.block_where, "directive " + quote(entry.name) + " is not terminated by ';'");
    }
    if (entry.args.empty()) {
      fail(entry.where, "invalid number of arguments in " + quote(entry.name) + " type");
    }
    for (std::string ext : entry.args) {
      std::transform(ext.begin(), ext.end(), ext.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      auto [it, inserted] = types->emplace(ext, entry.name);
      if (!inserted && it->second != entry.name) {
        b.warn(entry.where, "duplicate extension " + quote(ext) +
                                ", content type: " + quote(entry.name) +
                                ", previous content type: " + quote(it->second));
        it->second = entry.name;
      }
    }
  }
}

void access_log(Builder& b, const Directive& d) {
  auto& log = b.settings().access_log;
  if (log) fail(d.where, "only one \"access_log\" per block is supported");
  AccessLog a;
  if (d.args[0] == "off") {
    if (d.args.size() != 1)
      fail(d.where, "invalid number of arguments in \"access_log\" directive");
    a.enabled = false;
    log = a;
    return;
  }
  if (d.args[0].starts_with("syslog:")) {
    invalid_value(d, d.args[0], "only a file is supported");
  }
  a.path = path_arg(b, d, 0);
  size_t i = 1;
  if (i < d.args.size() && d.args[i].find('=') == std::string::npos) {
    if (d.args[i] != "combined") {
      fail(d.where, "unknown log format " + quote(d.args[i]) + " (only \"combined\" is supported)");
    }
    ++i;
  }
  bool has_flush = false;
  for (; i < d.args.size(); ++i) {
    const std::string& arg = d.args[i];
    if (arg.starts_with("buffer=")) {
      auto size = parse_size(std::string_view(arg).substr(7));
      if (!size || *size == 0) invalid_value(d, arg, "expecting a size such as 64k");
      a.buffer_size = *size;
    } else if (arg.starts_with("flush=")) {
      auto time = parse_time(std::string_view(arg).substr(6));
      if (!time || time->count() == 0) invalid_value(d, arg, "expecting a time such as 5s");
      a.flush = *time;
      has_flush = true;
    } else {
      invalid_value(d, arg, "expecting buffer=SIZE or flush=TIME");
    }
  }
  if (has_flush && a.buffer_size == 0) {
    fail(d.where, "no buffer is defined for access_log " + quote(d.args[0]));
  }
  log = a;
}

void sendfile(Builder& b, const Directive& d) { b.settings().sendfile = flag_arg(d, 0); }

void keepalive_timeout(Builder& b, const Directive& d) {
  Millis timeout = time_arg(d, 0);
  std::optional<Millis> header;
  if (d.args.size() == 2) header = time_arg(d, 1);
  b.settings().keepalive_timeout.emplace(timeout, header);
}

void keepalive_requests(Builder& b, const Directive& d) {
  b.settings().keepalive_requests = static_cast<uint32_t>(number_arg(d, 0, 0, UINT32_MAX));
}

void client_body_timeout(Builder& b, const Directive& d) {
  b.settings().client_body_timeout = time_arg(d, 0);
}

void send_timeout(Builder& b, const Directive& d) { b.settings().send_timeout = time_arg(d, 0); }

void client_max_body_size(Builder& b, const Directive& d) {
  b.settings().client_max_body_size = size_arg(d, 0);
}

void client_header_timeout(Builder& b, const Directive& d) {
  b.limits().client_header_timeout = time_arg(d, 0);
}

void client_header_buffer_size(Builder& b, const Directive& d) {
  uint64_t size = size_arg(d, 0);
  if (size == 0) invalid_value(d, d.args[0], "the size must not be 0");
  b.limits().client_header_buffer_size = size;
}

void large_client_header_buffers(Builder& b, const Directive& d) {
  auto num = static_cast<uint32_t>(number_arg(d, 0, 1, 1024));
  uint64_t size = size_arg(d, 1);
  if (size == 0) invalid_value(d, d.args[1], "the size must not be 0");
  b.limits().large_client_header_buffers.emplace(num, size);
}

using F = DirectiveSpec::Flags;
constexpr uint32_t kHttpServer = kHttp | kServer;

constexpr DirectiveSpec kHttpDirectives[] = {
    {"root", kHttpScopes, 1, 1, F::kOnce, root},
    {"index", kHttpScopes, 1, kAnyArgs, F::kNone, index},
    {"default_type", kHttpScopes, 1, 1, F::kOnce, default_type},
    {"types", kHttpScopes, 0, 0, F::kBlock, types},
    {"access_log", kHttpScopes, 1, 4, F::kNone, access_log},
    {"sendfile", kHttpScopes, 1, 1, F::kOnce, sendfile},
    {"keepalive_timeout", kHttpScopes, 1, 2, F::kOnce, keepalive_timeout},
    {"keepalive_requests", kHttpScopes, 1, 1, F::kOnce, keepalive_requests},
    {"client_body_timeout", kHttpScopes, 1, 1, F::kOnce, client_body_timeout},
    {"send_timeout", kHttpScopes, 1, 1, F::kOnce, send_timeout},
    {"client_max_body_size", kHttpScopes, 1, 1, F::kOnce, client_max_body_size},
    {"client_header_timeout", kHttpServer, 1, 1, F::kOnce, client_header_timeout},
    {"client_header_buffer_size", kHttpServer, 1, 1, F::kOnce, client_header_buffer_size},
    {"large_client_header_buffers", kHttpServer, 2, 2, F::kOnce, large_client_header_buffers},
};

}  // namespace

std::span<const DirectiveSpec> http_directives() { return kHttpDirectives; }

}  // namespace accelgate::config

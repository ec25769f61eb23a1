// The gzip directives: nginx's (gzip, gzip_comp_level, gzip_min_length, gzip_types, gzip_vary,
// gzip_http_version, gzip_proxied, gzip_disable, gzip_buffers, gzip_static) with nginx's syntax
// and defaults, and accelgate's (gzip_engine, gzip_offload_min_length, gzip_cache). All stand in
// http, server and location and are merged inward like the other location settings.

#include <algorithm>
#include <cctype>

#include "builder.h"
#include "units.h"

namespace accelgate::config {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

GzipDraft& gz(Builder& b) { return b.settings().gzip; }

void gzip(Builder& b, const Directive& d) { gz(b).enabled = flag_arg(d, 0); }

void gzip_comp_level(Builder& b, const Directive& d) {
  gz(b).level = static_cast<int>(number_arg(d, 0, 1, 9));
}

void gzip_min_length(Builder& b, const Directive& d) { gz(b).min_length = size_arg(d, 0); }

void gzip_types(Builder& b, const Directive& d) {
  std::vector<std::string> types{"text/html"};  // always compressed, as in nginx
  bool any = false;
  for (const std::string& arg : d.args) {
    if (arg == "*") {
      any = true;
      continue;
    }
    std::string type = lower(arg);
    if (type.find('/') == std::string::npos || type.find(';') != std::string::npos) {
      invalid_value(d, arg, "expecting a MIME type such as text/css, or *");
    }
    if (std::find(types.begin(), types.end(), type) == types.end()) types.push_back(type);
  }
  gz(b).types.emplace(std::move(types), any);
}

void gzip_vary(Builder& b, const Directive& d) { gz(b).vary = flag_arg(d, 0); }

void gzip_http_version(Builder& b, const Directive& d) {
  if (d.args[0] == "1.0") {
    gz(b).http_version_minor = 0;
  } else if (d.args[0] == "1.1") {
    gz(b).http_version_minor = 1;
  } else {
    invalid_value(d, d.args[0], R"(it must be "1.0" or "1.1")");
  }
}

void gzip_proxied(Builder& b, const Directive& d) {
  static constexpr std::pair<const char*, uint32_t> kValues[] = {
      {"off", GzipSettings::kProxiedOff},
      {"expired", GzipSettings::kProxiedExpired},
      {"no-cache", GzipSettings::kProxiedNoCache},
      {"no-store", GzipSettings::kProxiedNoStore},
      {"private", GzipSettings::kProxiedPrivate},
      {"no_last_modified", GzipSettings::kProxiedNoLastModified},
      {"no_etag", GzipSettings::kProxiedNoEtag},
      {"auth", GzipSettings::kProxiedAuth},
      {"any", GzipSettings::kProxiedAny},
  };
  uint32_t bits = 0;
  for (const std::string& arg : d.args) {
    auto it = std::find_if(std::begin(kValues), std::end(kValues),
                           [&](const auto& v) { return arg == v.first; });
    if (it == std::end(kValues)) {
      invalid_value(d, arg,
                    "expecting off, expired, no-cache, no-store, private, no_last_modified, "
                    "no_etag, auth or any");
    }
    bits |= it->second;
  }
  gz(b).proxied = bits;
}

void gzip_disable(Builder& b, const Directive& d) {
  auto& disable = gz(b).disable;
  if (!disable) disable.emplace(false, std::vector<std::shared_ptr<const Regex>>{});
  for (const std::string& arg : d.args) {
    if (arg == "msie6") {
      disable->first = true;
      continue;
    }
    // nginx compiles gzip_disable patterns case-insensitively.
    auto regex = Regex::compile(arg, true);
    if (!regex) {
      fail(d.where, "invalid regular expression " + quote(arg) +
                        " in \"gzip_disable\": " + regex.error().message);
    }
    disable->second.push_back(std::move(*regex));
  }
}

void gzip_buffers(Builder& b, const Directive& d) {
  auto num = static_cast<uint32_t>(number_arg(d, 0, 1, 1u << 20));
  uint64_t size = size_arg(d, 1);
  if (size == 0) invalid_value(d, d.args[1], "the size must not be 0");
  gz(b).buffers.emplace(num, size);
}

void gzip_static(Builder& b, const Directive& d) {
  const std::string& v = d.args[0];
  if (v == "off") {
    gz(b).static_mode = GzipSettings::Static::kOff;
  } else if (v == "on") {
    gz(b).static_mode = GzipSettings::Static::kOn;
  } else if (v == "always") {
    gz(b).static_mode = GzipSettings::Static::kAlways;
  } else {
    invalid_value(d, v, R"(it must be "off", "on" or "always")");
  }
}

void gzip_engine(Builder& b, const Directive& d) {
  const std::string& v = d.args[0];
  if (v == "auto") {
    gz(b).engine = GzipSettings::Engine::kAuto;
  } else if (v == "isal") {
    gz(b).engine = GzipSettings::Engine::kIsal;
  } else if (v == "libdeflate") {
    gz(b).engine = GzipSettings::Engine::kLibdeflate;
  } else if (v == "zlib") {
    gz(b).engine = GzipSettings::Engine::kZlib;
  } else {
    invalid_value(d, v, "expecting auto, isal, libdeflate or zlib");
  }
}

void gzip_offload_min_length(Builder& b, const Directive& d) {
  gz(b).offload_min_length = size_arg(d, 0);
}

void gzip_cache(Builder& b, const Directive& d) {
  gz(b).cache_size = d.args[0] == "off" ? 0 : size_arg(d, 0);
}

template <typename T>
void inherit(std::optional<T>& inner, const std::optional<T>& outer) {
  if (!inner && outer) inner = outer;
}

using F = DirectiveSpec::Flags;

constexpr DirectiveSpec kGzipDirectives[] = {
    {"gzip", kHttpScopes, 1, 1, F::kOnce, gzip},
    {"gzip_comp_level", kHttpScopes, 1, 1, F::kOnce, gzip_comp_level},
    {"gzip_min_length", kHttpScopes, 1, 1, F::kOnce, gzip_min_length},
    {"gzip_types", kHttpScopes, 1, kAnyArgs, F::kOnce, gzip_types},
    {"gzip_vary", kHttpScopes, 1, 1, F::kOnce, gzip_vary},
    {"gzip_http_version", kHttpScopes, 1, 1, F::kOnce, gzip_http_version},
    {"gzip_proxied", kHttpScopes, 1, kAnyArgs, F::kOnce, gzip_proxied},
    {"gzip_disable", kHttpScopes, 1, kAnyArgs, F::kNone, gzip_disable},
    {"gzip_buffers", kHttpScopes, 2, 2, F::kOnce, gzip_buffers},
    {"gzip_static", kHttpScopes, 1, 1, F::kOnce, gzip_static},
    {"gzip_engine", kHttpScopes, 1, 1, F::kOnce, gzip_engine},
    {"gzip_offload_min_length", kHttpScopes, 1, 1, F::kOnce, gzip_offload_min_length},
    {"gzip_cache", kHttpScopes, 1, 1, F::kOnce, gzip_cache},
};

}  // namespace

std::span<const DirectiveSpec> gzip_directives() { return kGzipDirectives; }

void merge_gzip(GzipDraft& inner, const GzipDraft& outer) {
  inherit(inner.enabled, outer.enabled);
  inherit(inner.level, outer.level);
  inherit(inner.min_length, outer.min_length);
  inherit(inner.types, outer.types);
  inherit(inner.vary, outer.vary);
  inherit(inner.http_version_minor, outer.http_version_minor);
  inherit(inner.proxied, outer.proxied);
  inherit(inner.disable, outer.disable);
  inherit(inner.buffers, outer.buffers);
  inherit(inner.static_mode, outer.static_mode);
  inherit(inner.engine, outer.engine);
  inherit(inner.offload_min_length, outer.offload_min_length);
  inherit(inner.cache_size, outer.cache_size);
}

GzipSettings finish_gzip(const GzipDraft& d) {
  GzipSettings s;
  if (d.enabled) s.enabled = *d.enabled;
  if (d.level) s.level = *d.level;
  if (d.min_length) s.min_length = *d.min_length;
  if (d.types) {
    s.types = d.types->first;
    s.any_type = d.types->second;
  }
  if (d.vary) s.vary = *d.vary;
  if (d.http_version_minor) s.http_version_minor = *d.http_version_minor;
  if (d.proxied) s.proxied = *d.proxied;
  if (d.disable) {
    s.disable_msie6 = d.disable->first;
    s.disable = d.disable->second;
  }
  if (d.buffers) {
    s.buffers_num = d.buffers->first;
    s.buffers_size = d.buffers->second;
  }
  if (d.static_mode) s.static_mode = *d.static_mode;
  if (d.engine) s.engine = *d.engine;
  if (d.offload_min_length) s.offload_min_length = *d.offload_min_length;
  if (d.cache_size) s.cache_size = *d.cache_size;
  return s;
}

}  // namespace accelgate::config

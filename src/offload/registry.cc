// The list of engines (STYLE.md: listed explicitly in one file, no self-registration), best
// first: the order in which `crypto auto` considers them.

#include "accelgate/offload/registry.h"

#include "engines/engines.h"

namespace accelgate::offload {
namespace {

constexpr EngineFactory kEngines[] = {
    {"openssl", "RSA, ECDSA, ECDH, X25519 (a card through its OpenSSL provider or ENGINE)",
     probe_openssl, create_openssl, describe_openssl},
    {"mb", "RSA 2048/3072/4096 and ECDSA P-256/P-384 signatures (AVX-512 IFMA, 8 at once)",
     probe_mb, create_mb},
    {"pool", "RSA, ECDSA, ECDH, X25519 (crypto threads)", probe_pool, create_pool},
    {"emu", "RSA, ECDSA, ECDH, X25519 (an emulated accelerator, for tests)", probe_emu, create_emu},
    {"sw", "RSA, ECDSA, ECDH, X25519 (OpenSSL, inline)", probe_sw, create_sw},
};

// may_auto_pick says whether `crypto auto` may choose |name|: not the emulation, not the pool
// (it pays only with spare cores, which accelgate cannot know), not a card (it needs an id).
bool may_auto_pick(std::string_view name) { return name == "mb" || name == "sw"; }

}  // namespace

DeviceStore& DeviceStore::global() {
  static DeviceStore store;
  return store;
}

std::span<const EngineFactory> engine_factories() { return kEngines; }

const EngineFactory* find_engine(std::string_view name) {
  std::string_view base = name.substr(0, name.find(':'));
  for (const EngineFactory& f : kEngines) {
    if (f.name == base) return &f;
  }
  return nullptr;
}

std::string resolve_crypto(const config::OffloadSettings& settings) {
  if (settings.crypto != "auto") return settings.crypto;
  for (const EngineFactory& f : kEngines) {
    if (may_auto_pick(f.name) && f.probe(settings).empty()) return std::string(f.name);
  }
  return "sw";
}

std::vector<EngineStatus> describe_engines(const config::OffloadSettings& settings) {
  std::string chosen = resolve_crypto(settings);
  std::vector<EngineStatus> out;
  for (const EngineFactory& f : kEngines) {
    EngineStatus s;
    s.name = std::string(f.name);
    s.reason = f.probe(settings);
    s.available = s.reason.empty();
    s.accelerates = std::string(f.accelerates);
    s.chosen = find_engine(chosen) == &f;
    if (f.detail != nullptr) s.detail = f.detail(settings);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace accelgate::offload

#pragma once

// Registry: every offload engine accelgate knows, listed explicitly in src/offload/registry.cc
// (no self-registration), with what it accelerates and whether it can run here; and the
// DeviceStore, which keeps the process-wide part of an engine (pool threads, the emulated
// device, a card's library context) so every worker loop, and the configuration snapshots before
// and after a reload, share one instance when the settings did not change.

#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "accelgate/config/config.h"
#include "accelgate/offload/engine.h"

namespace accelgate::offload {

// DeviceStore holds shared devices by a key that spells out their settings ("pool:threads=4").
// get() returns the live instance for |key| or makes one with |make|; an instance lives as long
// as some Engine holds it. Thread-safe.
class DeviceStore {
 public:
  static DeviceStore& global();

  template <typename T>
  std::shared_ptr<T> get(const std::string& key, const std::function<std::shared_ptr<T>()>& make) {
    std::lock_guard lock(mutex_);
    auto& slot = devices_[key];
    if (auto live = slot.lock()) return std::static_pointer_cast<T>(live);
    std::shared_ptr<T> made = make();
    slot = made;
    return made;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, std::weak_ptr<void>> devices_;
};

// EngineFactory describes one engine kind.
struct EngineFactory {
  std::string_view name;         // as in `crypto NAME;`
  std::string_view accelerates;  // for --engines, e.g. "RSA, ECDSA, ECDH, X25519"
  // probe returns "" when the engine can run with |settings| on this machine, else the reason it
  // cannot ("no AVX-512 IFMA on this CPU").
  std::string (*probe)(const config::OffloadSettings& settings);
  // create makes the Engine object of one worker loop; may fail (a device that cannot open).
  Result<std::unique_ptr<Engine>> (*create)(const config::OffloadSettings& settings,
                                            const EngineContext& context);
  // detail, when set, adds a line to `--engines` (the openssl engine: whether OpenSSL ENGINEs can
  // be loaded, and what `crypto openssl:ID` loaded).
  std::string (*detail)(const config::OffloadSettings& settings) = nullptr;
};

// engine_factories lists every engine, best first (the order `crypto auto` tries).
std::span<const EngineFactory> engine_factories();

// find_engine returns the factory named |name| ("openssl:qatprovider" finds "openssl"), or null.
const EngineFactory* find_engine(std::string_view name);

// EngineStatus is one line of `accelgate --engines`.
struct EngineStatus {
  std::string name;
  bool available = false;
  std::string reason;  // why not, when not available
  std::string accelerates;
  bool chosen = false;  // the engine `crypto` resolves to with these settings
  std::string detail;   // EngineFactory::detail's line, or ""
};
std::vector<EngineStatus> describe_engines(const config::OffloadSettings& settings);

// resolve_crypto turns the `crypto` setting into the engine the dispatcher puts first: an
// explicit name is kept (and fails later if unavailable); "auto" becomes the best available
// engine that `auto` may pick (not emu, an emulation; not pool, which pays only with spare
// cores, unless asked for).
std::string resolve_crypto(const config::OffloadSettings& settings);

}  // namespace accelgate::offload

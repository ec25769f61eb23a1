#pragma once

// The engines' entry points, one pair per engine folder; src/offload/registry.cc lists them.

#include <memory>
#include <string>

#include "accelgate/common/result.h"
#include "accelgate/config/config.h"
#include "accelgate/offload/engine.h"

namespace accelgate::offload {

// sw: OpenSSL's default implementation, inline. Always available; the fallback.
std::string probe_sw(const config::OffloadSettings& settings);
Result<std::unique_ptr<Engine>> create_sw(const config::OffloadSettings& settings,
                                          const EngineContext& context);

// pool: `pool_threads` crypto threads; completions come back to each loop through one eventfd.
std::string probe_pool(const config::OffloadSettings& settings);
Result<std::unique_ptr<Engine>> create_pool(const config::OffloadSettings& settings,
                                            const EngineContext& context);

// emu: an emulated accelerator (latency, capacity, error and hang rates, down/up on command).
std::string probe_emu(const config::OffloadSettings& settings);
Result<std::unique_ptr<Engine>> create_emu(const config::OffloadSettings& settings,
                                           const EngineContext& context);

// mb: RSA signatures eight at a time on AVX-512 IFMA (src/crypto/mb), batched per loop.
std::string probe_mb(const config::OffloadSettings& settings);
Result<std::unique_ptr<Engine>> create_mb(const config::OffloadSettings& settings,
                                          const EngineContext& context);

// openssl: a vendor's OpenSSL provider or ENGINE (`crypto openssl:ID`) driven in async mode;
// describe_openssl says whether ENGINEs can be loaded and what ID loaded as.
std::string probe_openssl(const config::OffloadSettings& settings);
std::string describe_openssl(const config::OffloadSettings& settings);
Result<std::unique_ptr<Engine>> create_openssl(const config::OffloadSettings& settings,
                                               const EngineContext& context);

// observe_batch_size records how many completions an engine reaped at once (the
// accelgate_offload_batch_size histogram).
void observe_batch_size(size_t n);

}  // namespace accelgate::offload

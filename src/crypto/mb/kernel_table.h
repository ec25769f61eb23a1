#pragma once

// KernelTable: the entry points one back end exports (kernels_portable.cc, kernels_ifma.cc). The
// kernels themselves are one source, kernels.inc, compiled once per back end.

#include <cstddef>
#include <cstdint>

#include "accelgate/crypto/mb/rsa_batch.h"
#include "accelgate/crypto/mb/rsa_key.h"

namespace accelgate::crypto::mb::detail {

// BatchJob is one full batch: all eight lanes are set (unused ones repeat lane 0).
struct BatchJob {
  const KeyMaterial* keys[kLanes];
  const uint8_t* in[kLanes];
  uint8_t* out[kLanes];
  const FaultInjection* fault;
  void* workspace;  // kWorkspaceBytes, 64-byte aligned, owned by the caller
};

// kWorkspaceBytes covers the largest KeySize: the 32-entry window table plus operands, in
// vectors of 64 bytes (rsa.inc, rsa_private).
inline constexpr size_t kWorkspaceBytes = size_t{64} * 64 * kMaxHalfLimbs;

struct KernelTable {
  BatchOutcome (*rsa_private)(const BatchJob& job);
  void (*amm)(int limbs, uint64_t* r, const uint64_t* a, const uint64_t* b, const uint64_t* m,
              const uint64_t* k0);
  void (*ams)(int limbs, uint64_t* r, const uint64_t* a, const uint64_t* m, const uint64_t* k0);
};

const KernelTable& portable_kernels();
// ifma_kernels may be called only when detect_ifma().usable.
const KernelTable& ifma_kernels();

}  // namespace accelgate::crypto::mb::detail

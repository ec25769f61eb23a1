#pragma once

// KernelTable: the entry points one back end exports (kernels_portable.cc, kernels_ifma.cc). The
// kernels themselves are one source, montgomery.inc and rsa.inc, compiled once per back end.

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

// rsa_workspace_bytes is what rsa_private (rsa.inc) uses for primes of |half_limbs| limbs, in
// vectors of 64 bytes: the 16-entry window table (16 NH), c, n, s and the check's recombination
// (2 NH each), qInv, m1, m2 and four of scratch (NH each), and both halves' operands (5 NH + 1
// each). rsa.inc asserts that its layout fits.
constexpr size_t rsa_workspace_bytes(int half_limbs) {
  return size_t{64} * (41 * static_cast<size_t>(half_limbs) + 2);
}

// kWorkspaceBytes covers the largest KeySize.
inline constexpr size_t kWorkspaceBytes = rsa_workspace_bytes(kMaxHalfLimbs);

struct KernelTable {
  BatchOutcome (*rsa_private)(const BatchJob& job);
  void (*amm)(int limbs, uint64_t* r, const uint64_t* a, const uint64_t* b, const uint64_t* m,
              const uint64_t* k0);
  void (*ams)(int limbs, uint64_t* r, const uint64_t* a, const uint64_t* m, const uint64_t* k0);
};

// kIfmaPinnedModulusLimbs: how many limbs of the modulus the IFMA back end's reduce-only rows
// hold in registers (montgomery.inc, reduce_rows_rotating); VecIfma and the portable type with
// the IFMA shapes both take it from here.
inline constexpr int kIfmaPinnedModulusLimbs = 8;

const KernelTable& portable_kernels();
// portable_ifma_shapes_kernels: the portable arithmetic in the IFMA back end's loop shapes
// (Backend::kPortableIfmaShapes).
const KernelTable& portable_ifma_shapes_kernels();
// ifma_kernels may be called only when detect_ifma().usable.
const KernelTable& ifma_kernels();

}  // namespace accelgate::crypto::mb::detail

// rsa_batch.cc: fills a batch to eight lanes and hands it to the chosen back end's kernels.

#include "accelgate/crypto/mb/rsa_batch.h"

#include <cstdlib>
#include <cstring>  // also explicit_bzero (a glibc extension declared by <string.h>)
#include <memory>

#include "kernel_table.h"

namespace accelgate::crypto::mb {
namespace {

const detail::KernelTable& kernels(Backend backend) {
  switch (backend) {
    case Backend::kIfma:
      return detail::ifma_kernels();
    case Backend::kPortableIfmaShapes:
      return detail::portable_ifma_shapes_kernels();
    case Backend::kPortable:
      break;
  }
  return detail::portable_kernels();
}

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// workspace is this thread's scratch for the kernels, allocated on first use and wiped after
// each batch (it held secrets).
void* workspace() {
  thread_local std::unique_ptr<void, FreeDeleter> buffer(
      std::aligned_alloc(64, detail::kWorkspaceBytes));
  return buffer.get();
}

}  // namespace

BatchOutcome rsa_private_batch(Backend backend, std::span<const RsaLane> lanes,
                               const FaultInjection* fault) {
  if (lanes.empty() || lanes.size() > static_cast<size_t>(kLanes)) return {};
  const KeySize size = lanes[0].key->size();
  for (const RsaLane& lane : lanes) {
    if (lane.key->size() != size || !modulus_bytes_fit(size, lane.key->modulus_bytes())) return {};
  }
  // Unused lanes repeat lane 0's key and input and write to a scratch output.
  uint8_t discard[kLanes][512];
  detail::BatchJob job{};
  for (int l = 0; l < kLanes; ++l) {
    const bool used = static_cast<size_t>(l) < lanes.size();
    const RsaLane& lane = used ? lanes[l] : lanes[0];
    job.keys[l] = &lane.key->material();
    job.in[l] = lane.in;
    job.out[l] = used ? lane.out : discard[l];
  }
  // Outputs may alias inputs: copy the inputs first when any does.
  uint8_t inputs[kLanes][512];
  for (int l = 0; l < kLanes; ++l) {
    std::memcpy(inputs[l], job.in[l], static_cast<size_t>(job.keys[l]->modulus_bytes));
    job.in[l] = inputs[l];
  }
  job.fault = fault;
  job.workspace = workspace();
  BatchOutcome outcome = kernels(backend).rsa_private(job);
  const auto used = static_cast<uint8_t>((1u << lanes.size()) - 1);
  outcome.in_range &= used;
  outcome.verified &= used;
  // The part of the workspace this size used and the input copies held secrets; explicit_bzero
  // is not elided.
  explicit_bzero(job.workspace, detail::rsa_workspace_bytes(half_limbs(size)));
  explicit_bzero(inputs, sizeof(inputs));
  return outcome;
}

void amm_for_test(Backend backend, int limbs, uint64_t* r, const uint64_t* a, const uint64_t* b,
                  const uint64_t* m, const uint64_t* k0) {
  kernels(backend).amm(limbs, r, a, b, m, k0);
}

void ams_for_test(Backend backend, int limbs, uint64_t* r, const uint64_t* a, const uint64_t* m,
                  const uint64_t* k0) {
  kernels(backend).ams(limbs, r, a, m, k0);
}

}  // namespace accelgate::crypto::mb

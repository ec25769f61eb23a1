// ec_batch.cc: fills EC batches to eight lanes, owns the per-thread workspace and the
// process-wide fixed-base tables, and hands each batch to the chosen back end's kernels.

#include "accelgate/crypto/mb/ec_batch.h"

#include <cstdlib>
#include <cstring>  // explicit_bzero (glibc, declared by string.h)
#include <memory>

#include "ec_kernel_table.h"

namespace accelgate::crypto::mb {
namespace {

constexpr int kBatch = detail::kEcLanes;

const detail::EcKernelTable& kernels(Backend backend) {
  return backend == Backend::kIfma ? detail::ec_ifma_kernels() : detail::ec_portable_kernels();
}

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// workspace is this thread's scratch for the kernels, allocated on first use. The kernels wipe
// what held secrets in it before they return.
void* workspace() {
  thread_local std::unique_ptr<void, FreeDeleter> buffer(
      std::aligned_alloc(64, detail::kEcWorkspaceBytes));
  return buffer.get();
}

using TablePtr = std::unique_ptr<uint64_t[], FreeDeleter>;

// build_table computes a fixed-base table with the best back end (both give the same bits).
TablePtr build_table(size_t words, void (*const detail::EcKernelTable::*build)(uint64_t*, void*)) {
  TablePtr table(static_cast<uint64_t*>(std::aligned_alloc(64, words * sizeof(uint64_t))));
  std::unique_ptr<void, FreeDeleter> scratch(std::aligned_alloc(64, detail::kEcWorkspaceBytes));
  (kernels(best_backend()).*build)(table.get(), scratch.get());
  return table;
}

// comb_table is the fixed-base table of |curve|, built on first use (thread-safe; a few ms with
// IFMA, tens of ms on the portable back end) and kept for the process.
const uint64_t* comb_table(EcCurve curve) {
  if (curve == EcCurve::kP256) {
    static const TablePtr table =
        build_table(detail::kCombWordsP256, &detail::EcKernelTable::build_comb_p256);
    return table.get();
  }
  static const TablePtr table =
      build_table(detail::kCombWordsP384, &detail::EcKernelTable::build_comb_p384);
  return table.get();
}

// x25519_base_table is the fixed-base table of X25519 key generation, built on first use.
const uint64_t* x25519_base_table() {
  static const TablePtr table =
      build_table(detail::kX25519BaseWords, &detail::EcKernelTable::build_x25519_base);
  return table.get();
}

uint8_t used_mask(size_t count) { return static_cast<uint8_t>((1u << count) - 1); }

EcOutcome restrict_to(EcOutcome o, size_t count) {
  const uint8_t used = used_mask(count);
  o.ok &= used;
  o.invalid_input &= used;
  o.retry &= used;
  o.check_failed &= used;
  return o;
}

}  // namespace

void ec_build_tables() {
  comb_table(EcCurve::kP256);
  comb_table(EcCurve::kP384);
  x25519_base_table();
}

X25519Outcome x25519_batch(Backend backend, std::span<const X25519Lane> lanes,
                           const EcFaultInjection* fault) {
  if (lanes.empty() || lanes.size() > static_cast<size_t>(kBatch)) return {};
  // Unused lanes repeat lane 0 and write to a scratch output. The kernels read every input
  // before they write any output, so outputs may alias inputs.
  uint8_t discard[kBatch][32];
  detail::X25519Job job{};
  bool all_keygen = true;
  for (int l = 0; l < kBatch; ++l) {
    const bool used = static_cast<size_t>(l) < lanes.size();
    const X25519Lane& lane = used ? lanes[l] : lanes[0];
    job.scalar[l] = lane.scalar;
    job.peer_u[l] = lane.peer_u;
    job.out[l] = used ? lane.out : discard[l];
    all_keygen = all_keygen && lane.peer_u == nullptr;
  }
  // Key generations only: the fixed-base comb; otherwise the ladder for every lane.
  job.base_table = all_keygen ? x25519_base_table() : nullptr;
  job.fault = fault;
  job.workspace = workspace();
  X25519Outcome outcome = kernels(backend).x25519(job);
  const uint8_t used = used_mask(lanes.size());
  outcome.ok &= used;
  outcome.zero_output &= used;
  outcome.check_failed &= used;
  explicit_bzero(discard, sizeof(discard));
  return outcome;
}

EcOutcome ecdsa_sign_batch(Backend backend, EcCurve curve, std::span<const EcdsaLane> lanes,
                           const EcFaultInjection* fault) {
  if (lanes.empty() || lanes.size() > static_cast<size_t>(kBatch)) return {};
  for (const EcdsaLane& lane : lanes) {
    if (lane.key == nullptr || lane.key->curve() != curve) return {};
  }
  uint8_t discard_r[kBatch][kMaxEcFieldBytes];
  uint8_t discard_s[kBatch][kMaxEcFieldBytes];
  detail::EcdsaJob job{};
  for (int l = 0; l < kBatch; ++l) {
    const bool used = static_cast<size_t>(l) < lanes.size();
    const EcdsaLane& lane = used ? lanes[l] : lanes[0];
    job.keys[l] = &lane.key->material();
    job.digest[l] = lane.digest;
    job.digest_len[l] = lane.digest_len;
    job.nonce[l] = lane.nonce;
    job.r[l] = used ? lane.r : discard_r[l];
    job.s[l] = used ? lane.s : discard_s[l];
  }
  job.comb_table = comb_table(curve);
  job.fault = fault;
  job.workspace = workspace();
  const detail::EcKernelTable& k = kernels(backend);
  const EcOutcome outcome = curve == EcCurve::kP256 ? k.ecdsa_p256(job) : k.ecdsa_p384(job);
  return restrict_to(outcome, lanes.size());
}

EcOutcome ecdh_batch(Backend backend, EcCurve curve, std::span<const EcdhLane> lanes,
                     const EcFaultInjection* fault) {
  if (lanes.empty() || lanes.size() > static_cast<size_t>(kBatch)) return {};
  for (const EcdhLane& lane : lanes) {
    if (lane.key == nullptr || lane.key->curve() != curve) return {};
  }
  uint8_t discard[kBatch][kMaxEcFieldBytes];
  detail::EcdhJob job{};
  for (int l = 0; l < kBatch; ++l) {
    const bool used = static_cast<size_t>(l) < lanes.size();
    const EcdhLane& lane = used ? lanes[l] : lanes[0];
    job.keys[l] = &lane.key->material();
    job.peer_x[l] = lane.peer_x;
    job.peer_y[l] = lane.peer_y;
    job.out[l] = used ? lane.out_x : discard[l];
  }
  job.fault = fault;
  job.workspace = workspace();
  const detail::EcKernelTable& k = kernels(backend);
  const EcOutcome outcome = curve == EcCurve::kP256 ? k.ecdh_p256(job) : k.ecdh_p384(job);
  explicit_bzero(discard, sizeof(discard));
  return restrict_to(outcome, lanes.size());
}

int ec_field_limbs_for_test(EcFieldForTest field) {
  return field == EcFieldForTest::kP384 || field == EcFieldForTest::kP384Order ? 8 : 5;
}

void ec_field_for_test(Backend backend, EcFieldForTest field, EcFieldOp op, uint64_t* r,
                       const uint64_t* a, const uint64_t* b) {
  kernels(backend).field_for_test(static_cast<int>(field), static_cast<int>(op), r, a, b);
}

size_t ec_comb_table_words(EcCurve curve) {
  return curve == EcCurve::kP256 ? detail::kCombWordsP256 : detail::kCombWordsP384;
}

void ec_comb_table_for_test(Backend backend, EcCurve curve, uint64_t* table) {
  std::unique_ptr<void, FreeDeleter> scratch(std::aligned_alloc(64, detail::kEcWorkspaceBytes));
  const detail::EcKernelTable& k = kernels(backend);
  (curve == EcCurve::kP256 ? k.build_comb_p256 : k.build_comb_p384)(table, scratch.get());
}

size_t ec_x25519_base_table_words() { return detail::kX25519BaseWords; }

void ec_x25519_base_table_for_test(Backend backend, uint64_t* table) {
  std::unique_ptr<void, FreeDeleter> scratch(std::aligned_alloc(64, detail::kEcWorkspaceBytes));
  kernels(backend).build_x25519_base(table, scratch.get());
}

}  // namespace accelgate::crypto::mb

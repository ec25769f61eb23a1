#pragma once

// EcKernelTable: the EC entry points one back end exports (ec_kernels_portable.cc,
// ec_kernels_ifma.cc). The kernels are one source (ec_field.inc, ec_point.inc, ec_ops.inc,
// fe25519.inc, x25519.inc), compiled once per back end. Jobs are full batches: all eight lanes
// are set (ec_batch.cc repeats lane 0 into unused lanes).

#include <cstddef>
#include <cstdint>

#include "accelgate/crypto/mb/ec_batch.h"
#include "accelgate/crypto/mb/ec_key.h"

namespace accelgate::crypto::mb::detail {

inline constexpr int kEcLanes = 8;

struct X25519Job {
  const uint8_t* scalar[kEcLanes];
  const uint8_t* peer_u[kEcLanes];  // nullptr: the base point
  uint8_t* out[kEcLanes];
  const uint64_t* base_table;  // the fixed-base table when every lane is a key generation, or null
  const EcFaultInjection* fault;
  void* workspace;  // kEcWorkspaceBytes, 64-byte aligned
};

struct EcdsaJob {
  const EcKeyMaterial* keys[kEcLanes];
  const uint8_t* digest[kEcLanes];
  size_t digest_len[kEcLanes];
  const uint8_t* nonce[kEcLanes];
  uint8_t* r[kEcLanes];
  uint8_t* s[kEcLanes];
  const uint64_t* comb_table;  // the curve's fixed-base table (build_comb_*)
  const EcFaultInjection* fault;
  void* workspace;
};

struct EcdhJob {
  const EcKeyMaterial* keys[kEcLanes];
  const uint8_t* peer_x[kEcLanes];
  const uint8_t* peer_y[kEcLanes];
  uint8_t* out[kEcLanes];
  const EcFaultInjection* fault;
  void* workspace;
};

// kEcWorkspaceBytes covers the largest kernel's scratch (the table builds, about 80 KiB).
inline constexpr size_t kEcWorkspaceBytes = size_t{128} * 1024;

// Table sizes in 64-bit words (see ec_point.inc, comb_table_words, and x25519_base.inc).
inline constexpr size_t kCombWordsP256 = size_t{37} * 2 * 5 * 64;
inline constexpr size_t kCombWordsP384 = size_t{65} * 2 * 8 * 32;
inline constexpr size_t kX25519BaseWords = size_t{43} * 3 * 5 * 32;

struct EcKernelTable {
  X25519Outcome (*x25519)(const X25519Job& job);
  EcOutcome (*ecdsa_p256)(const EcdsaJob& job);
  EcOutcome (*ecdsa_p384)(const EcdsaJob& job);
  EcOutcome (*ecdh_p256)(const EcdhJob& job);
  EcOutcome (*ecdh_p384)(const EcdhJob& job);
  // build_* fill a fixed-base table (public data: multiples of the base point), once per process.
  void (*build_comb_p256)(uint64_t* table, void* workspace);
  void (*build_comb_p384)(uint64_t* table, void* workspace);
  void (*build_x25519_base)(uint64_t* table, void* workspace);
  // field_for_test serves ec_field_for_test (field and op as the enums' values).
  void (*field_for_test)(int field, int op, uint64_t* r, const uint64_t* a, const uint64_t* b);
};

const EcKernelTable& ec_portable_kernels();
// ec_ifma_kernels may be called only when detect_ifma().usable.
const EcKernelTable& ec_ifma_kernels();

}  // namespace accelgate::crypto::mb::detail

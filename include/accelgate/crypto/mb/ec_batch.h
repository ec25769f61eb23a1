#pragma once

// The multi-buffer elliptic-curve kernels (issue 6): up to eight X25519 scalar multiplications,
// ECDSA signatures or ECDH derivations at once, one per lane of the 8-lane kernels, each lane
// with its own key. Every lane's result is checked before it leaves (src/crypto/mb/README.md,
// "EC: result checks"); a lane that fails is zeroed and flagged, and openssl_ec.h's wrappers
// recompute it in software. Constant time in scalars, private keys and nonces: running time
// depends only on the curve, the lane count and (X25519) whether every lane is a key generation.
//
// Common rules: 1 to 8 lanes; unused lanes repeat lane 0 and are discarded; outputs may alias
// inputs; every pointer is the caller's and must stay valid for the call. A call breaking these
// rules (no lanes, more than 8, a key of another curve) computes nothing and returns all-zero
// masks. |backend| must be usable (kIfma only when detect_ifma().usable). Thread-safe; each
// thread allocates a scratch buffer on first use. Outcome masks: bit i is lane i; they are
// computed in constant time and may be branched on (whether a lane failed is not a secret).

#include <cstddef>
#include <cstdint>
#include <span>

#include "accelgate/crypto/mb/cpu.h"
#include "accelgate/crypto/mb/ec_key.h"

namespace accelgate::crypto::mb {

// EcFaultSite is where EcFaultInjection strikes.
enum class EcFaultSite {
  kPoint,      // the scalar multiplication's result, before the checks (every algorithm)
  kSignature,  // ECDSA: s, after it is computed and before the s * k check
};

// EcFaultInjection is a test hook: flips bit |bit| (mod 52) of limb |limb| (mod the limb count)
// of lane |lane|'s result at |site|, as a glitch would. Pass nullptr in production.
struct EcFaultInjection {
  int lane = 0;
  int limb = 0;
  int bit = 0;
  EcFaultSite site = EcFaultSite::kPoint;
};

// ---- X25519 (RFC 7748) ----

// X25519Lane is one X25519 operation: |scalar| (32 bytes, clamped here as RFC 7748 §5 says)
// times |peer_u| (32 bytes, little-endian; the top bit is masked and non-canonical values are
// accepted, §5), or times the base point u = 9 when |peer_u| is nullptr (key generation: |out|
// is the public key). |out| receives 32 bytes.
struct X25519Lane {
  const uint8_t* scalar = nullptr;
  const uint8_t* peer_u = nullptr;
  uint8_t* out = nullptr;
};

// X25519Outcome: every used lane is in exactly one mask. |zero_output|: the result is all zero
// (a low-order peer point; RFC 7748 §6.1 lets a caller abort, and OpenSSL does). |check_failed|:
// the ladder's consistency check failed (a fault; the output is zeroed).
struct X25519Outcome {
  uint8_t ok = 0;
  uint8_t zero_output = 0;
  uint8_t check_failed = 0;
};

// x25519_batch computes |lanes|. When every lane is a key generation (peer_u == nullptr) it
// uses the fixed-base method; a batch mixing both runs the ladder for every lane.
X25519Outcome x25519_batch(Backend backend, std::span<const X25519Lane> lanes,
                           const EcFaultInjection* fault = nullptr);

// ---- P-256 / P-384 ----

// EcOutcome: every used lane is in exactly one mask; outputs of lanes not in |ok| are zeroed.
// |invalid_input|: ECDSA: the nonce is not in [1, n-1]; ECDH: the peer point is not on the
// curve or a coordinate is >= p. |retry|: ECDSA only: r == 0 or s == 0 (probability about
// 2^-255), sign again with a fresh nonce. |check_failed|: the result failed its check (a fault).
struct EcOutcome {
  uint8_t ok = 0;
  uint8_t invalid_input = 0;
  uint8_t retry = 0;
  uint8_t check_failed = 0;
};

// EcdsaLane is one ECDSA signature (FIPS 186-5 §6.4.1) over |digest| (|digest_len| bytes, the
// hash of the message; bits2int keeps its leftmost ec_field_bytes * 8 bits) with |key| and the
// per-signature secret |nonce| k (ec_field_bytes big-endian, 1 <= k < n; the caller draws it,
// see openssl_ec.h). |r| and |s| receive ec_field_bytes big-endian bytes each.
struct EcdsaLane {
  const EcKey* key = nullptr;
  const uint8_t* digest = nullptr;
  size_t digest_len = 0;
  const uint8_t* nonce = nullptr;
  uint8_t* r = nullptr;
  uint8_t* s = nullptr;
};

// ecdsa_sign_batch signs |lanes|; every key must be of |curve|.
EcOutcome ecdsa_sign_batch(Backend backend, EcCurve curve, std::span<const EcdsaLane> lanes,
                           const EcFaultInjection* fault = nullptr);

// EcdhLane is one ECDH derivation (SP 800-56A §5.7.1.2): x(d * Q) for |key|'s d and the peer's
// public point Q = (|peer_x|, |peer_y|), ec_field_bytes big-endian each (the peer's encoding
// is the caller's to parse). |out_x| receives ec_field_bytes big-endian bytes.
struct EcdhLane {
  const EcKey* key = nullptr;
  const uint8_t* peer_x = nullptr;
  const uint8_t* peer_y = nullptr;
  uint8_t* out_x = nullptr;
};

// ecdh_batch derives |lanes|; every key must be of |curve|. Peer points are validated per lane
// (coordinates < p, on the curve; the point at infinity has no affine encoding).
EcOutcome ecdh_batch(Backend backend, EcCurve curve, std::span<const EcdhLane> lanes,
                     const EcFaultInjection* fault = nullptr);

// ec_build_tables builds the process-wide fixed-base tables (P-256 and P-384 signing, X25519
// key generation; 620 KiB in all) now instead of on the first batch that needs each. They are
// built with the best back end: a few milliseconds with IFMA, about 0.1 s on the portable one.
// Thread-safe and idempotent; an engine calls it when it starts.
void ec_build_tables();

// ---- Test hooks ----

// EcFieldForTest names the fields of the kernels: the primes and orders of P-256 and P-384
// (Montgomery arithmetic on 52-bit limbs, 5 or 8 limbs) and GF(2^255 - 19) (radix 2^51, 5 limbs).
enum class EcFieldForTest { kP256, kP256Order, kP384, kP384Order, k25519 };
enum class EcFieldOp {
  kMul,
  kSqr,
  kAdd,
  kSub,
  kInv,
  kAddLazy,
  kSubLazy,
  kCombine,
  kMulGrouped,
  kSqrGrouped
};

// ec_field_limbs_for_test is the limb count of |field|.
int ec_field_limbs_for_test(EcFieldForTest field);

// ec_field_for_test runs one field operation of |backend| over transposed operands (limb j of
// lane l at index 8 j + l; |b| is ignored by kSqr and kInv). Montgomery fields: kMul is
// a b / R mod m almost reduced (< 2m), kAdd and kSub reduce into [0, 2m), kInv is Fermat's
// a^(m - 2) with Montgomery multiplications; GF(2^255 - 19): plain arithmetic mod p, results
// "loose" (fe25519.inc). The primes of P-256 and P-384 only: kAddLazy is a + b and kSubLazy
// a - b + 2m, both below 4m; kCombine is 8a - 8b mod m in [0, 2m), through fe_fold at the top
// of its range. GF(2^255 - 19) only: kMulGrouped is 2 a b - a^2 and kSqrGrouped a^2 - b^2, each
// through the X25519 ladder's interleaved products (f25519_mul_wide_n, f25519_sqr_wide_n) and
// its subtraction without 2p (f25519_sub_offset).
void ec_field_for_test(Backend backend, EcFieldForTest field, EcFieldOp op, uint64_t* r,
                       const uint64_t* a, const uint64_t* b);

// ec_comb_table_words is the size of |curve|'s fixed-base table in 64-bit words;
// ec_comb_table_for_test builds it into |table| with |backend|.
size_t ec_comb_table_words(EcCurve curve);
void ec_comb_table_for_test(Backend backend, EcCurve curve, uint64_t* table);

// ec_x25519_base_table_words and ec_x25519_base_table_for_test: the same for X25519's
// fixed-base table (key generation).
size_t ec_x25519_base_table_words();
void ec_x25519_base_table_for_test(Backend backend, uint64_t* table);

}  // namespace accelgate::crypto::mb

#pragma once

// rsa_private_batch: up to eight RSA private-key operations (raw, c^d mod n by CRT) at once, one
// per lane of the 8-lane kernels, each lane with its own key of one KeySize. Every lane's result
// is verified by re-encryption with e before it leaves; see openssl_rsa.h for the wrapper that
// recomputes failed lanes in software.

#include <cstdint>
#include <span>

#include "accelgate/crypto/mb/cpu.h"
#include "accelgate/crypto/mb/rsa_key.h"

namespace accelgate::crypto::mb {

// RsaLane is one operation: |in| and |out| hold key->modulus_bytes() big-endian bytes (|in| is
// the ciphertext or the padded message; |out| may alias |in|). The caller owns all three.
struct RsaLane {
  const RsaKey* key = nullptr;
  const uint8_t* in = nullptr;
  uint8_t* out = nullptr;
};

// RsaFaultSite says where FaultInjection strikes: the CRT half mod p or mod q after its
// exponentiation (|bit| of |limb| flipped, as a glitch would); Garner's h left unreduced (h + p:
// the output is then the right residue mod p and mod q but not below n); or a stored constant,
// for the whole batch, so that the signing and the fault check both compute with it (p's k0
// zeroed, |bit| of |limb| of R^3 mod p, R^2 mod p or p itself flipped, qInv zeroed).
enum class RsaFaultSite {
  kHalfP,
  kHalfQ,
  kUnreducedH,
  kZeroK0OfP,
  kR3OfP,
  kR2OfP,
  kModulusP,
  kZeroQinv,
};

// FaultInjection is a test hook: a fault in lane |lane| at |site|. Pass nullptr in production.
struct FaultInjection {
  int lane = 0;
  int limb = 0;
  int bit = 0;  // 0-63: bits 52-63 are a limb's spare top bits, which the arithmetic never sets
  RsaFaultSite site = RsaFaultSite::kHalfP;
};

// BatchOutcome holds lane masks (bit i: lane i). A lane not in |verified| has an all-zero
// output and must not be used. The masks are derived from secret data in constant time; a
// caller may branch on them (whether a fault happened is not a secret).
struct BatchOutcome {
  uint8_t in_range = 0;  // input < n
  uint8_t verified = 0;  // out^e = in mod n by the CRT, out < n, the constants hold: correct
};

// rsa_private_batch computes |lanes| (1 to 8, all keys of one KeySize) on |backend|, which must
// be usable (kIfma only when detect_ifma().usable). Unused lanes repeat lane 0 and are
// discarded. A call breaking these rules computes nothing and returns all-zero masks. Constant time
// in keys and inputs: running time depends only on the KeySize, the public exponents and the lane
// count. Thread-safe; allocates a scratch buffer per thread.
BatchOutcome rsa_private_batch(Backend backend, std::span<const RsaLane> lanes,
                               const FaultInjection* fault = nullptr);

// Test hooks: the raw arithmetic of one back end over transposed operands (limb j of lane l at
// index j * 8 + l). |limbs| is 20, 30 or 40 (the CRT halves); operands have limbs < 2^52.

// amm_for_test computes r = a * b * 2^(-52 * limbs) mod m, almost reduced (r < 2m for a, b < 2m).
void amm_for_test(Backend backend, int limbs, uint64_t* r, const uint64_t* a, const uint64_t* b,
                  const uint64_t* m, const uint64_t* k0);

// ams_for_test is the dedicated squaring: r = a * a * 2^(-52 * limbs) mod m, almost reduced.
void ams_for_test(Backend backend, int limbs, uint64_t* r, const uint64_t* a, const uint64_t* m,
                  const uint64_t* k0);

}  // namespace accelgate::crypto::mb

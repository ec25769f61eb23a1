#pragma once

// RsaKey: an RSA private key prepared once for the multi-buffer kernels: its CRT parts as 52-bit
// limbs plus the Montgomery constants of p, q and n. Preparation runs in constant time with
// respect to the secret parts, so it may run on the data path (the valgrind test covers it).

#include <cstddef>
#include <cstdint>
#include <span>

namespace accelgate::crypto::mb {

// KeySize is the kernel class of a key: the size of n, which fixes the size of p and q.
enum class KeySize {
  kRsa2048,  // n of 1537..2048 bits, p and q of at most 1024 bits (20 limbs of 52 bits)
  kRsa3072,  // n of 2049..3072 bits, p and q of at most 1536 bits (30 limbs)
  kRsa4096,  // n of 3073..4096 bits, p and q of at most 2048 bits (40 limbs)
};

// modulus_bits is the largest n of |size|: 2048, 3072 or 4096.
int modulus_bits(KeySize size);

// half_limbs is the number of 52-bit limbs of a prime of the class (20, 30, 40).
int half_limbs(KeySize size);

// modulus_bytes_fit says whether |bytes| is a length of n that |size| holds (193..256, 257..384,
// 385..512 bytes): false for a key whose stored size or length has been corrupted, which the
// batch functions then refuse instead of reading or writing that many bytes.
bool modulus_bytes_fit(KeySize size, int bytes);

inline constexpr int kLanes = 8;
inline constexpr int kMaxHalfLimbs = 40;  // 2048 bits / 52, rounded up
inline constexpr int kMaxFullLimbs = 80;  // 4096 bits / 52, rounded up
inline constexpr int kMaxExpWords = 32;   // 2048 bits / 64

namespace detail {

// HalfKey is one CRT half (p with dP, or q with dQ). Little-endian limbs; every limb < 2^52.
struct HalfKey {
  uint64_t m[kMaxHalfLimbs];   // the prime
  uint64_t r1[kMaxHalfLimbs];  // R mod m, R = 2^(52 * limbs): 1 in the Montgomery domain
  uint64_t r2[kMaxHalfLimbs];  // R^2 mod m
  uint64_t r3[kMaxHalfLimbs];  // R^3 mod m: takes the high half of c into the domain
  uint64_t exp[kMaxExpWords];  // dP or dQ, little-endian 64-bit words
  uint64_t k0;                 // -m^-1 mod 2^52
};

// KeyMaterial is what the kernels read; plain data, copied freely.
struct KeyMaterial {
  KeySize size;
  int modulus_bytes;  // bytes of n, the length of every input and output
  uint64_t e;         // public exponent, odd, >= 3, at most 64 bits
  HalfKey p;
  HalfKey q;
  uint64_t qinv[kMaxHalfLimbs];  // q^-1 mod p
  uint64_t n[kMaxFullLimbs];     // public modulus
};

}  // namespace detail

// RsaKeyParts are the big-endian magnitudes of a key's parts, any length (leading zeros are
// fine). The caller keeps them alive only for the call to prepare_rsa_key.
struct RsaKeyParts {
  std::span<const uint8_t> n, e, p, q, dp, dq, qinv;
};

// KeyStatus says why prepare_rsa_key refused a key; refused keys belong in software.
enum class KeyStatus {
  kOk,
  kUnsupportedModulus,   // n outside 1537..4096 bits
  kUnsupportedFactors,   // p, q, dP, dQ or qInv longer than half of the size class
  kUnsupportedExponent,  // e even, below 3 or above 64 bits
};

// key_status_text is a short static description of |status|.
const char* key_status_text(KeyStatus status);

// RsaKey is immutable once prepared and may be shared by threads. It holds secrets: its
// destructor wipes them.
class RsaKey {
 public:
  RsaKey() = default;
  RsaKey(const RsaKey&) = default;
  RsaKey& operator=(const RsaKey&) = default;
  ~RsaKey();

  KeySize size() const { return material_.size; }
  int modulus_bytes() const { return material_.modulus_bytes; }
  const detail::KeyMaterial& material() const { return material_; }

  // prepare_rsa_key fills |out| from |parts|. Only the public n and e decide the status; the
  // work on secret parts has no secret-dependent branch or memory index. Costs a few
  // milliseconds for RSA-4096 (Montgomery constants by constant-time doubling).
  friend KeyStatus prepare_rsa_key(const RsaKeyParts& parts, RsaKey* out);

 private:
  detail::KeyMaterial material_{};
};

KeyStatus prepare_rsa_key(const RsaKeyParts& parts, RsaKey* out);

}  // namespace accelgate::crypto::mb

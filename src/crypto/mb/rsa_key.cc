// rsa_key.cc: turns an RSA key's parts into the limbs and Montgomery constants the kernels read.
// Constant time in the secret parts: only the public n and e, and the lengths of the spans,
// steer control flow. The Montgomery constants come from modular doubling (2^k mod m with a
// masked subtraction per step), which needs neither division nor a secret-dependent branch.

#include "accelgate/crypto/mb/rsa_key.h"

#include <cstdint>
#include <cstring>  // explicit_bzero (a glibc extension declared by <string.h>)
#include <initializer_list>

namespace accelgate::crypto::mb {
namespace {

constexpr uint64_t kLimbMask = (uint64_t{1} << 52) - 1;

struct SizeClass {
  KeySize size;
  int modulus_bits;
  int half_limbs;  // 52-bit limbs per prime; 4p < 2^(52 * half_limbs)
};

constexpr SizeClass kClasses[] = {
    {KeySize::kRsa2048, 2048, 20},
    {KeySize::kRsa3072, 3072, 30},
    {KeySize::kRsa4096, 4096, 40},
};

// public_bit_length is the bit length of a public big-endian number (branches on its value).
int public_bit_length(std::span<const uint8_t> be) {
  for (size_t i = 0; i < be.size(); ++i) {
    if (be[i] != 0) {
      return static_cast<int>(8 * (be.size() - i)) - __builtin_clz(be[i]) + 24;
    }
  }
  return 0;
}

// to_limbs reads big-endian bytes (8 * size <= 52 * count) into 52-bit limbs.
void to_limbs(uint64_t* limbs, int count, std::span<const uint8_t> be) {
  for (int j = 0; j < count; ++j) limbs[j] = 0;
  const int len = static_cast<int>(be.size());
  for (int i = 0; i < len; ++i) {
    const int bit = 8 * (len - 1 - i);
    const int j = bit / 52;
    const int s = bit % 52;
    const uint64_t byte = be[i];
    limbs[j] |= (byte << s) & kLimbMask;
    if (s > 44) limbs[j + 1] |= byte >> (52 - s);
  }
}

// to_words reads big-endian bytes (size <= 8 * count) into little-endian 64-bit words.
void to_words(uint64_t* words, int count, std::span<const uint8_t> be) {
  for (int j = 0; j < count; ++j) words[j] = 0;
  const int len = static_cast<int>(be.size());
  for (int i = 0; i < len; ++i) {
    const int bit = 8 * (len - 1 - i);
    words[bit / 64] |= uint64_t{be[i]} << (bit % 64);
  }
}

// mod_double sets x = 2x mod m for x < m < 2^(52 * count - 1), with a masked subtraction.
void mod_double(uint64_t* x, const uint64_t* m, int count) {
  uint64_t carry = 0;
  for (int j = 0; j < count; ++j) {
    const uint64_t v = (x[j] << 1) | carry;
    carry = v >> 52;
    x[j] = v & kLimbMask;
  }
  uint64_t d[kMaxHalfLimbs];
  uint64_t borrow = 0;
  for (int j = 0; j < count; ++j) {
    const uint64_t t = x[j] - m[j] - borrow;
    borrow = t >> 63;
    d[j] = t & kLimbMask;
  }
  const uint64_t keep_d = borrow - 1;  // all ones when 2x >= m
  for (int j = 0; j < count; ++j) x[j] = (d[j] & keep_d) | (x[j] & ~keep_d);
}

// montgomery_constants sets r1, r2 and r3 to R, R^2, R^3 mod m, R = 2^(52 count).
void montgomery_constants(const uint64_t* m, int count, uint64_t* r1, uint64_t* r2, uint64_t* r3) {
  uint64_t x[kMaxHalfLimbs] = {1};
  const int steps = 52 * count;
  for (uint64_t* out : {r1, r2, r3}) {
    for (int i = 0; i < steps; ++i) mod_double(x, m, count);
    for (int j = 0; j < count; ++j) out[j] = x[j];
  }
  explicit_bzero(x, sizeof(x));
}

// neg_inverse_52 is -m0^-1 mod 2^52 for odd m0, by Newton's iteration (each step doubles the
// correct low bits: 3, 6, 12, 24, 48, 96).
uint64_t neg_inverse_52(uint64_t m0) {
  uint64_t x = m0;
  for (int i = 0; i < 5; ++i) x *= 2 - m0 * x;
  return (0 - x) & kLimbMask;
}

void prepare_half(detail::HalfKey* half, int limbs, std::span<const uint8_t> prime,
                  std::span<const uint8_t> exponent) {
  to_limbs(half->m, limbs, prime);
  to_words(half->exp, kMaxExpWords, exponent);
  montgomery_constants(half->m, limbs, half->r1, half->r2, half->r3);
  half->k0 = neg_inverse_52(half->m[0]);
}

// class_of_modulus is the smallest class that holds an n of |n_bits| (1537..4096), or nullptr.
const SizeClass* class_of_modulus(int64_t n_bits) {
  for (const SizeClass& c : kClasses) {
    if (n_bits > 1536 && n_bits <= c.modulus_bits) return &c;
  }
  return nullptr;
}

const SizeClass* size_class(KeySize size) {
  for (const SizeClass& c : kClasses) {
    if (c.size == size) return &c;
  }
  return nullptr;
}

}  // namespace

int modulus_bits(KeySize size) {
  const SizeClass* c = size_class(size);
  return c != nullptr ? c->modulus_bits : 0;
}

int half_limbs(KeySize size) {
  const SizeClass* c = size_class(size);
  return c != nullptr ? c->half_limbs : 0;
}

bool modulus_bytes_fit(KeySize size, int bytes) {
  // The class bounds are whole bytes, so every n of |bytes| bytes (8 bytes - 7 to 8 bytes bits)
  // is in the class of an n of 8 bytes bits.
  const SizeClass* c = class_of_modulus(int64_t{8} * bytes);
  return c != nullptr && c->size == size;
}

const char* key_status_text(KeyStatus status) {
  switch (status) {
    case KeyStatus::kOk:
      return "ok";
    case KeyStatus::kUnsupportedModulus:
      return "modulus not of 1537 to 4096 bits";
    case KeyStatus::kUnsupportedFactors:
      return "a CRT part longer than half the size class";
    case KeyStatus::kUnsupportedExponent:
      return "public exponent even, below 3 or above 64 bits";
  }
  return "unknown";
}

RsaKey::~RsaKey() { explicit_bzero(&material_, sizeof(material_)); }

KeyStatus prepare_rsa_key(const RsaKeyParts& parts, RsaKey* out) {
  const int n_bits = public_bit_length(parts.n);
  const SizeClass* cls = class_of_modulus(n_bits);
  if (cls == nullptr) return KeyStatus::kUnsupportedModulus;
  const auto half_bytes = static_cast<size_t>(cls->modulus_bits / 16);
  for (std::span<const uint8_t> part : {parts.p, parts.q, parts.dp, parts.dq, parts.qinv}) {
    if (part.size() > half_bytes) return KeyStatus::kUnsupportedFactors;
  }
  const int e_bits = public_bit_length(parts.e);
  if (e_bits < 2 || e_bits > 64 || (parts.e.back() & 1) == 0) {
    return KeyStatus::kUnsupportedExponent;
  }

  detail::KeyMaterial& k = out->material_;
  explicit_bzero(&k, sizeof(k));
  k.size = cls->size;
  k.modulus_bytes = (n_bits + 7) / 8;
  to_words(&k.e, 1, parts.e.subspan(parts.e.size() > 8 ? parts.e.size() - 8 : 0));
  const int nh = cls->half_limbs;
  prepare_half(&k.p, nh, parts.p, parts.dp);
  prepare_half(&k.q, nh, parts.q, parts.dq);
  to_limbs(k.qinv, nh, parts.qinv);
  to_limbs(k.n, 2 * nh, parts.n.subspan(parts.n.size() - static_cast<size_t>(k.modulus_bytes)));
  return KeyStatus::kOk;
}

}  // namespace accelgate::crypto::mb

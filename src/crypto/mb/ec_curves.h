#pragma once

// The curve constants of the EC kernels (FIPS 186-5 / SP 800-186 §3.2.1.3 and §3.2.1.4 for
// P-256 and P-384; RFC 7748 §4.1 for Curve25519), written once as the hexadecimal strings of
// the standards, and the compile-time arithmetic that turns them into what the kernels read:
// 64-bit words, 52-bit limbs and Montgomery constants. Everything here is constexpr and runs
// in the compiler; nothing is secret.

#include <cstdint>

namespace accelgate::crypto::mb::detail {

struct CurveHex {
  const char* p;   // field prime
  const char* n;   // group order
  const char* b;   // y^2 = x^3 - 3x + b
  const char* gx;  // base point
  const char* gy;
};

inline constexpr CurveHex kP256Hex{
    "ffffffff00000001000000000000000000000000ffffffffffffffffffffffff",
    "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551",
    "5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604b",
    "6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296",
    "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5",
};

inline constexpr CurveHex kP384Hex{
    "fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffeffffffff0000000000000000"
    "ffffffff",
    "ffffffffffffffffffffffffffffffffffffffffffffffffc7634d81f4372ddf581a0db248b0a77aecec196a"
    "ccc52973",
    "b3312fa7e23ee7e4988e056be3f82d19181d9c6efe8141120314088f5013875ac656398d8a2ed19d2a85c8ed"
    "d3ec2aef",
    "aa87ca22be8b05378eb1c71ef320ad746e1d3b628ba79b9859f741e082542a385502f25dbf55296c3a545e38"
    "72760ab7",
    "3617de4a96262c6f5d9e98bf9292dc29f8f41dbd289a147ce9da3113b5f0b8c00a60b1ce1d7e819d7a431d7c"
    "90ea0e5f",
};

// BigWords is a little-endian number of kWords 64-bit words.
template <int kWords>
struct BigWords {
  uint64_t w[kWords] = {};
};

constexpr int hex_digit(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c - 'A' + 10;
}

// words_from_hex parses a big-endian hexadecimal string.
template <int kWords>
constexpr BigWords<kWords> words_from_hex(const char* hex) {
  int len = 0;
  while (hex[len] != '\0') ++len;
  BigWords<kWords> r;
  for (int i = 0; i < len; ++i) {
    const int bit = 4 * (len - 1 - i);
    r.w[bit / 64] |= static_cast<uint64_t>(hex_digit(hex[i])) << (bit % 64);
  }
  return r;
}

// Limbs is a little-endian number of kLimbs 52-bit limbs.
template <int kLimbs>
struct Limbs {
  uint64_t l[kLimbs] = {};
};

inline constexpr uint64_t kMask52 = (uint64_t{1} << 52) - 1;

template <int kLimbs, int kWords>
constexpr Limbs<kLimbs> limbs_from_words(const BigWords<kWords>& x) {
  Limbs<kLimbs> r;
  for (int j = 0; j < kLimbs; ++j) {
    const int bit = 52 * j;
    const int w = bit / 64;
    const int s = bit % 64;
    uint64_t v = w < kWords ? x.w[w] >> s : 0;
    if (s > 12 && w + 1 < kWords) v |= x.w[w + 1] << (64 - s);
    r.l[j] = v & kMask52;
  }
  return r;
}

template <int kLimbs>
constexpr Limbs<kLimbs> limbs_from_hex(const char* hex) {
  return limbs_from_words<kLimbs>(words_from_hex<(52 * kLimbs + 63) / 64>(hex));
}

// ge is a >= b for normalised limbs.
template <int kLimbs>
constexpr bool ge(const Limbs<kLimbs>& a, const Limbs<kLimbs>& b) {
  for (int j = kLimbs - 1; j >= 0; --j) {
    if (a.l[j] != b.l[j]) return a.l[j] > b.l[j];
  }
  return true;
}

template <int kLimbs>
constexpr Limbs<kLimbs> sub(const Limbs<kLimbs>& a, const Limbs<kLimbs>& b) {
  Limbs<kLimbs> r;
  uint64_t borrow = 0;
  for (int j = 0; j < kLimbs; ++j) {
    const uint64_t t = a.l[j] - b.l[j] - borrow;
    borrow = t >> 63;
    r.l[j] = t & kMask52;
  }
  return r;
}

template <int kLimbs>
constexpr Limbs<kLimbs> add(const Limbs<kLimbs>& a, const Limbs<kLimbs>& b) {
  Limbs<kLimbs> r;
  uint64_t carry = 0;
  for (int j = 0; j < kLimbs; ++j) {
    const uint64_t t = a.l[j] + b.l[j] + carry;
    carry = t >> 52;
    r.l[j] = t & kMask52;
  }
  return r;
}

// mod_mul2k is x * 2^k mod m, for x < m, by k modular doublings.
template <int kLimbs>
constexpr Limbs<kLimbs> mod_mul2k(Limbs<kLimbs> x, const Limbs<kLimbs>& m, int k) {
  for (int i = 0; i < k; ++i) {
    x = add(x, x);
    if (ge(x, m)) x = sub(x, m);
  }
  return x;
}

// neg_inverse_52 is -m0^-1 mod 2^52 for odd m0 (Newton's iteration).
constexpr uint64_t neg_inverse_52(uint64_t m0) {
  uint64_t x = m0;
  for (int i = 0; i < 5; ++i) x *= 2 - m0 * x;
  return (0 - x) & kMask52;
}

// MontField holds the constants of Montgomery arithmetic modulo an odd m of kLimbs 52-bit limbs,
// R = 2^(52 kLimbs), 4m < R.
template <int kLimbs>
struct MontField {
  Limbs<kLimbs> m;
  Limbs<kLimbs> two_m;
  Limbs<kLimbs> r1;  // R mod m: one, in the Montgomery domain
  Limbs<kLimbs> r2;  // R^2 mod m: amm(x, r2) takes x into the domain
  uint64_t k0;       // -m^-1 mod 2^52
  static constexpr int kWords = (52 * kLimbs + 63) / 64;
  BigWords<kWords> exp_m2;  // m - 2 (Fermat inversion), little-endian words
};

template <int kLimbs>
constexpr MontField<kLimbs> mont_field(const char* hex) {
  MontField<kLimbs> f;
  f.m = limbs_from_hex<kLimbs>(hex);
  f.two_m = add(f.m, f.m);
  Limbs<kLimbs> one;
  one.l[0] = 1;
  f.r1 = mod_mul2k(one, f.m, 52 * kLimbs);
  f.r2 = mod_mul2k(f.r1, f.m, 52 * kLimbs);
  f.k0 = neg_inverse_52(f.m.l[0]);
  constexpr int kWords = MontField<kLimbs>::kWords;
  const BigWords<kWords> w = words_from_hex<kWords>(hex);
  uint64_t borrow = 2;
  for (int i = 0; i < kWords; ++i) {
    f.exp_m2.w[i] = w.w[i] - borrow;
    borrow = w.w[i] < borrow ? 1 : 0;
  }
  return f;
}

// to_mont_const is x * R mod m for a constant x < m.
template <int kLimbs>
constexpr Limbs<kLimbs> to_mont_const(const char* hex, const Limbs<kLimbs>& m) {
  return mod_mul2k(limbs_from_hex<kLimbs>(hex), m, 52 * kLimbs);
}

}  // namespace accelgate::crypto::mb::detail

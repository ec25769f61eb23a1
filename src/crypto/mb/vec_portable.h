#pragma once

// VecPortable: the 8-lane vector type in plain C++ (DESIGN.md, "The multi-buffer kernels"). It
// mirrors VecIfma operation for operation; no operation branches or indexes on lane values, so
// valgrind's verdict on the kernels over this type holds for their control flow on IFMA too,
// as far as the kernels take the same loop shapes: VecPortableT's parameters select them, and
// kernels_portable.cc builds the kernels twice, with VecPortable's shapes and with the IFMA
// back end's (VecPortableIfmaShapes, Backend::kPortableIfmaShapes), which is what valgrind
// checks for the IFMA back end. Include only from kernels_portable.cc and
// ec_kernels_portable.cc (its definitions are internal to the including file).

#include <cstdint>

namespace {

template <bool kGroupedColumnsT, int kPinnedModulusLimbsT>
struct VecPortableT {
  uint64_t v[8];

  // The loop shapes montgomery.inc takes (see VecIfma for what they select): VecPortable keeps
  // the ones that cost fewer scalar instructions (square_columns_split and amm's rows that add
  // a_i b: product_columns costs 14 % more per RSA-2048 operation, eight pinned limbs 5 %);
  // VecPortableIfmaShapes takes the IFMA back end's, for the valgrind check and the tests.
  static constexpr bool kGroupedColumns = kGroupedColumnsT;
  static constexpr int kPinnedModulusLimbs = kPinnedModulusLimbsT;

  // Mask is a lane mask: every lane all ones or all zeros.
  struct Mask {
    uint64_t v[8];
  };

  static VecPortableT zero() { return set1(0); }
  static VecPortableT set1(uint64_t x) {
    VecPortableT r;
    for (uint64_t& lane : r.v) lane = x;
    return r;
  }
  static VecPortableT load(const uint64_t* p) {
    VecPortableT r;
    for (int l = 0; l < 8; ++l) r.v[l] = p[l];
    return r;
  }
  static void store(uint64_t* p, VecPortableT a) {
    for (int l = 0; l < 8; ++l) p[l] = a.v[l];
  }
#define AG_MB_LANEWISE(name, expr)                           \
  static VecPortableT name(VecPortableT a, VecPortableT b) { \
    VecPortableT r;                                          \
    for (int l = 0; l < 8; ++l) r.v[l] = (expr);             \
    return r;                                                \
  }
  AG_MB_LANEWISE(add, a.v[l] + b.v[l])
  AG_MB_LANEWISE(sub, a.v[l] - b.v[l])
  AG_MB_LANEWISE(and_, a.v[l] & b.v[l])
  AG_MB_LANEWISE(or_, a.v[l] | b.v[l])
  AG_MB_LANEWISE(xor_, a.v[l] ^ b.v[l])
#undef AG_MB_LANEWISE

  // shr52, lo52, sar52, shr63: the fixed shifts and the limb mask of the carry chains.
  static VecPortableT shr52(VecPortableT a) {
    VecPortableT r;
    for (int l = 0; l < 8; ++l) r.v[l] = a.v[l] >> 52;
    return r;
  }
  static VecPortableT lo52(VecPortableT a) {
    VecPortableT r;
    for (int l = 0; l < 8; ++l) r.v[l] = a.v[l] & ((uint64_t{1} << 52) - 1);
    return r;
  }
  static VecPortableT sar52(VecPortableT a) {
    VecPortableT r;
    for (int l = 0; l < 8; ++l) r.v[l] = static_cast<uint64_t>(static_cast<int64_t>(a.v[l]) >> 52);
    return r;
  }
  static VecPortableT shr63(VecPortableT a) {
    VecPortableT r;
    for (int l = 0; l < 8; ++l) r.v[l] = a.v[l] >> 63;
    return r;
  }
  static VecPortableT shl1(VecPortableT a) {
    VecPortableT r;
    for (int l = 0; l < 8; ++l) r.v[l] = a.v[l] << 1;
    return r;
  }
  // srl and sll shift every lane by the same public count (0..63).
  static VecPortableT srl(VecPortableT a, int n) {
    VecPortableT r;
    for (int l = 0; l < 8; ++l) r.v[l] = a.v[l] >> n;
    return r;
  }
  static VecPortableT sll(VecPortableT a, int n) {
    VecPortableT r;
    for (int l = 0; l < 8; ++l) r.v[l] = a.v[l] << n;
    return r;
  }

  // madd52lo and madd52hi are vpmadd52luq and vpmadd52huq: acc + low (high) 52 bits of the
  // 104-bit product of the low 52 bits of a and b.
  static VecPortableT madd52lo(VecPortableT acc, VecPortableT a, VecPortableT b) {
    VecPortableT r;
    for (int l = 0; l < 8; ++l) {
      const unsigned __int128 p = static_cast<unsigned __int128>(a.v[l] & kMask) * (b.v[l] & kMask);
      r.v[l] = acc.v[l] + (static_cast<uint64_t>(p) & kMask);
    }
    return r;
  }
  static VecPortableT madd52hi(VecPortableT acc, VecPortableT a, VecPortableT b) {
    VecPortableT r;
    for (int l = 0; l < 8; ++l) {
      const unsigned __int128 p = static_cast<unsigned __int128>(a.v[l] & kMask) * (b.v[l] & kMask);
      r.v[l] = acc.v[l] + static_cast<uint64_t>(p >> 52);
    }
    return r;
  }

  // order_point is VecIfma's instruction-ordering hint; nothing to order here.
  static void order_point(VecPortableT& /*a*/, VecPortableT& /*b*/) {}
  // in_register is VecIfma's load hint; a no-op here.
  static VecPortableT in_register(VecPortableT x) { return x; }

  // eq is the lanes where a == b; msb the lanes whose top bit is set.
  static Mask eq(VecPortableT a, VecPortableT b) {
    Mask m;
    for (int l = 0; l < 8; ++l) {
      const uint64_t x = a.v[l] ^ b.v[l];
      // (x | -x) has its top bit set iff x != 0.
      m.v[l] = ((x | (0 - x)) >> 63) - 1;
    }
    return m;
  }
  static Mask msb(VecPortableT a) {
    Mask m;
    for (int l = 0; l < 8; ++l) m.v[l] = 0 - (a.v[l] >> 63);
    return m;
  }
  // blend is b in the lanes of m, a elsewhere.
  static VecPortableT blend(Mask m, VecPortableT a, VecPortableT b) {
    VecPortableT r;
    for (int l = 0; l < 8; ++l) r.v[l] = (a.v[l] & ~m.v[l]) | (b.v[l] & m.v[l]);
    return r;
  }
  static Mask mask_not(Mask m) {
    for (uint64_t& lane : m.v) lane = ~lane;
    return m;
  }
  static Mask mask_and(Mask a, Mask b) {
    for (int l = 0; l < 8; ++l) a.v[l] &= b.v[l];
    return a;
  }
  static Mask lane_mask(uint8_t bits) {
    Mask m;
    for (int l = 0; l < 8; ++l) m.v[l] = 0 - static_cast<uint64_t>((bits >> l) & 1);
    return m;
  }
  static uint8_t mask_bits(Mask m) {
    uint8_t r = 0;
    for (int l = 0; l < 8; ++l) r = static_cast<uint8_t>(r | ((m.v[l] & 1) << l));
    return r;
  }

  // permute16 is vpermt2q: lane l gets entry (idx.v[l] & 15) of the 16 entries lo.v[0..7],
  // hi.v[0..7]. Every entry is read and selected with a mask, so idx never forms an address.
  static VecPortableT permute16(VecPortableT idx, VecPortableT lo, VecPortableT hi) {
    VecPortableT r;
    for (int l = 0; l < 8; ++l) {
      const uint64_t i = idx.v[l] & 15;
      uint64_t acc = 0;
      for (int e = 0; e < 16; ++e) {
        const uint64_t x = i ^ static_cast<uint64_t>(e);
        const uint64_t hit = ((x | (0 - x)) >> 63) - 1;  // all ones iff i == e
        acc |= (e < 8 ? lo.v[e] : hi.v[e - 8]) & hit;
      }
      r.v[l] = acc;
    }
    return r;
  }

  static constexpr uint64_t kMask = (uint64_t{1} << 52) - 1;
};

using VecPortable = VecPortableT<false, 0>;

}  // namespace

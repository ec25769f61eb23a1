#pragma once

// VecIfma: the 8-lane vector type on AVX-512 IFMA (DESIGN.md, "The multi-buffer kernels"); one
// __m512i, masks in opmask registers. Include only from kernels_ifma.cc and ec_kernels_ifma.cc,
// after their `#pragma GCC target` and after kernel_table.h, so that every function here carries
// the AVX-512 target attribute and nothing else in the binary does.

#include <immintrin.h>

#include <cstdint>

namespace {

struct VecIfma {
  __m512i v;

  using Mask = __mmask8;

  // kGroupedColumns: montgomery.inc's grouped column forms (square_columns_grouped for 20 limbs,
  // square_columns_swept for 30 and 40, product_columns and reduce-only rows in amm) pay here:
  // an addition takes a multiply-add's port slot on Intel's 512-bit units, and they load less.
  static constexpr bool kGroupedColumns = true;
  // kPinnedModulusLimbs: limbs of m that montgomery.inc's reduce-only rows hold in registers for
  // a whole reduction instead of loading them every row (reduce_rows_rotating).
  static constexpr int kPinnedModulusLimbs = accelgate::crypto::mb::detail::kIfmaPinnedModulusLimbs;

  static VecIfma zero() { return {_mm512_setzero_si512()}; }
  static VecIfma set1(uint64_t x) { return {_mm512_set1_epi64(static_cast<long long>(x))}; }
  static VecIfma load(const uint64_t* p) { return {_mm512_loadu_si512(p)}; }
  static void store(uint64_t* p, VecIfma a) { _mm512_storeu_si512(p, a.v); }

  static VecIfma add(VecIfma a, VecIfma b) { return {_mm512_add_epi64(a.v, b.v)}; }
  static VecIfma sub(VecIfma a, VecIfma b) { return {_mm512_sub_epi64(a.v, b.v)}; }
  static VecIfma and_(VecIfma a, VecIfma b) { return {_mm512_and_si512(a.v, b.v)}; }
  static VecIfma or_(VecIfma a, VecIfma b) { return {_mm512_or_si512(a.v, b.v)}; }
  static VecIfma xor_(VecIfma a, VecIfma b) { return {_mm512_xor_si512(a.v, b.v)}; }

  static VecIfma shr52(VecIfma a) { return {_mm512_srli_epi64(a.v, 52)}; }
  static VecIfma lo52(VecIfma a) {
    return {_mm512_and_si512(a.v, _mm512_set1_epi64((1LL << 52) - 1))};
  }
  static VecIfma sar52(VecIfma a) { return {_mm512_srai_epi64(a.v, 52)}; }
  static VecIfma shr63(VecIfma a) { return {_mm512_srli_epi64(a.v, 63)}; }
  static VecIfma shl1(VecIfma a) { return {_mm512_slli_epi64(a.v, 1)}; }
  static VecIfma srl(VecIfma a, int n) { return {_mm512_srl_epi64(a.v, _mm_cvtsi32_si128(n))}; }
  static VecIfma sll(VecIfma a, int n) { return {_mm512_sll_epi64(a.v, _mm_cvtsi32_si128(n))}; }

  static VecIfma madd52lo(VecIfma acc, VecIfma a, VecIfma b) {
    return {_mm512_madd52lo_epu64(acc.v, a.v, b.v)};
  }
  static VecIfma madd52hi(VecIfma acc, VecIfma a, VecIfma b) {
    return {_mm512_madd52hi_epu64(acc.v, a.v, b.v)};
  }
  // order_point passes a and b through an empty asm statement: the compiler must compute them
  // before this point and cannot move their later uses above it. No instruction is emitted; it
  // fixes the program order that an out-of-order core issues ready instructions in.
  static void order_point(VecIfma& a, VecIfma& b) { __asm__("" : "+v"(a.v), "+v"(b.v)); }
  // in_register returns a copy of x that the compiler must hold in a register: a limb used by
  // two multiply-adds is then loaded once, not folded into both as a memory operand.
  static VecIfma in_register(VecIfma x) {
    __asm__("" : "+v"(x.v));
    return x;
  }

  static Mask eq(VecIfma a, VecIfma b) { return _mm512_cmpeq_epi64_mask(a.v, b.v); }
  static Mask msb(VecIfma a) {
    return _mm512_test_epi64_mask(a.v, _mm512_set1_epi64(static_cast<long long>(1ULL << 63)));
  }
  static VecIfma blend(Mask m, VecIfma a, VecIfma b) {
    return {_mm512_mask_blend_epi64(m, a.v, b.v)};
  }
  static Mask mask_not(Mask m) { return static_cast<Mask>(~m); }
  static Mask mask_and(Mask a, Mask b) { return static_cast<Mask>(a & b); }
  static Mask lane_mask(uint8_t bits) { return bits; }
  static uint8_t mask_bits(Mask m) { return m; }
  // permute16: lane l gets entry (idx & 15) of lo[0..7], hi[0..7] (vpermt2q; a register
  // permute, its timing independent of idx).
  static VecIfma permute16(VecIfma idx, VecIfma lo, VecIfma hi) {
    return {_mm512_permutex2var_epi64(lo.v, idx.v, hi.v)};
  }
};

}  // namespace

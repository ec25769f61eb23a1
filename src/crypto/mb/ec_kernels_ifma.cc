// ec_kernels_ifma.cc: the EC kernels over VecIfma, with kernels_ifma.cc's arrangement: every
// function between the push_options and pop_options pragmas carries the AVX-512 target
// attribute and is internal to this file; standard headers come first. The exported table is
// plain data, read only after detect_ifma() said yes.

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ec_curves.h"
#include "ec_kernel_table.h"

// clang (clang-tidy reads this file too) has no push_options; its equivalent is an attribute
// pushed onto every function.
#ifdef __clang__
#pragma clang attribute push(__attribute__((target("avx512f,avx512vl,avx512bw,avx512ifma"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512ifma")
#endif
// GCC 12's _mm512_undefined_epi32 (behind the shift intrinsics) trips -Wuninitialized when
// inlined (GCC bug 105593); the value is never used.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#ifdef __clang__
// clang (the fuzz build compiles this library) treats the unroll pragmas as hints and warns
// where it declines one; GCC's unrolling is what the kernels are tuned for.
#pragma clang diagnostic ignored "-Wpass-failed"
#else
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "vec_ifma.h"

namespace {

// The order matters: each file uses the ones above it.
// clang-format off
#include "ec_field.inc"
#include "ec_point.inc"
#include "ec_ops.inc"
#include "fe25519.inc"
#include "x25519.inc"
#include "x25519_base.inc"
// clang-format on

constexpr accelgate::crypto::mb::detail::EcKernelTable kEcIfmaTable{
    &x25519_dispatch<VecIfma>, &ecdsa_sign<VecIfma, CurveP256>, &ecdsa_sign<VecIfma, CurveP384>,
    &ecdh<VecIfma, CurveP256>, &ecdh<VecIfma, CurveP384>,       &build_comb_p256<VecIfma>,
    &build_comb_p384<VecIfma>, &build_x25519_base<VecIfma>,     &field_for_test<VecIfma>,
};

}  // namespace

#pragma GCC diagnostic pop
#ifdef __clang__
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace accelgate::crypto::mb::detail {

const EcKernelTable& ec_ifma_kernels() { return kEcIfmaTable; }

}  // namespace accelgate::crypto::mb::detail

// kernels_ifma.cc: the kernels (montgomery.inc, rsa.inc) over VecIfma. Everything between the
// push_options and pop_options pragmas carries the AVX-512 target attribute (GCC's function-level
// targets); everything is internal to this file, so no AVX-512 copy of a shared inline function
// can stand in for a baseline one elsewhere. Standard headers come first for the same reason.
// The exported table is plain data, read only after detect_ifma() said yes.

#include <immintrin.h>

#include <cstdint>

#include "kernel_table.h"

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

#define AG_MB_UNROLL _Pragma("GCC unroll 128")

#include "vec_ifma.h"

namespace {

#include "montgomery.inc"
#include "rsa.inc"

constexpr accelgate::crypto::mb::detail::KernelTable kIfmaTable{
    &rsa_private_any<VecIfma>, &amm_hook<VecIfma>, &ams_hook<VecIfma>};

}  // namespace

#pragma GCC diagnostic pop
#ifdef __clang__
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace accelgate::crypto::mb::detail {

const KernelTable& ifma_kernels() { return kIfmaTable; }

}  // namespace accelgate::crypto::mb::detail

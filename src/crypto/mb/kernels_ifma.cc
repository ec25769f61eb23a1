// kernels_ifma.cc: the kernels (montgomery.inc, rsa.inc) over VecIfma. Everything between
// ifma_target_begin.h and ifma_target_end.h carries the AVX-512 target attribute (GCC's
// function-level targets); everything is internal to this file, so no AVX-512 copy of a shared
// inline function can stand in for a baseline one elsewhere. Standard headers come first for the
// same reason. The exported table is plain data, read only after detect_ifma() said yes.

#include <immintrin.h>

#include <cstdint>

#include "kernel_table.h"

// Every function from here to ifma_target_end.h is compiled for AVX-512 IFMA.
#include "ifma_target_begin.h"

#define AG_MB_UNROLL _Pragma("GCC unroll 128")

#include "vec_ifma.h"

namespace {

#include "montgomery.inc"
#include "rsa.inc"

constexpr accelgate::crypto::mb::detail::KernelTable kIfmaTable{
    &rsa_private_any<VecIfma>, &amm_hook<VecIfma>, &ams_hook<VecIfma>};

}  // namespace

#include "ifma_target_end.h"

namespace accelgate::crypto::mb::detail {

const KernelTable& ifma_kernels() { return kIfmaTable; }

}  // namespace accelgate::crypto::mb::detail

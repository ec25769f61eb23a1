// ec_kernels_ifma.cc: the EC kernels over VecIfma, with kernels_ifma.cc's arrangement: every
// function between ifma_target_begin.h and ifma_target_end.h carries the AVX-512 target
// attribute and is internal to this file; standard headers come first. The exported table is
// plain data, read only after detect_ifma() said yes.

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ec_curves.h"
#include "ec_kernel_table.h"
#include "kernel_table.h"  // kIfmaPinnedModulusLimbs, which vec_ifma.h names

// Every function from here to ifma_target_end.h is compiled for AVX-512 IFMA.
#include "ifma_target_begin.h"
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

#include "ifma_target_end.h"

namespace accelgate::crypto::mb::detail {

const EcKernelTable& ec_ifma_kernels() { return kEcIfmaTable; }

}  // namespace accelgate::crypto::mb::detail

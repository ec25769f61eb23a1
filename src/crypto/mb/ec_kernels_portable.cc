// ec_kernels_portable.cc: the EC kernels (ec_field.inc, ec_point.inc, ec_ops.inc, fe25519.inc,
// x25519.inc, x25519_base.inc) over VecPortable. Plain C++ for any CPU, and the build the valgrind
// constant-time test runs.

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ec_curves.h"
#include "ec_kernel_table.h"
#include "vec_portable.h"

#ifdef __clang__
// clang (the fuzz build compiles this library) treats the unroll pragmas as hints and warns
// where it declines one; GCC's unrolling is what the kernels are tuned for.
#pragma clang diagnostic ignored "-Wpass-failed"
#endif

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

constexpr accelgate::crypto::mb::detail::EcKernelTable kEcPortableTable{
    &x25519_dispatch<VecPortable>,       &ecdsa_sign<VecPortable, CurveP256>,
    &ecdsa_sign<VecPortable, CurveP384>, &ecdh<VecPortable, CurveP256>,
    &ecdh<VecPortable, CurveP384>,       &build_comb_p256<VecPortable>,
    &build_comb_p384<VecPortable>,       &build_x25519_base<VecPortable>,
    &field_for_test<VecPortable>,
};

}  // namespace

namespace accelgate::crypto::mb::detail {

const EcKernelTable& ec_portable_kernels() { return kEcPortableTable; }

}  // namespace accelgate::crypto::mb::detail

// kernels_portable.cc: the kernels (montgomery.inc, rsa.inc) over VecPortable. Plain C++ for
// any CPU, and the build the valgrind constant-time test runs.

#include <cstdint>

#include "kernel_table.h"
#include "vec_portable.h"

#define AG_MB_UNROLL

namespace {

#include "montgomery.inc"
#include "rsa.inc"

constexpr accelgate::crypto::mb::detail::KernelTable kPortableTable{
    &rsa_private_any<VecPortable>, &amm_hook<VecPortable>, &ams_hook<VecPortable>};

}  // namespace

namespace accelgate::crypto::mb::detail {

const KernelTable& portable_kernels() { return kPortableTable; }

}  // namespace accelgate::crypto::mb::detail

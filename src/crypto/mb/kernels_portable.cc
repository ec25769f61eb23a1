// kernels_portable.cc: the kernels (montgomery.inc, rsa.inc) over VecPortable, and again over
// VecPortableIfmaShapes. Plain C++ for any CPU, and the builds the valgrind constant-time test
// runs.

#include <cstdint>

#include "kernel_table.h"
#include "vec_portable.h"

#define AG_MB_UNROLL

namespace {

#include "montgomery.inc"
#include "rsa.inc"

constexpr accelgate::crypto::mb::detail::KernelTable kPortableTable{
    &rsa_private_any<VecPortable>, &amm_hook<VecPortable>, &ams_hook<VecPortable>};

// VecPortableIfmaShapes: the portable arithmetic in the loop shapes VecIfma selects
// (Backend::kPortableIfmaShapes), so that crypto_mb_ct_valgrind checks the control flow and
// memory indices the IFMA back end runs, and the tests compare it with VecPortable's anywhere.
using VecPortableIfmaShapes =
    VecPortableT<true, accelgate::crypto::mb::detail::kIfmaPinnedModulusLimbs>;

constexpr accelgate::crypto::mb::detail::KernelTable kPortableIfmaShapesTable{
    &rsa_private_any<VecPortableIfmaShapes>, &amm_hook<VecPortableIfmaShapes>,
    &ams_hook<VecPortableIfmaShapes>};

}  // namespace

namespace accelgate::crypto::mb::detail {

const KernelTable& portable_kernels() { return kPortableTable; }

const KernelTable& portable_ifma_shapes_kernels() { return kPortableIfmaShapesTable; }

}  // namespace accelgate::crypto::mb::detail

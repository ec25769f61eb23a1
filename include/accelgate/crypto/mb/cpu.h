#pragma once

// Run-time choice of the back end that executes the multi-buffer kernels (DESIGN.md, "The
// multi-buffer kernels"). The binary is built for baseline x86-64; the IFMA kernels carry
// function-level target attributes and run only after detect_ifma() said yes.

namespace accelgate::crypto::mb {

// Backend names an implementation of the 8-lane vector type under the kernels. All compute
// bit-for-bit the same results. Where a back end pays for another loop shape (the IFMA RSA
// kernels: products and squares by grouped columns, limbs of the modulus held in registers),
// kPortableIfmaShapes runs the IFMA back end's shapes on the portable vector type, so that the
// control flow and memory access pattern the IFMA back end runs are also checked under valgrind
// (crypto_mb_ct_valgrind) and tested on any CPU.
enum class Backend {
  kPortable,            // plain C++ arrays; runs anywhere, and under valgrind
  kIfma,                // AVX-512F/VL/BW + AVX512-IFMA intrinsics
  kPortableIfmaShapes,  // kPortable's arithmetic in kIfma's RSA loop shapes; EC: as kPortable
};

// IfmaSupport says whether the IFMA back end can run here, and if not, why.
struct IfmaSupport {
  bool usable = false;
  // reason is a static string: "" when usable, else e.g. "cpu lacks avx512ifma" or
  // "os does not enable zmm state".
  const char* reason = "";
};

// detect_ifma checks cpuid (AVX512F, AVX512VL, AVX512BW, AVX512IFMA) and xgetbv (XCR0 enables
// SSE, AVX, opmask and both ZMM state components). Cheap; the result is computed once.
IfmaSupport detect_ifma();

// best_backend is kIfma when detect_ifma().usable, else kPortable.
Backend best_backend();

// backend_name is "ifma", "portable" or "portable-ifma-shapes".
const char* backend_name(Backend backend);

}  // namespace accelgate::crypto::mb

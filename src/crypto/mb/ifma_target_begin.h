// ifma_target_begin.h: included by the IFMA kernel files (kernels_ifma.cc, ec_kernels_ifma.cc)
// after their standard headers and before vec_ifma.h; ifma_target_end.h closes what it opens.
// Every function in between carries the AVX-512 target attribute (GCC's function-level
// targets), so the rest of the binary stays baseline x86-64. No include guard: each kernel file
// includes it once, and it opens state that only ifma_target_end.h may close.

// clang (clang-tidy reads these files too) has no push_options; its equivalent is an attribute
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

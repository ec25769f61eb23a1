// cpu.cc: run-time detection of AVX-512 IFMA (Intel SDM Vol. 1 §15.2, "Detection of AVX-512
// Foundation Instructions": cpuid.7.0 feature bits, then XCR0 via xgetbv for the OS-enabled
// opmask and ZMM state).

#include "accelgate/crypto/mb/cpu.h"

#include <cpuid.h>

#include <cstdint>

namespace accelgate::crypto::mb {
namespace {

uint64_t read_xcr0() {
  uint32_t eax = 0;
  uint32_t edx = 0;
  // xgetbv is baseline once OSXSAVE is set; inline asm keeps the file free of -mxsave.
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (uint64_t{edx} << 32) | eax;
}

IfmaSupport probe() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return {false, "cpuid leaf 1 unavailable"};
  const bool osxsave = (ecx & bit_OSXSAVE) != 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) {
    return {false, "cpu lacks avx512f (no cpuid leaf 7)"};
  }
  if ((ebx & bit_AVX512F) == 0) return {false, "cpu lacks avx512f"};
  if ((ebx & bit_AVX512VL) == 0) return {false, "cpu lacks avx512vl"};
  if ((ebx & bit_AVX512BW) == 0) return {false, "cpu lacks avx512bw"};
  if ((ebx & bit_AVX512IFMA) == 0) return {false, "cpu lacks avx512ifma"};
  if (!osxsave) return {false, "os does not enable xsave"};
  // XCR0 bits 1 (SSE), 2 (AVX), 5 (opmask), 6 (ZMM_Hi256), 7 (Hi16_ZMM).
  constexpr uint64_t kZmmState = 0xE6;
  if ((read_xcr0() & kZmmState) != kZmmState) return {false, "os does not enable zmm state"};
  return {true, ""};
}

}  // namespace

IfmaSupport detect_ifma() {
  static const IfmaSupport support = probe();
  return support;
}

Backend best_backend() { return detect_ifma().usable ? Backend::kIfma : Backend::kPortable; }

const char* backend_name(Backend backend) {
  if (backend == Backend::kIfma) return "ifma";
  return backend == Backend::kPortableIfmaShapes ? "portable-ifma-shapes" : "portable";
}

}  // namespace accelgate::crypto::mb

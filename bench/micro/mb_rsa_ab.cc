// mb_rsa_ab: two builds of the IFMA RSA kernels (A, B) and OpenSSL's EVP_PKEY_sign timed in
// short interleaved blocks in one process, so that all three see the same machine. On a shared
// machine whose speed moves by tens of per cent within seconds, alternating whole benchmark runs
// (mb_rsa's --benchmark_enable_random_interleaving repeats 0.3 s runs) leaves a few per cent of
// noise in a ratio; blocks of about 2 ms, in alternating order, leave far less.
//
// Built and run by bench/mb_kernel_ab.sh, which compiles kernels_ifma.cc of two revisions with
// their exported table renamed (ifma_kernels_a, ifma_kernels_b). Not part of the CMake build.
//
//   mb_rsa_ab BITS ROUNDS BATCHES_PER_BLOCK

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "accelgate/crypto/mb/openssl_rsa.h"
#include "accelgate/crypto/mb/rsa_key.h"
#include "kernel_table.h"
#include "mb_ab_blocks.h"

namespace accelgate::crypto::mb::detail {
const KernelTable& ifma_kernels_a();
const KernelTable& ifma_kernels_b();
}  // namespace accelgate::crypto::mb::detail

namespace mb = accelgate::crypto::mb;

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s BITS ROUNDS BATCHES_PER_BLOCK\n", argv[0]);
    return 2;
  }
  const int bits = std::atoi(argv[1]);
  const int rounds = std::atoi(argv[2]);
  const int batches = std::atoi(argv[3]);
  if (rounds < 1 || batches < 1) return 2;
  EVP_PKEY* pkey = EVP_RSA_gen(static_cast<unsigned>(bits));
  mb::RsaKey key;
  if (pkey == nullptr || mb::import_rsa_key(pkey, &key) != mb::ImportStatus::kOk) {
    std::fprintf(stderr, "key generation failed\n");
    return 1;
  }

  // One batch: eight different inputs below n, one key (the kernels' time does not depend on
  // how many keys a batch mixes).
  const auto bytes = static_cast<size_t>(key.modulus_bytes());
  std::vector<uint8_t> in(8 * bytes), out_a(in.size()), out_b(in.size());
  RAND_bytes(in.data(), static_cast<int>(in.size()));
  // Room for either revision's workspace: another revision's kernels may use more than this
  // tree's kWorkspaceBytes (2026-12-07: 160 KiB before the 4-bit window for RSA-2048, 103 KiB
  // after).
  constexpr size_t kRoom = size_t{4} * mb::detail::kWorkspaceBytes;
  void* workspace = std::aligned_alloc(64, kRoom);
  mb::detail::BatchJob job_a{}, job_b{};
  for (size_t l = 0; l < 8; ++l) {
    in[l * bytes] = 0;
    job_a.keys[l] = job_b.keys[l] = &key.material();
    job_a.in[l] = job_b.in[l] = &in[l * bytes];
    job_a.out[l] = &out_a[l * bytes];
    job_b.out[l] = &out_b[l * bytes];
  }
  job_a.workspace = job_b.workspace = workspace;
  const mb::detail::KernelTable& kernels_a = mb::detail::ifma_kernels_a();
  const mb::detail::KernelTable& kernels_b = mb::detail::ifma_kernels_b();
  auto run = [&](const mb::detail::KernelTable& k, const mb::detail::BatchJob& job) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < batches; ++i) {
      if (k.rsa_private(job).verified != 0xFF) {
        std::fprintf(stderr, "a lane failed its check\n");
        std::exit(1);
      }
    }
    return mb_ab::seconds_since(t0) / (8.0 * batches);
  };

  // OpenSSL as mb_rsa measures it: PKCS#1 v1.5 over a SHA-256 digest, blinding and CRT check.
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_pkey(nullptr, pkey, nullptr);
  if (EVP_PKEY_sign_init(ctx) != 1 || EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) != 1 ||
      EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) != 1) {
    std::fprintf(stderr, "EVP_PKEY_sign_init failed\n");
    return 1;
  }
  const uint8_t digest[32] = {1, 2, 3};
  std::vector<uint8_t> sig(static_cast<size_t>(EVP_PKEY_get_size(pkey)));
  const int signs = 2 * batches;  // OpenSSL is about four times slower per operation
  auto sign = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < signs; ++i) {
      size_t len = sig.size();
      if (EVP_PKEY_sign(ctx, sig.data(), &len, digest, sizeof(digest)) != 1) std::exit(1);
    }
    return mb_ab::seconds_since(t0) / signs;
  };

  char what[32];
  std::snprintf(what, sizeof(what), "RSA-%d", bits);
  mb_ab::time_blocks(
      what, rounds, sign, [&] { return run(kernels_a, job_a); },
      [&] { return run(kernels_b, job_b); });
  if (out_a != out_b) {
    std::fprintf(stderr, "A and B disagree\n");
    return 1;
  }
  EVP_PKEY_CTX_free(ctx);
  EVP_PKEY_free(pkey);
  std::free(workspace);
  return 0;
}

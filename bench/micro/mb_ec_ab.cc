// mb_ec_ab: two builds of the IFMA X25519 kernel (A, B) and OpenSSL's X25519 derivation timed
// in short interleaved blocks in one process, as mb_rsa_ab does for RSA: all three see the same
// moment of the machine. Both builds compute the same batches, and their outputs must agree.
//
// Built and run by bench/mb_kernel_ab.sh --op x25519, which compiles ec_kernels_ifma.cc of two
// revisions with their exported table renamed (ec_ifma_kernels_a, ec_ifma_kernels_b). Not part of
// the CMake build.
//
//   mb_ec_ab ROUNDS BATCHES_PER_BLOCK

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ec_kernel_table.h"
#include "mb_ab_blocks.h"

namespace accelgate::crypto::mb::detail {
const EcKernelTable& ec_ifma_kernels_a();
const EcKernelTable& ec_ifma_kernels_b();
}  // namespace accelgate::crypto::mb::detail

namespace mbd = accelgate::crypto::mb::detail;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s ROUNDS BATCHES_PER_BLOCK\n", argv[0]);
    return 2;
  }
  const int rounds = std::atoi(argv[1]);
  const int batches = std::atoi(argv[2]);
  if (rounds < 1 || batches < 1) return 2;

  // One batch: eight random scalars and eight peers' public values (random u, as a derivation
  // from the network sees them; the ladder's time does not depend on them).
  uint8_t scalar[8][32], peer[8][32], out_a[8][32], out_b[8][32];
  RAND_bytes(&scalar[0][0], sizeof(scalar));
  RAND_bytes(&peer[0][0], sizeof(peer));
  void* workspace = std::aligned_alloc(64, mbd::kEcWorkspaceBytes);
  mbd::X25519Job job_a{}, job_b{};
  for (int l = 0; l < 8; ++l) {
    job_a.scalar[l] = job_b.scalar[l] = scalar[l];
    job_a.peer_u[l] = job_b.peer_u[l] = peer[l];
    job_a.out[l] = out_a[l];
    job_b.out[l] = out_b[l];
  }
  job_a.workspace = job_b.workspace = workspace;
  const mbd::EcKernelTable& kernels_a = mbd::ec_ifma_kernels_a();
  const mbd::EcKernelTable& kernels_b = mbd::ec_ifma_kernels_b();
  auto run = [&](const mbd::EcKernelTable& k, const mbd::X25519Job& job) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < batches; ++i) {
      if (k.x25519(job).check_failed != 0) {
        std::fprintf(stderr, "a lane failed its check\n");
        std::exit(1);
      }
    }
    return mb_ab::seconds_since(t0) / (8.0 * batches);
  };

  // OpenSSL as mb_ec measures it: EVP_PKEY_derive with one context, the peer set once.
  EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "X25519");
  EVP_PKEY* peer_key = EVP_PKEY_Q_keygen(nullptr, nullptr, "X25519");
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_pkey(nullptr, key, nullptr);
  if (ctx == nullptr || EVP_PKEY_derive_init(ctx) != 1 ||
      EVP_PKEY_derive_set_peer(ctx, peer_key) != 1) {
    std::fprintf(stderr, "EVP_PKEY_derive_init failed\n");
    return 1;
  }
  const int derives = 2 * batches;  // OpenSSL is about six times slower per operation
  auto derive = [&] {
    uint8_t secret[32];
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < derives; ++i) {
      size_t len = sizeof(secret);
      if (EVP_PKEY_derive(ctx, secret, &len) != 1) std::exit(1);
    }
    return mb_ab::seconds_since(t0) / derives;
  };

  mb_ab::time_blocks(
      "X25519 derive", rounds, derive, [&] { return run(kernels_a, job_a); },
      [&] { return run(kernels_b, job_b); });
  if (std::memcmp(out_a, out_b, sizeof(out_a)) != 0) {
    std::fprintf(stderr, "A and B disagree\n");
    return 1;
  }
  EVP_PKEY_CTX_free(ctx);
  EVP_PKEY_free(peer_key);
  EVP_PKEY_free(key);
  std::free(workspace);
  return 0;
}

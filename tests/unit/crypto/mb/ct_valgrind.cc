// crypto_mb_ct_valgrind: the constant-time proof of issue 5, item 2 (DESIGN.md, "The
// multi-buffer kernels"). Run under `valgrind --error-exitcode=1`: the secret inputs (p, q, dP,
// dQ, qInv and the messages) are marked undefined with memcheck's client requests before key
// preparation and the batches run on the portable back end in both of its loop shapes
// (valgrind 3.19 cannot execute AVX-512): its own, and the IFMA back end's
// (Backend::kPortableIfmaShapes: the control flow and memory indices the IFMA back end runs).
// Any branch or address computed from a secret makes memcheck report "Conditional jump or move
// depends on uninitialised value(s)" or "Use of uninitialised value", and the run fails.
// Results are marked defined again only after the kernels return, and compared against OpenSSL.
//
// `--bits B` runs one size only, `--backend portable|portable-ifma-shapes` one back end only
// (both for callgrind counts, src/crypto/mb/README.md). `--leak` is the negative control: it
// branches on a secret on purpose, and CTest expects the report
// (crypto_mb_ct_valgrind_detects_leak), which shows the harness can fail.

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <valgrind/memcheck.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "accelgate/crypto/mb/cpu.h"
#include "accelgate/crypto/mb/openssl_rsa.h"
#include "accelgate/crypto/mb/rsa_batch.h"
#include "accelgate/crypto/mb/rsa_key.h"

namespace mb = accelgate::crypto::mb;

namespace {

EVP_PKEY* load_key(const std::string& name) {
  const std::string path = std::string(AG_MB_KEY_DIR) + "/" + name;
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return nullptr;
  EVP_PKEY* pkey = PEM_read_PrivateKey(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  return pkey;
}

std::vector<uint8_t> part(EVP_PKEY* pkey, const char* name, int len) {
  BIGNUM* bn = nullptr;
  EVP_PKEY_get_bn_param(pkey, name, &bn);
  if (len == 0) len = BN_num_bytes(bn);
  std::vector<uint8_t> out(static_cast<size_t>(len));
  BN_bn2binpad(bn, out.data(), len);
  BN_clear_free(bn);
  return out;
}

void mark_secret(std::vector<uint8_t>& v) { VALGRIND_MAKE_MEM_UNDEFINED(v.data(), v.size()); }

// run_size prepares two keys of |bits| once and checks one batch of eight lanes over them on
// each of |backends|; returns false on a mismatch.
bool run_size(int bits, const std::vector<mb::Backend>& backends, bool leak) {
  EVP_PKEY* pkeys[2] = {load_key("rsa" + std::to_string(bits) + "_0.pem"),
                        load_key("rsa" + std::to_string(bits) + "_1.pem")};
  if (pkeys[0] == nullptr || pkeys[1] == nullptr) {
    std::fprintf(stderr, "cannot load test keys\n");
    return false;
  }
  const int bytes = EVP_PKEY_get_size(pkeys[0]);
  mb::RsaKey keys[2];
  std::vector<uint8_t> in(8 * static_cast<size_t>(bytes)), want(in.size());
  for (int l = 0; l < 8; ++l) {
    RAND_bytes(&in[l * bytes], bytes);
    in[l * bytes] = 0;  // below n
    if (!mb::rsa_private_software(pkeys[l % 2], &in[l * bytes], &want[l * bytes])) return false;
  }
  for (int k = 0; k < 2; ++k) {
    const int half = bytes / 2;
    std::vector<uint8_t> n = part(pkeys[k], OSSL_PKEY_PARAM_RSA_N, bytes);
    std::vector<uint8_t> e = part(pkeys[k], OSSL_PKEY_PARAM_RSA_E, 0);
    std::vector<uint8_t> p = part(pkeys[k], OSSL_PKEY_PARAM_RSA_FACTOR1, half);
    std::vector<uint8_t> q = part(pkeys[k], OSSL_PKEY_PARAM_RSA_FACTOR2, half);
    std::vector<uint8_t> dp = part(pkeys[k], OSSL_PKEY_PARAM_RSA_EXPONENT1, half);
    std::vector<uint8_t> dq = part(pkeys[k], OSSL_PKEY_PARAM_RSA_EXPONENT2, half);
    std::vector<uint8_t> qinv = part(pkeys[k], OSSL_PKEY_PARAM_RSA_COEFFICIENT1, half);
    for (auto* v : {&p, &q, &dp, &dq, &qinv}) mark_secret(*v);
    if (leak && (p[half / 2] & 1) != 0) std::puts("secret-dependent branch taken");
    const mb::RsaKeyParts parts{n, e, p, q, dp, dq, qinv};
    if (mb::prepare_rsa_key(parts, &keys[k]) != mb::KeyStatus::kOk) return false;
  }
  mark_secret(in);
  bool ok = true;
  for (mb::Backend backend : backends) {
    std::vector<uint8_t> out(in.size());
    mb::RsaLane lanes[8];
    for (int l = 0; l < 8; ++l) lanes[l] = {&keys[l % 2], &in[l * bytes], &out[l * bytes]};
    mb::BatchOutcome outcome = mb::rsa_private_batch(backend, lanes);
    VALGRIND_MAKE_MEM_DEFINED(&outcome, sizeof(outcome));
    VALGRIND_MAKE_MEM_DEFINED(out.data(), out.size());
    const bool match = outcome.verified == 0xFF && out == want;
    std::printf("RSA-%d: 8 lanes, 2 keys, %s back end: %s\n", bits, mb::backend_name(backend),
                match ? "match OpenSSL" : "MISMATCH");
    ok = ok && match;
  }
  EVP_PKEY_free(pkeys[0]);
  EVP_PKEY_free(pkeys[1]);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  bool leak = false;
  std::vector<int> sizes{2048, 3072, 4096};
  std::vector<mb::Backend> backends{mb::Backend::kPortable, mb::Backend::kPortableIfmaShapes};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--leak") == 0) {
      leak = true;
      sizes = {2048};
      backends = {mb::Backend::kPortable};
    } else if (std::strcmp(argv[i], "--bits") == 0 && i + 1 < argc) {
      sizes = {std::atoi(argv[++i])};  // one size, e.g. for callgrind (README.md)
    } else if (std::strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
      const char* name = argv[++i];
      backends.clear();
      for (mb::Backend b : {mb::Backend::kPortable, mb::Backend::kPortableIfmaShapes}) {
        if (std::strcmp(name, mb::backend_name(b)) == 0) backends = {b};
      }
      if (backends.empty()) {
        std::fprintf(stderr, "unknown back end %s\n", name);
        return 2;
      }
    }
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (!RUNNING_ON_VALGRIND) std::puts("note: not running under valgrind; checking results only");
  bool ok = true;
  for (int bits : sizes) ok = run_size(bits, backends, leak) && ok;
  const unsigned errors = VALGRIND_COUNT_ERRORS;
  std::printf("memcheck errors: %u\n", errors);
  return ok && errors == 0 ? 0 : 1;
}

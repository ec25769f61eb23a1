#pragma once

// Shared helpers of the multi-buffer RSA tests: the checked-in test keys (keys/*.pem, made with
// `openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:B`), random inputs and OpenSSL
// oracles.

#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "accelgate/crypto/mb/openssl_rsa.h"
#include "accelgate/crypto/mb/rsa_key.h"

namespace accelgate::crypto::mb::testing {

// kSanitized is true in the ASan+UBSan build (AG_SANITIZE), where the kernels run tens of times
// slower: the long tests shrink there, and say so.
#ifdef AG_MB_SANITIZED
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

// TestKey is one loaded key: the OpenSSL object and the prepared kernel key.
struct TestKey {
  TestKey() = default;
  TestKey(const TestKey&) = delete;
  TestKey& operator=(const TestKey&) = delete;
  ~TestKey() {
    EVP_PKEY_free(pkey);
    BN_free(n);
  }
  EVP_PKEY* pkey = nullptr;
  RsaKey key;
  BIGNUM* n = nullptr;
  int bytes = 0;
};

inline EVP_PKEY* load_pem_key(const std::string& name) {
  const std::string path = std::string(AG_MB_KEY_DIR) + "/" + name;
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return nullptr;
  EVP_PKEY* pkey = PEM_read_PrivateKey(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  return pkey;
}

// load_test_key loads keys/<name> and prepares it; aborts the process if it cannot (the test
// data is part of the tree).
inline std::unique_ptr<TestKey> load_test_key(const std::string& name) {
  auto k = std::make_unique<TestKey>();
  k->pkey = load_pem_key(name);
  if (k->pkey == nullptr || import_rsa_key(k->pkey, &k->key) != ImportStatus::kOk ||
      EVP_PKEY_get_bn_param(k->pkey, "n", &k->n) != 1) {
    std::fprintf(stderr, "cannot load test key %s\n", name.c_str());
    std::abort();
  }
  k->bytes = EVP_PKEY_get_size(k->pkey);
  return k;
}

// keys_of returns the four test keys of |bits| (2048, 3072, 4096), loaded once per process.
inline const std::vector<std::unique_ptr<TestKey>>& keys_of(int bits) {
  static std::vector<std::unique_ptr<TestKey>> cache[3];
  auto& v = cache[bits == 2048 ? 0 : bits == 3072 ? 1 : 2];
  if (v.empty()) {
    for (int i = 0; i < 4; ++i) {
      v.push_back(load_test_key("rsa" + std::to_string(bits) + "_" + std::to_string(i) + ".pem"));
    }
  }
  return v;
}

// random_input writes a uniformly random value below n, big-endian, key.bytes long.
inline void random_input(const TestKey& key, uint8_t* out) {
  BIGNUM* r = BN_new();
  BN_rand_range(r, key.n);
  BN_bn2binpad(r, out, key.bytes);
  BN_free(r);
}

// public_op computes in^e mod n with OpenSSL (RSA_NO_PADDING encryption).
inline std::vector<uint8_t> public_op(EVP_PKEY* pkey, const uint8_t* in) {
  const auto len = static_cast<size_t>(EVP_PKEY_get_size(pkey));
  std::vector<uint8_t> out(len);
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_pkey(nullptr, pkey, nullptr);
  size_t out_len = len;
  if (EVP_PKEY_encrypt_init(ctx) != 1 || EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_NO_PADDING) != 1 ||
      EVP_PKEY_encrypt(ctx, out.data(), &out_len, in, len) != 1) {
    out.clear();
  }
  EVP_PKEY_CTX_free(ctx);
  return out;
}

// private_op is OpenSSL's raw private operation (the reference result).
inline std::vector<uint8_t> private_op(EVP_PKEY* pkey, const uint8_t* in) {
  std::vector<uint8_t> out(static_cast<size_t>(EVP_PKEY_get_size(pkey)));
  if (!rsa_private_software(pkey, in, out.data())) out.clear();
  return out;
}

}  // namespace accelgate::crypto::mb::testing

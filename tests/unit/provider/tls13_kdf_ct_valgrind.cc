// provider_tls13_kdf_ct_valgrind: the constant-time check of the provider's TLS13-KDF
// (src/provider/tls13_kdf.cc), as crypto_mb_ct_valgrind does it for the mb kernels. Run under
// `valgrind --error-exitcode=1`: the secrets (the key, the previous secret) are marked undefined
// with memcheck's client requests before each derivation, in both modes and with SHA-256 and
// SHA-384; a branch or an address computed from them (in our HMAC or in OpenSSL's SHA-2 block
// functions under it) makes memcheck report "Conditional jump or move depends on uninitialised
// value(s)" or "Use of uninitialised value", and the run fails. The outputs are marked defined
// after the derivation and compared with OpenSSL's TLS13-KDF.
//
// `--leak` is the negative control: it branches on a secret on purpose, and CTest expects the
// report (provider_tls13_kdf_ct_valgrind_detects_leak).

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#include <valgrind/memcheck.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "accelgate/provider/provider.h"

namespace {

using Bytes = std::vector<uint8_t>;

Bytes random_bytes(size_t n) {
  Bytes b(n);
  RAND_bytes(b.data(), static_cast<int>(n));
  return b;
}

// derive runs TLS13-KDF of |ctx| in |mode| with |digest|; |salt| may be empty (none).
bool derive(OSSL_LIB_CTX* ctx, int mode, const char* digest, Bytes& key, Bytes& salt,
            const char* label, Bytes& context, Bytes& out) {
  EVP_KDF* kdf = EVP_KDF_fetch(ctx, OSSL_KDF_NAME_TLS1_3_KDF, nullptr);
  EVP_KDF_CTX* kctx = kdf == nullptr ? nullptr : EVP_KDF_CTX_new(kdf);
  EVP_KDF_free(kdf);
  if (kctx == nullptr) return false;
  std::vector<OSSL_PARAM> params = {
      OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode),
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, const_cast<char*>(digest), 0),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, key.data(), key.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_PREFIX, const_cast<char*>("tls13 "), 6),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_LABEL, const_cast<char*>(label),
                                        std::strlen(label)),
  };
  if (!context.empty()) {
    params.push_back(
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_DATA, context.data(), context.size()));
  }
  if (!salt.empty()) {
    params.push_back(
        OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, salt.data(), salt.size()));
  }
  params.push_back(OSSL_PARAM_construct_end());
  int ok = EVP_KDF_derive(kctx, out.data(), out.size(), params.data());
  EVP_KDF_CTX_free(kctx);
  return ok == 1;
}

}  // namespace

int main(int argc, char** argv) {
  const bool leak = argc > 1 && std::strcmp(argv[1], "--leak") == 0;
  OSSL_LIB_CTX* ctx = OSSL_LIB_CTX_new();
  if (ctx == nullptr || !accelgate::provider::load_builtin(ctx).ok()) {
    std::fprintf(stderr, "cannot load the accelgate provider\n");
    return 1;
  }
  int failures = 0;
  struct Case {
    const char* digest;
    size_t hash;
    int mode;
    const char* label;
    size_t key_size;  // the ECDHE secret or a previous secret; long keys are hashed first
  };
  const Case kCases[] = {
      {"SHA2-256", 32, EVP_KDF_HKDF_MODE_EXPAND_ONLY, "c hs traffic", 32},
      {"SHA2-384", 48, EVP_KDF_HKDF_MODE_EXPAND_ONLY, "key", 48},
      {"SHA2-384", 48, EVP_KDF_HKDF_MODE_EXPAND_ONLY, "finished", 200},
      {"SHA2-256", 32, EVP_KDF_HKDF_MODE_EXTRACT_ONLY, "derived", 32},
      {"SHA2-384", 48, EVP_KDF_HKDF_MODE_EXTRACT_ONLY, "derived", 97},
      {"SHA2-256", 32, EVP_KDF_HKDF_MODE_EXPAND_ONLY, "res master", 100},
      {"SHA2-512", 64, EVP_KDF_HKDF_MODE_EXPAND_ONLY, "iv", 64},
      {"SHA2-224", 28, EVP_KDF_HKDF_MODE_EXTRACT_ONLY, "derived", 28},
  };
  for (const Case& c : kCases) {
    Bytes key = random_bytes(c.key_size);
    Bytes salt = c.mode == EVP_KDF_HKDF_MODE_EXTRACT_ONLY ? random_bytes(c.hash) : Bytes();
    Bytes context = c.mode == EVP_KDF_HKDF_MODE_EXPAND_ONLY ? random_bytes(c.hash) : Bytes();
    Bytes expected(c.mode == EVP_KDF_HKDF_MODE_EXTRACT_ONLY ? c.hash : 32);
    Bytes out(expected.size());
    if (!derive(nullptr, c.mode, c.digest, key, salt, c.label, context, expected)) {
      std::fprintf(stderr, "OpenSSL's derivation failed (%s %s)\n", c.digest, c.label);
      return 1;
    }
    VALGRIND_MAKE_MEM_UNDEFINED(key.data(), key.size());
    if (!salt.empty()) VALGRIND_MAKE_MEM_UNDEFINED(salt.data(), salt.size());
    if (leak && (key[3] & 1) != 0) std::puts("secret-dependent branch taken");
    bool ok = derive(ctx, c.mode, c.digest, key, salt, c.label, context, out);
    VALGRIND_MAKE_MEM_DEFINED(out.data(), out.size());
    if (!ok || out != expected) {
      std::fprintf(stderr, "ours differs from OpenSSL's (%s %s)\n", c.digest, c.label);
      ++failures;
    }
  }
  accelgate::provider::unload_builtin(ctx);
  OSSL_LIB_CTX_free(ctx);
  std::printf("%s\n", failures == 0 ? "all derivations match OpenSSL" : "FAILED");
  return failures == 0 ? 0 : 1;
}

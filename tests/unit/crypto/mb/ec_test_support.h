#pragma once

// Shared helpers of the multi-buffer EC tests: keys made by OpenSSL, their raw parts, and
// OpenSSL oracles (ECDSA verification, ECDH and X25519 derivation, ECDSA signing with a given
// nonce by OpenSSL's own BIGNUM and EC_POINT arithmetic).

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/rand.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "accelgate/crypto/mb/ec_batch.h"
#include "accelgate/crypto/mb/ec_key.h"
#include "accelgate/crypto/mb/openssl_ec.h"

namespace accelgate::crypto::mb::testing {

#ifdef AG_MB_SANITIZED
inline constexpr bool kEcSanitized = true;
#else
inline constexpr bool kEcSanitized = false;
#endif

using Bytes = std::vector<uint8_t>;

inline Bytes random_bytes(size_t n) {
  Bytes b(n);
  if (n > 0) RAND_bytes(b.data(), static_cast<int>(n));
  return b;
}

inline Bytes from_hex(const std::string& hex) {
  Bytes b(hex.size() / 2);
  for (size_t i = 0; i < b.size(); ++i) {
    b[i] = static_cast<uint8_t>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  }
  return b;
}

inline std::string to_hex(const uint8_t* p, size_t n) {
  static const char* kDigits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s.push_back(kDigits[p[i] >> 4]);
    s.push_back(kDigits[p[i] & 15]);
  }
  return s;
}

inline const char* group_name(EcCurve curve) { return curve == EcCurve::kP256 ? "P-256" : "P-384"; }

inline int curve_nid(EcCurve curve) {
  return curve == EcCurve::kP256 ? NID_X9_62_prime256v1 : NID_secp384r1;
}

// EcTestKey is a fresh OpenSSL key of a curve with its prepared kernel key and raw parts.
struct EcTestKey {
  EcTestKey() = default;
  EcTestKey(const EcTestKey&) = delete;
  EcTestKey& operator=(const EcTestKey&) = delete;
  ~EcTestKey() { EVP_PKEY_free(pkey); }
  EcCurve curve = EcCurve::kP256;
  EVP_PKEY* pkey = nullptr;
  EcKey key;
  Bytes d;      // private scalar, field bytes
  Bytes point;  // 04 || x || y
};

inline std::unique_ptr<EcTestKey> make_ec_key(EcCurve curve) {
  auto k = std::make_unique<EcTestKey>();
  k->curve = curve;
  k->pkey = EVP_EC_gen(group_name(curve));
  BIGNUM* d = nullptr;
  const int len = ec_field_bytes(curve);
  k->d.resize(static_cast<size_t>(len));
  k->point.resize(1 + 2 * static_cast<size_t>(len));
  size_t got = 0;
  if (k->pkey == nullptr || EVP_PKEY_get_bn_param(k->pkey, OSSL_PKEY_PARAM_PRIV_KEY, &d) != 1 ||
      BN_bn2binpad(d, k->d.data(), len) != len ||
      EVP_PKEY_get_octet_string_param(k->pkey, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, k->point.data(),
                                      k->point.size(), &got) != 1 ||
      got != k->point.size() || import_ec_key(k->pkey, &k->key) != EcImportStatus::kOk) {
    std::fprintf(stderr, "cannot make a %s test key\n", group_name(curve));
    std::abort();
  }
  BN_clear_free(d);
  return k;
}

// ec_keys_of returns |count| keys of |curve|, made once per process.
inline const std::vector<std::unique_ptr<EcTestKey>>& ec_keys_of(EcCurve curve) {
  static std::vector<std::unique_ptr<EcTestKey>> cache[2];
  auto& v = cache[curve == EcCurve::kP256 ? 0 : 1];
  if (v.empty()) {
    for (int i = 0; i < 5; ++i) v.push_back(make_ec_key(curve));
  }
  return v;
}

// random_nonce is uniform in [1, n-1] (rejection).
inline Bytes random_nonce(EcCurve curve) {
  const int len = ec_field_bytes(curve);
  BIGNUM* n = BN_new();
  EC_GROUP* group = EC_GROUP_new_by_curve_name(curve_nid(curve));
  BN_copy(n, EC_GROUP_get0_order(group));
  BIGNUM* k = BN_new();
  do {
    BN_rand_range(k, n);
  } while (BN_is_zero(k));
  Bytes out(static_cast<size_t>(len));
  BN_bn2binpad(k, out.data(), len);
  BN_free(k);
  BN_free(n);
  EC_GROUP_free(group);
  return out;
}

// der_of encodes raw r, s as OpenSSL does (i2d_ECDSA_SIG).
inline Bytes der_of(const uint8_t* r, const uint8_t* s, int len) {
  ECDSA_SIG* sig = ECDSA_SIG_new();
  ECDSA_SIG_set0(sig, BN_bin2bn(r, len, nullptr), BN_bin2bn(s, len, nullptr));
  unsigned char* der = nullptr;
  const int der_len = i2d_ECDSA_SIG(sig, &der);
  Bytes out(der, der + (der_len > 0 ? der_len : 0));
  OPENSSL_free(der);
  ECDSA_SIG_free(sig);
  return out;
}

// ecdsa_verify checks a DER signature over |digest| with OpenSSL.
inline bool ecdsa_verify(EVP_PKEY* pkey, const uint8_t* digest, size_t digest_len,
                         const Bytes& der) {
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_pkey(nullptr, pkey, nullptr);
  const bool ok = ctx != nullptr && EVP_PKEY_verify_init(ctx) == 1 &&
                  EVP_PKEY_verify(ctx, der.data(), der.size(), digest, digest_len) == 1;
  EVP_PKEY_CTX_free(ctx);
  return ok;
}

// reference_sign computes (r, s) for nonce k with OpenSSL's arithmetic: R = k G by EC_POINT_mul,
// r = x_R mod n, s = k^-1 (e + r d) mod n with e the leftmost bits of the digest (bits2int).
inline bool reference_sign(const EcTestKey& key, const uint8_t* digest, size_t digest_len,
                           const uint8_t* nonce, Bytes* r_out, Bytes* s_out) {
  const int len = ec_field_bytes(key.curve);
  EC_GROUP* group = EC_GROUP_new_by_curve_name(curve_nid(key.curve));
  BN_CTX* ctx = BN_CTX_new();
  BIGNUM* k = BN_bin2bn(nonce, len, nullptr);
  BIGNUM* d = BN_bin2bn(key.d.data(), len, nullptr);
  const size_t e_len = digest_len < static_cast<size_t>(len) ? digest_len : len;
  BIGNUM* e = BN_bin2bn(digest, static_cast<int>(e_len), nullptr);
  BIGNUM* x = BN_new();
  BIGNUM* r = BN_new();
  BIGNUM* s = BN_new();
  BIGNUM* t = BN_new();
  EC_POINT* big_r = EC_POINT_new(group);
  const BIGNUM* n = EC_GROUP_get0_order(group);
  bool ok = EC_POINT_mul(group, big_r, k, nullptr, nullptr, ctx) == 1 &&
            EC_POINT_get_affine_coordinates(group, big_r, x, nullptr, ctx) == 1 &&
            BN_nnmod(r, x, n, ctx) == 1 && BN_mod_mul(t, r, d, n, ctx) == 1 &&
            BN_mod_add(t, t, e, n, ctx) == 1 && BN_mod_inverse(s, k, n, ctx) != nullptr &&
            BN_mod_mul(s, s, t, n, ctx) == 1;
  r_out->assign(static_cast<size_t>(len), 0);
  s_out->assign(static_cast<size_t>(len), 0);
  ok = ok && BN_bn2binpad(r, r_out->data(), len) == len &&
       BN_bn2binpad(s, s_out->data(), len) == len;
  EC_POINT_free(big_r);
  for (BIGNUM* b : {k, d, e, x, r, s, t}) BN_clear_free(b);
  BN_CTX_free(ctx);
  EC_GROUP_free(group);
  return ok;
}

// ecdh_reference derives x(d Q) with OpenSSL's EVP_PKEY_derive.
inline Bytes ecdh_reference(EVP_PKEY* ours, EVP_PKEY* peer) {
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_pkey(nullptr, ours, nullptr);
  size_t len = 0;
  Bytes out;
  if (ctx != nullptr && EVP_PKEY_derive_init(ctx) == 1 &&
      EVP_PKEY_derive_set_peer(ctx, peer) == 1 && EVP_PKEY_derive(ctx, nullptr, &len) == 1) {
    out.resize(len);
    if (EVP_PKEY_derive(ctx, out.data(), &len) != 1) out.clear();
  }
  EVP_PKEY_CTX_free(ctx);
  return out;
}

// x25519_reference is OpenSSL's X25519: the public key for |peer| == nullptr, else the shared
// secret; empty when OpenSSL refuses (an all-zero result).
inline Bytes x25519_reference(const uint8_t* priv, const uint8_t* peer) {
  Bytes out(32);
  EVP_PKEY* key = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nullptr, priv, 32);
  size_t len = 32;
  bool ok = key != nullptr;
  if (ok && peer == nullptr) {
    ok = EVP_PKEY_get_raw_public_key(key, out.data(), &len) == 1;
  } else if (ok) {
    EVP_PKEY* pk = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nullptr, peer, 32);
    EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_pkey(nullptr, key, nullptr);
    ok = pk != nullptr && ctx != nullptr && EVP_PKEY_derive_init(ctx) == 1 &&
         EVP_PKEY_derive_set_peer(ctx, pk) == 1 && EVP_PKEY_derive(ctx, out.data(), &len) == 1;
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_free(pk);
  }
  EVP_PKEY_free(key);
  if (!ok) out.clear();
  return out;
}

// backends lists the back ends this CPU runs.
inline std::vector<Backend> ec_backends() {
  std::vector<Backend> v{Backend::kPortable};
  if (detect_ifma().usable) v.push_back(Backend::kIfma);
  return v;
}

}  // namespace accelgate::crypto::mb::testing

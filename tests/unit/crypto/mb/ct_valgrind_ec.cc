// crypto_mb_ec_ct_valgrind: the constant-time proof of issue 6, item 2, as ct_valgrind.cc does
// it for RSA (DESIGN.md, "The multi-buffer kernels"). Run under `valgrind --error-exitcode=1`:
// the secrets (X25519 scalars; ECDSA private keys and nonces; ECDH private keys) are marked
// undefined with memcheck's client requests before key preparation and before one 8-lane batch
// of every algorithm on the portable back end (valgrind 3.19 cannot execute AVX-512; the
// portable back end has the IFMA one's control flow and memory indices). Any branch or address
// computed from them makes memcheck report "Conditional jump or move depends on uninitialised
// value(s)" or "Use of uninitialised value", and the run fails. Results are marked defined
// again only after the kernels return, and checked against OpenSSL.
//
// `--only NAME` runs one of x25519, x25519-keygen, ecdsa-p256, ecdsa-p384, ecdh-p256, ecdh-p384
// (for callgrind, README.md). `--leak` is the negative control: it branches on a secret on
// purpose, and CTest expects the report (crypto_mb_ec_ct_valgrind_detects_leak).

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <valgrind/memcheck.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "accelgate/crypto/mb/ec_batch.h"
#include "accelgate/crypto/mb/ec_key.h"

namespace mb = accelgate::crypto::mb;

namespace {

using Bytes = std::vector<uint8_t>;

void mark_secret(Bytes& v) { VALGRIND_MAKE_MEM_UNDEFINED(v.data(), v.size()); }

template <class T>
void mark_public(T* p, size_t n = sizeof(T)) {
  VALGRIND_MAKE_MEM_DEFINED(p, n);
}

Bytes random_bytes(size_t n) {
  Bytes b(n);
  RAND_bytes(b.data(), static_cast<int>(n));
  return b;
}

Bytes x25519_openssl(const Bytes& priv, const Bytes* peer) {
  Bytes out(32);
  size_t len = 32;
  EVP_PKEY* key = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nullptr, priv.data(), 32);
  if (peer == nullptr) {
    EVP_PKEY_get_raw_public_key(key, out.data(), &len);
  } else {
    EVP_PKEY* pk = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nullptr, peer->data(), 32);
    EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_pkey(nullptr, key, nullptr);
    EVP_PKEY_derive_init(ctx);
    EVP_PKEY_derive_set_peer(ctx, pk);
    EVP_PKEY_derive(ctx, out.data(), &len);
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_free(pk);
  }
  EVP_PKEY_free(key);
  return out;
}

bool run_x25519(bool keygen, bool leak) {
  Bytes scalars[8], peers[8], outs[8], want[8];
  mb::X25519Lane lanes[8];
  for (int l = 0; l < 8; ++l) {
    scalars[l] = random_bytes(32);
    peers[l] = random_bytes(32);
    want[l] = x25519_openssl(scalars[l], keygen ? nullptr : &peers[l]);
    outs[l].assign(32, 0);
    mark_secret(scalars[l]);
    lanes[l] = {scalars[l].data(), keygen ? nullptr : peers[l].data(), outs[l].data()};
  }
  if (leak && (scalars[3][7] & 1) != 0) std::puts("secret-dependent branch taken");
  mb::X25519Outcome o = mb::x25519_batch(mb::Backend::kPortable, lanes);
  mark_public(&o);
  bool ok = o.ok == 0xFF;
  for (int l = 0; l < 8; ++l) {
    mark_public(outs[l].data(), 32);
    ok = ok && outs[l] == want[l];
  }
  std::printf("X25519 %s: 8 lanes, portable back end: %s\n", keygen ? "keygen" : "derive",
              ok ? "match OpenSSL" : "MISMATCH");
  return ok;
}

const char* group_of(mb::EcCurve c) { return c == mb::EcCurve::kP256 ? "P-256" : "P-384"; }

// TestKey is a P-256/P-384 key: OpenSSL's, its raw scalar (secret) and its point.
struct TestKey {
  EVP_PKEY* pkey = nullptr;
  Bytes d, point;
  mb::EcKey key;
};

bool make_key(mb::EcCurve curve, TestKey* k) {
  const int len = mb::ec_field_bytes(curve);
  k->pkey = EVP_EC_gen(group_of(curve));
  BIGNUM* d = nullptr;
  k->d.resize(static_cast<size_t>(len));
  k->point.resize(1 + 2 * static_cast<size_t>(len));
  size_t got = 0;
  const bool ok = k->pkey != nullptr &&
                  EVP_PKEY_get_bn_param(k->pkey, OSSL_PKEY_PARAM_PRIV_KEY, &d) == 1 &&
                  BN_bn2binpad(d, k->d.data(), len) == len &&
                  EVP_PKEY_get_octet_string_param(k->pkey, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY,
                                                  k->point.data(), k->point.size(), &got) == 1;
  BN_clear_free(d);
  if (!ok) return false;
  mark_secret(k->d);  // from here on the scalar is secret, through preparation
  mb::EcKeyStatus status = mb::prepare_ec_key(curve, k->d, &k->key);
  mark_public(&status);
  return status == mb::EcKeyStatus::kOk;
}

bool run_ecdsa(mb::EcCurve curve, bool leak) {
  const int len = mb::ec_field_bytes(curve);
  TestKey keys[2];
  for (TestKey& k : keys) {
    if (!make_key(curve, &k)) return false;
  }
  Bytes digest[8], nonce[8], r[8], s[8];
  mb::EcdsaLane lanes[8];
  EC_GROUP* group = EC_GROUP_new_by_curve_name(curve == mb::EcCurve::kP256 ? NID_X9_62_prime256v1
                                                                           : NID_secp384r1);
  BIGNUM* k = BN_new();
  for (int l = 0; l < 8; ++l) {
    digest[l] = random_bytes(static_cast<size_t>(len));
    do {
      BN_rand_range(k, EC_GROUP_get0_order(group));
    } while (BN_is_zero(k));
    nonce[l].resize(static_cast<size_t>(len));
    BN_bn2binpad(k, nonce[l].data(), len);
    mark_secret(nonce[l]);
    r[l].assign(static_cast<size_t>(len), 0);
    s[l].assign(static_cast<size_t>(len), 0);
    lanes[l] = {&keys[l % 2].key, digest[l].data(), digest[l].size(),
                nonce[l].data(),  r[l].data(),      s[l].data()};
  }
  BN_free(k);
  EC_GROUP_free(group);
  if (leak && (nonce[5][len / 2] & 1) != 0) std::puts("secret-dependent branch taken");
  mb::EcOutcome o = mb::ecdsa_sign_batch(mb::Backend::kPortable, curve, lanes);
  mark_public(&o);
  bool ok = o.ok == 0xFF;
  for (int l = 0; l < 8; ++l) {
    mark_public(r[l].data(), r[l].size());
    mark_public(s[l].data(), s[l].size());
    ECDSA_SIG* sig = ECDSA_SIG_new();
    ECDSA_SIG_set0(sig, BN_bin2bn(r[l].data(), len, nullptr), BN_bin2bn(s[l].data(), len, nullptr));
    unsigned char* der = nullptr;
    const int der_len = i2d_ECDSA_SIG(sig, &der);
    EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_pkey(nullptr, keys[l % 2].pkey, nullptr);
    ok = ok && EVP_PKEY_verify_init(ctx) == 1 &&
         EVP_PKEY_verify(ctx, der, static_cast<size_t>(der_len), digest[l].data(),
                         digest[l].size()) == 1;
    EVP_PKEY_CTX_free(ctx);
    OPENSSL_free(der);
    ECDSA_SIG_free(sig);
  }
  std::printf("ECDSA %s: 8 lanes, 2 keys, portable back end: %s\n", group_of(curve),
              ok ? "verified by OpenSSL" : "MISMATCH");
  for (TestKey& key : keys) EVP_PKEY_free(key.pkey);
  return ok;
}

bool run_ecdh(mb::EcCurve curve, bool leak) {
  const int len = mb::ec_field_bytes(curve);
  TestKey keys[2], peers[8];
  for (TestKey& key : keys) {
    if (!make_key(curve, &key)) return false;
  }
  Bytes out[8], want[8];
  mb::EcdhLane lanes[8];
  for (int l = 0; l < 8; ++l) {
    if (!make_key(curve, &peers[l])) return false;
    out[l].assign(static_cast<size_t>(len), 0);
    want[l].assign(static_cast<size_t>(len), 0);
    EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_pkey(nullptr, keys[l % 2].pkey, nullptr);
    size_t got = want[l].size();
    EVP_PKEY_derive_init(ctx);
    EVP_PKEY_derive_set_peer(ctx, peers[l].pkey);
    EVP_PKEY_derive(ctx, want[l].data(), &got);
    EVP_PKEY_CTX_free(ctx);
    lanes[l] = {&keys[l % 2].key, peers[l].point.data() + 1, peers[l].point.data() + 1 + len,
                out[l].data()};
  }
  if (leak && (keys[1].d[9] & 1) != 0) std::puts("secret-dependent branch taken");
  mb::EcOutcome o = mb::ecdh_batch(mb::Backend::kPortable, curve, lanes);
  mark_public(&o);
  bool ok = o.ok == 0xFF;
  for (int l = 0; l < 8; ++l) {
    mark_public(out[l].data(), out[l].size());
    ok = ok && out[l] == want[l];
  }
  std::printf("ECDH %s: 8 lanes, 2 keys, portable back end: %s\n", group_of(curve),
              ok ? "match OpenSSL" : "MISMATCH");
  for (TestKey& key : keys) EVP_PKEY_free(key.pkey);
  for (TestKey& key : peers) EVP_PKEY_free(key.pkey);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  bool leak = false;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--leak") == 0) {
      leak = true;
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
    }
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (!RUNNING_ON_VALGRIND) std::puts("note: not running under valgrind; checking results only");
  // The fixed-base tables are public; build them before the secrets enter, so that a callgrind
  // run counts the operations only.
  {
    Bytes digest(32, 1), nonce(32, 0), r(32), s(32);
    nonce[31] = 1;
    TestKey key;
    if (!make_key(mb::EcCurve::kP256, &key)) return 1;
    mark_public(key.d.data(), key.d.size());
    mb::prepare_ec_key(mb::EcCurve::kP256, key.d, &key.key);
    const mb::EcdsaLane lane{&key.key, digest.data(), 32, nonce.data(), r.data(), s.data()};
    mb::ecdsa_sign_batch(mb::Backend::kPortable, mb::EcCurve::kP256, {&lane, 1});
    EVP_PKEY_free(key.pkey);
    TestKey key384;
    Bytes nonce384(48, 0), r384(48), s384(48);
    nonce384[47] = 1;
    if (!make_key(mb::EcCurve::kP384, &key384)) return 1;
    mark_public(key384.d.data(), key384.d.size());
    mb::prepare_ec_key(mb::EcCurve::kP384, key384.d, &key384.key);
    const mb::EcdsaLane lane384{&key384.key,     digest.data(), 32,
                                nonce384.data(), r384.data(),   s384.data()};
    mb::ecdsa_sign_batch(mb::Backend::kPortable, mb::EcCurve::kP384, {&lane384, 1});
    EVP_PKEY_free(key384.pkey);
    Bytes scalar(32, 5), pub(32);
    const mb::X25519Lane keygen{scalar.data(), nullptr, pub.data()};
    mb::x25519_batch(mb::Backend::kPortable, {&keygen, 1});
  }
  const auto before = static_cast<unsigned>(VALGRIND_COUNT_ERRORS);
  bool ok = true;
  auto want = [&](const char* name) { return only.empty() || only == name; };
  if (leak) {
    ok = run_x25519(false, true);
  } else {
    if (want("x25519")) ok = run_x25519(false, false) && ok;
    if (want("x25519-keygen")) ok = run_x25519(true, false) && ok;
    if (want("ecdsa-p256")) ok = run_ecdsa(mb::EcCurve::kP256, false) && ok;
    if (want("ecdsa-p384")) ok = run_ecdsa(mb::EcCurve::kP384, false) && ok;
    if (want("ecdh-p256")) ok = run_ecdh(mb::EcCurve::kP256, false) && ok;
    if (want("ecdh-p384")) ok = run_ecdh(mb::EcCurve::kP384, false) && ok;
  }
  const auto errors = static_cast<unsigned>(VALGRIND_COUNT_ERRORS);
  std::printf("memcheck errors: %u (%u before the secrets)\n", errors, before);
  return ok && errors == 0 ? 0 : 1;
}

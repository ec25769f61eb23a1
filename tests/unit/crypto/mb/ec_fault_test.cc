// Fault safety of the EC kernels (issue 6, item 3): a lane whose result is wrong (a bit flipped
// by EcFaultInjection in the scalar multiplication's result, or in ECDSA's s) is caught by the
// kernels' checks, never returned, and the checked API recomputes it with OpenSSL and counts
// it. Plus key import and preparation.

#include <gtest/gtest.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include <string>
#include <vector>

#include "ec_test_support.h"

namespace accelgate::crypto::mb {
namespace {

using testing::Bytes;
using testing::der_of;
using testing::ec_backends;
using testing::ec_keys_of;
using testing::ecdh_reference;
using testing::ecdsa_verify;
using testing::EcTestKey;
using testing::make_ec_key;
using testing::random_bytes;
using testing::random_nonce;
using testing::x25519_reference;

TEST(MbEcFault, X25519KernelFlagsAndZeroesTheFaultyLane) {
  for (Backend b : ec_backends()) {
    for (bool keygen : {false, true}) {
      Bytes k[8], u[8], out[8];
      X25519Lane lanes[8];
      for (int l = 0; l < 8; ++l) {
        k[l] = random_bytes(32);
        u[l] = random_bytes(32);
        out[l].assign(32, 0xA5);
        lanes[l] = {k[l].data(), keygen ? nullptr : u[l].data(), out[l].data()};
      }
      const EcFaultInjection fault{3, 2, 17};
      const X25519Outcome o = x25519_batch(b, lanes, &fault);
      EXPECT_EQ(o.check_failed, 1 << 3);
      EXPECT_EQ(o.ok, 0xFF & ~(1 << 3));
      EXPECT_EQ(out[3], Bytes(32, 0));
      EXPECT_EQ(out[4], x25519_reference(k[4].data(), lanes[4].peer_u));
    }
  }
}

TEST(MbEcFault, X25519CheckedRecomputesAndCounts) {
  for (int lane : {0, 7}) {
    Bytes k[8], u[8], out[8];
    X25519CheckedLane lanes[8];
    for (int l = 0; l < 8; ++l) {
      k[l] = random_bytes(32);
      u[l] = random_bytes(32);
      out[l].assign(32, 0);
      lanes[l] = {k[l].data(), l % 2 == 0 ? u[l].data() : nullptr, out[l].data()};
    }
    const uint64_t before = ec_software_recompute_count();
    const EcFaultInjection fault{lane, lane, 50};
    const CheckedOutcome o = x25519_checked(best_backend(), lanes, &fault);
    EXPECT_EQ(o.recomputed, 1 << lane);
    EXPECT_EQ(o.ok, 0xFF & ~(1 << lane));
    EXPECT_EQ(o.failed, 0);
    EXPECT_EQ(ec_software_recompute_count(), before + 1);
    for (int l = 0; l < 8; ++l) EXPECT_EQ(out[l], x25519_reference(k[l].data(), lanes[l].peer));
  }
}

class FaultCurves : public ::testing::TestWithParam<EcCurve> {};

// ECDSA: a fault in R (site kPoint) is caught by the on-curve check, one in s (kSignature) by
// the s k = e + r d check.
TEST_P(FaultCurves, EcdsaKernelFlagsAndZeroesTheFaultyLane) {
  const EcCurve curve = GetParam();
  const auto len = static_cast<size_t>(ec_field_bytes(curve));
  const auto& keys = ec_keys_of(curve);
  for (Backend b : ec_backends()) {
    for (EcFaultSite site : {EcFaultSite::kPoint, EcFaultSite::kSignature}) {
      Bytes digest[8], nonce[8], r[8], s[8];
      EcdsaLane lanes[8];
      for (int l = 0; l < 8; ++l) {
        digest[l] = random_bytes(32);
        nonce[l] = random_nonce(curve);
        r[l].assign(len, 0xA5);
        s[l].assign(len, 0xA5);
        lanes[l] = {&keys[l % keys.size()]->key,
                    digest[l].data(),
                    32,
                    nonce[l].data(),
                    r[l].data(),
                    s[l].data()};
      }
      const EcFaultInjection fault{6, 1, 9, site};
      const EcOutcome o = ecdsa_sign_batch(b, curve, lanes, &fault);
      EXPECT_EQ(o.check_failed, 1 << 6);
      EXPECT_EQ(o.ok, 0xFF & ~(1 << 6));
      EXPECT_EQ(r[6], Bytes(len, 0));
      EXPECT_EQ(s[6], Bytes(len, 0));
      EXPECT_TRUE(ecdsa_verify(keys[5 % keys.size()]->pkey, digest[5].data(), 32,
                               der_of(r[5].data(), s[5].data(), static_cast<int>(len))));
    }
  }
}

TEST_P(FaultCurves, EcdsaCheckedRecomputesAndCounts) {
  const EcCurve curve = GetParam();
  const auto& keys = ec_keys_of(curve);
  for (EcFaultSite site : {EcFaultSite::kPoint, EcFaultSite::kSignature}) {
    Bytes digest[8];
    std::vector<uint8_t> der[8];
    EcdsaCheckedLane lanes[8];
    for (int l = 0; l < 8; ++l) {
      digest[l] = random_bytes(32);
      lanes[l] = {&keys[l % keys.size()]->key, keys[l % keys.size()]->pkey, digest[l].data(), 32,
                  &der[l]};
    }
    const uint64_t before = ec_software_recompute_count();
    const EcFaultInjection fault{2, 4, 40, site};
    const CheckedOutcome o = ecdsa_sign_checked(best_backend(), lanes, &fault);
    EXPECT_EQ(o.recomputed, 1 << 2);
    EXPECT_EQ(o.ok, 0xFF & ~(1 << 2));
    EXPECT_EQ(ec_software_recompute_count(), before + 1);
    for (int l = 0; l < 8; ++l) {
      EXPECT_TRUE(ecdsa_verify(keys[l % keys.size()]->pkey, digest[l].data(), 32, der[l]))
          << "lane " << l;
    }
  }
}

TEST_P(FaultCurves, EcdhKernelFlagsAndCheckedRecomputes) {
  const EcCurve curve = GetParam();
  const auto len = static_cast<size_t>(ec_field_bytes(curve));
  const auto& keys = ec_keys_of(curve);
  std::unique_ptr<EcTestKey> peers[8];
  Bytes out[8], out2[8];
  EcdhLane lanes[8];
  EcdhCheckedLane checked[8];
  for (int l = 0; l < 8; ++l) {
    peers[l] = make_ec_key(curve);
    out[l].assign(len, 0xA5);
    out2[l].assign(len, 0);
    lanes[l] = {&keys[l % keys.size()]->key, peers[l]->point.data() + 1,
                peers[l]->point.data() + 1 + len, out[l].data()};
    checked[l] = {&keys[l % keys.size()]->key,
                  keys[l % keys.size()]->pkey,
                  peers[l]->pkey,
                  nullptr,
                  0,
                  out2[l].data()};
  }
  const EcFaultInjection fault{0, 3, 31};
  for (Backend b : ec_backends()) {
    const EcOutcome o = ecdh_batch(b, curve, lanes, &fault);
    EXPECT_EQ(o.check_failed, 1);
    EXPECT_EQ(o.ok, 0xFE);
    EXPECT_EQ(out[0], Bytes(len, 0));
  }
  const uint64_t before = ec_software_recompute_count();
  const CheckedOutcome o = ecdh_derive_checked(best_backend(), curve, checked, &fault);
  EXPECT_EQ(o.recomputed, 1);
  EXPECT_EQ(o.ok, 0xFE);
  EXPECT_EQ(ec_software_recompute_count(), before + 1);
  for (int l = 0; l < 8; ++l) {
    EXPECT_EQ(out2[l], ecdh_reference(keys[l % keys.size()]->pkey, peers[l]->pkey));
  }
}

INSTANTIATE_TEST_SUITE_P(Ec, FaultCurves, ::testing::Values(EcCurve::kP256, EcCurve::kP384),
                         [](const auto& info) {
                           return std::string(info.param == EcCurve::kP256 ? "P256" : "P384");
                         });

// Import: P-256 and P-384 private keys; refused: other curves, other key types, public keys.
TEST(MbEcKey, ImportAcceptsP256AndP384AndRefusesTheRest) {
  for (EcCurve curve : {EcCurve::kP256, EcCurve::kP384}) {
    const EcTestKey& k = *ec_keys_of(curve)[0];
    EcKey key;
    EXPECT_EQ(import_ec_key(k.pkey, &key), EcImportStatus::kOk);
    EXPECT_EQ(key.curve(), curve);
    EcCurve seen{};
    EXPECT_TRUE(ec_curve_of(k.pkey, &seen));
    EXPECT_EQ(seen, curve);
    // The public half alone.
    EVP_PKEY* pub = nullptr;
    const unsigned char* p = nullptr;
    unsigned char* der = nullptr;
    const int der_len = i2d_PUBKEY(k.pkey, &der);
    p = der;
    pub = d2i_PUBKEY(nullptr, &p, der_len);
    OPENSSL_free(der);
    ASSERT_NE(pub, nullptr);
    EXPECT_EQ(import_ec_key(pub, &key), EcImportStatus::kNoPrivateKey);
    EXPECT_TRUE(ec_curve_of(pub, &seen));
    EVP_PKEY_free(pub);
  }
  EcKey key;
  EVP_PKEY* p521 = EVP_EC_gen("P-521");
  EXPECT_EQ(import_ec_key(p521, &key), EcImportStatus::kUnsupportedCurve);
  EcCurve seen{};
  EXPECT_FALSE(ec_curve_of(p521, &seen));
  EVP_PKEY_free(p521);
  EVP_PKEY* x25519 = EVP_PKEY_Q_keygen(nullptr, nullptr, "X25519");
  EXPECT_EQ(import_ec_key(x25519, &key), EcImportStatus::kNotEc);
  EVP_PKEY_free(x25519);
  EVP_PKEY* rsa = EVP_RSA_gen(1024);
  EXPECT_EQ(import_ec_key(rsa, &key), EcImportStatus::kNotEc);
  EVP_PKEY_free(rsa);
  EXPECT_STREQ(ec_import_status_text(EcImportStatus::kUnsupportedCurve),
               "curve other than P-256 and P-384");
}

// prepare_ec_key: 1 and n - 1 are valid, 0, n and beyond are not, nor too many bytes.
TEST(MbEcKey, PrepareChecksTheRange) {
  for (EcCurve curve : {EcCurve::kP256, EcCurve::kP384}) {
    const auto len = static_cast<size_t>(ec_field_bytes(curve));
    EC_GROUP* group = EC_GROUP_new_by_curve_name(testing::curve_nid(curve));
    auto be = [&](const BIGNUM* x) {
      Bytes v(len);
      BN_bn2binpad(x, v.data(), static_cast<int>(len));
      return v;
    };
    BIGNUM* t = BN_dup(EC_GROUP_get0_order(group));
    const Bytes n = be(t);
    BN_sub_word(t, 1);
    const Bytes n_minus_1 = be(t);
    BN_add_word(t, 2);
    const Bytes n_plus_1 = be(t);
    BN_free(t);
    EC_GROUP_free(group);
    EcKey key;
    EXPECT_EQ(prepare_ec_key(curve, n_minus_1, &key), EcKeyStatus::kOk);
    EXPECT_EQ(prepare_ec_key(curve, Bytes{1}, &key), EcKeyStatus::kOk);
    EXPECT_EQ(prepare_ec_key(curve, Bytes(len, 0), &key), EcKeyStatus::kOutOfRange);
    EXPECT_EQ(prepare_ec_key(curve, n, &key), EcKeyStatus::kOutOfRange);
    EXPECT_EQ(prepare_ec_key(curve, n_plus_1, &key), EcKeyStatus::kOutOfRange);
    EXPECT_EQ(prepare_ec_key(curve, Bytes(len, 0xFF), &key), EcKeyStatus::kOutOfRange);
    EXPECT_EQ(prepare_ec_key(curve, Bytes(len + 1, 1), &key), EcKeyStatus::kBadLength);
  }
  // d = n - 1 signs and derives like OpenSSL (its scalar multiple is -G and -Q).
  const EcCurve curve = EcCurve::kP256;
  EC_GROUP* group = EC_GROUP_new_by_curve_name(testing::curve_nid(curve));
  BIGNUM* d = BN_dup(EC_GROUP_get0_order(group));
  BN_sub_word(d, 1);
  Bytes d_bytes(32);
  BN_bn2binpad(d, d_bytes.data(), 32);
  BN_free(d);
  EC_GROUP_free(group);
  EcKey key;
  ASSERT_EQ(prepare_ec_key(curve, d_bytes, &key), EcKeyStatus::kOk);
  const EcTestKey& peer = *ec_keys_of(curve)[3];
  Bytes out(32);
  const EcdhLane lane{&key, peer.point.data() + 1, peer.point.data() + 33, out.data()};
  EXPECT_EQ(ecdh_batch(best_backend(), curve, {&lane, 1}).ok, 1);
  EXPECT_EQ(Bytes(peer.point.begin() + 1, peer.point.begin() + 33), out);  // x(-Q) = x(Q)
}

}  // namespace
}  // namespace accelgate::crypto::mb

// Multi-buffer ECDSA (issue 6): random signatures verified by OpenSSL, fixed nonces compared
// byte for byte with OpenSSL's own arithmetic, bits2int for every digest length, nonces out of
// range, batch fills with canaries, mixed keys, and the checked API's DER output.

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "ec_test_support.h"

namespace accelgate::crypto::mb {
namespace {

using testing::Bytes;
using testing::der_of;
using testing::ec_backends;
using testing::ec_keys_of;
using testing::ecdsa_verify;
using testing::EcTestKey;
using testing::random_bytes;
using testing::random_nonce;
using testing::reference_sign;

constexpr int kRandomOps = testing::kEcSanitized ? 100 : 10000;

class Curves : public ::testing::TestWithParam<EcCurve> {};

// RandomSignaturesVerify: kRandomOps signatures per curve on the best back end, five keys in
// rotation (every batch mixes keys), random digests of the curve's size; each verified by
// OpenSSL, the first 200 also compared byte for byte with OpenSSL's arithmetic for the nonce.
TEST_P(Curves, RandomSignaturesVerifyAndMatchReference) {
  const EcCurve curve = GetParam();
  const auto& keys = ec_keys_of(curve);
  const int len = ec_field_bytes(curve);
  const Backend backend = best_backend();
  int checked = 0;
  for (int batch = 0; checked < kRandomOps; ++batch) {
    Bytes digest[8], nonce[8], r[8], s[8];
    EcdsaLane lanes[8];
    const EcTestKey* lane_key[8];
    for (int l = 0; l < 8; ++l) {
      lane_key[l] = keys[(batch + l) % keys.size()].get();
      digest[l] = random_bytes(static_cast<size_t>(len));
      nonce[l] = random_nonce(curve);
      r[l].assign(static_cast<size_t>(len), 0);
      s[l].assign(static_cast<size_t>(len), 0);
      lanes[l] = {&lane_key[l]->key, digest[l].data(), digest[l].size(),
                  nonce[l].data(),   r[l].data(),      s[l].data()};
    }
    const EcOutcome o = ecdsa_sign_batch(backend, curve, lanes);
    ASSERT_EQ(o.ok, 0xFF) << "batch " << batch << " check_failed " << int{o.check_failed};
    for (int l = 0; l < 8; ++l, ++checked) {
      const Bytes der = der_of(r[l].data(), s[l].data(), len);
      ASSERT_TRUE(ecdsa_verify(lane_key[l]->pkey, digest[l].data(), digest[l].size(), der))
          << "op " << checked;
      if (checked < 200) {
        Bytes rr, ss;
        ASSERT_TRUE(reference_sign(*lane_key[l], digest[l].data(), digest[l].size(),
                                   nonce[l].data(), &rr, &ss));
        ASSERT_EQ(r[l], rr) << "op " << checked;
        ASSERT_EQ(s[l], ss) << "op " << checked;
      }
    }
  }
  std::printf("%d random %s signatures on %s verified by OpenSSL\n", checked, ec_curve_name(curve),
              backend_name(backend));
}

// sign_one signs with one lane (the others repeat it) and checks the signature against
// OpenSSL's arithmetic for the same nonce and with OpenSSL's verification.
void sign_and_compare(Backend backend, const EcTestKey& key, const Bytes& digest,
                      const Bytes& nonce) {
  const auto len = static_cast<size_t>(ec_field_bytes(key.curve));
  Bytes r(len), s(len), rr, ss;
  const EcdsaLane lane{&key.key, digest.data(), digest.size(), nonce.data(), r.data(), s.data()};
  const EcOutcome o = ecdsa_sign_batch(backend, key.curve, {&lane, 1});
  ASSERT_EQ(o.ok, 1) << "digest " << digest.size() << " bytes";
  ASSERT_TRUE(reference_sign(key, digest.data(), digest.size(), nonce.data(), &rr, &ss));
  EXPECT_EQ(r, rr);
  EXPECT_EQ(s, ss);
  EXPECT_TRUE(ecdsa_verify(key.pkey, digest.data(), digest.size(),
                           der_of(r.data(), s.data(), static_cast<int>(len))));
}

// bits2int: digests shorter than, equal to and longer than the order (SHA-1, SHA-224, SHA-256,
// SHA-384, SHA-512 sizes and odd ones), and digests whose value is >= n.
TEST_P(Curves, EveryDigestLengthAndValue) {
  const EcCurve curve = GetParam();
  const EcTestKey& key = *ec_keys_of(curve)[0];
  for (Backend b : ec_backends()) {
    for (size_t dlen : {0, 1, 20, 28, 31, 32, 33, 47, 48, 49, 64, 100}) {
      sign_and_compare(b, key, random_bytes(dlen), random_nonce(curve));
    }
    sign_and_compare(b, key, Bytes(64, 0xFF), random_nonce(curve));  // e >= n
    sign_and_compare(b, key, Bytes(64, 0x00), random_nonce(curve));  // e = 0
  }
}

// Nonces at the ends of [1, n-1], those nearest the incomplete formula's exception, and with
// every window pattern of the comb: all zero bits but the top, all ones below n's top bits.
TEST_P(Curves, EdgeNonces) {
  const EcCurve curve = GetParam();
  const EcTestKey& key = *ec_keys_of(curve)[1];
  const auto len = static_cast<size_t>(ec_field_bytes(curve));
  EC_GROUP* group = EC_GROUP_new_by_curve_name(testing::curve_nid(curve));
  const BIGNUM* n = EC_GROUP_get0_order(group);
  std::vector<Bytes> nonces;
  for (int k : {1, 2, 3, 64, 65}) {
    Bytes v(len, 0);
    v[len - 1] = static_cast<uint8_t>(k);
    nonces.push_back(v);
  }
  for (int minus : {1, 2, 3}) {  // n - 1, n - 2, n - 3
    BIGNUM* t = BN_dup(n);
    BN_sub_word(t, static_cast<BN_ULONG>(minus));
    Bytes v(len);
    BN_bn2binpad(t, v.data(), static_cast<int>(len));
    BN_free(t);
    nonces.push_back(v);
  }
  // 2 D 2^(w t) mod n, t the comb's top window (w = 7, t = 36 for P-256; w = 6, t = 64 for
  // P-384), D = 1..17: the only nonces for which the last window's addition could be the
  // doubling that the Jacobian formula cannot do (README, "EC: exceptional cases").
  const int top_shift = curve == EcCurve::kP256 ? 7 * 36 : 6 * 64;
  BN_CTX* bn_ctx = BN_CTX_new();
  for (int d = 1; d <= 17; ++d) {
    BIGNUM* t = BN_new();
    BN_set_word(t, static_cast<BN_ULONG>(d) * 2);
    BN_lshift(t, t, top_shift);
    BN_nnmod(t, t, n, bn_ctx);
    Bytes v(len);
    BN_bn2binpad(t, v.data(), static_cast<int>(len));
    BN_free(t);
    nonces.push_back(v);
  }
  BN_CTX_free(bn_ctx);
  Bytes top(len, 0);
  top[0] = 0x80;
  nonces.push_back(top);
  Bytes ones(len, 0xFF);
  ones[0] = 0x7F;
  nonces.push_back(ones);
  Bytes alternating(len, 0xAA);
  alternating[0] = 0x2A;
  nonces.push_back(alternating);
  EC_GROUP_free(group);
  for (Backend b : ec_backends()) {
    for (const Bytes& k : nonces) sign_and_compare(b, key, random_bytes(32), k);
  }
}

// Nonces outside [1, n-1] are refused per lane: invalid_input, zeroed outputs; other lanes sign.
TEST_P(Curves, NonceOutOfRangeIsInvalidInput) {
  const EcCurve curve = GetParam();
  const auto& keys = ec_keys_of(curve);
  const auto len = static_cast<size_t>(ec_field_bytes(curve));
  EC_GROUP* group = EC_GROUP_new_by_curve_name(testing::curve_nid(curve));
  Bytes n_bytes(len), n_plus_1(len);
  BN_bn2binpad(EC_GROUP_get0_order(group), n_bytes.data(), static_cast<int>(len));
  BIGNUM* t = BN_dup(EC_GROUP_get0_order(group));
  BN_add_word(t, 1);
  BN_bn2binpad(t, n_plus_1.data(), static_cast<int>(len));
  BN_free(t);
  EC_GROUP_free(group);
  const Bytes bad[] = {Bytes(len, 0), n_bytes, n_plus_1, Bytes(len, 0xFF)};
  for (Backend b : ec_backends()) {
    for (const Bytes& k : bad) {
      Bytes digest[8], nonce[8], r[8], s[8];
      EcdsaLane lanes[8];
      for (int l = 0; l < 8; ++l) {
        digest[l] = random_bytes(32);
        nonce[l] = l == 4 ? k : random_nonce(curve);
        r[l].assign(len, 0xA5);
        s[l].assign(len, 0xA5);
        lanes[l] = {&keys[l % keys.size()]->key,
                    digest[l].data(),
                    32,
                    nonce[l].data(),
                    r[l].data(),
                    s[l].data()};
      }
      const EcOutcome o = ecdsa_sign_batch(b, curve, lanes);
      EXPECT_EQ(o.invalid_input, 1 << 4);
      EXPECT_EQ(o.ok, 0xFF & ~(1 << 4));
      EXPECT_EQ(o.check_failed | o.retry, 0);
      EXPECT_EQ(r[4], Bytes(len, 0));
      EXPECT_EQ(s[4], Bytes(len, 0));
      EXPECT_TRUE(ecdsa_verify(keys[3 % keys.size()]->pkey, digest[3].data(), 32,
                               der_of(r[3].data(), s[3].data(), static_cast<int>(len))));
    }
  }
}

// Batches of every fill 1..8, canaries after r and s, five keys mixed.
TEST_P(Curves, BatchFillsWithCanaries) {
  const EcCurve curve = GetParam();
  const auto& keys = ec_keys_of(curve);
  const auto len = static_cast<size_t>(ec_field_bytes(curve));
  for (Backend b : ec_backends()) {
    for (size_t fill = 1; fill <= 8; ++fill) {
      Bytes digest[8], nonce[8], r[8], s[8];
      std::vector<EcdsaLane> lanes(fill);
      for (size_t l = 0; l < fill; ++l) {
        digest[l] = random_bytes(32);
        nonce[l] = random_nonce(curve);
        r[l].assign(len + 16, 0xA5);
        s[l].assign(len + 16, 0xA5);
        lanes[l] = {&keys[(l + fill) % keys.size()]->key,
                    digest[l].data(),
                    32,
                    nonce[l].data(),
                    r[l].data(),
                    s[l].data()};
      }
      const EcOutcome o = ecdsa_sign_batch(b, curve, lanes);
      EXPECT_EQ(o.ok, (1u << fill) - 1);
      for (size_t l = 0; l < fill; ++l) {
        Bytes rr, ss;
        ASSERT_TRUE(reference_sign(*keys[(l + fill) % keys.size()], digest[l].data(), 32,
                                   nonce[l].data(), &rr, &ss));
        EXPECT_EQ(Bytes(r[l].begin(), r[l].begin() + static_cast<long>(len)), rr);
        EXPECT_EQ(Bytes(s[l].begin(), s[l].begin() + static_cast<long>(len)), ss);
        EXPECT_EQ(Bytes(r[l].begin() + static_cast<long>(len), r[l].end()), Bytes(16, 0xA5));
        EXPECT_EQ(Bytes(s[l].begin() + static_cast<long>(len), s[l].end()), Bytes(16, 0xA5));
      }
    }
  }
}

// A key of the other curve, or a batch of 0 or 9 lanes, computes nothing.
TEST_P(Curves, RefusesBadBatches) {
  const EcCurve curve = GetParam();
  const EcCurve other = curve == EcCurve::kP256 ? EcCurve::kP384 : EcCurve::kP256;
  Bytes digest(32, 1), nonce = random_nonce(curve), r(48, 0xA5), s(48, 0xA5);
  const EcdsaLane wrong{
      &ec_keys_of(other)[0]->key, digest.data(), 32, nonce.data(), r.data(), s.data()};
  const EcOutcome o = ecdsa_sign_batch(best_backend(), curve, {&wrong, 1});
  EXPECT_EQ(o.ok | o.invalid_input | o.retry | o.check_failed, 0);
  EXPECT_EQ(r, Bytes(48, 0xA5));
  const EcdsaLane good{
      &ec_keys_of(curve)[0]->key, digest.data(), 32, nonce.data(), r.data(), s.data()};
  std::vector<EcdsaLane> nine(9, good);
  EXPECT_EQ(ecdsa_sign_batch(best_backend(), curve, nine).ok, 0);
  EXPECT_EQ(ecdsa_sign_batch(best_backend(), curve, {}).ok, 0);
}

// The checked API: DER signatures that OpenSSL verifies, byte-identical in form to
// EVP_PKEY_sign's (d2i then i2d gives them back), nonces from the DRBG (two signatures of one
// digest differ), nothing recomputed in a clean batch.
TEST_P(Curves, CheckedApiGivesDerThatOpenSslVerifies) {
  const EcCurve curve = GetParam();
  const auto& keys = ec_keys_of(curve);
  for (size_t fill : {1, 5, 8}) {
    Bytes digest[8];
    std::vector<uint8_t> der[8], again[8];
    std::vector<EcdsaCheckedLane> lanes(fill), lanes2(fill);
    for (size_t l = 0; l < fill; ++l) {
      digest[l] = random_bytes(l % 2 == 0 ? 32 : 48);
      lanes[l] = {&keys[l % keys.size()]->key, keys[l % keys.size()]->pkey, digest[l].data(),
                  digest[l].size(), &der[l]};
      lanes2[l] = lanes[l];
      lanes2[l].der = &again[l];
    }
    const uint64_t before = ec_software_recompute_count();
    const CheckedOutcome o = ecdsa_sign_checked(best_backend(), lanes);
    EXPECT_EQ(o.ok, (1u << fill) - 1);
    EXPECT_EQ(o.recomputed | o.failed, 0);
    EXPECT_EQ(ec_software_recompute_count(), before);
    EXPECT_EQ(ecdsa_sign_checked(best_backend(), lanes2).ok, (1u << fill) - 1);
    for (size_t l = 0; l < fill; ++l) {
      EXPECT_LE(der[l].size(), ecdsa_der_max_bytes(curve));
      EXPECT_TRUE(
          ecdsa_verify(keys[l % keys.size()]->pkey, digest[l].data(), digest[l].size(), der[l]));
      const unsigned char* p = der[l].data();
      ECDSA_SIG* sig = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(der[l].size()));
      ASSERT_NE(sig, nullptr);
      EXPECT_EQ(p, der[l].data() + der[l].size());
      unsigned char* re = nullptr;
      const int re_len = i2d_ECDSA_SIG(sig, &re);
      EXPECT_EQ(Bytes(re, re + re_len), der[l]);
      OPENSSL_free(re);
      ECDSA_SIG_free(sig);
      EXPECT_NE(der[l], again[l]) << "the same nonce twice";
    }
  }
}

// A checked batch whose keys mix the two curves fails every lane and signs nothing.
TEST(MbEcdsaChecked, MixedCurvesFailEveryLane) {
  Bytes digest(32, 7);
  std::vector<uint8_t> der[2];
  const EcdsaCheckedLane lanes[2] = {
      {&ec_keys_of(EcCurve::kP256)[0]->key, ec_keys_of(EcCurve::kP256)[0]->pkey, digest.data(), 32,
       &der[0]},
      {&ec_keys_of(EcCurve::kP384)[0]->key, ec_keys_of(EcCurve::kP384)[0]->pkey, digest.data(), 32,
       &der[1]}};
  const CheckedOutcome o = ecdsa_sign_checked(best_backend(), lanes);
  EXPECT_EQ(o.failed, 3);
  EXPECT_EQ(o.ok | o.recomputed, 0);
  EXPECT_TRUE(der[0].empty() && der[1].empty());
}

INSTANTIATE_TEST_SUITE_P(Ec, Curves, ::testing::Values(EcCurve::kP256, EcCurve::kP384),
                         [](const auto& info) {
                           return std::string(info.param == EcCurve::kP256 ? "P256" : "P384");
                         });

}  // namespace
}  // namespace accelgate::crypto::mb

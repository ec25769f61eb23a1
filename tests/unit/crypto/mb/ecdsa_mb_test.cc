// Multi-buffer ECDSA (issue 6): random signatures verified by OpenSSL, fixed nonces compared
// byte for byte with OpenSSL's own arithmetic, bits2int for every digest length, nonces out of
// range, batch fills with canaries, mixed keys, and the checked API's DER output.

#include <gtest/gtest.h>

#include <cstring>

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

constexpr int kRandomOps = testing::kEcSanitized ? 100 : 400;

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

INSTANTIATE_TEST_SUITE_P(Ec, Curves, ::testing::Values(EcCurve::kP256, EcCurve::kP384),
                         [](const auto& info) {
                           return std::string(info.param == EcCurve::kP256 ? "P256" : "P384");
                         });

}  // namespace
}  // namespace accelgate::crypto::mb

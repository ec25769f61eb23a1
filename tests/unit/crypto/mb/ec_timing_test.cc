// The statistical second line of the EC constant-time check (issue 6, item 2), as
// timing_test.cc does it for RSA: dudect-style (Reparaz, Balasch & Verbauwhede, DATE 2017) over
// the IFMA back end, which valgrind cannot run. Batches with fixed secrets (class 0) and random
// secrets (class 1) are timed in random interleaving; after cropping the slowest 10 %, Welch's t
// of the two classes must stay below 10 in magnitude. Each test is bounded by time.

#include <gtest/gtest.h>
#include <openssl/rand.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include "ec_test_support.h"

namespace accelgate::crypto::mb {
namespace {

using testing::Bytes;
using testing::ec_keys_of;
using testing::random_bytes;
using testing::random_nonce;

constexpr double kMaxAbsT = 10.0;
constexpr auto kBudget = std::chrono::milliseconds(2500);
constexpr int kMaxSamples = 6000;

double cropped_welch_t(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> all(a);
  all.insert(all.end(), b.begin(), b.end());
  std::sort(all.begin(), all.end());
  const double cut = all[all.size() * 9 / 10];
  auto stats = [cut](const std::vector<double>& v, double* mean, double* var, double* n) {
    double s = 0, s2 = 0, k = 0;
    for (double x : v) {
      if (x > cut) continue;
      s += x;
      s2 += x * x;
      k += 1;
    }
    *n = k;
    *mean = s / k;
    *var = (s2 - k * *mean * *mean) / (k - 1);
  };
  double ma = 0, va = 0, na = 0, mb = 0, vb = 0, nb = 0;
  stats(a, &ma, &va, &na);
  stats(b, &mb, &vb, &nb);
  return (ma - mb) / std::sqrt(va / na + vb / nb);
}

// measure times |run| after |prepare| set up class 0 or 1, chosen by a coin per sample. Each
// timed run follows an untimed run on the same inputs: preparing a class is not the same work
// for both (RAND_bytes for the random one, a fill for the fixed one), and a batch lasts only
// microseconds, so the caches and predictors that the preparation leaves behind would otherwise
// be timed as a difference between the classes (measured: |t| up to 41 for X25519 key
// generation on an Intel Xeon, always the random class slower, where the kernels themselves
// show none).
double measure(const char* what, const std::function<void(int)>& prepare,
               const std::function<void()>& run) {
  std::vector<double> fixed, random;
  const auto start = std::chrono::steady_clock::now();
  int samples = 0;
  uint8_t coins[64];
  while (samples < kMaxSamples && std::chrono::steady_clock::now() - start < kBudget) {
    RAND_bytes(coins, sizeof(coins));
    for (const uint8_t coin : coins) {
      const int cls = coin & 1;
      prepare(cls);
      run();
      const auto t0 = std::chrono::steady_clock::now();
      run();
      const auto t1 = std::chrono::steady_clock::now();
      if (samples++ < 20) continue;  // warm-up
      (cls == 0 ? fixed : random)
          .push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
  }
  const double t = cropped_welch_t(fixed, random);
  std::printf("dudect %s: %zu fixed, %zu random samples, t = %.2f (limit %.0f)\n", what,
              fixed.size(), random.size(), t, kMaxAbsT);
  return t;
}

#define AG_REQUIRE_IFMA()                                                  \
  if (!detect_ifma().usable)                                               \
    GTEST_SKIP() << "IFMA back end unavailable: " << detect_ifma().reason; \
  if (testing::kEcSanitized)                                               \
  GTEST_SKIP() << "timing under ASan/UBSan instrumentation says "          \
                  "nothing"

TEST(MbEcTiming, IfmaX25519FixedVsRandomScalar) {
  AG_REQUIRE_IFMA();
  for (bool keygen : {false, true}) {
    Bytes k[8], u[8], out[8];
    X25519Lane lanes[8];
    const Bytes peer = random_bytes(32);
    for (int l = 0; l < 8; ++l) {
      k[l].assign(32, 0);
      u[l] = peer;
      out[l].assign(32, 0);
      lanes[l] = {k[l].data(), keygen ? nullptr : u[l].data(), out[l].data()};
    }
    const double t = measure(
        keygen ? "X25519 keygen scalar (fixed: all zero)" : "X25519 scalar (fixed: all zero)",
        [&](int cls) {
          for (Bytes& scalar : k) {
            if (cls == 0) {
              std::fill(scalar.begin(), scalar.end(), 0);
            } else {
              RAND_bytes(scalar.data(), 32);
            }
          }
        },
        [&] { EXPECT_NE(x25519_batch(Backend::kIfma, lanes).check_failed, 0xFF); });
    EXPECT_LT(std::fabs(t), kMaxAbsT);
  }
}

TEST(MbEcTiming, IfmaEcdsaFixedVsRandomNonceAndKey) {
  AG_REQUIRE_IFMA();
  for (EcCurve curve : {EcCurve::kP256, EcCurve::kP384}) {
    const auto& keys = ec_keys_of(curve);
    const auto len = static_cast<size_t>(ec_field_bytes(curve));
    Bytes digest = random_bytes(32), nonce[8], r[8], s[8];
    Bytes fixed_nonce(len, 0);
    fixed_nonce[len - 1] = 1;
    EcdsaLane lanes[8];
    uint8_t pick[8];
    for (int l = 0; l < 8; ++l) {
      nonce[l] = fixed_nonce;
      r[l].assign(len, 0);
      s[l].assign(len, 0);
      lanes[l] = {&keys[0]->key, digest.data(), 32, nonce[l].data(), r[l].data(), s[l].data()};
    }
    const double t = measure(
        curve == EcCurve::kP256 ? "ECDSA P-256 nonce and key (fixed: k = 1, key 0)"
                                : "ECDSA P-384 nonce and key (fixed: k = 1, key 0)",
        [&](int cls) {
          RAND_bytes(pick, sizeof(pick));
          for (int l = 0; l < 8; ++l) {
            nonce[l] = cls == 0 ? fixed_nonce : random_nonce(curve);
            lanes[l].nonce = nonce[l].data();
            lanes[l].key = &keys[cls == 0 ? 0 : pick[l] % keys.size()]->key;
          }
        },
        [&] { EXPECT_EQ(ecdsa_sign_batch(Backend::kIfma, curve, lanes).ok, 0xFF); });
    EXPECT_LT(std::fabs(t), kMaxAbsT);
  }
}

TEST(MbEcTiming, IfmaEcdhFixedVsRandomKey) {
  AG_REQUIRE_IFMA();
  const EcCurve curve = EcCurve::kP256;
  const auto& keys = ec_keys_of(curve);
  EcKey one;
  ASSERT_EQ(prepare_ec_key(curve, Bytes{1}, &one), EcKeyStatus::kOk);
  const Bytes& peer = keys[4]->point;
  Bytes out[8];
  EcdhLane lanes[8];
  uint8_t pick[8];
  for (int l = 0; l < 8; ++l) {
    out[l].assign(32, 0);
    lanes[l] = {&one, peer.data() + 1, peer.data() + 33, out[l].data()};
  }
  const double t = measure(
      "ECDH P-256 key (fixed: d = 1)",
      [&](int cls) {
        RAND_bytes(pick, sizeof(pick));
        for (int l = 0; l < 8; ++l) lanes[l].key = cls == 0 ? &one : &keys[pick[l] % 4]->key;
      },
      [&] { EXPECT_EQ(ecdh_batch(Backend::kIfma, curve, lanes).ok, 0xFF); });
  EXPECT_LT(std::fabs(t), kMaxAbsT);
}

}  // namespace
}  // namespace accelgate::crypto::mb

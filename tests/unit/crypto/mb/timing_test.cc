// The statistical second line of the constant-time check (issue 5, item 2; DESIGN.md): a
// dudect-style test (Reparaz, Balasch & Verbauwhede, "Dude, is my code constant time?", DATE
// 2017) over the IFMA back end, which valgrind cannot run. Batches with a fixed secret and
// with random secrets are timed in random interleaving; after cropping the slowest 10 % (a
// shared machine preempts us), Welch's t of the two classes must stay below 10 in magnitude,
// dudect's threshold for "definitely not constant time" being 10 as well with far more
// samples. The sample count is bounded by time so the test takes a few seconds.

#include <gtest/gtest.h>
#include <openssl/rand.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "accelgate/crypto/mb/cpu.h"
#include "accelgate/crypto/mb/rsa_batch.h"
#include "test_support.h"

namespace accelgate::crypto::mb {
namespace {

using testing::keys_of;
using testing::random_input;
using testing::TestKey;

constexpr double kMaxAbsT = 10.0;
constexpr auto kBudget = std::chrono::milliseconds(2500);
constexpr int kMaxSamples = 4000;

// welch_t over the samples below the 90th percentile of all samples.
double welch_t(const std::vector<double>& a, const std::vector<double>& b) {
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

// measure times batches of class 0 (fixed) and class 1 (random), chosen at random per sample;
// |prepare| fills the lanes of a class before the timer starts, and an untimed batch on the same
// lanes runs before the timed one, so that what preparing a class leaves in the caches (random
// inputs for one class only) is not timed (ec_timing_test.cc measured that effect).
template <class Prepare>
double measure(const char* what, Prepare prepare) {
  std::vector<double> fixed, random;
  const auto start = std::chrono::steady_clock::now();
  int samples = 0;
  uint8_t coins[64];
  while (samples < kMaxSamples && std::chrono::steady_clock::now() - start < kBudget) {
    RAND_bytes(coins, sizeof(coins));
    for (int c = 0; c < 64 && std::chrono::steady_clock::now() - start < kBudget; ++c) {
      const uint8_t coin = coins[c];
      const int cls = coin & 1;
      std::vector<RsaLane> lanes = prepare(cls);
      rsa_private_batch(Backend::kIfma, lanes);
      const auto t0 = std::chrono::steady_clock::now();
      const BatchOutcome outcome = rsa_private_batch(Backend::kIfma, lanes);
      const auto t1 = std::chrono::steady_clock::now();
      EXPECT_EQ(outcome.verified, 0xFF);
      if (samples++ < 20) continue;  // warm-up
      (cls == 0 ? fixed : random)
          .push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
  }
  const double t = welch_t(fixed, random);
  std::printf("dudect %s: %zu fixed, %zu random samples, t = %.2f (limit %.0f)\n", what,
              fixed.size(), random.size(), t, kMaxAbsT);
  return t;
}

TEST(MbTiming, IfmaFixedVsRandomMessage) {
  if (!detect_ifma().usable) GTEST_SKIP() << "IFMA back end unavailable: " << detect_ifma().reason;
  if (testing::kSanitized) GTEST_SKIP() << "timing under ASan/UBSan instrumentation says nothing";
  const TestKey& k = *keys_of(2048)[0];
  std::vector<uint8_t> in(8 * 256), out(8 * 256);
  const double t = measure("RSA-2048 message (fixed: all zero)", [&](int cls) {
    std::vector<RsaLane> lanes(8);
    for (int l = 0; l < 8; ++l) {
      if (cls == 0) {
        std::fill(&in[l * 256], &in[(l + 1) * 256], 0);
      } else {
        random_input(k, &in[l * 256]);
      }
      lanes[l] = {&k.key, &in[l * 256], &out[l * 256]};
    }
    return lanes;
  });
  EXPECT_LT(std::fabs(t), kMaxAbsT);
}

TEST(MbTiming, IfmaFixedVsRandomKey) {
  if (!detect_ifma().usable) GTEST_SKIP() << "IFMA back end unavailable: " << detect_ifma().reason;
  if (testing::kSanitized) GTEST_SKIP() << "timing under ASan/UBSan instrumentation says nothing";
  const auto& keys = keys_of(2048);
  std::vector<uint8_t> in(8 * 256), out(8 * 256);
  uint8_t pick[8];
  const double t = measure("RSA-2048 key (fixed: key 0 in every lane)", [&](int cls) {
    std::vector<RsaLane> lanes(8);
    RAND_bytes(pick, sizeof(pick));
    for (int l = 0; l < 8; ++l) {
      const TestKey& k = *keys[cls == 0 ? 0 : pick[l] % keys.size()];
      in[l * 256] = 0;
      in[l * 256 + 1] = 0x5A;  // below every key's n
      lanes[l] = {&k.key, &in[l * 256], &out[l * 256]};
    }
    return lanes;
  });
  EXPECT_LT(std::fabs(t), kMaxAbsT);
}

}  // namespace
}  // namespace accelgate::crypto::mb

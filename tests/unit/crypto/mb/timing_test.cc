// The dudect-style timing test of the IFMA RSA kernels (issue 5, item 2): a fixed message and
// a fixed key against random ones, RSA-2048. The method and its rules are in dudect.h.

#include <gtest/gtest.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "accelgate/crypto/mb/cpu.h"
#include "accelgate/crypto/mb/rsa_batch.h"
#include "dudect.h"
#include "test_support.h"

namespace accelgate::crypto::mb {
namespace {

using testing::keys_of;
using testing::kMaxAbsT;
using testing::random_input;
using testing::replicated_t;
using testing::TestKey;

constexpr int kMaxSamples = 4000;

// run_batch is the timed operation: one batch of |lanes|, every lane verified.
void run_batch(const std::vector<RsaLane>& lanes) {
  EXPECT_EQ(rsa_private_batch(Backend::kIfma, lanes).verified, 0xFF);
}

TEST(MbTiming, IfmaFixedVsRandomMessage) {
  if (!detect_ifma().usable) GTEST_SKIP() << "IFMA back end unavailable: " << detect_ifma().reason;
  if (testing::kSanitized) GTEST_SKIP() << "timing under ASan/UBSan instrumentation says nothing";
  const TestKey& k = *keys_of(2048)[0];
  std::vector<uint8_t> in(8 * 256), out(8 * 256);
  std::vector<RsaLane> lanes(8);
  const double t = replicated_t(
      "RSA-2048 message (fixed: all zero)", kMaxSamples,
      [&](int cls) {
        for (int l = 0; l < 8; ++l) {
          uint8_t drawn[256];
          random_input(k, drawn);
          if (cls == 0) std::fill(drawn, drawn + sizeof(drawn), 0);
          std::copy(drawn, drawn + sizeof(drawn), &in[l * 256]);
          lanes[l] = {&k.key, &in[l * 256], &out[l * 256]};
        }
      },
      [&] { run_batch(lanes); });
  EXPECT_LT(std::fabs(t), kMaxAbsT);
}

TEST(MbTiming, IfmaFixedVsRandomKey) {
  if (!detect_ifma().usable) GTEST_SKIP() << "IFMA back end unavailable: " << detect_ifma().reason;
  if (testing::kSanitized) GTEST_SKIP() << "timing under ASan/UBSan instrumentation says nothing";
  const auto& keys = keys_of(2048);
  std::vector<uint8_t> in(8 * 256), out(8 * 256);
  uint8_t pick[8];
  std::vector<RsaLane> lanes(8);
  const double t = replicated_t(
      "RSA-2048 key (fixed: key 0 in every lane)", kMaxSamples,
      [&](int cls) {
        RAND_bytes(pick, sizeof(pick));
        for (int l = 0; l < 8; ++l) {
          const TestKey& k = *keys[cls == 0 ? 0 : pick[l] % keys.size()];
          in[l * 256] = 0;
          in[l * 256 + 1] = 0x5A;  // below every key's n
          lanes[l] = {&k.key, &in[l * 256], &out[l * 256]};
        }
      },
      [&] { run_batch(lanes); });
  EXPECT_LT(std::fabs(t), kMaxAbsT);
}

}  // namespace
}  // namespace accelgate::crypto::mb

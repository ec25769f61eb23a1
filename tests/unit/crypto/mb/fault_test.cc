// Fault safety (issue 5, item 3): a lane whose result is wrong (here: a bit flipped in its CRT
// half mod p, as a glitch would) is caught by the re-encryption check, never returned, and the
// checked API recomputes it in software and counts it.

#include <gtest/gtest.h>

#include <cstring>

#include "accelgate/crypto/mb/cpu.h"
#include "accelgate/crypto/mb/rsa_batch.h"
#include "test_support.h"

namespace accelgate::crypto::mb {
namespace {

using testing::keys_of;
using testing::private_op;
using testing::random_input;
using testing::TestKey;

std::vector<Backend> backends() {
  std::vector<Backend> v{Backend::kPortable};
  if (detect_ifma().usable) v.push_back(Backend::kIfma);
  return v;
}

// The kernel flags the faulty lane and zeroes its output; the other lanes are intact.
TEST(MbRsaFault, KernelFlagsAndZeroesTheFaultyLane) {
  const auto& keys = keys_of(2048);
  for (Backend b : backends()) {
    SCOPED_TRACE(backend_name(b));
    std::vector<uint8_t> in(8 * 256), out(8 * 256);
    RsaLane lanes[8];
    for (int l = 0; l < 8; ++l) {
      random_input(*keys[l % 4], &in[l * 256]);
      lanes[l] = {&keys[l % 4]->key, &in[l * 256], &out[l * 256]};
    }
    const FaultInjection fault{5, 7, 33};
    const BatchOutcome outcome = rsa_private_batch(b, lanes, &fault);
    EXPECT_EQ(outcome.in_range, 0xFF);
    EXPECT_EQ(outcome.verified, 0xFF & ~(1 << 5));
    EXPECT_EQ(std::vector<uint8_t>(&out[5 * 256], &out[6 * 256]), std::vector<uint8_t>(256, 0));
    for (int l = 0; l < 8; ++l) {
      if (l == 5) continue;
      EXPECT_EQ(private_op(keys[l % 4]->pkey, &in[l * 256]),
                std::vector<uint8_t>(&out[l * 256], &out[(l + 1) * 256]));
    }
  }
}

// The checked API recomputes the faulty lane with OpenSSL: every output is right, the lane is
// reported as recomputed and the process-wide counter moves by one, for every size.
TEST(MbRsaFault, CheckedBatchRecomputesAndCountsTheFaultyLane) {
  for (int bits : {2048, 3072, 4096}) {
    const auto& keys = keys_of(bits);
    const int bytes = keys[0]->bytes;
    for (int lane : {0, 3, 7}) {
      SCOPED_TRACE("RSA-" + std::to_string(bits) + " lane " + std::to_string(lane));
      std::vector<uint8_t> in(8 * static_cast<size_t>(bytes)), out(in.size());
      CheckedLane lanes[8];
      for (int l = 0; l < 8; ++l) {
        const TestKey& k = *keys[l % 4];
        random_input(k, &in[l * bytes]);
        lanes[l] = {&k.key, k.pkey, &in[l * bytes], &out[l * bytes]};
      }
      const uint64_t before = software_recompute_count();
      const FaultInjection fault{lane, lane == 7 ? 0 : 11, lane == 7 ? 0 : 51};
      const CheckedOutcome outcome = rsa_private_checked(best_backend(), lanes, &fault);
      EXPECT_EQ(outcome.recomputed, 1 << lane);
      EXPECT_EQ(outcome.ok, 0xFF & ~(1 << lane));
      EXPECT_EQ(outcome.failed, 0);
      EXPECT_EQ(software_recompute_count(), before + 1);
      for (int l = 0; l < 8; ++l) {
        EXPECT_EQ(private_op(keys[l % 4]->pkey, &in[l * bytes]),
                  std::vector<uint8_t>(&out[l * bytes], &out[(l + 1) * bytes]))
            << "lane " << l;
      }
    }
  }
}

// Without a fault nothing is recomputed.
TEST(MbRsaFault, CleanBatchRecomputesNothing) {
  const auto& keys = keys_of(3072);
  const int bytes = keys[0]->bytes;
  std::vector<uint8_t> in(8 * static_cast<size_t>(bytes)), out(in.size());
  CheckedLane lanes[8];
  for (int l = 0; l < 8; ++l) {
    random_input(*keys[l % 4], &in[l * bytes]);
    lanes[l] = {&keys[l % 4]->key, keys[l % 4]->pkey, &in[l * bytes], &out[l * bytes]};
  }
  const uint64_t before = software_recompute_count();
  const CheckedOutcome outcome = rsa_private_checked(best_backend(), lanes);
  EXPECT_EQ(outcome.ok, 0xFF);
  EXPECT_EQ(outcome.recomputed, 0);
  EXPECT_EQ(software_recompute_count(), before);
}

}  // namespace
}  // namespace accelgate::crypto::mb

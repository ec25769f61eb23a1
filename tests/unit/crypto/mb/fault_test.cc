// Fault safety (issue 5, item 3): a lane whose result is wrong (a bit flipped in its CRT half
// mod p or mod q, as a glitch would, or Garner's h left unreduced) is caught by the check
// (s^e = c mod p and mod q, s < n), never returned, and the checked API recomputes it in
// software and counts it.

#include <gtest/gtest.h>

#include <algorithm>
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

// The kernel flags the faulty lane and zeroes its output; the other lanes are intact. Each site
// is caught, with random inputs and with inputs below q (there the check's recombination leans
// on the arithmetic mod p alone: x = (s^e mod q) + h q equals c only if h is 0):
// - a fault in either half's result (s mod p does not depend on the half mod q, Garner's s
//   being m2 + h q, so both residues of s^e count);
// - an unreduced h, which gives the right residues, by the range check;
// - a broken stored constant of p (k0 zeroed, a bit of R^3 or R^2 flipped), which the signing
//   and the check both compute with, because the recombined s^e is compared with the input
//   itself (compared with c mod p computed with the same zeroed k0, both sides would collapse
//   towards 0 and agree);
// - qInv zeroed, which makes Garner's h vanish in the signing and in the check alike (for c < q
//   the check would pass an s that is right mod q only), and a bit of p flipped, both by the
//   check q qInv = 1 mod p.
// The portable back end runs RSA-2048 only (its RSA-4096 batch takes about a second).
TEST(MbRsaFault, EverySiteIsCaught) {
  const RsaFaultSite sites[] = {RsaFaultSite::kHalfP,      RsaFaultSite::kHalfQ,
                                RsaFaultSite::kUnreducedH, RsaFaultSite::kZeroK0OfP,
                                RsaFaultSite::kR3OfP,      RsaFaultSite::kR2OfP,
                                RsaFaultSite::kModulusP,   RsaFaultSite::kZeroQinv};
  for (Backend b : backends()) {
    for (int bits : {2048, 3072, 4096}) {
      if (b == Backend::kPortable && bits != 2048) continue;
      const auto& keys = keys_of(bits);
      const auto bytes = static_cast<size_t>(keys[0]->bytes);
      for (bool small : {false, true}) {
        for (RsaFaultSite site : sites) {
          SCOPED_TRACE(std::string(backend_name(b)) + " RSA-" + std::to_string(bits) + " site " +
                       std::to_string(static_cast<int>(site)) + (small ? " c < q" : " c random"));
          std::vector<uint8_t> in(8 * bytes), out(8 * bytes);
          RsaLane lanes[8];
          for (size_t l = 0; l < 8; ++l) {
            random_input(*keys[l % 4], &in[l * bytes]);
            // Below q: the top three quarters of the bytes zeroed (q has half of n's bits).
            if (small) std::fill_n(&in[l * bytes], 3 * bytes / 4, 0);
            lanes[l] = {&keys[l % 4]->key, &in[l * bytes], &out[l * bytes]};
          }
          const FaultInjection fault{2, 13, 40, site};
          const BatchOutcome outcome = rsa_private_batch(b, lanes, &fault);
          EXPECT_EQ(outcome.in_range, 0xFF);
          EXPECT_EQ(outcome.verified, 0xFF & ~(1 << 2));
          EXPECT_EQ(std::vector<uint8_t>(&out[2 * bytes], &out[3 * bytes]),
                    std::vector<uint8_t>(bytes, 0));
          for (size_t l = 0; l < 8; ++l) {
            if (l == 2) continue;
            EXPECT_EQ(private_op(keys[l % 4]->pkey, &in[l * bytes]),
                      std::vector<uint8_t>(&out[l * bytes], &out[(l + 1) * bytes]));
          }
        }
      }
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

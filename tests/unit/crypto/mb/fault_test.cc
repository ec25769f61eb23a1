// Fault safety (issue 5, item 3): a lane whose result is wrong (a bit flipped in its CRT half
// mod p or mod q, as a glitch would, Garner's h left unreduced, a broken stored constant) is
// caught by the check (s^e = c by the CRT, s < n, q qInv = 1 mod p, both k0), never returned,
// and the checked API recomputes it in software and counts it.

#include <gtest/gtest.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "accelgate/crypto/mb/cpu.h"
#include "accelgate/crypto/mb/rsa_batch.h"
#include "test_support.h"

namespace accelgate::crypto::mb {
namespace {

using testing::keys_of;
using testing::private_op;
using testing::random_input;
using testing::TestKey;

// expect_only_faulty_lane_flagged runs one batch with |fault| in lane kFaultLane and checks that
// the kernel flags that lane and zeroes its output, and that every other lane is right (OpenSSL's
// private operation with the lane's key, pkeys[l]).
constexpr size_t kFaultLane = 2;

void expect_only_faulty_lane_flagged(Backend b, const RsaLane (&lanes)[8],
                                     EVP_PKEY* const (&pkeys)[8], size_t bytes, RsaFaultSite site,
                                     int limb, int bit) {
  const FaultInjection fault{static_cast<int>(kFaultLane), limb, bit, site};
  const BatchOutcome outcome = rsa_private_batch(b, lanes, &fault);
  EXPECT_EQ(outcome.in_range, 0xFF);
  EXPECT_EQ(outcome.verified, 0xFF & ~(1 << kFaultLane));
  EXPECT_EQ(std::vector<uint8_t>(lanes[kFaultLane].out, lanes[kFaultLane].out + bytes),
            std::vector<uint8_t>(bytes, 0));
  for (size_t l = 0; l < 8; ++l) {
    if (l == kFaultLane) continue;
    EXPECT_EQ(private_op(pkeys[l], lanes[l].in),
              std::vector<uint8_t>(lanes[l].out, lanes[l].out + bytes))
        << "lane " << l;
  }
}

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
          EVP_PKEY* pkeys[8];
          for (size_t l = 0; l < 8; ++l) {
            random_input(*keys[l % 4], &in[l * bytes]);
            // Below q: the top three quarters of the bytes zeroed (q has half of n's bits).
            if (small) std::fill_n(&in[l * bytes], 3 * bytes / 4, 0);
            lanes[l] = {&keys[l % 4]->key, &in[l * bytes], &out[l * bytes]};
            pkeys[l] = keys[l % 4]->pkey;
          }
          expect_only_faulty_lane_flagged(b, lanes, pkeys, bytes, site, 13, 40);
        }
      }
    }
  }
}

// A flip in a limb's spare top bits (52-63) of a half's result or of a stored constant of p.
// The multiply-adds read only an operand's low 52 bits, so some such flips change nothing (R^3
// and R^2 reach the arithmetic only as multiply-add operands) and others change the result (p
// and the halves' results also enter additions and comparisons); either way no wrong result may
// pass: the faulty lane is verified with the right output, or flagged with a zeroed one. The
// test also requires that both kinds occur, so that it cannot pass by never injecting anything.
TEST(MbRsaFault, SpareTopBitFlipsNeverPassAWrongResult) {
  const RsaFaultSite sites[] = {RsaFaultSite::kHalfP, RsaFaultSite::kHalfQ, RsaFaultSite::kR3OfP,
                                RsaFaultSite::kR2OfP, RsaFaultSite::kModulusP};
  int caught = 0;
  int harmless = 0;
  for (Backend b : backends()) {
    for (int bits : {2048, 3072, 4096}) {
      if (b == Backend::kPortable && bits != 2048) continue;
      const auto& keys = keys_of(bits);
      const auto bytes = static_cast<size_t>(keys[0]->bytes);
      const int top_limb = half_limbs(keys[0]->key.size()) - 1;
      for (RsaFaultSite site : sites) {
        for (int limb : {0, top_limb}) {
          for (int bit : {52, 63}) {
            SCOPED_TRACE(std::string(backend_name(b)) + " RSA-" + std::to_string(bits) + " site " +
                         std::to_string(static_cast<int>(site)) + " limb " + std::to_string(limb) +
                         " bit " + std::to_string(bit));
            std::vector<uint8_t> in(8 * bytes), out(8 * bytes);
            RsaLane lanes[8];
            for (size_t l = 0; l < 8; ++l) {
              random_input(*keys[l % 4], &in[l * bytes]);
              lanes[l] = {&keys[l % 4]->key, &in[l * bytes], &out[l * bytes]};
            }
            const FaultInjection fault{static_cast<int>(kFaultLane), limb, bit, site};
            const BatchOutcome outcome = rsa_private_batch(b, lanes, &fault);
            EXPECT_EQ(outcome.in_range, 0xFF);
            EXPECT_EQ(outcome.verified | (1 << kFaultLane), 0xFF);
            for (size_t l = 0; l < 8; ++l) {
              const std::vector<uint8_t> got(&out[l * bytes], &out[(l + 1) * bytes]);
              const std::vector<uint8_t> want = private_op(keys[l % 4]->pkey, &in[l * bytes]);
              if (l == kFaultLane && (outcome.verified & (1 << kFaultLane)) == 0) {
                EXPECT_EQ(got, std::vector<uint8_t>(bytes, 0)) << "flagged lane not zeroed";
                ++caught;
              } else {
                EXPECT_EQ(got, want) << "lane " << l;
                if (l == kFaultLane) ++harmless;
              }
            }
          }
        }
      }
    }
  }
  std::printf("spare-bit flips: %d caught, %d without effect\n", caught, harmless);
  EXPECT_GT(caught, 0);
  EXPECT_GT(harmless, 0);
}

// unbalanced_key builds an RSA key in the 2048 class whose p (the prime qInv is taken modulo)
// has p_bits and q 1024 bits, as an EVP_PKEY and, through prepare_rsa_key, as |key|.
// prepare_rsa_key checks only upper lengths and accepts it; import_rsa_key would refuse it (it
// writes each factor in half of n's bytes).
EVP_PKEY* unbalanced_key(int p_bits, RsaKey* key) {
  BN_CTX* bn = BN_CTX_new();
  BIGNUM *p = BN_new(), *q = BN_new(), *n = BN_new(), *e = BN_new(), *d = BN_new();
  BIGNUM *p1 = BN_new(), *q1 = BN_new(), *phi = BN_new(), *dp = BN_new(), *dq = BN_new();
  BIGNUM* qinv = BN_new();
  BN_set_word(e, 65537);
  EVP_PKEY* pkey = nullptr;
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  if (BN_generate_prime_ex(p, p_bits, 0, nullptr, nullptr, nullptr) == 1 &&
      BN_generate_prime_ex(q, 1024, 0, nullptr, nullptr, nullptr) == 1 &&
      BN_mul(n, p, q, bn) == 1 && BN_sub(p1, p, BN_value_one()) == 1 &&
      BN_sub(q1, q, BN_value_one()) == 1 && BN_mul(phi, p1, q1, bn) == 1 &&
      BN_mod_inverse(d, e, phi, bn) != nullptr && BN_mod(dp, d, p1, bn) == 1 &&
      BN_mod(dq, d, q1, bn) == 1 && BN_mod_inverse(qinv, q, p, bn) != nullptr &&
      OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n) == 1 &&
      OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e) == 1 &&
      OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_D, d) == 1 &&
      OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_FACTOR1, p) == 1 &&
      OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_FACTOR2, q) == 1 &&
      OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_EXPONENT1, dp) == 1 &&
      OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_EXPONENT2, dq) == 1 &&
      OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_COEFFICIENT1, qinv) == 1) {
    auto bytes = [](const BIGNUM* x) {
      std::vector<uint8_t> v(static_cast<size_t>(BN_num_bytes(x)));
      BN_bn2bin(x, v.data());
      return v;
    };
    const std::vector<uint8_t> nb = bytes(n), eb = bytes(e), pb = bytes(p), qb = bytes(q),
                               dpb = bytes(dp), dqb = bytes(dq), qinvb = bytes(qinv);
    OSSL_PARAM* params = OSSL_PARAM_BLD_to_param(bld);
    EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_name(nullptr, "RSA", nullptr);
    if (prepare_rsa_key({nb, eb, pb, qb, dpb, dqb, qinvb}, key) == KeyStatus::kOk &&
        params != nullptr && ctx != nullptr && EVP_PKEY_fromdata_init(ctx) == 1) {
      EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_KEYPAIR, params);
    }
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
  }
  OSSL_PARAM_BLD_free(bld);
  for (BIGNUM* x : {p, q, n, e, d, p1, q1, phi, dp, dq, qinv}) BN_clear_free(x);
  BN_CTX_free(bn);
  return pkey;
}

// With p of at most 26 * 20 = 520 bits, p^2 <= R = 2^1040. A zeroed k0 of p makes amm return
// ceil(a b / R): every product mod p collapses to a constant, q qInv mod p included (it comes
// out as 1), and the check's recombination becomes (c mod q) + h' q with h' 1 or 2, the same h as
// the signing's, so for c in [q, 2q) a wrong s (right mod q only) passed until k0_holds (found
// by review, reproduced in an exact-integer model). The inputs, 2^1024 and 3 * 2^1023, lie in
// [q, 2q) (2^1024 always, q having 1024 bits). Such a key reaches the kernels only through
// prepare_rsa_key, not through import_rsa_key.
TEST(MbRsaFault, ZeroK0OfASmallPIsCaught) {
  RsaKey key;
  EVP_PKEY* pkey = unbalanced_key(515, &key);
  ASSERT_NE(pkey, nullptr);
  const auto bytes = static_cast<size_t>(key.modulus_bytes());
  for (Backend b : backends()) {
    for (bool three_halves : {false, true}) {
      SCOPED_TRACE(std::string(backend_name(b)) +
                   (three_halves ? " c = 3 * 2^1023" : " c = 2^1024"));
      std::vector<uint8_t> in(8 * bytes), out(8 * bytes);
      RsaLane lanes[8];
      EVP_PKEY* pkeys[8];
      for (size_t l = 0; l < 8; ++l) {
        // Byte bytes - 1 - k holds bits 8k..8k+7: bit 1024 is in byte bytes - 129.
        in[l * bytes + bytes - 129] = 1;
        if (three_halves) in[l * bytes + bytes - 128] = 0x80;
        lanes[l] = {&key, &in[l * bytes], &out[l * bytes]};
        pkeys[l] = pkey;
      }
      expect_only_faulty_lane_flagged(b, lanes, pkeys, bytes, RsaFaultSite::kZeroK0OfP, 0, 0);
    }
  }
  EVP_PKEY_free(pkey);
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

// A key whose stored size or length no longer fits (its KeyMaterial corrupted in memory) is
// refused before any buffer is touched: the kernel batch runs nothing and writes nothing, and the
// checked API fails that lane, leaves its buffers alone and recomputes the others in software.
// The checked API also compares the length with the EVP_PKEY's, which catches a corrupted
// length that still fits the class (200 for a 256-byte key, or 300 with the size changed to
// RSA-3072); the kernel batch, which has no EVP_PKEY, cannot tell that one, and is not asked to
// here. Without the check the input copies and bytes_to_limbs read and wrote that many bytes (ASan
// stops at length -1, with negative-size-param). RsaKey is standard-layout with the
// material as its only member, which is how the test reaches it.
TEST(MbRsaFault, KeyWithACorruptedLengthOrSizeIsRefused) {
  static_assert(std::is_standard_layout_v<RsaKey>);
  const auto& keys = keys_of(2048);
  const int bytes = keys[0]->bytes;
  struct Corruption {
    size_t lane;
    int modulus_bytes;
    int size;
    bool fits = false;  // the corruption still fits a class: only the checked API sees it
  };
  const int good_size = static_cast<int>(keys[0]->key.size());
  for (const Corruption& c :
       {Corruption{3, 0, good_size}, Corruption{3, -1, good_size}, Corruption{3, 192, good_size},
        Corruption{3, 257, good_size}, Corruption{3, 100000, good_size}, Corruption{0, bytes, 7},
        Corruption{0, 100000, 2}, Corruption{3, 200, good_size, true},
        Corruption{3, 300, static_cast<int>(KeySize::kRsa3072), true}}) {
    SCOPED_TRACE("lane " + std::to_string(c.lane) + " modulus_bytes " +
                 std::to_string(c.modulus_bytes) + " size " + std::to_string(c.size));
    RsaKey corrupt = keys[c.lane % 4]->key;
    auto* material = reinterpret_cast<detail::KeyMaterial*>(&corrupt);
    material->modulus_bytes = c.modulus_bytes;
    material->size = static_cast<KeySize>(c.size);
    std::vector<uint8_t> in(8 * static_cast<size_t>(bytes)), out(in.size(), 0xA5);
    RsaLane raw[8];
    CheckedLane checked[8];
    for (size_t l = 0; l < 8; ++l) {
      const TestKey& k = *keys[l % 4];
      random_input(k, &in[l * bytes]);
      const RsaKey* key = l == c.lane ? &corrupt : &k.key;
      raw[l] = {key, &in[l * bytes], &out[l * bytes]};
      checked[l] = {key, k.pkey, &in[l * bytes], &out[l * bytes]};
    }
    for (Backend b : backends()) {
      if (c.fits) break;
      const BatchOutcome outcome = rsa_private_batch(b, raw);
      EXPECT_EQ(outcome.in_range, 0);
      EXPECT_EQ(outcome.verified, 0);
      EXPECT_EQ(out, std::vector<uint8_t>(out.size(), 0xA5));
    }
    const uint64_t before = software_recompute_count();
    const CheckedOutcome outcome = rsa_private_checked(best_backend(), checked);
    const auto bad = static_cast<uint8_t>(1u << c.lane);
    EXPECT_EQ(outcome.failed, bad);
    EXPECT_EQ(outcome.ok, 0);
    EXPECT_EQ(outcome.recomputed, 0xFF & ~bad);
    EXPECT_EQ(software_recompute_count(), before);
    for (size_t l = 0; l < 8; ++l) {
      const std::vector<uint8_t> got(&out[l * bytes], &out[(l + 1) * bytes]);
      if (l == c.lane) {
        EXPECT_EQ(got, std::vector<uint8_t>(bytes, 0xA5)) << "the corrupted lane's output";
      } else {
        EXPECT_EQ(private_op(keys[l % 4]->pkey, &in[l * bytes]), got) << "lane " << l;
      }
    }
  }
}

// modulus_bytes_fit: the lengths each class holds, nothing else.
TEST(MbRsaKey, ModulusBytesFitTheirClassOnly) {
  const struct {
    KeySize size;
    int lo, hi;
  } classes[] = {
      {KeySize::kRsa2048, 193, 256}, {KeySize::kRsa3072, 257, 384}, {KeySize::kRsa4096, 385, 512}};
  for (const auto& c : classes) {
    EXPECT_FALSE(modulus_bytes_fit(c.size, c.lo - 1));
    EXPECT_TRUE(modulus_bytes_fit(c.size, c.lo));
    EXPECT_TRUE(modulus_bytes_fit(c.size, c.hi));
    EXPECT_FALSE(modulus_bytes_fit(c.size, c.hi + 1));
  }
  EXPECT_FALSE(modulus_bytes_fit(static_cast<KeySize>(7), 256));
}

}  // namespace
}  // namespace accelgate::crypto::mb

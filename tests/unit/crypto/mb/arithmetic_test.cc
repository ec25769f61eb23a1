// The arithmetic under the RSA kernels: CPU detection, almost Montgomery multiplication and
// squaring against OpenSSL's BIGNUM, and the IFMA back end bit for bit against the portable one.

#include <gtest/gtest.h>
#include <openssl/bn.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "accelgate/crypto/mb/cpu.h"
#include "accelgate/crypto/mb/rsa_batch.h"
#include "test_support.h"

namespace accelgate::crypto::mb {
namespace {

using testing::keys_of;
using testing::random_input;

// cpuinfo_has reports whether /proc/cpuinfo lists |flag|.
bool cpuinfo_has(const std::string& flag) {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line);
    std::string w;
    while (words >> w) {
      if (w == flag) return true;
    }
    return false;
  }
  return false;
}

TEST(MbCpu, DetectionAgreesWithProcCpuinfo) {
  const bool listed = cpuinfo_has("avx512f") && cpuinfo_has("avx512vl") &&
                      cpuinfo_has("avx512bw") && cpuinfo_has("avx512ifma");
  const IfmaSupport s = detect_ifma();
  EXPECT_EQ(s.usable, listed) << s.reason;
  EXPECT_EQ(std::string(s.reason).empty(), s.usable);
  EXPECT_EQ(best_backend(), s.usable ? Backend::kIfma : Backend::kPortable);
  EXPECT_STREQ(backend_name(Backend::kIfma), "ifma");
  EXPECT_STREQ(backend_name(Backend::kPortable), "portable");
}

// Operands is a set of eight-lane operands of |limbs| 52-bit limbs, transposed.
struct Operands {
  explicit Operands(int limbs) : limbs(limbs), a(8 * limbs), b(8 * limbs), m(8 * limbs), k0(8) {}
  int limbs;
  std::vector<uint64_t> a, b, m, k0;
};

void put(std::vector<uint64_t>& v, int limbs, int lane, const BIGNUM* x) {
  std::vector<uint8_t> le(static_cast<size_t>(limbs) * 7 + 8, 0);
  BN_bn2lebinpad(x, le.data(), static_cast<int>(le.size()));
  for (int j = 0; j < limbs; ++j) {
    uint64_t w = 0;
    const int bit = 52 * j;
    for (int i = 0; i < 8; ++i) w |= uint64_t{le[bit / 8 + i]} << (8 * i);
    v[j * 8 + lane] = (w >> (bit % 8)) & ((uint64_t{1} << 52) - 1);
  }
}

BIGNUM* get(const std::vector<uint64_t>& v, int limbs, int lane) {
  BIGNUM* x = BN_new();
  BIGNUM* t = BN_new();
  BN_zero(x);
  for (int j = limbs - 1; j >= 0; --j) {
    BN_lshift(x, x, 52);
    BN_set_word(t, v[j * 8 + lane]);
    BN_add(x, x, t);
  }
  BN_free(t);
  return x;
}

// random_operands: odd m of 52 * limbs - 2 bits (the largest the almost reduction allows),
// a, b < 2m, per lane; k0 = -m^-1 mod 2^52. |extreme|: the largest operands instead, m =
// 2^(52 limbs - 2) - 1 and a = b = 2m - 1 (every limb of m all ones: the most terms near 2^52
// in every accumulator).
Operands random_operands(int limbs, BN_CTX* ctx, bool extreme = false) {
  Operands o(limbs);
  BIGNUM* m = BN_new();
  BIGNUM* x = BN_new();
  BIGNUM* two_m = BN_new();
  BIGNUM* base = BN_new();
  BN_set_word(base, 1);
  BN_lshift(base, base, 52);
  for (int l = 0; l < 8; ++l) {
    if (extreme) {
      BN_set_word(m, 1);
      BN_lshift(m, m, 52 * limbs - 2);
      BN_sub_word(m, 1);
    } else {
      BN_rand(m, 52 * limbs - 2, BN_RAND_TOP_ONE, BN_RAND_BOTTOM_ODD);
    }
    put(o.m, limbs, l, m);
    BN_lshift1(two_m, m);
    if (extreme) {
      BN_sub(x, two_m, BN_value_one());
    } else {
      BN_rand_range(x, two_m);
    }
    put(o.a, limbs, l, x);
    if (!extreme) BN_rand_range(x, two_m);
    put(o.b, limbs, l, x);
    BIGNUM* inv = BN_mod_inverse(nullptr, m, base, ctx);
    BN_sub(inv, base, inv);
    o.k0[l] = BN_get_word(inv);
    BN_free(inv);
  }
  BN_free(m);
  BN_free(x);
  BN_free(two_m);
  BN_free(base);
  return o;
}

// check_amm expects r * 2^(52 limbs) == a * b mod m and r < 2m in every lane.
void check_amm(const Operands& o, const std::vector<uint64_t>& r, bool square, BN_CTX* ctx) {
  for (int l = 0; l < 8; ++l) {
    BIGNUM* a = get(o.a, o.limbs, l);
    BIGNUM* b = square ? BN_dup(a) : get(o.b, o.limbs, l);
    BIGNUM* m = get(o.m, o.limbs, l);
    BIGNUM* rr = get(r, o.limbs, l);
    BIGNUM* lhs = BN_new();
    BIGNUM* rhs = BN_new();
    BN_lshift(lhs, rr, 52 * o.limbs);
    BN_mod(lhs, lhs, m, ctx);
    BN_mod_mul(rhs, a, b, m, ctx);
    EXPECT_EQ(BN_cmp(lhs, rhs), 0) << "lane " << l;
    BN_lshift1(m, m);
    EXPECT_LT(BN_cmp(rr, m), 0) << "lane " << l << ": not almost reduced";
    for (BIGNUM* x : {a, b, m, rr, lhs, rhs}) BN_free(x);
  }
}

class Amm : public ::testing::TestWithParam<int> {};

// Amm.MatchesBignumOnEveryBackend: 20 random operand sets per size and the largest operands;
// every back end agrees bit for bit (including the almost-reduced representation) and matches
// BIGNUM. The IFMA back end only where the CPU has it (the test says so once per size).
TEST_P(Amm, MatchesBignumOnEveryBackend) {
  BN_CTX* ctx = BN_CTX_new();
  const int limbs = GetParam();
  std::vector<Backend> others{Backend::kPortableIfmaShapes};
  if (detect_ifma().usable) {
    others.push_back(Backend::kIfma);
  } else {
    std::printf("IFMA back end not compared for %d limbs: %s\n", limbs, detect_ifma().reason);
  }
  for (int round = 0; round <= 20; ++round) {
    const Operands o = random_operands(limbs, ctx, round == 20);
    for (bool square : {false, true}) {
      std::vector<uint64_t> portable(8 * limbs);
      auto run = [&](Backend backend, std::vector<uint64_t>* r) {
        if (square) {
          ams_for_test(backend, limbs, r->data(), o.a.data(), o.m.data(), o.k0.data());
        } else {
          amm_for_test(backend, limbs, r->data(), o.a.data(), o.b.data(), o.m.data(), o.k0.data());
        }
      };
      run(Backend::kPortable, &portable);
      check_amm(o, portable, square, ctx);
      for (Backend backend : others) {
        std::vector<uint64_t> r(8 * limbs);
        run(backend, &r);
        ASSERT_EQ(portable, r) << backend_name(backend) << ", limbs " << limbs << ", square "
                               << square << ", round " << round;
      }
    }
  }
  BN_CTX_free(ctx);
}

INSTANTIATE_TEST_SUITE_P(Limbs, Amm, ::testing::Values(20, 30, 40));

// expect_same_batches runs whole RSA batches (two rounds of eight lanes over four keys per
// size) on the portable back end and on |other| and expects the same bytes.
void expect_same_batches(Backend other) {
  for (int bits : {2048, 3072, 4096}) {
    const auto& keys = keys_of(bits);
    const int bytes = keys[0]->bytes;
    for (int round = 0; round < (testing::kSanitized ? 1 : 2); ++round) {
      std::vector<uint8_t> in(8 * static_cast<size_t>(bytes)), a(in.size()), b(in.size());
      RsaLane la[8], lb[8];
      for (int l = 0; l < 8; ++l) {
        random_input(*keys[(l + round) % 4], &in[l * bytes]);
        la[l] = {&keys[(l + round) % 4]->key, &in[l * bytes], &a[l * bytes]};
        lb[l] = {&keys[(l + round) % 4]->key, &in[l * bytes], &b[l * bytes]};
      }
      const BatchOutcome oa = rsa_private_batch(Backend::kPortable, la);
      const BatchOutcome ob = rsa_private_batch(other, lb);
      EXPECT_EQ(oa.verified, 0xFF);
      EXPECT_EQ(ob.verified, 0xFF);
      EXPECT_EQ(a, b) << "RSA-" << bits << ", " << backend_name(other);
    }
  }
}

// IfmaEqualsPortable: whole RSA batches, bit for bit, on both back ends (skipped, visibly, on
// a CPU without IFMA; this project's CI machine has it).
TEST(MbBackends, IfmaEqualsPortableBitForBit) {
  if (!detect_ifma().usable) GTEST_SKIP() << "IFMA back end unavailable: " << detect_ifma().reason;
  expect_same_batches(Backend::kIfma);
}

// PortableIfmaShapesEqualsPortable: the IFMA back end's loop shapes on the portable vector type
// (what crypto_mb_ct_valgrind checks for the IFMA back end) give the same batches, on any CPU.
TEST(MbBackends, PortableIfmaShapesEqualsPortableBitForBit) {
  EXPECT_STREQ(backend_name(Backend::kPortableIfmaShapes), "portable-ifma-shapes");
  expect_same_batches(Backend::kPortableIfmaShapes);
}

}  // namespace
}  // namespace accelgate::crypto::mb

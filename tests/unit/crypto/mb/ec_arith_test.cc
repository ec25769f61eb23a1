// The arithmetic under the EC kernels: every field operation of every field against BIGNUM,
// with the edge values of each representation (0, m - 1, m, 2m - 1; for GF(2^255 - 19) limbs at
// the top of the "loose" bound), and the IFMA back end bit for bit against the portable one:
// field operations, fixed-base tables and whole batches of every algorithm.

#include <gtest/gtest.h>
#include <openssl/bn.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ec_test_support.h"

namespace accelgate::crypto::mb {
namespace {

using testing::Bytes;
using testing::ec_keys_of;
using testing::EcTestKey;
using testing::make_ec_key;
using testing::random_bytes;
using testing::random_nonce;

struct FieldCase {
  EcFieldForTest field;
  const char* name;
  const char* modulus_hex;
  int radix;  // bits per limb
};

const FieldCase kFields[] = {
    {EcFieldForTest::kP256, "p256",
     "ffffffff00000001000000000000000000000000ffffffffffffffffffffffff", 52},
    {EcFieldForTest::kP256Order, "n256",
     "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551", 52},
    {EcFieldForTest::kP384, "p384",
     "fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffeffffffff0000000000000000"
     "ffffffff",
     52},
    {EcFieldForTest::kP384Order, "n384",
     "ffffffffffffffffffffffffffffffffffffffffffffffffc7634d81f4372ddf581a0db248b0a77aecec196a"
     "ccc52973",
     52},
    {EcFieldForTest::k25519, "25519",
     "7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffed", 51},
};

// kLoose bounds the limbs of every GF(2^255 - 19) result here: tighter than fe25519.inc's loose
// bound for limb 0 (2^51 + 2^17), which these operations stay well inside.
constexpr uint64_t kLoose = (uint64_t{1} << 51) + (uint64_t{1} << 15);

struct Bn {
  Bn() : p(BN_new()) {}
  explicit Bn(const BIGNUM* x) : p(BN_dup(x)) {}
  ~Bn() { BN_free(p); }
  Bn(const Bn&) = delete;
  Bn& operator=(const Bn&) = delete;
  BIGNUM* p;
};

// put stores x (< 2^(radix limbs)) as lane |lane| of a transposed operand.
void put(std::vector<uint64_t>& v, int limbs, int radix, int lane, const BIGNUM* x) {
  Bn t(x);
  for (int j = 0; j < limbs; ++j) {
    Bn low;
    BN_copy(low.p, t.p);
    BN_mask_bits(low.p, radix);
    v[8 * j + lane] = BN_get_word(low.p);
    BN_rshift(t.p, t.p, radix);
  }
}

void get(BIGNUM* x, const std::vector<uint64_t>& v, int limbs, int radix, int lane) {
  BN_zero(x);
  Bn t;
  for (int j = limbs - 1; j >= 0; --j) {
    BN_lshift(x, x, radix);
    BN_set_word(t.p, v[8 * j + lane]);
    BN_add(x, x, t.p);
  }
}

// edge_values are the inputs every operation sees besides random ones: for a Montgomery field
// values below 2m (the almost-reduced range); for GF(2^255 - 19) loose limb vectors.
std::vector<std::vector<uint64_t>> edge_values(const FieldCase& f, const BIGNUM* m, int limbs) {
  std::vector<std::vector<uint64_t>> out;
  auto add_value = [&](const BIGNUM* x) {
    std::vector<uint64_t> v(static_cast<size_t>(limbs));
    std::vector<uint64_t> t(8 * static_cast<size_t>(limbs));
    put(t, limbs, f.radix, 0, x);
    for (size_t j = 0; j < v.size(); ++j) v[j] = t[8 * j];
    out.push_back(v);
  };
  Bn x;
  for (int k : {0, 1, 2}) {
    BN_set_word(x.p, static_cast<BN_ULONG>(k));
    add_value(x.p);
  }
  for (int k : {-1, 0, 1}) {  // m - 1, m, m + 1
    BN_copy(x.p, m);
    if (k < 0) BN_sub_word(x.p, 1);
    if (k > 0) BN_add_word(x.p, 1);
    add_value(x.p);
  }
  if (f.radix == 52) {
    BN_lshift1(x.p, m);  // 2m - 1, 2m - 2
    BN_sub_word(x.p, 1);
    add_value(x.p);
    BN_sub_word(x.p, 1);
    add_value(x.p);
  } else {
    // Loose vectors: every limb at the bound, limb 0 only, the top limb only.
    out.emplace_back(5, kLoose - 1);
    out.push_back({kLoose - 1, 0, 0, 0, 0});
    out.push_back({0, 0, 0, 0, kLoose - 1});
    out.push_back({(uint64_t{1} << 51) - 1, (uint64_t{1} << 51) - 1, (uint64_t{1} << 51) - 1,
                   (uint64_t{1} << 51) - 1, (uint64_t{1} << 51) - 1});  // 2^255 - 1
  }
  return out;
}

// random_value is uniform below 2m (Montgomery fields) or a loose limb vector (25519).
std::vector<uint64_t> random_value(const FieldCase& f, const BIGNUM* m, int limbs) {
  std::vector<uint64_t> v(static_cast<size_t>(limbs));
  if (f.radix == 51) {
    const Bytes r = random_bytes(8 * static_cast<size_t>(limbs));
    for (size_t j = 0; j < v.size(); ++j) {
      uint64_t w = 0;
      std::memcpy(&w, &r[8 * j], 8);
      v[j] = w % kLoose;
    }
    return v;
  }
  Bn two_m, x;
  BN_lshift1(two_m.p, m);
  BN_rand_range(x.p, two_m.p);
  std::vector<uint64_t> t(8 * static_cast<size_t>(limbs));
  put(t, limbs, f.radix, 0, x.p);
  for (size_t j = 0; j < v.size(); ++j) v[j] = t[8 * j];
  return v;
}

class Fields : public ::testing::TestWithParam<int> {};

// Fields.MatchBignum: for each field, 8-lane batches of every operation over edge values (all
// pairs) and random ones; each result checked against BIGNUM (congruence and range), and the
// IFMA back end's result bit for bit against the portable one's where IFMA runs.
TEST_P(Fields, MatchBignumOnEveryBackend) {
  const FieldCase& f = kFields[GetParam()];
  const int limbs = ec_field_limbs_for_test(f.field);
  Bn m, r_mod, r_inv, two_m;
  BIGNUM* mp = m.p;
  BN_hex2bn(&mp, f.modulus_hex);
  BN_lshift1(two_m.p, m.p);
  BN_CTX* ctx = BN_CTX_new();
  // R and R^-1 for the Montgomery fields.
  BN_one(r_mod.p);
  BN_lshift(r_mod.p, r_mod.p, 52 * limbs);
  BN_mod_inverse(r_inv.p, r_mod.p, m.p, ctx);

  std::vector<std::vector<uint64_t>> values = edge_values(f, m.p, limbs);
  const size_t edges = values.size();
  for (int i = 0; i < 64; ++i) values.push_back(random_value(f, m.p, limbs));
  // Pairs: every edge with every edge, then random pairs, eight per batch.
  std::vector<std::pair<size_t, size_t>> pairs;
  for (size_t i = 0; i < edges; ++i) {
    for (size_t j = 0; j < edges; ++j) pairs.emplace_back(i, j);
  }
  for (size_t i = edges; i + 1 < values.size(); i += 2) pairs.emplace_back(i, i + 1);
  while (pairs.size() % 8 != 0) pairs.emplace_back(edges, edges + 1);

  std::vector<EcFieldOp> ops = {EcFieldOp::kMul, EcFieldOp::kSqr, EcFieldOp::kAdd, EcFieldOp::kSub,
                                EcFieldOp::kInv};
  if (f.field == EcFieldForTest::kP256 || f.field == EcFieldForTest::kP384) {
    ops.insert(ops.end(), {EcFieldOp::kAddLazy, EcFieldOp::kSubLazy, EcFieldOp::kCombine});
  }
  if (f.field == EcFieldForTest::k25519) {
    ops.insert(ops.end(), {EcFieldOp::kMulGrouped, EcFieldOp::kSqrGrouped});
  }
  Bn four_m;
  BN_lshift(four_m.p, m.p, 2);
  const size_t words = 8 * static_cast<size_t>(limbs);
  for (size_t batch = 0; batch < pairs.size(); batch += 8) {
    std::vector<uint64_t> a(words), b(words);
    for (int l = 0; l < 8; ++l) {
      for (int j = 0; j < limbs; ++j) {
        a[8 * j + l] = values[pairs[batch + l].first][j];
        b[8 * j + l] = values[pairs[batch + l].second][j];
      }
    }
    for (EcFieldOp op : ops) {
      if (op == EcFieldOp::kInv && batch >= 64) continue;  // Fermat is slow; edges suffice
      std::vector<uint64_t> r(words), r_ifma(words);
      ec_field_for_test(Backend::kPortable, f.field, op, r.data(), a.data(), b.data());
      for (int l = 0; l < 8; ++l) {
        Bn av, bv, rv, want, got;
        get(av.p, a, limbs, f.radix, l);
        get(bv.p, b, limbs, f.radix, l);
        get(rv.p, r, limbs, f.radix, l);
        const bool mont = f.radix == 52;
        switch (op) {
          case EcFieldOp::kMul:
            BN_mod_mul(want.p, av.p, bv.p, m.p, ctx);
            break;
          case EcFieldOp::kSqr:
            BN_mod_mul(want.p, av.p, av.p, m.p, ctx);
            break;
          case EcFieldOp::kAdd:
          case EcFieldOp::kAddLazy:
            BN_mod_add(want.p, av.p, bv.p, m.p, ctx);
            break;
          case EcFieldOp::kSub:
          case EcFieldOp::kSubLazy:
            BN_mod_sub(want.p, av.p, bv.p, m.p, ctx);
            break;
          case EcFieldOp::kCombine:  // 8a - 8b
            BN_mod_sub(want.p, av.p, bv.p, m.p, ctx);
            BN_mul_word(want.p, 8);
            BN_nnmod(want.p, want.p, m.p, ctx);
            break;
          case EcFieldOp::kMulGrouped: {  // 2 a b - a^2
            Bn sq;
            BN_mod_mul(want.p, av.p, bv.p, m.p, ctx);
            BN_mod_add(want.p, want.p, want.p, m.p, ctx);
            BN_mod_mul(sq.p, av.p, av.p, m.p, ctx);
            BN_mod_sub(want.p, want.p, sq.p, m.p, ctx);
            break;
          }
          case EcFieldOp::kSqrGrouped: {  // a^2 - b^2
            Bn sq;
            BN_mod_mul(want.p, av.p, av.p, m.p, ctx);
            BN_mod_mul(sq.p, bv.p, bv.p, m.p, ctx);
            BN_mod_sub(want.p, want.p, sq.p, m.p, ctx);
            break;
          }
          case EcFieldOp::kInv: {
            // Montgomery: (a / R)^(m - 2) R; GF(2^255 - 19): a^(p - 2).
            Bn e;
            BN_copy(e.p, m.p);
            BN_sub_word(e.p, 2);
            if (mont) BN_mod_mul(av.p, av.p, r_inv.p, m.p, ctx);
            BN_mod_exp(want.p, av.p, e.p, m.p, ctx);
            if (mont) BN_mod_mul(want.p, want.p, r_mod.p, m.p, ctx);
            break;
          }
        }
        BN_copy(got.p, rv.p);
        if (mont && (op == EcFieldOp::kMul || op == EcFieldOp::kSqr)) {
          BN_mod_mul(got.p, got.p, r_mod.p, m.p, ctx);  // r R = a b
        } else {
          BN_nnmod(got.p, got.p, m.p, ctx);
        }
        ASSERT_EQ(BN_cmp(got.p, want.p), 0)
            << f.name << " op " << static_cast<int>(op) << " batch " << batch << " lane " << l;
        const bool lazy = op == EcFieldOp::kAddLazy || op == EcFieldOp::kSubLazy;
        if (mont) {
          ASSERT_LT(BN_cmp(rv.p, lazy ? four_m.p : two_m.p), 0)
              << f.name << " op " << static_cast<int>(op) << ": result beyond its bound";
        }
        for (int j = 0; j < limbs; ++j) {
          const uint64_t bound = mont ? (uint64_t{1} << 52) : kLoose;
          ASSERT_LT(r[8 * j + l], bound) << f.name << ": limb " << j << " beyond its bound";
        }
      }
      if (detect_ifma().usable) {
        ec_field_for_test(Backend::kIfma, f.field, op, r_ifma.data(), a.data(), b.data());
        ASSERT_EQ(r, r_ifma) << f.name << " op " << static_cast<int>(op);
      }
    }
  }
  BN_CTX_free(ctx);
}

INSTANTIATE_TEST_SUITE_P(Ec, Fields, ::testing::Range(0, 5),
                         [](const auto& info) { return std::string(kFields[info.param].name); });

// ec_build_tables builds every table once; a signature afterwards needs no table build.
TEST(MbEcTables, BuildOnceUpFront) {
  const auto t0 = std::chrono::steady_clock::now();
  ec_build_tables();
  const auto t1 = std::chrono::steady_clock::now();
  ec_build_tables();  // idempotent
  const auto t2 = std::chrono::steady_clock::now();
  std::printf("fixed-base tables: %.1f ms (first call, if not built before), %.3f ms again\n",
              std::chrono::duration<double, std::milli>(t1 - t0).count(),
              std::chrono::duration<double, std::milli>(t2 - t1).count());
  const EcTestKey& key = *ec_keys_of(EcCurve::kP256)[0];
  const Bytes digest = random_bytes(32), nonce = random_nonce(EcCurve::kP256);
  Bytes r(32), s(32);
  const EcdsaLane lane{&key.key, digest.data(), 32, nonce.data(), r.data(), s.data()};
  EXPECT_EQ(ecdsa_sign_batch(best_backend(), EcCurve::kP256, {&lane, 1}).ok, 1);
}

// The rest needs the IFMA back end (skipped, visibly, on a CPU without it; the project's CI
// machine has it).

TEST(MbEcBackends, CombTablesBitForBit) {
  if (!detect_ifma().usable) GTEST_SKIP() << "IFMA back end unavailable: " << detect_ifma().reason;
  for (EcCurve curve : {EcCurve::kP256, EcCurve::kP384}) {
    std::vector<uint64_t> a(ec_comb_table_words(curve)), b(a.size());
    ec_comb_table_for_test(Backend::kPortable, curve, a.data());
    ec_comb_table_for_test(Backend::kIfma, curve, b.data());
    EXPECT_EQ(a, b) << ec_curve_name(curve);
  }
  std::vector<uint64_t> a(ec_x25519_base_table_words()), b(a.size());
  ec_x25519_base_table_for_test(Backend::kPortable, a.data());
  ec_x25519_base_table_for_test(Backend::kIfma, b.data());
  EXPECT_EQ(a, b) << "X25519";
}

TEST(MbEcBackends, IfmaEqualsPortableBitForBit) {
  if (!detect_ifma().usable) GTEST_SKIP() << "IFMA back end unavailable: " << detect_ifma().reason;
  for (int round = 0; round < 4; ++round) {
    // X25519, derivation and key generation.
    for (bool keygen : {false, true}) {
      Bytes k[8], u[8], a[8], b[8];
      X25519Lane la[8], lb[8];
      for (int l = 0; l < 8; ++l) {
        k[l] = random_bytes(32);
        u[l] = random_bytes(32);
        a[l].assign(32, 0);
        b[l].assign(32, 0);
        la[l] = {k[l].data(), keygen ? nullptr : u[l].data(), a[l].data()};
        lb[l] = {k[l].data(), keygen ? nullptr : u[l].data(), b[l].data()};
      }
      const X25519Outcome oa = x25519_batch(Backend::kPortable, la);
      const X25519Outcome ob = x25519_batch(Backend::kIfma, lb);
      EXPECT_EQ(oa.ok, ob.ok);
      for (int l = 0; l < 8; ++l) EXPECT_EQ(a[l], b[l]);
    }
    for (EcCurve curve : {EcCurve::kP256, EcCurve::kP384}) {
      const auto& keys = ec_keys_of(curve);
      const auto len = static_cast<size_t>(ec_field_bytes(curve));
      Bytes digest[8], nonce[8], r[2][8], s[2][8], x[2][8];
      std::unique_ptr<testing::EcTestKey> peers[8];
      EcdsaLane sign[2][8];
      EcdhLane dh[2][8];
      for (int l = 0; l < 8; ++l) {
        digest[l] = random_bytes(len);
        nonce[l] = random_nonce(curve);
        peers[l] = make_ec_key(curve);
        for (int side = 0; side < 2; ++side) {
          r[side][l].assign(len, 0);
          s[side][l].assign(len, 0);
          x[side][l].assign(len, 0);
          sign[side][l] = {&keys[l % keys.size()]->key, digest[l].data(), len, nonce[l].data(),
                           r[side][l].data(),           s[side][l].data()};
          dh[side][l] = {&keys[l % keys.size()]->key, peers[l]->point.data() + 1,
                         peers[l]->point.data() + 1 + len, x[side][l].data()};
        }
      }
      EXPECT_EQ(ecdsa_sign_batch(Backend::kPortable, curve, sign[0]).ok, 0xFF);
      EXPECT_EQ(ecdsa_sign_batch(Backend::kIfma, curve, sign[1]).ok, 0xFF);
      EXPECT_EQ(ecdh_batch(Backend::kPortable, curve, dh[0]).ok, 0xFF);
      EXPECT_EQ(ecdh_batch(Backend::kIfma, curve, dh[1]).ok, 0xFF);
      for (int l = 0; l < 8; ++l) {
        EXPECT_EQ(r[0][l], r[1][l]) << ec_curve_name(curve);
        EXPECT_EQ(s[0][l], s[1][l]) << ec_curve_name(curve);
        EXPECT_EQ(x[0][l], x[1][l]) << ec_curve_name(curve);
      }
    }
  }
}

}  // namespace
}  // namespace accelgate::crypto::mb

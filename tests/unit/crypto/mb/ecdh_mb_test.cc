// Multi-buffer ECDH (issue 6): random derivations against OpenSSL's EVP_PKEY_derive, invalid
// peer points (off the curve, coordinates >= p, (0, 0)), batch fills with canaries, mixed keys,
// and the checked API with EVP peers and encoded points.

#include <gtest/gtest.h>
#include <openssl/err.h>

#include <cstring>
#include <vector>

#include "ec_test_support.h"

namespace accelgate::crypto::mb {
namespace {

using testing::Bytes;
using testing::ec_backends;
using testing::ec_keys_of;
using testing::ecdh_reference;
using testing::EcTestKey;
using testing::make_ec_key;

constexpr int kRandomOps = testing::kEcSanitized ? 100 : 10000;

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

// EdgeScalarsMatchOpenSsl: private keys whose digits stress the accumulator's infinity mask
// (1, 2, small powers, 2^k) and n - 2D (D = 1..16), the keys nearest the case where the last
// addition of the variable-base method would be a doubling (README, "EC: exceptional cases");
// each against EC_POINT_mul, on every back end.
TEST_P(EcdhCurves, EdgeScalarsMatchOpenSsl) {
  const EcCurve curve = GetParam();
  const int len = ec_field_bytes(curve);
  EC_GROUP* group = EC_GROUP_new_by_curve_name(testing::curve_nid(curve));
  const BIGNUM* n = EC_GROUP_get0_order(group);
  BN_CTX* bn_ctx = BN_CTX_new();
  std::vector<BIGNUM*> scalars;
  for (BN_ULONG small : {1, 2, 3, 15, 16, 17, 31, 32, 33, 1023, 1024, 1025}) {
    BIGNUM* d = BN_new();
    BN_set_word(d, small);
    scalars.push_back(d);
  }
  for (int shift : {5, 64, 160, 8 * len - 2, 8 * len - 1}) {
    BIGNUM* d = BN_new();
    BN_one(d);
    BN_lshift(d, d, shift);
    BN_nnmod(d, d, n, bn_ctx);
    scalars.push_back(d);
  }
  for (BN_ULONG minus = 1; minus <= 32; ++minus) {
    BIGNUM* d = BN_dup(n);
    BN_sub_word(d, minus);
    scalars.push_back(d);
  }
  const EcTestKey& peer = *ec_keys_of(curve)[2];
  EC_POINT* q = EC_POINT_new(group);
  ASSERT_EQ(EC_POINT_oct2point(group, q, peer.point.data(), peer.point.size(), bn_ctx), 1);
  EC_POINT* product = EC_POINT_new(group);
  BIGNUM* x = BN_new();
  for (const BIGNUM* d : scalars) {
    Bytes d_bytes(static_cast<size_t>(len));
    BN_bn2binpad(d, d_bytes.data(), len);
    ASSERT_EQ(EC_POINT_mul(group, product, nullptr, q, d, bn_ctx), 1);
    ASSERT_EQ(EC_POINT_get_affine_coordinates(group, product, x, nullptr, bn_ctx), 1);
    Bytes expected(static_cast<size_t>(len));
    BN_bn2binpad(x, expected.data(), len);
    EcKey key;
    ASSERT_EQ(prepare_ec_key(curve, d_bytes, &key), EcKeyStatus::kOk);
    for (Backend backend : ec_backends()) {
      Bytes out(static_cast<size_t>(len));
      const EcdhLane lane{&key, peer.point.data() + 1, peer.point.data() + 1 + len, out.data()};
      ASSERT_EQ(ecdh_batch(backend, curve, {&lane, 1}).ok, 1)
          << testing::to_hex(d_bytes.data(), d_bytes.size());
      EXPECT_EQ(out, expected) << testing::to_hex(d_bytes.data(), d_bytes.size());
    }
  }
  BN_free(x);
  EC_POINT_free(product);
  EC_POINT_free(q);
  for (BIGNUM* d : scalars) BN_free(d);
  BN_CTX_free(bn_ctx);
  EC_GROUP_free(group);
}

// Invalid peer points, one per batch among valid ones: off the curve (y + 1), (0, 0), x = p
// or x + p for a valid small x (same point mod p, but not a valid encoding), y >= p. Each is
// invalid_input with a zeroed output, the other lanes are right, and OpenSSL refuses each too.
TEST_P(EcdhCurves, InvalidPeerPointsAreRefusedPerLane) {
  const EcCurve curve = GetParam();
  const auto len = static_cast<size_t>(ec_field_bytes(curve));
  const auto& keys = ec_keys_of(curve);
  EC_GROUP* group = EC_GROUP_new_by_curve_name(testing::curve_nid(curve));
  BN_CTX* ctx = BN_CTX_new();
  BIGNUM* p = BN_new();
  BIGNUM* b = BN_new();
  EC_GROUP_get_curve(group, p, nullptr, b, ctx);
  Bytes p_bytes(len);
  BN_bn2binpad(p, p_bytes.data(), static_cast<int>(len));
  // A valid point with a small x: the least x whose x^3 - 3x + b is a square mod p.
  Bytes small_x(len, 0), small_y(len, 0), shifted_x(len, 0);
  {
    BIGNUM* x = BN_new();
    BIGNUM* rhs = BN_new();
    BIGNUM* t = BN_new();
    BIGNUM* y = BN_new();
    for (BN_ULONG v = 1;; ++v) {
      BN_set_word(x, v);
      BN_mod_sqr(rhs, x, p, ctx);
      BN_mod_mul(rhs, rhs, x, p, ctx);
      BN_mul_word(x, 3);
      BN_mod_sub(rhs, rhs, x, p, ctx);
      BN_mod_add(rhs, rhs, b, p, ctx);
      BN_set_word(x, v);
      if (BN_mod_sqrt(y, rhs, p, ctx) != nullptr) break;
      ERR_clear_error();
    }
    BN_bn2binpad(x, small_x.data(), static_cast<int>(len));
    BN_bn2binpad(y, small_y.data(), static_cast<int>(len));
    BN_add(t, x, p);
    BN_bn2binpad(t, shifted_x.data(), static_cast<int>(len));
    for (BIGNUM* v : {x, rhs, t, y}) BN_free(v);
  }
  const Bytes& peer_x = testing::ec_keys_of(curve)[4]->point;
  Bytes off_y(peer_x.begin() + 1 + static_cast<long>(len), peer_x.end());
  off_y[len - 1] ^= 1;
  const Bytes on_x(peer_x.begin() + 1, peer_x.begin() + 1 + static_cast<long>(len));
  const struct {
    const char* what;
    Bytes x, y;
  } kBad[] = {
      {"off the curve", on_x, off_y}, {"(0, 0)", Bytes(len, 0), Bytes(len, 0)},
      {"x = p", p_bytes, small_y},    {"x + p", shifted_x, small_y},
      {"y = p", small_x, p_bytes},    {"all ones", Bytes(len, 0xFF), Bytes(len, 0xFF)},
  };
  for (Backend backend : ec_backends()) {
    for (const auto& bad : kBad) {
      std::unique_ptr<EcTestKey> peers[8];
      Bytes out[8];
      EcdhLane lanes[8];
      for (int l = 0; l < 8; ++l) {
        peers[l] = make_ec_key(curve);
        out[l].assign(len, 0xA5);
        lanes[l] = {&keys[l % keys.size()]->key, peers[l]->point.data() + 1,
                    peers[l]->point.data() + 1 + len, out[l].data()};
      }
      lanes[5].peer_x = bad.x.data();
      lanes[5].peer_y = bad.y.data();
      const EcOutcome o = ecdh_batch(backend, curve, lanes);
      EXPECT_EQ(o.invalid_input, 1 << 5) << bad.what;
      EXPECT_EQ(o.ok, 0xFF & ~(1 << 5)) << bad.what;
      EXPECT_EQ(out[5], Bytes(len, 0)) << bad.what;
      EXPECT_EQ(out[2], ecdh_reference(keys[2]->pkey, peers[2]->pkey)) << bad.what;
      Bytes encoded{0x04};
      encoded.insert(encoded.end(), bad.x.begin(), bad.x.end());
      encoded.insert(encoded.end(), bad.y.begin(), bad.y.end());
      EcdhCheckedLane checked{&keys[0]->key,  keys[0]->pkey,  nullptr,
                              encoded.data(), encoded.size(), out[5].data()};
      const CheckedOutcome co = ecdh_derive_checked(backend, curve, {&checked, 1});
      EXPECT_EQ(co.failed, 1) << bad.what;
    }
  }
  // The small-x point itself is valid: the kernels accept it and agree with OpenSSL.
  EcdhLane lane{&keys[0]->key, small_x.data(), small_y.data(), nullptr};
  Bytes out(len);
  lane.out_x = out.data();
  EXPECT_EQ(ecdh_batch(best_backend(), curve, {&lane, 1}).ok, 1);
  Bytes encoded{0x04};
  encoded.insert(encoded.end(), small_x.begin(), small_x.end());
  encoded.insert(encoded.end(), small_y.begin(), small_y.end());
  Bytes sw(len);
  const EcdhCheckedLane checked{&keys[0]->key,  keys[0]->pkey,  nullptr,
                                encoded.data(), encoded.size(), sw.data()};
  EXPECT_EQ(ecdh_derive_checked(best_backend(), curve, {&checked, 1}).ok, 1);
  EXPECT_EQ(out, sw);
  BN_free(p);
  BN_free(b);
  BN_CTX_free(ctx);
  EC_GROUP_free(group);
}

// Batches of every fill 1..8 with canaries, keys mixed.
TEST_P(EcdhCurves, BatchFillsWithCanaries) {
  const EcCurve curve = GetParam();
  const auto len = static_cast<size_t>(ec_field_bytes(curve));
  const auto& keys = ec_keys_of(curve);
  for (Backend backend : ec_backends()) {
    for (size_t fill = 1; fill <= 8; ++fill) {
      std::unique_ptr<EcTestKey> peers[8];
      Bytes out[8];
      std::vector<EcdhLane> lanes(fill);
      for (size_t l = 0; l < fill; ++l) {
        peers[l] = make_ec_key(curve);
        out[l].assign(len + 16, 0xA5);
        lanes[l] = {&keys[(l + fill) % keys.size()]->key, peers[l]->point.data() + 1,
                    peers[l]->point.data() + 1 + len, out[l].data()};
      }
      const EcOutcome o = ecdh_batch(backend, curve, lanes);
      EXPECT_EQ(o.ok, (1u << fill) - 1);
      for (size_t l = 0; l < fill; ++l) {
        EXPECT_EQ(Bytes(out[l].begin(), out[l].begin() + static_cast<long>(len)),
                  ecdh_reference(keys[(l + fill) % keys.size()]->pkey, peers[l]->pkey));
        EXPECT_EQ(Bytes(out[l].begin() + static_cast<long>(len), out[l].end()), Bytes(16, 0xA5));
      }
    }
  }
}

// The checked API with every kind of peer: an EVP_PKEY, uncompressed bytes (both in the
// kernels) and compressed bytes (OpenSSL decodes them and derives in software, not counted).
TEST_P(EcdhCurves, CheckedApiTakesEveryPeerForm) {
  const EcCurve curve = GetParam();
  const auto len = static_cast<size_t>(ec_field_bytes(curve));
  const auto& keys = ec_keys_of(curve);
  std::unique_ptr<EcTestKey> peers[3];
  Bytes out[3], compressed;
  for (int l = 0; l < 3; ++l) {
    peers[l] = make_ec_key(curve);
    out[l].assign(len, 0);
  }
  compressed.push_back(static_cast<uint8_t>(0x02 | (peers[2]->point.back() & 1)));
  compressed.insert(compressed.end(), peers[2]->point.begin() + 1,
                    peers[2]->point.begin() + 1 + static_cast<long>(len));
  const EcdhCheckedLane lanes[3] = {
      {&keys[0]->key, keys[0]->pkey, peers[0]->pkey, nullptr, 0, out[0].data()},
      {&keys[1]->key, keys[1]->pkey, nullptr, peers[1]->point.data(), peers[1]->point.size(),
       out[1].data()},
      {&keys[2]->key, keys[2]->pkey, nullptr, compressed.data(), compressed.size(), out[2].data()},
  };
  const uint64_t before = ec_software_recompute_count();
  const CheckedOutcome o = ecdh_derive_checked(best_backend(), curve, lanes);
  EXPECT_EQ(o.ok, 3);
  EXPECT_EQ(o.recomputed, 4);
  EXPECT_EQ(o.failed, 0);
  EXPECT_EQ(ec_software_recompute_count(), before);
  for (int l = 0; l < 3; ++l) {
    EXPECT_EQ(out[l], ecdh_reference(keys[l]->pkey, peers[l]->pkey)) << "lane " << l;
  }
}

INSTANTIATE_TEST_SUITE_P(Ec, EcdhCurves, ::testing::Values(EcCurve::kP256, EcCurve::kP384),
                         [](const auto& info) {
                           return std::string(info.param == EcCurve::kP256 ? "P256" : "P384");
                         });

}  // namespace
}  // namespace accelgate::crypto::mb

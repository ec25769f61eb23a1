// Multi-buffer X25519 (issue 6): RFC 7748 §5.2 and §6.1 vectors, random operations against
// OpenSSL, decoding rules (top bit, non-canonical u), low-order points, batch fills with
// canaries, mixed key generation and derivation, and the fault path.

#include <gtest/gtest.h>

#include <cstring>

#include "ec_test_support.h"

namespace accelgate::crypto::mb {
namespace {

using testing::Bytes;
using testing::ec_backends;
using testing::from_hex;
using testing::random_bytes;
using testing::to_hex;
using testing::x25519_reference;

constexpr int kRandomOps = testing::kEcSanitized ? 200 : 10000;

// one runs a single lane (the other seven repeat it).
Bytes one(Backend backend, const Bytes& scalar, const Bytes* peer, X25519Outcome* outcome) {
  Bytes out(32);
  const X25519Lane lane{scalar.data(), peer != nullptr ? peer->data() : nullptr, out.data()};
  *outcome = x25519_batch(backend, {&lane, 1});
  return out;
}

TEST(MbX25519, Rfc7748Section52Vectors) {
  const struct {
    const char* scalar;
    const char* u;
    const char* out;
  } kVectors[] = {
      {"a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
       "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
       "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552"},
      {"4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
       "e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493",
       "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957"},
  };
  for (Backend b : ec_backends()) {
    for (const auto& v : kVectors) {
      const Bytes k = from_hex(v.scalar);
      const Bytes u = from_hex(v.u);
      X25519Outcome o;
      const Bytes out = one(b, k, &u, &o);
      EXPECT_EQ(o.ok, 1);
      EXPECT_EQ(to_hex(out.data(), 32), v.out) << backend_name(b);
      EXPECT_EQ(x25519_reference(k.data(), u.data()), out);
    }
  }
}

// RFC 7748 §5.2's iteration: k = X25519(k, u), u = old k, from k = u = 9; 1 and 1000 rounds.
TEST(MbX25519, Rfc7748Section52Iterated) {
  Bytes k(32, 0), u(32, 0);
  k[0] = 9;
  u[0] = 9;
  // Under ASan+UBSan (tens of times slower) the first round only, and the test says so.
  const int rounds = testing::kEcSanitized ? 1 : 1000;
  if (rounds < 1000) std::printf("sanitized build: 1 round of the iterated test, not 1,000\n");
  for (int i = 1; i <= rounds; ++i) {
    X25519Outcome o;
    Bytes next = one(best_backend(), k, &u, &o);
    ASSERT_EQ(o.ok, 1);
    u = k;
    k = next;
    if (i == 1) {
      EXPECT_EQ(to_hex(k.data(), 32),
                "422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079");
    }
  }
  if (rounds == 1000) {
    EXPECT_EQ(to_hex(k.data(), 32),
              "684cf59ba83309552800ef566f2f4d3c1c3887c49360e3875f2eb94d99532c51");
  }
}

TEST(MbX25519, Rfc7748Section61DiffieHellman) {
  const Bytes alice = from_hex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
  const Bytes bob = from_hex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb");
  for (Backend b : ec_backends()) {
    X25519Outcome o;
    const Bytes alice_pub = one(b, alice, nullptr, &o);
    EXPECT_EQ(o.ok, 1);
    EXPECT_EQ(to_hex(alice_pub.data(), 32),
              "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
    const Bytes bob_pub = one(b, bob, nullptr, &o);
    EXPECT_EQ(to_hex(bob_pub.data(), 32),
              "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
    const Bytes k1 = one(b, alice, &bob_pub, &o);
    EXPECT_EQ(o.ok, 1);
    const Bytes k2 = one(b, bob, &alice_pub, &o);
    EXPECT_EQ(o.ok, 1);
    EXPECT_EQ(to_hex(k1.data(), 32),
              "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742");
    EXPECT_EQ(k1, k2);
  }
}

// RandomOps: kRandomOps derivations and kRandomOps key generations on the best back end, eight
// lanes per batch, every result byte for byte against OpenSSL.
TEST(MbX25519, RandomDerivationsMatchOpenSsl) {
  const Backend backend = best_backend();
  int checked = 0;
  while (checked < kRandomOps) {
    Bytes scalars[8], peers[8], outs[8];
    X25519Lane lanes[8];
    for (int l = 0; l < 8; ++l) {
      scalars[l] = random_bytes(32);
      peers[l] = random_bytes(32);  // top bit set at random: masked, as RFC 7748 says
      outs[l].assign(32, 0);
      lanes[l] = {scalars[l].data(), peers[l].data(), outs[l].data()};
    }
    const X25519Outcome o = x25519_batch(backend, lanes);
    ASSERT_EQ(o.check_failed, 0);
    for (int l = 0; l < 8; ++l, ++checked) {
      const Bytes want = x25519_reference(scalars[l].data(), peers[l].data());
      ASSERT_EQ(outs[l], want) << "op " << checked;
    }
    ASSERT_EQ(o.ok, 0xFF);
  }
  std::printf("%d random X25519 derivations on %s match OpenSSL\n", checked, backend_name(backend));
}

TEST(MbX25519, RandomKeyGenerationsMatchOpenSsl) {
  const Backend backend = best_backend();
  int checked = 0;
  while (checked < kRandomOps) {
    Bytes scalars[8], outs[8];
    X25519Lane lanes[8];
    for (int l = 0; l < 8; ++l) {
      scalars[l] = random_bytes(32);
      outs[l].assign(32, 0);
      lanes[l] = {scalars[l].data(), nullptr, outs[l].data()};
    }
    const X25519Outcome o = x25519_batch(backend, lanes);
    ASSERT_EQ(o.ok, 0xFF);
    for (int l = 0; l < 8; ++l, ++checked) {
      ASSERT_EQ(outs[l], x25519_reference(scalars[l].data(), nullptr)) << "op " << checked;
    }
  }
  std::printf("%d random X25519 key generations on %s match OpenSSL\n", checked,
              backend_name(backend));
}

// Batches of every fill 1..8 on every back end, with 16 canary bytes after each output, key
// generations and derivations mixed in one batch; outcome masks cover the used lanes only.
TEST(MbX25519, BatchFillsWithCanariesAndMixedLanes) {
  for (Backend b : ec_backends()) {
    for (size_t fill = 1; fill <= 8; ++fill) {
      Bytes scalars[8], peers[8], outs[8];
      std::vector<X25519Lane> lanes(fill);
      for (size_t l = 0; l < fill; ++l) {
        scalars[l] = random_bytes(32);
        peers[l] = random_bytes(32);
        outs[l].assign(48, 0xA5);
        const bool keygen = (l + fill) % 3 == 0;
        lanes[l] = {scalars[l].data(), keygen ? nullptr : peers[l].data(), outs[l].data()};
      }
      const X25519Outcome o = x25519_batch(b, lanes);
      EXPECT_EQ(o.ok, (1u << fill) - 1) << "fill " << fill;
      EXPECT_EQ(o.zero_output | o.check_failed, 0);
      for (size_t l = 0; l < fill; ++l) {
        const Bytes want = x25519_reference(scalars[l].data(), lanes[l].peer_u);
        EXPECT_EQ(Bytes(outs[l].begin(), outs[l].begin() + 32), want) << "lane " << l;
        EXPECT_EQ(Bytes(outs[l].begin() + 32, outs[l].end()), Bytes(16, 0xA5)) << "canary";
      }
    }
  }
}

// RFC 7748 §5: bit 255 of u is masked, and u >= p is accepted as u mod p (OpenSSL agrees).
TEST(MbX25519, DecodingMasksTheTopBitAndAcceptsNonCanonicalU) {
  const Bytes k = random_bytes(32);
  Bytes u = random_bytes(32);
  u[31] &= 0x7F;
  Bytes u_top = u;
  u_top[31] |= 0x80;
  X25519Outcome o;
  const Bytes plain = one(best_backend(), k, &u, &o);
  EXPECT_EQ(one(best_backend(), k, &u_top, &o), plain);
  EXPECT_EQ(x25519_reference(k.data(), u.data()), plain);
  // u = p + 9 (non-canonical, below 2^255) behaves as u = 9; so does 2^255 + 9 after masking.
  Bytes p_plus_9 = from_hex("f6ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f");
  Bytes nine(32, 0);
  nine[0] = 9;
  const Bytes want = one(best_backend(), k, &nine, &o);
  EXPECT_EQ(o.ok, 1);
  EXPECT_EQ(one(best_backend(), k, &p_plus_9, &o), want);
  EXPECT_EQ(x25519_reference(k.data(), p_plus_9.data()), want);
  Bytes top_9 = nine;
  top_9[31] = 0x80;
  EXPECT_EQ(one(best_backend(), k, &top_9, &o), want);
}

// Points of small order (and their non-canonical encodings) give the all-zero output, flagged
// per lane, while the other lanes of the batch are unaffected; OpenSSL refuses them too.
TEST(MbX25519, LowOrderPointsGiveZeroOutput) {
  const char* kLowOrder[] = {
      "0000000000000000000000000000000000000000000000000000000000000000",  // 0
      "0100000000000000000000000000000000000000000000000000000000000000",  // 1
      "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",  // order 8
      "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157",  // order 8
      "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",  // p - 1
      "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",  // p (= 0)
      "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",  // p + 1 (= 1)
  };
  for (Backend b : ec_backends()) {
    for (const char* hex : kLowOrder) {
      const Bytes bad = from_hex(hex);
      Bytes scalars[8], peers[8], outs[8];
      X25519Lane lanes[8];
      for (int l = 0; l < 8; ++l) {
        scalars[l] = random_bytes(32);
        peers[l] = l == 2 ? bad : random_bytes(32);
        outs[l].assign(32, 0xA5);
        lanes[l] = {scalars[l].data(), peers[l].data(), outs[l].data()};
      }
      const X25519Outcome o = x25519_batch(b, lanes);
      EXPECT_EQ(o.zero_output, 1 << 2) << hex;
      EXPECT_EQ(o.ok, 0xFF & ~(1 << 2)) << hex;
      EXPECT_EQ(outs[2], Bytes(32, 0)) << hex;
      EXPECT_TRUE(x25519_reference(scalars[2].data(), peers[2].data()).empty()) << hex;
    }
  }
}

// Outputs may alias inputs (the scalar or the peer's u).
TEST(MbX25519, OutputMayAliasInput) {
  Bytes k = random_bytes(32), u = random_bytes(32);
  const Bytes want = x25519_reference(k.data(), u.data());
  Bytes k2 = k, u2 = u;
  const X25519Lane lanes[2] = {{k.data(), u.data(), k.data()}, {k2.data(), u2.data(), u2.data()}};
  const X25519Outcome o = x25519_batch(best_backend(), lanes);
  EXPECT_EQ(o.ok, 3);
  EXPECT_EQ(k, want);
  EXPECT_EQ(u2, want);
}

TEST(MbX25519, RefusesEmptyAndOversizedBatches) {
  Bytes k = random_bytes(32), out(32);
  std::vector<X25519Lane> nine(9, X25519Lane{k.data(), nullptr, out.data()});
  EXPECT_EQ(x25519_batch(best_backend(), {}).ok, 0);
  const X25519Outcome o = x25519_batch(best_backend(), nine);
  EXPECT_EQ(o.ok | o.zero_output | o.check_failed, 0);
}

// The checked API: results equal OpenSSL's, a low-order peer fails its lane (OpenSSL refuses it
// as well) without counting, and nothing is recomputed in a clean batch.
TEST(MbX25519Checked, MatchesOpenSslAndFailsLowOrderPeers) {
  Bytes priv[8], peer[8], out[8];
  X25519CheckedLane lanes[8];
  for (int l = 0; l < 8; ++l) {
    priv[l] = random_bytes(32);
    peer[l] = l == 6 ? Bytes(32, 0) : random_bytes(32);
    out[l].assign(32, 0xA5);
    lanes[l] = {priv[l].data(), l == 1 ? nullptr : peer[l].data(), out[l].data()};
  }
  const uint64_t before = ec_software_recompute_count();
  const CheckedOutcome o = x25519_checked(best_backend(), lanes);
  EXPECT_EQ(o.ok, 0xFF & ~(1 << 6));
  EXPECT_EQ(o.failed, 1 << 6);
  EXPECT_EQ(o.recomputed, 0);
  EXPECT_EQ(ec_software_recompute_count(), before);
  for (int l = 0; l < 8; ++l) {
    if (l == 6) {
      EXPECT_EQ(out[l], Bytes(32, 0));
    } else {
      EXPECT_EQ(out[l], x25519_reference(priv[l].data(), lanes[l].peer)) << "lane " << l;
    }
  }
}

}  // namespace
}  // namespace accelgate::crypto::mb

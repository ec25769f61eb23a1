// The mb engine: ops wait in per-loop batch queues and are computed at flush (the loop's idle
// hook), full batches by the multi-buffer kernels, batches too small for eight lanes by OpenSSL;
// ECDSA and ECDH on P-256/P-384 and X25519 key generation and derivation as well; mb_flush lets a
// partial batch wait; ops mb has no kernel for, or whose key it cannot use, are not accelerated,
// so the dispatcher gives them to sw even with `fallback off`.
//
// This machine may have no AVX-512 IFMA: the test hook ACCELGATE_TEST_MB_PORTABLE=1 lets the
// engine run on the portable back end (same kernels, same control flow, slower), so batching is
// tested everywhere. Every signature is checked with OpenSSL's public operation.

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string_view>

#include "accelgate/common/metrics.h"
#include "accelgate/offload/dispatcher.h"
#include "engine_test_support.h"
#include "engines/engines.h"

namespace accelgate::offload {
namespace {

using namespace testing;

struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

// make_key returns a fresh RSA key of |bits| with |primes| primes (owned by the PrivateKey).
std::shared_ptr<const PrivateKey> make_key(int bits, int primes = 2) {
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_name(nullptr, "RSA", nullptr);
  EVP_PKEY* key = nullptr;
  if (ctx == nullptr || EVP_PKEY_keygen_init(ctx) != 1 ||
      EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, bits) != 1 ||
      EVP_PKEY_CTX_set_rsa_keygen_primes(ctx, primes) != 1 || EVP_PKEY_keygen(ctx, &key) != 1) {
    key = nullptr;
  }
  EVP_PKEY_CTX_free(ctx);
  return key == nullptr ? nullptr : std::make_shared<PrivateKey>(key);
}

// public_op is in^e mod n (raw), the inverse of the engine's private operation.
std::vector<uint8_t> public_op(EVP_PKEY* key, const std::vector<uint8_t>& in) {
  std::unique_ptr<EVP_PKEY_CTX, void (*)(EVP_PKEY_CTX*)> ctx(EVP_PKEY_CTX_new(key, nullptr),
                                                             EVP_PKEY_CTX_free);
  std::vector<uint8_t> out(in.size());
  size_t len = out.size();
  if (EVP_PKEY_verify_recover_init(ctx.get()) != 1 ||
      EVP_PKEY_CTX_set_rsa_padding(ctx.get(), RSA_NO_PADDING) != 1 ||
      EVP_PKEY_verify_recover(ctx.get(), out.data(), &len, in.data(), in.size()) != 1) {
    return {};
  }
  out.resize(len);
  return out;
}

// Signing is a raw operation on a random message below n (top byte 0).
struct RawOp {
  OpRef op;
  std::vector<uint8_t> input;
};

RawOp make_rsa_op(const std::shared_ptr<const PrivateKey>& key, bool input_ok = true) {
  int bits = EVP_PKEY_get_bits(key->pkey());
  RawOp r;
  r.input.resize(static_cast<size_t>(bits / 8));
  RAND_bytes(r.input.data(), static_cast<int>(r.input.size()));
  r.input[0] = 0;
  r.op = std::make_shared<Op>(OpKind::kRsaSign, bits, [](OpOutput* out) {
    out->bytes = {'s', 'w'};
    return true;
  });
  r.op->set_private_key(key, [input = r.input, input_ok](std::vector<uint8_t>* data) {
    *data = input;
    return input_ok;
  });
  return r;
}

std::shared_ptr<const PrivateKey> make_ec_key(const char* curve) {
  EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", curve);
  return key == nullptr ? nullptr : std::make_shared<PrivateKey>(key);
}

// An ECDSA op signs a random digest of the curve's size; its software function is OpenSSL's.
RawOp make_ecdsa_op(const std::shared_ptr<const PrivateKey>& key) {
  int bits = EVP_PKEY_get_bits(key->pkey());
  RawOp r;
  r.input.resize(static_cast<size_t>(bits / 8));
  RAND_bytes(r.input.data(), static_cast<int>(r.input.size()));
  r.op = std::make_shared<Op>(OpKind::kEcdsaSign, bits, [key, digest = r.input](OpOutput* out) {
    std::unique_ptr<EVP_PKEY_CTX, void (*)(EVP_PKEY_CTX*)> ctx(
        EVP_PKEY_CTX_new(key->pkey(), nullptr), EVP_PKEY_CTX_free);
    size_t len = 0;
    if (EVP_PKEY_sign_init(ctx.get()) != 1 ||
        EVP_PKEY_sign(ctx.get(), nullptr, &len, digest.data(), digest.size()) != 1) {
      return false;
    }
    out->bytes.resize(len);
    if (EVP_PKEY_sign(ctx.get(), out->bytes.data(), &len, digest.data(), digest.size()) != 1) {
      return false;
    }
    out->bytes.resize(len);
    return true;
  });
  r.op->set_private_key(key, [input = r.input](std::vector<uint8_t>* data) {
    *data = input;
    return true;
  });
  return r;
}

bool ecdsa_verifies(EVP_PKEY* key, const std::vector<uint8_t>& digest,
                    const std::vector<uint8_t>& der) {
  std::unique_ptr<EVP_PKEY_CTX, void (*)(EVP_PKEY_CTX*)> ctx(EVP_PKEY_CTX_new(key, nullptr),
                                                             EVP_PKEY_CTX_free);
  return EVP_PKEY_verify_init(ctx.get()) == 1 &&
         EVP_PKEY_verify(ctx.get(), der.data(), der.size(), digest.data(), digest.size()) == 1;
}

using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

// derive is OpenSSL's shared secret of |ours| and |peer| (empty on failure).
std::vector<uint8_t> derive(EVP_PKEY* ours, EVP_PKEY* peer) {
  std::unique_ptr<EVP_PKEY_CTX, void (*)(EVP_PKEY_CTX*)> ctx(EVP_PKEY_CTX_new(ours, nullptr),
                                                             EVP_PKEY_CTX_free);
  size_t len = 0;
  if (EVP_PKEY_derive_init(ctx.get()) != 1 || EVP_PKEY_derive_set_peer(ctx.get(), peer) != 1 ||
      EVP_PKEY_derive(ctx.get(), nullptr, &len) != 1) {
    return {};
  }
  std::vector<uint8_t> out(len);
  if (EVP_PKEY_derive(ctx.get(), out.data(), &len) != 1) return {};
  out.resize(len);
  return out;
}

std::vector<uint8_t> raw_key(EVP_PKEY* key, bool priv) {
  std::vector<uint8_t> out(32);
  size_t len = out.size();
  int ok = priv ? EVP_PKEY_get_raw_private_key(key, out.data(), &len)
                : EVP_PKEY_get_raw_public_key(key, out.data(), &len);
  if (ok != 1) return {};
  out.resize(len);
  return out;
}

// An X25519 op as the provider makes it (op.h): a derivation's raw input is our private key and
// the peer's public key, a generation's the private key; no PrivateKey. The software function
// computes the same with OpenSSL (a generation's "key" output stands for the default key).
RawOp make_x25519_op(EVP_PKEY* ours, EVP_PKEY* peer) {
  RawOp r;
  r.input = raw_key(ours, true);
  if (peer != nullptr) {
    std::vector<uint8_t> pub = raw_key(peer, false);
    r.input.insert(r.input.end(), pub.begin(), pub.end());
  }
  OpKind kind = peer != nullptr ? OpKind::kX25519Derive : OpKind::kX25519Keygen;
  EVP_PKEY_up_ref(ours);
  if (peer != nullptr) EVP_PKEY_up_ref(peer);
  auto o = std::shared_ptr<EVP_PKEY>(ours, EVP_PKEY_free);
  auto p = std::shared_ptr<EVP_PKEY>(peer, EVP_PKEY_free);
  r.op = std::make_shared<Op>(kind, 256, [o, p](OpOutput* out) {
    if (p == nullptr) {
      out->key = o;
      return true;
    }
    out->bytes = derive(o.get(), p.get());
    return !out->bytes.empty();
  });
  r.op->set_private_key(PrivateKeyFn{}, [input = r.input](std::vector<uint8_t>* data) {
    *data = input;
    return true;
  });
  return r;
}

// encoded_point is |key|'s public point, uncompressed (SEC 1 §2.3.3).
std::vector<uint8_t> encoded_point(EVP_PKEY* key) {
  std::vector<uint8_t> out(97);
  size_t len = 0;
  if (EVP_PKEY_get_octet_string_param(key, "encoded-pub-key", out.data(), out.size(), &len) != 1) {
    return {};
  }
  out.resize(len);
  return out;
}

// An ECDH op: our PrivateKey (made lazily, as the provider does) and the peer's encoded point.
RawOp make_ecdh_op(const std::shared_ptr<const PrivateKey>& key, EVP_PKEY* peer,
                   std::vector<uint8_t> point = {}) {
  int bits = EVP_PKEY_get_bits(key->pkey());
  RawOp r;
  r.input = point.empty() ? encoded_point(peer) : std::move(point);
  EVP_PKEY_up_ref(peer);
  auto p = std::shared_ptr<EVP_PKEY>(peer, EVP_PKEY_free);
  r.op = std::make_shared<Op>(OpKind::kEcdhDerive, bits, [key, p](OpOutput* out) {
    out->bytes = derive(key->pkey(), p.get());
    return !out->bytes.empty();
  });
  r.op->set_private_key([key] { return key; },
                        [input = r.input](std::vector<uint8_t>* data) {
                          *data = input;
                          return true;
                        });
  return r;
}

uint64_t metric(const std::string& name) {
  std::istringstream text(metrics::Registry::global().render());
  for (std::string line; std::getline(text, line);) {
    if (line.rfind(name + " ", 0) == 0) return std::stoull(line.substr(name.size() + 1));
  }
  return 0;
}

class MbEngineTest : public EngineTest {
 protected:
  static void SetUpTestSuite() {
    ::setenv("ACCELGATE_TEST_MB_PORTABLE", "1", 1);
    keys_[0] = make_key(2048);
    keys_[1] = make_key(2048);
  }
  static void TearDownTestSuite() {
    keys_[0].reset();
    keys_[1].reset();
  }

  std::unique_ptr<Engine> make_mb(std::chrono::microseconds flush = 0us) {
    config::OffloadSettings s;
    s.crypto = "mb";
    s.mb_flush = flush;
    auto engine = create_mb(s, context());
    EXPECT_TRUE(engine) << engine.error().message;
    return engine ? std::move(*engine) : nullptr;
  }

  // submit_and_flush submits |ops| (each accelerated, each pending), flushes and expects one
  // completion per op, in order, in sink_.records.
  void submit_and_flush(Engine* engine, const std::vector<RawOp>& ops) {
    sink_.records.clear();
    for (size_t i = 0; i < ops.size(); ++i) {
      ASSERT_TRUE(engine->accelerates(*ops[i].op)) << "op " << i;
      OpOutput out;
      ASSERT_EQ(engine->submit(ops[i].op, 1 + i, &out), SubmitResult::kPending) << "op " << i;
    }
    engine->flush();
    ASSERT_EQ(sink_.records.size(), ops.size());
  }

  static std::shared_ptr<const PrivateKey> keys_[2];
};

std::shared_ptr<const PrivateKey> MbEngineTest::keys_[2];

TEST_F(MbEngineTest, EveryFillIsComputedAtFlushAndVerifies) {
  ASSERT_NE(keys_[0], nullptr);
  auto engine = make_mb();
  ASSERT_TRUE(engine);
  uint64_t ticket = 1;
  for (size_t fill = 1; fill <= 8; ++fill) {
    sink_.records.clear();
    uint64_t software_before = metric("accelgate_offload_mb_software_total");
    std::vector<RawOp> ops;
    for (size_t i = 0; i < fill; ++i) {
      ops.push_back(make_rsa_op(keys_[i % 2]));
      ASSERT_TRUE(engine->accelerates(*ops.back().op));
      OpOutput out;
      ASSERT_EQ(engine->submit(ops.back().op, ticket++, &out), SubmitResult::kPending);
    }
    EXPECT_EQ(engine->inflight(), fill);
    EXPECT_TRUE(sink_.records.empty()) << "completed inside submit";
    engine->flush();
    EXPECT_EQ(engine->inflight(), 0u);
    ASSERT_EQ(sink_.records.size(), fill);
    for (size_t i = 0; i < fill; ++i) {
      const Completion& c = sink_.records[i];
      ASSERT_TRUE(c.ok) << "fill " << fill << " lane " << i;
      EXPECT_EQ(c.op, ops[i].op);
      EXPECT_EQ(public_op(keys_[i % 2]->pkey(), c.bytes), ops[i].input)
          << "fill " << fill << " lane " << i;
    }
    // Batches of one and two go to OpenSSL (cheaper than eight lanes for RSA-2048).
    EXPECT_EQ(metric("accelgate_offload_mb_software_total") - software_before, fill < 3 ? fill : 0u)
        << "fill " << fill;
  }
}

TEST_F(MbEngineTest, EcdsaEveryFillOnBothCurvesVerifies) {
  auto engine = make_mb();
  ASSERT_TRUE(engine);
  for (const char* curve : {"P-256", "P-384"}) {
    auto keys = {make_ec_key(curve), make_ec_key(curve)};
    std::vector<std::shared_ptr<const PrivateKey>> k(keys);
    ASSERT_NE(k[0], nullptr);
    for (size_t fill = 1; fill <= 8; ++fill) {
      std::vector<RawOp> ops;
      for (size_t i = 0; i < fill; ++i) ops.push_back(make_ecdsa_op(k[i % 2]));
      uint64_t software_before = metric("accelgate_offload_mb_software_total");
      ASSERT_NO_FATAL_FAILURE(submit_and_flush(engine.get(), ops)) << curve;
      // A lone P-256 signature goes to OpenSSL, a pair and more to the kernels; P-384 always
      // batches (kSoftwareBelow).
      const bool software = std::string_view(curve) == "P-256" && fill == 1;
      EXPECT_EQ(metric("accelgate_offload_mb_software_total") - software_before, software ? 1u : 0u)
          << curve << " fill " << fill;
      for (size_t i = 0; i < fill; ++i) {
        ASSERT_TRUE(sink_.records[i].ok) << curve << " fill " << fill;
        EXPECT_TRUE(ecdsa_verifies(k[i % 2]->pkey(), ops[i].input, sink_.records[i].bytes))
            << curve << " fill " << fill << " lane " << i;
      }
    }
  }
  // Not a curve with kernels.
  auto k1 = make_ec_key("secp256k1");
  ASSERT_NE(k1, nullptr);
  EXPECT_FALSE(engine->accelerates(*make_ecdsa_op(k1).op));
  // An EC key on an RSA op, an RSA key on an ECDSA op: refused.
  auto p256 = make_ec_key("P-256");
  Op rsa_with_ec(OpKind::kRsaSign, 2048, [](OpOutput*) { return true; });
  rsa_with_ec.set_private_key(p256, [](std::vector<uint8_t>*) { return true; });
  EXPECT_FALSE(engine->accelerates(rsa_with_ec));
  Op ec_with_rsa(OpKind::kEcdsaSign, 256, [](OpOutput*) { return true; });
  ec_with_rsa.set_private_key(keys_[0], [](std::vector<uint8_t>*) { return true; });
  EXPECT_FALSE(engine->accelerates(ec_with_rsa));
}

TEST_F(MbEngineTest, X25519EveryFillMatchesOpenSsl) {
  auto engine = make_mb();
  ASSERT_TRUE(engine);
  // Every result must come from the kernels: a lane recomputed by OpenSSL after a failed check
  // would match OpenSSL too.
  const uint64_t recomputed_before = metric("accelgate_offload_mb_recomputed_total");
  std::vector<Pkey> keys;
  for (int i = 0; i < 16; ++i) keys.emplace_back(EVP_PKEY_Q_keygen(nullptr, nullptr, "X25519"));
  for (bool keygen : {false, true}) {
    for (size_t fill = 1; fill <= 8; ++fill) {
      uint64_t software_before = metric("accelgate_offload_mb_software_total");
      std::vector<RawOp> ops;
      for (size_t i = 0; i < fill; ++i) {
        // Mixed keys: lane i derives with key i and peer i + 8.
        ops.push_back(make_x25519_op(keys[i].get(), keygen ? nullptr : keys[i + 8].get()));
      }
      // A key generation batch leaves spare key pairs, which the next generations would take
      // at submit (X25519KeyGenerationsTakeSpares): a fresh engine for each fill.
      if (keygen) engine = make_mb();
      ASSERT_TRUE(engine);
      ASSERT_NO_FATAL_FAILURE(submit_and_flush(engine.get(), ops));
      // A lone derivation is cheaper in OpenSSL; key generations always batch.
      bool software = !keygen && fill == 1;
      EXPECT_EQ(metric("accelgate_offload_mb_software_total") - software_before,
                software ? 1u : 0u);
      for (size_t i = 0; i < fill; ++i) {
        const Completion& c = sink_.records[i];
        ASSERT_TRUE(c.ok) << "fill " << fill << " lane " << i;
        std::vector<uint8_t> expected =
            keygen ? raw_key(keys[i].get(), false) : derive(keys[i].get(), keys[i + 8].get());
        EXPECT_EQ(c.bytes, expected)
            << (keygen ? "keygen" : "derive") << " fill " << fill << " lane " << i;
      }
    }
  }
  // A low-order peer point (u = 0) gives an all-zero secret: refused, as OpenSSL refuses it;
  // its batch neighbours are unaffected.
  std::vector<RawOp> ops;
  for (size_t i = 0; i < 8; ++i) {
    ops.push_back(make_x25519_op(keys[i].get(), keys[i + 8].get()));
    if (i == 3) std::fill(ops.back().input.begin() + 32, ops.back().input.end(), 0);
    std::vector<uint8_t> input = ops.back().input;
    ops.back().op->set_private_key(PrivateKeyFn{}, [input](std::vector<uint8_t>* data) {
      *data = input;
      return true;
    });
  }
  ASSERT_NO_FATAL_FAILURE(submit_and_flush(engine.get(), ops));
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(sink_.records[i].ok, i != 3) << "lane " << i;
    if (i != 3) {
      EXPECT_EQ(sink_.records[i].bytes, derive(keys[i].get(), keys[i + 8].get()));
    }
  }
  // A raw input of the wrong length fails at submit.
  Op short_input(OpKind::kX25519Derive, 256, [](OpOutput*) { return true; });
  auto bad = std::make_shared<Op>(OpKind::kX25519Derive, 256, [](OpOutput*) { return true; });
  bad->set_private_key(PrivateKeyFn{}, [](std::vector<uint8_t>* data) {
    data->assign(40, 1);
    return true;
  });
  OpOutput out;
  EXPECT_EQ(engine->submit(bad, 99, &out), SubmitResult::kFailed);
  EXPECT_FALSE(engine->accelerates(short_input)) << "no raw input: not mb's";
  EXPECT_EQ(metric("accelgate_offload_mb_recomputed_total"), recomputed_before);
}

// spare_pair checks a key generation completed at submit from a spare (op.h: 64 bytes, the
// private key then the public key): the private key clamped (RFC 7748 §5) and the public key
// OpenSSL's for it. Returns the private key, or nothing after a failure.
std::vector<uint8_t> spare_pair(const OpOutput& out) {
  EXPECT_EQ(out.bytes.size(), 64u);
  if (out.bytes.size() != 64) return {};
  const uint8_t* priv = out.bytes.data();
  EXPECT_EQ(priv[0] & 7, 0);
  EXPECT_EQ(priv[31] & 0xc0, 0x40);
  Pkey key(EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nullptr, priv, 32));
  EXPECT_NE(key, nullptr);
  if (key == nullptr) return {};
  EXPECT_EQ(raw_key(key.get(), false), std::vector<uint8_t>(priv + 32, priv + 64));
  return {priv, priv + 32};
}

// A batch of key generations fills its empty lanes with spare key pairs and, as generations were
// asked for, the flush tops them up with a batch of spares: the next generations complete at
// submit, each with a key pair of its own, until the spares run out.
TEST_F(MbEngineTest, X25519KeyGenerationsTakeSpares) {
  std::vector<Pkey> keys;
  for (int i = 0; i < 8; ++i) keys.emplace_back(EVP_PKEY_Q_keygen(nullptr, nullptr, "X25519"));
  const uint64_t recomputed_before = metric("accelgate_offload_mb_recomputed_total");
  for (size_t fill : {1u, 3u, 8u}) {
    auto engine = make_mb();
    ASSERT_TRUE(engine);
    std::vector<RawOp> ops;
    for (size_t i = 0; i < fill; ++i) ops.push_back(make_x25519_op(keys[i].get(), nullptr));
    ASSERT_NO_FATAL_FAILURE(submit_and_flush(engine.get(), ops));
    for (size_t i = 0; i < fill; ++i) {
      EXPECT_EQ(sink_.records[i].bytes, raw_key(keys[i].get(), false)) << "lane " << i;
    }
    // 8 - fill spare lanes, then a batch of eight spares (fewer than eight were left).
    const size_t spares = fill == 8 ? 8 : 16 - fill;
    std::vector<std::vector<uint8_t>> seen;
    for (size_t i = 0; i < spares; ++i) {
      RawOp op = make_x25519_op(keys[0].get(), nullptr);
      bool asked = false;
      op.op->set_private_key(PrivateKeyFn{}, [&asked](std::vector<uint8_t>* data) {
        asked = true;
        data->assign(32, 9);
        return true;
      });
      OpOutput out;
      ASSERT_EQ(engine->submit(op.op, 100 + i, &out), SubmitResult::kDone)
          << "fill " << fill << " spare " << i;
      EXPECT_FALSE(asked) << "a spare needs no raw input";
      std::vector<uint8_t> priv = spare_pair(out);
      ASSERT_FALSE(priv.empty());
      EXPECT_EQ(std::count(seen.begin(), seen.end(), priv), 0) << "a spare handed out twice";
      seen.push_back(priv);
    }
    // The spares are gone: the next generation waits for a batch.
    RawOp last = make_x25519_op(keys[1].get(), nullptr);
    OpOutput out;
    EXPECT_EQ(engine->submit(last.op, 200, &out), SubmitResult::kPending) << "fill " << fill;
    sink_.records.clear();
    engine->flush();
    ASSERT_EQ(sink_.records.size(), 1u);
    EXPECT_EQ(sink_.records[0].bytes, raw_key(keys[1].get(), false));
  }
  EXPECT_EQ(metric("accelgate_offload_mb_recomputed_total"), recomputed_before);
}

// Spare key pairs made before a fork are never handed out after it: parent and child would
// share an ephemeral key.
TEST_F(MbEngineTest, X25519SparesDoNotCrossAFork) {
  Pkey key(EVP_PKEY_Q_keygen(nullptr, nullptr, "X25519"));
  auto engine = make_mb();
  ASSERT_TRUE(engine);
  ASSERT_NO_FATAL_FAILURE(submit_and_flush(engine.get(), {make_x25519_op(key.get(), nullptr)}));
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    RawOp op = make_x25519_op(key.get(), nullptr);
    OpOutput out;
    ::_exit(engine->submit(op.op, 2, &out) == SubmitResult::kPending ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child took a spare";
  // The parent still has its spares.
  RawOp op = make_x25519_op(key.get(), nullptr);
  OpOutput out;
  EXPECT_EQ(engine->submit(op.op, 3, &out), SubmitResult::kDone);
  EXPECT_FALSE(spare_pair(out).empty());
}

TEST_F(MbEngineTest, EcdhEveryFillOnBothCurvesMatchesOpenSsl) {
  auto engine = make_mb();
  ASSERT_TRUE(engine);
  const uint64_t recomputed_before = metric("accelgate_offload_mb_recomputed_total");
  for (const char* curve : {"P-256", "P-384"}) {
    std::vector<std::shared_ptr<const PrivateKey>> ours = {make_ec_key(curve), make_ec_key(curve)};
    std::vector<Pkey> peers;
    for (int i = 0; i < 8; ++i)
      peers.emplace_back(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", curve));
    ASSERT_NE(ours[0], nullptr);
    for (size_t fill = 1; fill <= 8; ++fill) {
      std::vector<RawOp> ops;
      for (size_t i = 0; i < fill; ++i) ops.push_back(make_ecdh_op(ours[i % 2], peers[i].get()));
      ASSERT_NO_FATAL_FAILURE(submit_and_flush(engine.get(), ops)) << curve;
      for (size_t i = 0; i < fill; ++i) {
        ASSERT_TRUE(sink_.records[i].ok) << curve << " fill " << fill;
        EXPECT_EQ(sink_.records[i].bytes, derive(ours[i % 2]->pkey(), peers[i].get()))
            << curve << " fill " << fill << " lane " << i;
      }
    }
    // A point off the curve fails its lane (OpenSSL refuses it too), not the batch.
    std::vector<RawOp> ops;
    for (size_t i = 0; i < 8; ++i) {
      std::vector<uint8_t> point = encoded_point(peers[i].get());
      if (i == 5) point.back() ^= 1;
      ops.push_back(make_ecdh_op(ours[0], peers[i].get(), point));
    }
    ASSERT_NO_FATAL_FAILURE(submit_and_flush(engine.get(), ops)) << curve;
    for (size_t i = 0; i < 8; ++i) {
      EXPECT_EQ(sink_.records[i].ok, i != 5) << curve << " lane " << i;
      if (i != 5) {
        EXPECT_EQ(sink_.records[i].bytes, derive(ours[0]->pkey(), peers[i].get()));
      }
    }
  }
  // An ECDH op with an RSA key is not mb's.
  Pkey peer(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  Op rsa_key(OpKind::kEcdhDerive, 256, [](OpOutput*) { return true; });
  rsa_key.set_private_key(keys_[0], [](std::vector<uint8_t>*) { return true; });
  EXPECT_FALSE(engine->accelerates(rsa_key));
  EXPECT_EQ(metric("accelgate_offload_mb_recomputed_total"), recomputed_before);
}

TEST_F(MbEngineTest, MoreThanEightMakeSeveralBatches) {
  auto engine = make_mb();
  ASSERT_TRUE(engine);
  std::vector<RawOp> ops;
  for (int i = 0; i < 11; ++i) {
    ops.push_back(make_rsa_op(keys_[i % 2]));
    OpOutput out;
    ASSERT_EQ(engine->submit(ops.back().op, 100 + i, &out), SubmitResult::kPending);
  }
  engine->flush();  // a batch of eight, then one of three
  ASSERT_EQ(sink_.records.size(), 11u);
  for (int i = 0; i < 11; ++i) {
    EXPECT_TRUE(sink_.records[i].ok);
    EXPECT_EQ(sink_.records[i].ticket, static_cast<uint64_t>(100 + i));
    EXPECT_EQ(public_op(keys_[i % 2]->pkey(), sink_.records[i].bytes), ops[i].input);
  }
}

TEST_F(MbEngineTest, AcceleratesOnlyWhatItHasKernelsAndAKeyFor) {
  auto engine = make_mb();
  ASSERT_TRUE(engine);
  EXPECT_TRUE(engine->accelerates(*make_rsa_op(keys_[0]).op));
  // No key, no raw input: nothing for the kernels.
  EXPECT_FALSE(engine->accelerates(Op(OpKind::kRsaSign, 2048, [](OpOutput*) { return true; })));
  // RSA decryption has no kernel; the other kinds not at 2048 bits.
  for (OpKind kind : {OpKind::kRsaDecrypt, OpKind::kEcdhDerive, OpKind::kX25519Derive,
                      OpKind::kX25519Keygen, OpKind::kGzip}) {
    Op op(kind, 2048, [](OpOutput*) { return true; });
    op.set_private_key(keys_[0], [](std::vector<uint8_t>*) { return true; });
    EXPECT_FALSE(engine->accelerates(op)) << op_kind_name(kind);
  }
  // A size without kernels, and a three-prime key the kernels refuse.
  auto small = make_key(1024);
  ASSERT_NE(small, nullptr);
  EXPECT_FALSE(engine->accelerates(*make_rsa_op(small).op));
  auto three = make_key(2048, 3);
  ASSERT_NE(three, nullptr);
  EXPECT_FALSE(engine->accelerates(*make_rsa_op(three).op));
}

TEST_F(MbEngineTest, RawInputThatCannotBeMadeFails) {
  auto engine = make_mb();
  ASSERT_TRUE(engine);
  OpOutput out;
  EXPECT_EQ(engine->submit(make_rsa_op(keys_[0], false).op, 1, &out), SubmitResult::kFailed);
  EXPECT_EQ(engine->inflight(), 0u);
}

TEST_F(MbEngineTest, MbFlushLetsAPartialBatchWait) {
  auto engine = make_mb(200ms);
  ASSERT_TRUE(engine);
  std::vector<RawOp> ops;
  Clock::time_point submitted = Clock::now();
  for (int i = 0; i < 3; ++i) {
    ops.push_back(make_rsa_op(keys_[0]));
    OpOutput out;
    ASSERT_EQ(engine->submit(ops.back().op, 1 + i, &out), SubmitResult::kPending);
  }
  engine->flush();
  EXPECT_TRUE(sink_.records.empty()) << "a partial batch left before mb_flush";
  EXPECT_FALSE(engine->poll()) << "the loop sleeps while a batch waits, it does not spin";
  const uint64_t iterations_before = sink_.iteration;
  ASSERT_TRUE(run_until([&] {
    engine->flush();  // in the loop's idle hook, as the dispatcher's: it asks the loop to wake
    return sink_.records.size() == 3;
  }));
  EXPECT_GE(sink_.records[0].at - submitted, 200ms) << "computed before mb_flush passed";
  // 200 ms at one iteration per 2 ms tick of run_until, and the wake-up flush asked for.
  EXPECT_LT(sink_.iteration - iterations_before, 1000u) << "the loop spun while the batch waited";
  EXPECT_FALSE(engine->poll());
  // A full batch does not wait.
  sink_.records.clear();
  for (int i = 0; i < 8; ++i) {
    ops.push_back(make_rsa_op(keys_[1]));
    OpOutput out;
    ASSERT_EQ(engine->submit(ops.back().op, 10 + i, &out), SubmitResult::kPending);
  }
  engine->flush();
  EXPECT_EQ(sink_.records.size(), 8u);
}

// A partial batch waits only while its class's batches come with company: a lone op after lone
// ops is computed at once (a quiet server adds no latency), and ops coming together make
// batches wait again.
TEST_F(MbEngineTest, MbFlushWaitsOnlyWhileOpsComeTogether) {
  auto engine = make_mb(20ms);
  ASSERT_TRUE(engine);
  std::vector<Pkey> keys;
  for (int i = 0; i < 2; ++i) keys.emplace_back(EVP_PKEY_Q_keygen(nullptr, nullptr, "X25519"));
  // submit_and_wait submits |n| derivations, flushes once and says whether they waited; then
  // completes them.
  auto submit_and_wait = [&](size_t n) {
    sink_.records.clear();
    std::vector<RawOp> ops;
    for (size_t i = 0; i < n; ++i) {
      ops.push_back(make_x25519_op(keys[0].get(), keys[1].get()));
      OpOutput out;
      EXPECT_EQ(engine->submit(ops.back().op, 1 + i, &out), SubmitResult::kPending);
    }
    engine->flush();
    bool waited = sink_.records.empty();
    EXPECT_TRUE(run_until([&] {
      engine->flush();
      return sink_.records.size() == n;
    }));
    return waited;
  };
  EXPECT_TRUE(submit_and_wait(1)) << "a fresh engine counts as busy";
  int lone = 1;
  while (submit_and_wait(1) && lone < 20) ++lone;
  EXPECT_LE(lone, 12) << "lone ops kept waiting";
  EXPECT_GE(lone, 3) << "one lone op ended the waits";
  int together = 0;
  while (!submit_and_wait(4) && together < 20) ++together;
  EXPECT_LE(together, 4) << "ops coming four at a time did not make batches wait again";
}

// With `fallback off` the software engine still serves what mb does not accelerate (here an
// X25519 op without a raw form), but never an op mb took on and failed.
TEST_F(MbEngineTest, FallbackOffStillServesWhatMbDoesNotAccelerate) {
  config::OffloadSettings s;
  s.crypto = "mb";
  s.fallback = false;
  auto d = Dispatcher::create(loop_.get(), s);
  ASSERT_TRUE(d) << d.error().message;
  auto x25519 = std::make_shared<Op>(OpKind::kX25519Derive, 256, [](OpOutput* out) {
    out->bytes = {'x'};
    return true;
  });
  EXPECT_TRUE((*d)->submit(x25519));
  EXPECT_TRUE(x25519->ok());
  EXPECT_EQ(x25519->engine(), "sw");
  OpRef failing = make_rsa_op(keys_[0], false).op;
  EXPECT_TRUE((*d)->submit(failing));
  EXPECT_FALSE(failing->ok()) << "fallback off: a failed mb op must not go to software";
  // And a good RSA op is mb's, completed at the loop's idle hook.
  RawOp good = make_rsa_op(keys_[0]);
  bool completed = false;
  good.op->set_on_complete([&](Op& op) { completed = op.ok(); });
  EXPECT_FALSE((*d)->submit(good.op));
  ASSERT_TRUE(run_until([&] { return completed; }));
  EXPECT_EQ(good.op->engine(), "mb");
  EXPECT_EQ(public_op(keys_[0]->pkey(), good.op->output().bytes), good.input);
}

}  // namespace
}  // namespace accelgate::offload

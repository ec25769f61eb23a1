// The mb engine: ops wait in per-loop batch queues and are computed at flush (the loop's idle
// hook), full batches by the multi-buffer kernels, batches too small for eight lanes by OpenSSL;
// ECDSA P-256/P-384 as well; mb_flush lets a partial batch wait; ops mb has no kernel for, or whose
// key it cannot use, are not accelerated, so the dispatcher gives them to sw even with `fallback
// off`.
//
// This machine may have no AVX-512 IFMA: the test hook ACCELGATE_TEST_MB_PORTABLE=1 lets the
// engine run on the portable back end (same kernels, same control flow, slower), so batching is
// tested everywhere. Every signature is checked with OpenSSL's public operation.

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>

#include <cstdlib>
#include <sstream>

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
      sink_.records.clear();
      std::vector<RawOp> ops;
      for (size_t i = 0; i < fill; ++i) {
        ops.push_back(make_ecdsa_op(k[i % 2]));
        ASSERT_TRUE(engine->accelerates(*ops.back().op)) << curve;
        OpOutput out;
        ASSERT_EQ(engine->submit(ops.back().op, 1 + i, &out), SubmitResult::kPending);
      }
      engine->flush();
      ASSERT_EQ(sink_.records.size(), fill);
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

TEST_F(MbEngineTest, AcceleratesOnlySignaturesWithAKeyItCanUse) {
  auto engine = make_mb();
  ASSERT_TRUE(engine);
  EXPECT_TRUE(engine->accelerates(*make_rsa_op(keys_[0]).op));
  // No key, no raw input: nothing for the kernels.
  EXPECT_FALSE(engine->accelerates(Op(OpKind::kRsaSign, 2048, [](OpOutput*) { return true; })));
  for (OpKind kind :
       {OpKind::kRsaDecrypt, OpKind::kEcdhDerive, OpKind::kX25519Derive, OpKind::kX25519Keygen}) {
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
  EXPECT_TRUE(engine->poll()) << "the loop must not block while a batch waits";
  ASSERT_TRUE(run_until([&] {
    engine->flush();
    return sink_.records.size() == 3;
  }));
  EXPECT_GE(sink_.records[0].at - submitted, 200ms) << "computed before mb_flush passed";
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

// With `fallback off` the software engine still serves what mb does not accelerate (X25519),
// but never an op mb took on and failed.
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

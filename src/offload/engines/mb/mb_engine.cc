// mb: private-key operations eight at a time on AVX-512 IFMA (src/crypto/mb), on the worker
// loop's own thread: RSA signatures, ECDSA signatures and ECDH on P-256 and P-384, X25519 key
// generation and derivation. Ops wait in per-loop batch queues, one per class (an algorithm
// and a size, X25519 key generation apart from derivation); the loop's idle hook
// (Dispatcher::on_idle -> flush) computes them before the loop blocks, so a loaded server fills
// whole batches and a quiet one adds no latency. A batch too small to pay for its eight lanes
// is computed in software instead. See README.md.

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string_view>

#include "accelgate/common/metrics.h"
#include "accelgate/crypto/mb/cpu.h"
#include "accelgate/crypto/mb/openssl_ec.h"
#include "accelgate/crypto/mb/openssl_rsa.h"
#include "engines/engines.h"

namespace accelgate::offload {
namespace {

namespace mb = crypto::mb;

constexpr size_t kLanes = 8;
// The batch classes: one queue each per loop. RSA-2048, 3072, 4096 signatures; ECDSA P-256 and
// P-384 signatures; ECDH P-256 and P-384; X25519 key generations (the fixed-base kernel) and
// derivations (the ladder).
enum Class : size_t {
  kRsa2048,
  kRsa3072,
  kRsa4096,
  kEcdsaP256,
  kEcdsaP384,
  kEcdhP256,
  kEcdhP384,
  kX25519Keygen,
  kX25519Derive,
  kClasses
};

// kSoftwareBelow[class]: a batch of fewer ops than this is computed with OpenSSL, one by one.
// An 8-lane batch costs the same whatever its fill, so the threshold is what eight lanes cost in
// OpenSSL operations, rounded up. Measured with bench/micro/mb_rsa and mb_ec (the checked
// kernels against OpenSSL 3.0 in the same run; Intel Xeon, model 207, 2026-12-02;
// src/crypto/mb/README.md): eight lanes cost 2.3 OpenSSL RSA-2048 signatures, 1.4 of RSA-3072
// and 4096; 2.1 P-256 signatures, 0.06 P-384 signatures; 3.4 P-256 ECDH derivations, 0.6 of
// P-384; 1.6 X25519 derivations and 0.3 X25519 key generations.
constexpr std::array<size_t, kClasses> kSoftwareBelow = {3, 2, 2, 3, 1, 4, 1, 1, 2};

int class_of(const Op& op) {
  switch (op.kind()) {
    case OpKind::kRsaSign:
      switch (op.key_bits()) {
        case 2048:
          return kRsa2048;
        case 3072:
          return kRsa3072;
        case 4096:
          return kRsa4096;
        default:
          return -1;
      }
    case OpKind::kEcdsaSign:
      if (op.key_bits() == 256) return kEcdsaP256;
      if (op.key_bits() == 384) return kEcdsaP384;
      return -1;
    case OpKind::kEcdhDerive:
      if (op.key_bits() == 256) return kEcdhP256;
      if (op.key_bits() == 384) return kEcdhP384;
      return -1;
    case OpKind::kX25519Keygen:
      if (op.key_bits() == 256) return kX25519Keygen;
      return -1;
    case OpKind::kX25519Derive:
      if (op.key_bits() == 256) return kX25519Derive;
      return -1;
    default:
      return -1;
  }
}

bool is_rsa(size_t cls) { return cls <= kRsa4096; }
bool is_x25519(size_t cls) { return cls == kX25519Keygen || cls == kX25519Derive; }

// raw_input_bytes is the length of an X25519 op's raw input (op.h): the private key, and for a
// derivation the peer's public key after it.
size_t raw_input_bytes(size_t cls) { return cls == kX25519Derive ? 64 : 32; }

// test_every_batch says whether the test hook ACCELGATE_TEST_MB_KERNELS_ALWAYS=1 sends batches
// of any fill to the kernels (so that tests submitting one op at a time exercise them).
bool test_every_batch() {
  const char* v = std::getenv("ACCELGATE_TEST_MB_KERNELS_ALWAYS");
  return v != nullptr && std::string_view(v) == "1";
}

// test_portable says whether the test hook ACCELGATE_TEST_MB_PORTABLE=1 lets the engine run on
// the portable back end where the CPU has no IFMA. About 40 times slower than IFMA and slower
// than OpenSSL: for tests of the engine on such machines only, never for service.
bool test_portable() {
  const char* v = std::getenv("ACCELGATE_TEST_MB_PORTABLE");
  return v != nullptr && std::string_view(v) == "1";
}

mb::Backend backend() {
  return mb::detect_ifma().usable ? mb::Backend::kIfma : mb::Backend::kPortable;
}

metrics::Counter& software_lanes() {
  static auto& c = metrics::Registry::global()
                       .counter("accelgate_offload_mb_software_total",
                                "Ops the mb engine computed with OpenSSL because their batch was "
                                "too small to pay for eight lanes.",
                                {})
                       .get();
  return c;
}

metrics::Counter& recomputed_lanes() {
  static auto& c = metrics::Registry::global()
                       .counter("accelgate_offload_mb_recomputed_total",
                                "Lanes whose result failed the mb engine's check and were "
                                "recomputed with OpenSSL (a fault: should stay 0).",
                                {})
                       .get();
  return c;
}

// PreparedKey is a key in the kernels' form, kept in the op's PrivateKey (once per key): RSA or
// EC (P-256, P-384).
struct PreparedKey {
  bool rsa = false;
  mb::RsaKey rsa_key;
  mb::EcKey ec_key;
};

// prepared returns |op|'s key in the kernels' form, or null when the kernels cannot use it (RSA
// with more than two primes, unequal halves or a large e; an EC key on another curve: software
// handles those).
const PreparedKey* prepared(const Op& op) {
  const auto& pk = op.private_key();
  if (pk == nullptr) return nullptr;
  std::shared_ptr<const void> p = pk->prepared([](EVP_PKEY* pkey) -> std::shared_ptr<const void> {
    auto key = std::make_shared<PreparedKey>();
    if (EVP_PKEY_is_a(pkey, "RSA") == 1) {
      key->rsa = true;
      if (mb::import_rsa_key(pkey, &key->rsa_key) != mb::ImportStatus::kOk) return nullptr;
      return key;
    }
    if (mb::import_ec_key(pkey, &key->ec_key) != mb::EcImportStatus::kOk) return nullptr;
    return key;
  });
  return static_cast<const PreparedKey*>(p.get());
}

class MbEngine final : public Engine {
 public:
  MbEngine(const config::OffloadSettings& settings, const EngineContext& context)
      : sink_(context.sink), flush_delay_(settings.mb_flush) {
    software_below_ = kSoftwareBelow;
    if (test_every_batch()) software_below_.fill(1);
    // Registered now, so /metrics shows them at 0 before anything happened.
    software_lanes();
    recomputed_lanes();
  }

  std::string_view name() const override { return "mb"; }

  bool accelerates(const Op& op) const override {
    int cls = class_of(op);
    if (cls < 0 || !op.has_raw_input()) return false;
    if (is_x25519(static_cast<size_t>(cls))) return true;  // raw keys only, no PrivateKey
    const PreparedKey* key = prepared(op);
    return key != nullptr && key->rsa == is_rsa(static_cast<size_t>(cls));
  }

  SubmitResult submit(const OpRef& op, uint64_t ticket, OpOutput*) override {
    int cls = class_of(*op);
    if (cls < 0) return SubmitResult::kFailed;
    const auto c = static_cast<size_t>(cls);
    const PreparedKey* key = is_x25519(c) ? nullptr : prepared(*op);
    if (key == nullptr && !is_x25519(c)) return SubmitResult::kFailed;
    Queued q{op, ticket, {}, Clock::now()};
    bool ok = op->raw_input(&q.input);
    if (is_x25519(c)) {
      ok = ok && q.input.size() == raw_input_bytes(c);
    } else if (key->rsa) {
      ok = ok && q.input.size() == static_cast<size_t>(key->rsa_key.modulus_bytes());
    }
    if (!ok) {
      OPENSSL_cleanse(q.input.data(), q.input.size());
      return SubmitResult::kFailed;
    }
    queues_[c].push_back(std::move(q));
    return SubmitResult::kPending;
  }

  // poll keeps the loop from blocking while a partial batch waits out mb_flush (the module in
  // other applications, where ops arrive one by one from another thread).
  bool poll() override {
    if (flush_delay_.count() == 0) return false;
    for (const auto& q : queues_) {
      if (!q.empty()) return true;
    }
    return false;
  }

  void flush() override {
    Clock::time_point now = Clock::now();
    for (size_t cls = 0; cls < kClasses; ++cls) {
      auto& queue = queues_[cls];
      while (!queue.empty()) {
        size_t n = std::min(queue.size(), kLanes);
        // A partial batch may wait for company up to mb_flush after its first op arrived.
        if (n < kLanes && now - queue.front().arrived < flush_delay_) break;
        run_batch(cls, n);
      }
    }
  }

  size_t inflight() const override {
    size_t n = 0;
    for (const auto& q : queues_) n += q.size();
    return n;
  }

 private:
  struct Queued {
    OpRef op;
    uint64_t ticket;
    std::vector<uint8_t> input;  // the raw input (op.h, RawInputFn)
    Clock::time_point arrived;
  };

  // run_batch computes the first |n| ops of class |cls| and completes them (loop thread, from
  // the idle hook: never inside submit, never inside a TLS job's small stack).
  void run_batch(size_t cls, size_t n) {
    auto& queue = queues_[cls];
    std::vector<Queued> batch;
    batch.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      batch.push_back(std::move(queue.front()));
      queue.pop_front();
    }
    std::vector<OpOutput> outputs(n);
    std::vector<bool> ok(n, false);
    if (n < software_below_[cls]) {
      for (size_t i = 0; i < n; ++i) {
        if (is_rsa(cls)) {
          outputs[i].bytes.resize(batch[i].input.size());
          ok[i] = mb::rsa_private_software(batch[i].op->private_key()->pkey(),
                                           batch[i].input.data(), outputs[i].bytes.data());
        } else {
          ok[i] = batch[i].op->compute_in_software(&outputs[i]);
        }
        software_lanes().inc();
      }
    } else {
      mb::CheckedOutcome outcome = run_kernels(cls, batch, &outputs);
      for (size_t i = 0; i < n; ++i) {
        auto bit = static_cast<uint8_t>(1u << i);
        ok[i] = (outcome.ok & bit) != 0 || (outcome.recomputed & bit) != 0;
        if ((outcome.recomputed & bit) != 0) recomputed_lanes().inc();
      }
    }
    observe_batch_size(n);
    if (is_x25519(cls)) {
      for (Queued& q : batch) OPENSSL_cleanse(q.input.data(), q.input.size());
    }
    for (size_t i = 0; i < n; ++i) {
      if (!ok[i]) outputs[i].bytes.clear();
      sink_->complete(batch[i].op, batch[i].ticket, ok[i], std::move(outputs[i]));
    }
  }

  static mb::CheckedOutcome run_kernels(size_t cls, const std::vector<Queued>& batch,
                                        std::vector<OpOutput>* outputs) {
    switch (cls) {
      case kEcdsaP256:
      case kEcdsaP384:
        return run_ecdsa(batch, outputs);
      case kEcdhP256:
        return run_ecdh(mb::EcCurve::kP256, batch, outputs);
      case kEcdhP384:
        return run_ecdh(mb::EcCurve::kP384, batch, outputs);
      case kX25519Keygen:
      case kX25519Derive:
        return run_x25519(batch, outputs);
      default:
        return run_rsa(batch, outputs);
    }
  }

  static mb::CheckedOutcome run_rsa(const std::vector<Queued>& batch,
                                    std::vector<OpOutput>* outputs) {
    std::array<mb::CheckedLane, kLanes> lanes{};
    for (size_t i = 0; i < batch.size(); ++i) {
      (*outputs)[i].bytes.resize(batch[i].input.size());
      lanes[i] = {&prepared(*batch[i].op)->rsa_key, batch[i].op->private_key()->pkey(),
                  batch[i].input.data(), (*outputs)[i].bytes.data()};
    }
    return mb::rsa_private_checked(backend(), {lanes.data(), batch.size()});
  }

  static mb::CheckedOutcome run_ecdsa(const std::vector<Queued>& batch,
                                      std::vector<OpOutput>* outputs) {
    std::array<mb::EcdsaCheckedLane, kLanes> lanes{};
    for (size_t i = 0; i < batch.size(); ++i) {
      lanes[i] = {&prepared(*batch[i].op)->ec_key, batch[i].op->private_key()->pkey(),
                  batch[i].input.data(), batch[i].input.size(), &(*outputs)[i].bytes};
    }
    return mb::ecdsa_sign_checked(backend(), {lanes.data(), batch.size()});
  }

  static mb::CheckedOutcome run_ecdh(mb::EcCurve curve, const std::vector<Queued>& batch,
                                     std::vector<OpOutput>* outputs) {
    std::array<mb::EcdhCheckedLane, kLanes> lanes{};
    for (size_t i = 0; i < batch.size(); ++i) {
      std::vector<uint8_t>& out = (*outputs)[i].bytes;
      out.resize(static_cast<size_t>(mb::ec_field_bytes(curve)));
      lanes[i] = {&prepared(*batch[i].op)->ec_key,
                  batch[i].op->private_key()->pkey(),
                  nullptr,
                  batch[i].input.data(),
                  batch[i].input.size(),
                  out.data()};
    }
    return mb::ecdh_derive_checked(backend(), curve, {lanes.data(), batch.size()});
  }

  // run_x25519: a key generation's output is the public key (op.h), a derivation's the secret.
  static mb::CheckedOutcome run_x25519(const std::vector<Queued>& batch,
                                       std::vector<OpOutput>* outputs) {
    std::array<mb::X25519CheckedLane, kLanes> lanes{};
    for (size_t i = 0; i < batch.size(); ++i) {
      std::vector<uint8_t>& out = (*outputs)[i].bytes;
      out.resize(32);
      const uint8_t* in = batch[i].input.data();
      lanes[i] = {in, batch[i].input.size() == 64 ? in + 32 : nullptr, out.data()};
    }
    return mb::x25519_checked(backend(), {lanes.data(), batch.size()});
  }

  CompletionSink* sink_;
  const std::chrono::microseconds flush_delay_;
  std::array<size_t, kClasses> software_below_{};
  std::array<std::deque<Queued>, kClasses> queues_;
};

}  // namespace

std::string probe_mb(const config::OffloadSettings&) {
  mb::IfmaSupport s = mb::detect_ifma();
  if (s.usable || test_portable()) return {};
  return std::string("needs AVX-512 IFMA: ") + s.reason;
}

Result<std::unique_ptr<Engine>> create_mb(const config::OffloadSettings& settings,
                                          const EngineContext& context) {
  if (std::string reason = probe_mb(settings); !reason.empty()) return Error{reason};
  mb::ec_build_tables();  // the fixed-base tables, now rather than in the first handshake
  return std::unique_ptr<Engine>(new MbEngine(settings, context));
}

}  // namespace accelgate::offload

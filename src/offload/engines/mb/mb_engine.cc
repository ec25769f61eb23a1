// mb: RSA private-key operations eight at a time on AVX-512 IFMA (src/crypto/mb), on the worker
// loop's own thread. Ops wait in per-loop batch queues, one per key size; the loop's idle hook
// (Dispatcher::on_idle -> flush) computes them before the loop blocks, so a loaded server fills
// whole batches and a quiet one adds no latency. A batch too small to pay for its eight lanes
// is computed in software instead. See README.md.

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
// The batch classes: one queue each per loop. RSA-2048, 3072, 4096 signatures, then ECDSA
// P-256 and P-384 signatures.
enum Class : size_t { kRsa2048, kRsa3072, kRsa4096, kEcdsaP256, kEcdsaP384, kClasses };

// kSoftwareBelow[class]: a batch of fewer ops than this is computed with OpenSSL, one by one.
// An 8-lane batch costs the same whatever its fill. RSA, measured on AMD Zen 5 with
// bench/micro/mb_rsa (src/crypto/mb/README.md): eight lanes cost 2.5 OpenSSL signatures for
// RSA-2048 (3.2x) and about 1.4 for RSA-3072 and 4096 (5.7x), so two RSA-2048 ops, or one larger
// one, are cheaper in software. ECDSA, *estimated* from the IFMA build's instruction counts (no
// IFMA machine has run it yet, src/crypto/mb/README.md): eight P-256 lanes about one OpenSSL
// signature, so a lone op goes to OpenSSL; P-384, where OpenSSL 3.0 is slow, always batches.
constexpr std::array<size_t, kClasses> kSoftwareBelow = {3, 2, 2, 2, 1};

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
    default:
      return -1;
  }
}

bool is_rsa(size_t cls) { return cls <= kRsa4096; }

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
    // Registered now, so /metrics shows them at 0 before anything happened.
    software_lanes();
    recomputed_lanes();
  }

  std::string_view name() const override { return "mb"; }

  bool accelerates(const Op& op) const override {
    int cls = class_of(op);
    if (cls < 0) return false;
    const PreparedKey* key = prepared(op);
    return key != nullptr && key->rsa == is_rsa(static_cast<size_t>(cls));
  }

  SubmitResult submit(const OpRef& op, uint64_t ticket, OpOutput*) override {
    const PreparedKey* key = prepared(*op);
    int cls = class_of(*op);
    if (key == nullptr || cls < 0) return SubmitResult::kFailed;
    Queued q{op, ticket, {}, Clock::now()};
    // RSA: the encoded message, modulus bytes; ECDSA: the digest.
    if (!op->raw_input(&q.input) ||
        (key->rsa && q.input.size() != static_cast<size_t>(key->rsa_key.modulus_bytes()))) {
      return SubmitResult::kFailed;
    }
    queues_[static_cast<size_t>(cls)].push_back(std::move(q));
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
    std::vector<uint8_t> input;  // RSA: the encoded message, modulus bytes; ECDSA: the digest
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
    if (n < kSoftwareBelow[cls]) {
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
      mb::CheckedOutcome outcome =
          is_rsa(cls) ? run_rsa(batch, &outputs) : run_ecdsa(batch, &outputs);
      for (size_t i = 0; i < n; ++i) {
        auto bit = static_cast<uint8_t>(1u << i);
        ok[i] = (outcome.ok & bit) != 0 || (outcome.recomputed & bit) != 0;
        if ((outcome.recomputed & bit) != 0) recomputed_lanes().inc();
      }
    }
    observe_batch_size(n);
    for (size_t i = 0; i < n; ++i) {
      if (!ok[i]) outputs[i].bytes.clear();
      sink_->complete(batch[i].op, batch[i].ticket, ok[i], std::move(outputs[i]));
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

  CompletionSink* sink_;
  const std::chrono::microseconds flush_delay_;
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

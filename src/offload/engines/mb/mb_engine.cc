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
#include "accelgate/crypto/mb/openssl_rsa.h"
#include "engines/engines.h"

namespace accelgate::offload {
namespace {

namespace mb = crypto::mb;

constexpr size_t kLanes = 8;
constexpr size_t kClasses = 3;  // RSA-2048, 3072, 4096

// kSoftwareBelow[class]: a batch of fewer ops than this is computed with OpenSSL, one by one.
// An 8-lane batch costs the same whatever its fill; measured on AMD Zen 5 with
// bench/micro/mb_rsa (src/crypto/mb/README.md), eight lanes cost 2.5 OpenSSL signatures for
// RSA-2048 (3.2x) and about 1.4 for RSA-3072 and 4096 (5.7x): two RSA-2048 ops, or one larger
// one, are cheaper in software.
constexpr std::array<size_t, kClasses> kSoftwareBelow = {3, 2, 2};

int class_of(int bits) {
  switch (bits) {
    case 2048:
      return 0;
    case 3072:
      return 1;
    case 4096:
      return 2;
    default:
      return -1;
  }
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

// PreparedKey is an RSA key in the kernels' form, kept in the op's PrivateKey (once per key).
struct PreparedKey {
  mb::RsaKey key;
};

// prepared returns |op|'s key in the kernels' form, or null when the kernels cannot use it
// (more than two primes, unequal halves, a large e: software handles those).
const PreparedKey* prepared(const Op& op) {
  const auto& pk = op.private_key();
  if (pk == nullptr) return nullptr;
  std::shared_ptr<const void> p = pk->prepared([](EVP_PKEY* pkey) -> std::shared_ptr<const void> {
    auto key = std::make_shared<PreparedKey>();
    if (mb::import_rsa_key(pkey, &key->key) != mb::ImportStatus::kOk) return nullptr;
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
    return op.kind() == OpKind::kRsaSign && class_of(op.key_bits()) >= 0 && prepared(op) != nullptr;
  }

  SubmitResult submit(const OpRef& op, uint64_t ticket, OpOutput*) override {
    const PreparedKey* key = prepared(*op);
    int cls = class_of(op->key_bits());
    if (key == nullptr || cls < 0) return SubmitResult::kFailed;
    Queued q{op, ticket, {}, Clock::now()};
    if (!op->raw_input(&q.input) ||
        q.input.size() != static_cast<size_t>(key->key.modulus_bytes())) {
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
    std::vector<uint8_t> input;  // the encoded message, modulus bytes
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
        outputs[i].bytes.resize(batch[i].input.size());
        ok[i] = mb::rsa_private_software(batch[i].op->private_key()->pkey(), batch[i].input.data(),
                                         outputs[i].bytes.data());
        software_lanes().inc();
      }
    } else {
      std::array<mb::CheckedLane, kLanes> lanes{};
      for (size_t i = 0; i < n; ++i) {
        outputs[i].bytes.resize(batch[i].input.size());
        lanes[i] = {&prepared(*batch[i].op)->key, batch[i].op->private_key()->pkey(),
                    batch[i].input.data(), outputs[i].bytes.data()};
      }
      mb::CheckedOutcome outcome = mb::rsa_private_checked(backend(), {lanes.data(), n});
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
  return std::unique_ptr<Engine>(new MbEngine(settings, context));
}

}  // namespace accelgate::offload

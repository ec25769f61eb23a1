// mb: private-key operations eight at a time on AVX-512 IFMA (src/crypto/mb), on the worker
// loop's own thread: RSA signatures, ECDSA signatures and ECDH on P-256 and P-384, X25519 key
// generation and derivation. Ops wait in per-loop batch queues, one per class (an algorithm
// and a size, X25519 key generation apart from derivation); the loop's idle hook
// (Dispatcher::on_idle -> flush) computes them before the loop blocks, so a loaded server fills
// whole batches and a quiet one adds no latency. A batch too small to pay for its eight lanes
// is computed in software instead. A batch of X25519 key generations fills its empty lanes with
// spare key pairs, which later key generations take at once, without waiting for a batch. See
// README.md.

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <sys/prctl.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string_view>

#include "accelgate/common/metrics.h"
#include "accelgate/crypto/mb/cpu.h"
#include "accelgate/crypto/mb/openssl_ec.h"
#include "accelgate/crypto/mb/openssl_rsa.h"
#include "accelgate/event/event_loop.h"
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
// kernels against OpenSSL 3.0 in the same run; src/crypto/mb/README.md), eight lanes cost, on
// an Intel Xeon (model 207, 2026-12-02) / an AMD Zen 5 (2026-12-04): 2.3 / 2.2 OpenSSL RSA-2048
// signatures, 1.4 / 1.3 of RSA-3072 and 4096; 2.1 / 1.3 P-256 signatures, 0.06 / 0.13 P-384
// signatures; 3.4 / 2.9 P-256 ECDH derivations, 0.6 / 0.5 of P-384; 1.6 / 1.2 X25519
// derivations and 0.3 / 0.3 X25519 key generations. Where the machines round differently the
// cheaper choice over both is kept: a pair of P-256 signatures goes to the kernels (5 % dearer
// than OpenSSL on the Xeon, 35 % cheaper on Zen 5), three P-256 derivations go to OpenSSL (13 %
// cheaper on the Xeon, 3 % dearer on Zen 5).
constexpr std::array<size_t, kClasses> kSoftwareBelow = {3, 2, 2, 2, 1, 4, 1, 1, 2};

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

// g_forks counts the forks of this process (pthread_atfork, child side): spare X25519 key pairs
// made before a fork are never handed out after it, so that two processes never share an
// ephemeral key.
std::atomic<uint64_t> g_forks{0};

uint64_t forks() {
  static const bool registered = pthread_atfork(nullptr, nullptr, [] {
                                   g_forks.fetch_add(1, std::memory_order_relaxed);
                                 }) == 0;
  return registered ? g_forks.load(std::memory_order_relaxed) : UINT64_MAX;
}

// draw_x25519_private fills |count| raw private keys of kX25519Bytes from OpenSSL's private
// DRBG, clamped as RFC 7748 §5 says (as OpenSSL's own key generation stores them).
bool draw_x25519_private(uint8_t* keys, size_t count) {
  if (RAND_priv_bytes_ex(nullptr, keys, count * kX25519Bytes, 0) != 1) return false;
  for (size_t i = 0; i < count; ++i) clamp_x25519_private(keys + i * kX25519Bytes);
  return true;
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
      : loop_(context.loop), sink_(context.sink), flush_delay_(settings.mb_flush) {
    software_below_ = kSoftwareBelow;
    if (test_every_batch()) software_below_.fill(1);
    fill_avg_.fill(static_cast<double>(kLanes));
    // Registered now, so /metrics shows them at 0 before anything happened.
    software_lanes();
    recomputed_lanes();
    spares_.reserve(kSpares);  // never reallocated: a spare's bytes are wiped where they lie
    spares_forks_ = forks();
  }

  ~MbEngine() override { drop_spares(); }

  std::string_view name() const override { return "mb"; }

  bool accelerates(const Op& op) const override {
    int cls = class_of(op);
    if (cls < 0 || !op.has_raw_input()) return false;
    if (is_x25519(static_cast<size_t>(cls))) return true;  // raw keys only, no PrivateKey
    const PreparedKey* key = prepared(op);
    return key != nullptr && key->rsa == is_rsa(static_cast<size_t>(cls));
  }

  SubmitResult submit(const OpRef& op, uint64_t ticket, OpOutput* out) override {
    int cls = class_of(*op);
    if (cls < 0) return SubmitResult::kFailed;
    const auto c = static_cast<size_t>(cls);
    const PreparedKey* key = is_x25519(c) ? nullptr : prepared(*op);
    if (key == nullptr && !is_x25519(c)) return SubmitResult::kFailed;
    if (c == kX25519Keygen) {
      keygen_demand_ = true;
      if (take_spare(out)) return SubmitResult::kDone;
    }
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

  // poll keeps a loop that flush cannot ask to wake (none given) from blocking while a partial
  // batch waits out mb_flush.
  bool poll() override {
    if (flush_delay_.count() == 0 || loop_ != nullptr) return false;
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
        // A partial batch may wait for company up to mb_flush after its first op arrived, while
        // its class has company to wait for: a quiet loop computes a lone op at once.
        if (n < kLanes && busy(cls) && now - queue.front().arrived < flush_delay_) {
          if (loop_ != nullptr) wake_loop_by(queue.front().arrived + flush_delay_);
          break;
        }
        fill_avg_[cls] += (static_cast<double>(n) - fill_avg_[cls]) / 4;
        run_batch(cls, n);
      }
    }
    // Key generations were asked for since the last flush: keep at least a batch of spares, so
    // that the next ones complete at once (eight lanes cost about one OpenSSL key generation).
    if (keygen_demand_ && spares_.size() < kLanes) {
      std::vector<OpOutput> none;
      run_x25519_keygen({}, &none);
    }
    keygen_demand_ = false;
  }

  // busy says whether class |cls|'s recent batches held more than one op on average (an
  // exponential average over about four batches): then ops arrive together and a partial batch
  // is worth a wait.
  bool busy(size_t cls) const { return fill_avg_[cls] >= 1.5; }

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

  mb::CheckedOutcome run_kernels(size_t cls, const std::vector<Queued>& batch,
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
        return run_x25519_keygen(batch, outputs);
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

  // run_x25519_keygen computes a batch of key generations (none: a batch of spares only) and
  // fills the batch's empty lanes with spare key pairs (private keys drawn here; each checked as
  // every lane is), up to kSpares in all. Eight lanes cost what one costs, so a spare is nearly
  // free, and a key generation that finds one completes in submit: its handshake goes on to the
  // derivation without waiting a loop iteration for a batch.
  mb::CheckedOutcome run_x25519_keygen(const std::vector<Queued>& batch,
                                       std::vector<OpOutput>* outputs) {
    const size_t n = batch.size();
    if (spares_forks_ != forks()) drop_spares();
    size_t extra = std::min(kLanes - n, kSpares - spares_.size());
    std::array<uint8_t, kLanes * kX25519Bytes> privs{};
    std::array<uint8_t, kLanes * kX25519Bytes> pubs{};
    if (extra > 0 && !draw_x25519_private(privs.data(), extra)) extra = 0;
    std::array<mb::X25519CheckedLane, kLanes> lanes{};
    for (size_t i = 0; i < n; ++i) {
      std::vector<uint8_t>& out = (*outputs)[i].bytes;
      out.resize(kX25519Bytes);
      lanes[i] = {batch[i].input.data(), nullptr, out.data()};
    }
    for (size_t j = 0; j < extra; ++j) {
      lanes[n + j] = {privs.data() + j * kX25519Bytes, nullptr, pubs.data() + j * kX25519Bytes};
    }
    mb::CheckedOutcome outcome = mb::x25519_checked(backend(), {lanes.data(), n + extra});
    for (size_t j = 0; j < extra; ++j) {
      auto bit = static_cast<uint8_t>(1u << (n + j));
      if ((outcome.recomputed & bit) != 0) recomputed_lanes().inc();
      if ((outcome.ok & bit) == 0 && (outcome.recomputed & bit) == 0) continue;
      auto& spare = spares_.emplace_back();
      std::memcpy(spare.data(), privs.data() + j * kX25519Bytes, kX25519Bytes);
      std::memcpy(spare.data() + kX25519Bytes, pubs.data() + j * kX25519Bytes, kX25519Bytes);
    }
    OPENSSL_cleanse(privs.data(), privs.size());
    // The callers see the real lanes only.
    const auto real = static_cast<uint8_t>((1u << n) - 1);
    return {static_cast<uint8_t>(outcome.ok & real),
            static_cast<uint8_t>(outcome.recomputed & real),
            static_cast<uint8_t>(outcome.failed & real)};
  }

  // take_spare gives a key generation a spare key pair: the private key then the public key in
  // |out|'s bytes (op.h, kX25519Keygen), the spare wiped. False when there is none.
  bool take_spare(OpOutput* out) {
    if (spares_forks_ != forks()) drop_spares();
    if (spares_.empty()) return false;
    std::array<uint8_t, 2 * kX25519Bytes>& spare = spares_.back();
    out->bytes.assign(spare.begin(), spare.end());
    OPENSSL_cleanse(spare.data(), spare.size());
    spares_.pop_back();
    return true;
  }

  void drop_spares() {
    for (auto& spare : spares_) OPENSSL_cleanse(spare.data(), spare.size());
    spares_.clear();
    spares_forks_ = forks();
  }

  // wake_loop_by has the loop sleep no later than |when| (a partial batch's end of wait), with
  // this thread's timer slack cut from Linux's 50us to 5us, so that the wakeup comes on time.
  void wake_loop_by(Clock::time_point when) {
    static thread_local const bool slack_set = prctl(PR_SET_TIMERSLACK, 5000UL, 0, 0, 0) == 0;
    (void)slack_set;
    loop_->wake_by(when);
  }

  event::EventLoop* loop_;
  CompletionSink* sink_;
  const std::chrono::microseconds flush_delay_;
  std::array<size_t, kClasses> software_below_{};
  std::array<std::deque<Queued>, kClasses> queues_;
  // fill_avg_[cls]: the recent batches' fill (busy); a fresh engine counts as busy.
  std::array<double, kClasses> fill_avg_{};
  // Spare X25519 key pairs (run_x25519_keygen), private key then public key; made in this
  // process as of spares_forks_ (forks()). keygen_demand_: a key generation was submitted since
  // the last flush.
  static constexpr size_t kSpares = 2 * kLanes;
  bool keygen_demand_ = false;
  std::vector<std::array<uint8_t, 2 * kX25519Bytes>> spares_;
  uint64_t spares_forks_ = 0;
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

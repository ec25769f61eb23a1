#include "accelgate/offload/dispatcher.h"

#include <map>
#include <unordered_map>

#include "accelgate/common/log.h"
#include "accelgate/common/metrics.h"
#include "accelgate/offload/registry.h"
#include "engines/engines.h"

namespace accelgate::offload {
namespace {

thread_local Dispatcher* g_current = nullptr;

// The `result` label of accelgate_offload_ops_total, per engine attempt.
enum Outcome : uint8_t {
  kOk,        // the engine computed the op, first in its chain
  kFallback,  // the engine computed the op after an earlier engine did not
  kError,     // the engine failed the op
  kTimeout,   // the op passed its deadline on this engine
  kBusy,      // the engine had no capacity; the op went on without it
  kOutcomeCount,
};
constexpr std::string_view kOutcomeNames[kOutcomeCount] = {"ok", "fallback", "error", "timeout",
                                                           "busy"};

metrics::Family<metrics::Counter>& ops_family() {
  static auto& f = metrics::Registry::global().counter(
      "accelgate_offload_ops_total",
      "Offload attempts by engine, op and result (ok, fallback, error, timeout, busy).",
      {"engine", "op", "result"});
  return f;
}
metrics::Family<metrics::Gauge>& inflight_family() {
  static auto& f = metrics::Registry::global().gauge(
      "accelgate_offload_inflight", "Ops submitted to an engine and not completed yet.",
      {"engine"});
  return f;
}
metrics::Family<metrics::Histogram>& latency_family() {
  static auto& f = metrics::Registry::global().histogram(
      "accelgate_offload_latency_seconds",
      "Time from submission to completion of the ops an engine computed.", {"engine", "op"},
      {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1});
  return f;
}
metrics::Family<metrics::Gauge>& up_family() {
  static auto& f = metrics::Registry::global().gauge(
      "accelgate_offload_engine_up",
      "1 while an engine is in service, 0 while the circuit breaker keeps it out.", {"engine"});
  return f;
}
metrics::Histogram& batch_histogram() {
  static auto& h =
      metrics::Registry::global()
          .histogram("accelgate_offload_batch_size", "Completions an engine reaped at once.", {},
                     {1, 2, 4, 8, 16, 32, 64})
          .get();
  return h;
}

}  // namespace

void observe_batch_size(size_t n) { batch_histogram().observe(static_cast<double>(n)); }

// ---- CircuitBreaker ----

CircuitBreaker::CircuitBreaker(std::string name) : name_(std::move(name)) {
  up_family().with({name_}).set(1);
}

CircuitBreaker& CircuitBreaker::for_engine(std::string_view name) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<CircuitBreaker>, std::less<>> breakers;
  std::lock_guard lock(mutex);
  auto it = breakers.find(name);
  if (it == breakers.end()) {
    std::string key(name);
    it = breakers.emplace(key, std::unique_ptr<CircuitBreaker>(new CircuitBreaker(key))).first;
  }
  return *it->second;
}

bool CircuitBreaker::allow(Clock::time_point now) {
  if (!out_.load(std::memory_order_relaxed)) return true;
  std::lock_guard lock(mutex_);
  if (!out_.load(std::memory_order_relaxed)) return true;
  if (probing_ || now < retry_at_) return false;
  probing_ = true;  // this op is the probe; the others keep falling back until it answers
  return true;
}

void CircuitBreaker::record_success() {
  if (!out_.load(std::memory_order_relaxed) && failures_.load(std::memory_order_relaxed) == 0) {
    return;
  }
  std::lock_guard lock(mutex_);
  failures_.store(0, std::memory_order_relaxed);
  if (out_.load(std::memory_order_relaxed)) {
    out_.store(false, std::memory_order_relaxed);
    probing_ = false;
    up_family().with({name_}).set(1);
    AG_LOG_NOTICE("offload engine \"%s\" answered its probe and is back in service", name_.c_str());
  }
}

void CircuitBreaker::record_failure(Clock::time_point now, std::chrono::milliseconds retry) {
  std::lock_guard lock(mutex_);
  if (out_.load(std::memory_order_relaxed)) {
    if (!probing_) return;  // a late failure of an op sent before the engine went out
    probing_ = false;
    retry_at_ = now + retry;
    AG_LOG_WARN("offload engine \"%s\" failed its probe; next probe in %lld ms", name_.c_str(),
                static_cast<long long>(retry.count()));
    return;
  }
  if (failures_.fetch_add(1, std::memory_order_relaxed) + 1 < kFailuresToOpen) return;
  out_.store(true, std::memory_order_relaxed);
  retry_at_ = now + retry;
  up_family().with({name_}).set(0);
  AG_LOG_WARN(
      "offload engine \"%s\" failed %d ops in a row: taken out for %lld ms, ops go to "
      "the next engine",
      name_.c_str(), kFailuresToOpen, static_cast<long long>(retry.count()));
}

void CircuitBreaker::release_probe() {
  std::lock_guard lock(mutex_);
  probing_ = false;
}

// ---- Dispatcher ----

// EngineSlot is one engine of a chain with its breaker and cached metric children.
struct Dispatcher::EngineSlot {
  std::unique_ptr<Engine> engine;
  CircuitBreaker* breaker = nullptr;
  metrics::Gauge* inflight_gauge = nullptr;
  size_t pending = 0;  // attempts the dispatcher waits for on this engine
  metrics::Counter* counters[kOpKindCount][kOutcomeCount] = {};
  metrics::Histogram* latency[kOpKindCount] = {};

  void count(OpKind kind, Outcome outcome) {
    auto& c = counters[static_cast<size_t>(kind)][outcome];
    if (c == nullptr) {
      c = &ops_family().with({engine->name(), op_kind_name(kind), kOutcomeNames[outcome]});
    }
    c->inc();
  }
  // warn logs a degraded attempt at most once per 5 s per engine and loop (STYLE.md: a degraded
  // mode has a counter and a rate-limited warn line).
  void warn(OpKind kind, const char* what, Clock::time_point now, bool fallback) {
    if (now - last_warn < std::chrono::seconds(5)) return;
    last_warn = now;
    std::string_view e = engine->name();
    std::string_view k = op_kind_name(kind);
    AG_LOG_WARN(
        "offload engine \"%.*s\" %s a %.*s op%s (logged once per 5 s; see "
        "accelgate_offload_ops_total)",
        static_cast<int>(e.size()), e.data(), what, static_cast<int>(k.size()), k.data(),
        fallback ? "; it goes to the next engine" : "");
  }
  Clock::time_point last_warn{};

  void observe_latency(OpKind kind, Clock::duration d) {
    auto& h = latency[static_cast<size_t>(kind)];
    if (h == nullptr) h = &latency_family().with({engine->name(), op_kind_name(kind)});
    h->observe(std::chrono::duration<double>(d).count());
  }
};

Dispatcher::Dispatcher(event::EventLoop* loop)
    : loop_(loop), deadline_timer_(loop, [this] { expire_deadlines(); }) {}

Dispatcher::~Dispatcher() {
  if (g_current == this) g_current = nullptr;
}

Result<std::unique_ptr<Dispatcher>> Dispatcher::create(event::EventLoop* loop,
                                                       const config::OffloadSettings& settings) {
  std::unique_ptr<Dispatcher> d(new Dispatcher(loop));
  if (Status st = d->build(settings); !st) return st.error();
  d->hook_idle();
  return d;
}

void Dispatcher::hook_idle() {
  // The loop keeps its idle hooks for its whole life; the hook must not outlive this dispatcher.
  alive_ = std::make_shared<Dispatcher*>(this);
  loop_->add_idle_hook([alive = std::weak_ptr<Dispatcher*>(alive_)] {
    auto self = alive.lock();
    return self ? (*self)->on_idle() : false;
  });
}

Dispatcher* Dispatcher::current() { return g_current; }
void Dispatcher::make_current() { g_current = this; }

Status Dispatcher::build(const config::OffloadSettings& settings) {
  std::string primary = resolve_crypto(settings);
  if (primary == "off") primary = "sw";
  // sw ends every chain: with `fallback off` it still computes the ops that no engine before it
  // accelerates (mb has no ECDSA kernel, a card may lack X25519), but never one that an engine
  // before it failed (run_from).
  std::vector<std::string> names{primary};
  if (primary != "sw") names.emplace_back("sw");

  std::vector<std::unique_ptr<Engine>> engines;
  for (const std::string& name : names) {
    const EngineFactory* factory = find_engine(name);
    std::string reason = factory == nullptr ? "unknown engine" : factory->probe(settings);
    Result<std::unique_ptr<Engine>> engine = Error{reason};
    if (reason.empty()) engine = factory->create(settings, EngineContext{loop_, this});
    if (!engine) {
      std::string message =
          "offload engine \"" + name + "\" cannot be used: " + engine.error().message;
      if (!settings.fallback || name == "sw") return Error{message};
      AG_LOG_WARN("%s; using software (fallback on)", message.c_str());
      continue;
    }
    engines.push_back(std::move(*engine));
  }
  install(std::move(engines), settings);
  software_last_ = chain_.size() > 1;
  return {};
}

void Dispatcher::install(std::vector<std::unique_ptr<Engine>> engines,
                         const config::OffloadSettings& settings) {
  std::vector<std::shared_ptr<EngineSlot>> chain;
  for (auto& engine : engines) {
    auto slot = std::make_shared<EngineSlot>();
    slot->engine = std::move(engine);
    slot->breaker = &CircuitBreaker::for_engine(slot->engine->name());
    slot->inflight_gauge = &inflight_family().with({slot->engine->name()});
    chain.push_back(std::move(slot));
  }
  for (auto& slot : chain_) {
    if (slot->pending > 0) retired_.push_back(std::move(slot));
  }
  chain_ = std::move(chain);
  uses_library_fn_ = false;
  for (const auto& slot : chain_) uses_library_fn_ |= slot->engine->uses_library_fn();
  settings_ = settings;
  ++generation_;
}

std::unique_ptr<Dispatcher> Dispatcher::create_with_engines(
    event::EventLoop* loop, const config::OffloadSettings& settings,
    std::vector<std::unique_ptr<Engine>> engines) {
  std::unique_ptr<Dispatcher> d(new Dispatcher(loop));
  d->install(std::move(engines), settings);
  d->hook_idle();
  return d;
}

Status Dispatcher::reconfigure(const config::OffloadSettings& settings) { return build(settings); }

std::string_view Dispatcher::primary_engine() const {
  return chain_.empty() ? std::string_view("none") : chain_.front()->engine->name();
}

bool Dispatcher::submit(const OpRef& op) {
  op->done_ = false;
  op->ok_ = false;
  op->chain_pos_ = 0;
  op->fell_back_ = false;
  op->generation_ = generation_;
  return run_from(op);
}

bool Dispatcher::run_from(const OpRef& op) {
  const auto& chain = chain_;
  for (; op->chain_pos_ < chain.size(); ++op->chain_pos_) {
    EngineSlot& slot = *chain[op->chain_pos_];
    Engine& engine = *slot.engine;
    if (!engine.accelerates(*op)) continue;
    // fallback off: the software engine (last) serves only ops no earlier engine took on.
    if (!settings_.fallback && op->fell_back_ && software_last_ &&
        op->chain_pos_ + 1 == chain.size()) {
      break;
    }
    Clock::time_point now = Clock::now();
    if (!slot.breaker->allow(now)) {
      op->fell_back_ = true;
      continue;
    }
    uint64_t ticket = next_ticket_++;
    op->ticket_ = ticket;
    op->attempt_start_ = now;
    OpOutput out;
    switch (engine.submit(op, ticket, &out)) {
      case SubmitResult::kDone:
        slot.count(op->kind(), op->fell_back_ ? kFallback : kOk);
        slot.observe_latency(op->kind(), Clock::now() - now);
        slot.breaker->record_success();
        op->output_ = std::move(out);
        finish(op, true, engine.name());
        return true;
      case SubmitResult::kPending:
        ++slot.pending;
        slot.inflight_gauge->add(1);
        pending_.emplace(ticket, chain[op->chain_pos_]);
        inflight_.push_back({op, ticket, now + settings_.op_timeout});
        if (!deadline_timer_.armed()) deadline_timer_.arm(settings_.op_timeout);
        return false;
      case SubmitResult::kBusy:
        slot.count(op->kind(), kBusy);
        slot.warn(op->kind(), "was busy for", now, settings_.fallback);
        slot.breaker->release_probe();
        op->fell_back_ = true;
        continue;
      case SubmitResult::kFailed:
        slot.count(op->kind(), kError);
        slot.warn(op->kind(), "failed", now, settings_.fallback);
        slot.breaker->record_failure(now, settings_.retry_interval);
        op->fell_back_ = true;
        continue;
    }
  }
  finish(op, false, {});
  return true;
}

void Dispatcher::finish(const OpRef& op, bool ok, std::string_view engine) {
  op->done_ = true;
  op->ok_ = ok;
  op->engine_ = engine;
  Clock::time_point now = Clock::now();
  if (!ok && now - last_failure_log_ >= std::chrono::seconds(1)) {
    last_failure_log_ = now;
    AG_LOG_ERROR("offload: no engine could compute a %.*s op%s",
                 static_cast<int>(op_kind_name(op->kind()).size()), op_kind_name(op->kind()).data(),
                 settings_.fallback ? "" : " (fallback off)");
  }
}

void Dispatcher::notify(const OpRef& op) {
  if (op->on_complete_) op->on_complete_(*op);
}

void Dispatcher::complete(const OpRef& op, uint64_t ticket, bool ok, OpOutput&& output) {
  auto it = pending_.find(ticket);
  if (it == pending_.end()) return;  // late: the op moved on at its deadline; discard
  std::shared_ptr<EngineSlot> slot = std::move(it->second);
  pending_.erase(it);
  --slot->pending;
  slot->inflight_gauge->add(-1);
  if (op->done_ || op->ticket_ != ticket) return;
  Clock::time_point now = Clock::now();
  if (ok) {
    slot->count(op->kind(), op->fell_back_ ? kFallback : kOk);
    slot->observe_latency(op->kind(), now - op->attempt_start_);
    slot->breaker->record_success();
    op->output_ = std::move(output);
    finish(op, true, slot->engine->name());
    notify(op);
    return;
  }
  slot->count(op->kind(), kError);
  slot->warn(op->kind(), "failed", now, settings_.fallback);
  slot->breaker->record_failure(now, settings_.retry_interval);
  next_engine(op);
}

void Dispatcher::next_engine(const OpRef& op) {
  op->fell_back_ = true;
  // An op that started on a chain replaced by a reload continues on the new chain's software.
  if (op->generation_ != generation_) {
    op->generation_ = generation_;
    op->chain_pos_ = chain_.size() - 1;
  } else {
    ++op->chain_pos_;
  }
  if (run_from(op)) notify(op);
}

void Dispatcher::expire_deadlines() {
  Clock::time_point now = Clock::now();
  while (!inflight_.empty() && inflight_.front().deadline <= now) {
    Pending p = std::move(inflight_.front());
    inflight_.pop_front();
    auto it = pending_.find(p.ticket);
    if (it == pending_.end()) continue;  // completed in time
    std::shared_ptr<EngineSlot> slot = std::move(it->second);
    pending_.erase(it);
    --slot->pending;
    slot->inflight_gauge->add(-1);
    const OpRef op = p.op.lock();
    if (op == nullptr || op->done_ || op->ticket_ != p.ticket) continue;
    slot->count(op->kind(), kTimeout);
    slot->warn(op->kind(), "did not complete in op_timeout", now, settings_.fallback);
    slot->breaker->record_failure(now, settings_.retry_interval);
    next_engine(op);
  }
  // Completed entries stay queued until their deadline; skip them to find the next live one.
  while (!inflight_.empty() && pending_.find(inflight_.front().ticket) == pending_.end()) {
    inflight_.pop_front();
  }
  if (!inflight_.empty()) {
    auto delay = std::chrono::ceil<std::chrono::milliseconds>(inflight_.front().deadline - now);
    deadline_timer_.arm(std::max(delay, std::chrono::milliseconds(1)));
  }
}

bool Dispatcher::on_idle() {
  bool did = false;
  for (auto& slot : chain_) {
    did |= slot->engine->poll();
    slot->engine->flush();
  }
  for (auto& slot : retired_) did |= slot->engine->poll();
  std::erase_if(retired_, [](const std::shared_ptr<EngineSlot>& s) { return s->pending == 0; });
  return did;
}

}  // namespace accelgate::offload

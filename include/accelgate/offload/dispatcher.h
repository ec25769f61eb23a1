#pragma once

// Dispatcher: routes ops to engine chains for one worker loop (DESIGN.md, "The async contract").
//
// The chain for an op is [the configured engine, sw] with `fallback on`, [the configured engine]
// with `fallback off`; engines that do not accelerate an op's kind are skipped. An attempt that
// is Busy, Failed, or passes `op_timeout` goes to the next engine, counted; a completion that
// arrives after its op moved on is discarded. An engine that fails repeatedly is taken out for
// `retry_interval` by its CircuitBreaker (shared by every loop), then probed with one op and put
// back when the probe succeeds.
//
// Everything runs on the loop's thread. Dispatcher::current() is the calling thread's dispatcher:
// the provider uses it to submit from inside a TLS handshake's async job.

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "accelgate/common/result.h"
#include "accelgate/config/config.h"
#include "accelgate/event/event_loop.h"
#include "accelgate/offload/engine.h"
#include "accelgate/offload/op.h"

namespace accelgate::offload {

// CircuitBreaker tracks one engine's health for the whole process. Thread-safe.
class CircuitBreaker {
 public:
  static constexpr int kFailuresToOpen = 5;  // consecutive failures that take an engine out

  // for_engine returns the breaker of |name| (created on first use, never freed).
  static CircuitBreaker& for_engine(std::string_view name);

  // allow says whether an op may go to the engine now: true while it is up; once out, false
  // until |retry_interval| has passed, then true for exactly one probe op.
  bool allow(Clock::time_point now);
  // record_success / record_failure report the outcome of an attempt.
  void record_success();
  void record_failure(Clock::time_point now, std::chrono::milliseconds retry_interval);
  // release_probe gives the probe turn back when the probe op could not be tried (engine busy).
  void release_probe();
  bool up() const { return !out_.load(std::memory_order_relaxed); }

 private:
  explicit CircuitBreaker(std::string name);
  std::string name_;
  std::mutex mutex_;
  std::atomic<int> failures_{0};
  std::atomic<bool> out_{false};
  bool probing_ = false;
  Clock::time_point retry_at_{};
};

class Dispatcher final : public CompletionSink {
 public:
  // create builds the engines of |settings| for |loop| (its thread must be the caller's or not
  // yet running). Fails when the configured engine cannot run and fallback is off, or when it
  // cannot be created at all (the message says why).
  static Result<std::unique_ptr<Dispatcher>> create(event::EventLoop* loop,
                                                    const config::OffloadSettings& settings);
  // create_with_engines uses |engines| as the chain, in order (tests: engines with injected
  // behaviour, as STYLE.md asks for a fake with error injection).
  static std::unique_ptr<Dispatcher> create_with_engines(
      event::EventLoop* loop, const config::OffloadSettings& settings,
      std::vector<std::unique_ptr<Engine>> engines);
  ~Dispatcher() override;

  // current is the dispatcher of the calling thread (set by make_current), or nullptr.
  static Dispatcher* current();
  void make_current();

  // submit runs |op| through its chain. Returns true when the op ended inside submit (computed
  // inline: its completion callback is not called); false when it is pending: its completion
  // callback runs later on this thread, exactly once.
  bool submit(const OpRef& op);

  // reconfigure switches to the engines of new settings (a reload); ops in flight finish on the
  // engines they were given to, which are freed once idle. Engines whose settings did not change
  // keep their devices (see DeviceStore).
  Status reconfigure(const config::OffloadSettings& settings);

  // on_idle polls and flushes the engines; the loop calls it before it blocks.
  bool on_idle();

  // primary_engine is the first engine of the chain ("sw" when crypto is sw or off).
  std::string_view primary_engine() const;
  // inflight is the number of attempts the dispatcher waits for.
  size_t inflight() const { return pending_.size(); }
  // uses_library_fn says whether an engine of the chain computes ops through their LibraryFn
  // (Engine::uses_library_fn): without one, building it for an op is wasted work.
  bool uses_library_fn() const { return uses_library_fn_; }

  void complete(const OpRef& op, uint64_t ticket, bool ok, OpOutput&& output) override;

 private:
  struct EngineSlot;
  // Pending is an attempt's deadline. It does not keep the op alive: a completed op's entry
  // stays queued until its deadline, and an op of the module would otherwise be destroyed here,
  // on the driver's thread, op_timeout after its end, instead of by its owner when it is done.
  // An op still in flight is held by its engine and by whoever waits for it.
  struct Pending {
    std::weak_ptr<Op> op;
    uint64_t ticket;
    Clock::time_point deadline;
  };
  explicit Dispatcher(event::EventLoop* loop);
  Status build(const config::OffloadSettings& settings);
  void install(std::vector<std::unique_ptr<Engine>> engines, const config::OffloadSettings& s);
  // run_from tries the chain from op->chain_pos_ until an engine takes or computes it; true when
  // the op has ended (computed, or no engine left).
  bool run_from(const OpRef& op);
  // next_engine moves an op whose attempt failed or timed out to the next engine of its chain.
  void next_engine(const OpRef& op);
  void finish(const OpRef& op, bool ok, std::string_view engine);
  void notify(const OpRef& op);
  void expire_deadlines();
  void hook_idle();

  event::EventLoop* loop_;
  config::OffloadSettings settings_;
  bool software_last_ = false;  // build() appended sw to the chain (see run_from)
  uint32_t generation_ = 0;     // bumped by every build(); ops remember the chain they started on
  std::vector<std::shared_ptr<EngineSlot>> chain_;    // current engines, chain order
  std::vector<std::shared_ptr<EngineSlot>> retired_;  // replaced by a reload, not yet idle
  // Attempts the dispatcher waits for, by ticket; an engine's completion for a ticket not here
  // (its deadline passed) is discarded.
  std::unordered_map<uint64_t, std::shared_ptr<EngineSlot>> pending_;
  bool uses_library_fn_ = false;
  std::deque<Pending> inflight_;  // pending attempts in deadline order (one op_timeout for all)
  event::Timer deadline_timer_;
  uint64_t next_ticket_ = 1;
  Clock::time_point last_failure_log_{};
  std::shared_ptr<Dispatcher*> alive_;  // the idle hook's weak handle on this dispatcher
};

}  // namespace accelgate::offload

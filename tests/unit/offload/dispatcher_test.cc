// Dispatcher routing, fallback, circuit breaker, deadlines and late completions, with scripted
// engines (the error-injecting fake STYLE.md asks for) and the real sw engine.

#include "accelgate/offload/dispatcher.h"

#include <gtest/gtest.h>

#include <deque>
#include <thread>

#include "accelgate/common/metrics.h"
#include "accelgate/crypto/mb/cpu.h"
#include "accelgate/offload/registry.h"

namespace accelgate::offload {
namespace {

using namespace std::chrono_literals;

// ScriptedEngine answers submit() with the results queued in |script| (kDone when empty) and
// keeps Pending ops so the test completes them when it wants.
class ScriptedEngine final : public Engine {
 public:
  ScriptedEngine(std::string name, CompletionSink** sink) : name_(std::move(name)), sink_(sink) {}
  std::string_view name() const override { return name_; }
  bool accelerates(const Op& op) const override { return op.kind() != skipped_kind; }
  SubmitResult submit(const OpRef& op, uint64_t ticket, OpOutput* out) override {
    ++submits;
    SubmitResult r = SubmitResult::kDone;
    if (!script.empty()) {
      r = script.front();
      script.pop_front();
    }
    if (r == SubmitResult::kDone) out->bytes = {'e'};
    if (r == SubmitResult::kPending) pending.emplace_back(op, ticket);
    return r;
  }
  size_t inflight() const override { return pending.size(); }
  // finish_oldest completes the oldest pending op as the engine would, from the loop thread.
  void finish_oldest(bool ok) {
    auto [op, ticket] = pending.front();
    pending.pop_front();
    OpOutput out;
    out.bytes = {'e', 'l'};
    (*sink_)->complete(op, ticket, ok, std::move(out));
  }

  std::deque<SubmitResult> script;
  std::deque<std::pair<OpRef, uint64_t>> pending;
  int submits = 0;
  OpKind skipped_kind = static_cast<OpKind>(255);

 private:
  std::string name_;
  CompletionSink** sink_;
};

class DispatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loop = event::EventLoop::create();
    ASSERT_TRUE(loop);
    loop_ = std::move(*loop);
    settings_.op_timeout = 20ms;
    settings_.retry_interval = 30ms;
  }

  // make builds [scripted engine named |name|, sw].
  void make(const std::string& name, bool fallback = true) {
    settings_.fallback = fallback;
    auto engine = std::make_unique<ScriptedEngine>(name, &sink_);
    engine_ = engine.get();
    std::vector<std::unique_ptr<Engine>> chain;
    chain.push_back(std::move(engine));
    if (fallback) {
      auto sw = create_sw(settings_);
      chain.push_back(std::move(sw));
    }
    dispatcher_ = Dispatcher::create_with_engines(loop_.get(), settings_, std::move(chain));
    sink_ = dispatcher_.get();
  }

  static std::unique_ptr<Engine> create_sw(const config::OffloadSettings& s) {
    const EngineFactory* f = find_engine("sw");
    auto e = f->create(s, EngineContext{nullptr, nullptr});
    return std::move(*e);
  }

  OpRef make_op(int* completions, OpKind kind = OpKind::kRsaSign) {
    auto op = std::make_shared<Op>(kind, 2048, [this](OpOutput* out) {
      ++software_calls_;
      out->bytes = {'s', 'w'};
      return true;
    });
    op->set_on_complete([completions](Op&) { ++*completions; });
    return op;
  }

  // run_until runs the loop until |done| or 2 s pass.
  void run_until(const std::function<bool()>& done) {
    event::Timer guard(loop_.get(), [this] { loop_->stop(); });
    guard.arm(2000ms);
    while (!done() && guard.armed()) {
      event::Timer tick(loop_.get(), [this] { loop_->stop(); });
      tick.arm(1ms);
      loop_->run();
    }
  }

  static uint64_t ops_count(const std::string& engine, const std::string& op,
                            const std::string& result) {
    std::string text = metrics::Registry::global().render();
    std::string key = "accelgate_offload_ops_total{engine=\"" + engine + "\",op=\"" + op +
                      "\",result=\"" + result + "\"} ";
    size_t at = text.find(key);
    if (at == std::string::npos) return 0;
    return std::stoull(text.substr(at + key.size()));
  }

  std::unique_ptr<event::EventLoop> loop_;
  config::OffloadSettings settings_;
  std::unique_ptr<Dispatcher> dispatcher_;
  CompletionSink* sink_ = nullptr;
  ScriptedEngine* engine_ = nullptr;
  std::atomic<int> software_calls_{0};
};

TEST_F(DispatcherTest, InlineEngineEndsInsideSubmit) {
  make("inline");
  int completions = 0;
  OpRef op = make_op(&completions);
  EXPECT_TRUE(dispatcher_->submit(op));
  EXPECT_TRUE(op->done());
  EXPECT_TRUE(op->ok());
  EXPECT_EQ(op->engine(), "inline");
  EXPECT_EQ(op->output().bytes, std::vector<uint8_t>{'e'});
  EXPECT_EQ(completions, 0);  // ended inside submit: no callback
  EXPECT_EQ(ops_count("inline", "rsa_sign", "ok"), 1u);
}

TEST_F(DispatcherTest, BusyAndFailedFallBackToSoftware) {
  make("flaky");
  engine_->script = {SubmitResult::kBusy, SubmitResult::kFailed};
  int completions = 0;
  OpRef a = make_op(&completions);
  OpRef b = make_op(&completions);
  EXPECT_TRUE(dispatcher_->submit(a));
  EXPECT_TRUE(dispatcher_->submit(b));
  for (const OpRef& op : {a, b}) {
    EXPECT_TRUE(op->ok());
    EXPECT_EQ(op->engine(), "sw");
    EXPECT_EQ(op->output().bytes, (std::vector<uint8_t>{'s', 'w'}));
  }
  EXPECT_EQ(ops_count("flaky", "rsa_sign", "busy"), 1u);
  EXPECT_EQ(ops_count("flaky", "rsa_sign", "error"), 1u);
  EXPECT_GE(ops_count("sw", "rsa_sign", "fallback"), 2u);
}

TEST_F(DispatcherTest, PendingCompletesOnceThroughTheCallback) {
  make("async");
  engine_->script = {SubmitResult::kPending};
  int completions = 0;
  OpRef op = make_op(&completions);
  EXPECT_FALSE(dispatcher_->submit(op));
  EXPECT_FALSE(op->done());
  EXPECT_EQ(dispatcher_->inflight(), 1u);
  engine_->finish_oldest(true);
  EXPECT_EQ(completions, 1);
  EXPECT_TRUE(op->ok());
  EXPECT_EQ(op->engine(), "async");
  EXPECT_EQ(op->output().bytes, (std::vector<uint8_t>{'e', 'l'}));
  EXPECT_EQ(dispatcher_->inflight(), 0u);
  EXPECT_EQ(software_calls_, 0);
}

TEST_F(DispatcherTest, FailedCompletionIsRedoneInSoftware) {
  make("async-fail");
  engine_->script = {SubmitResult::kPending};
  int completions = 0;
  OpRef op = make_op(&completions);
  EXPECT_FALSE(dispatcher_->submit(op));
  engine_->finish_oldest(false);
  EXPECT_EQ(completions, 1);
  EXPECT_TRUE(op->ok());
  EXPECT_EQ(op->engine(), "sw");
  EXPECT_EQ(ops_count("async-fail", "rsa_sign", "error"), 1u);
}

TEST_F(DispatcherTest, DeadlineFallsBackAndLateCompletionIsDiscarded) {
  make("slow");
  engine_->script = {SubmitResult::kPending};
  int completions = 0;
  OpRef op = make_op(&completions);
  auto start = Clock::now();
  EXPECT_FALSE(dispatcher_->submit(op));
  run_until([&] { return completions > 0; });
  ASSERT_EQ(completions, 1);
  EXPECT_GE(Clock::now() - start, settings_.op_timeout);
  EXPECT_TRUE(op->ok());
  EXPECT_EQ(op->engine(), "sw");
  EXPECT_EQ(ops_count("slow", "rsa_sign", "timeout"), 1u);
  EXPECT_EQ(dispatcher_->inflight(), 0u);
  // The engine answers after all: nothing changes, no second callback.
  engine_->finish_oldest(true);
  EXPECT_EQ(completions, 1);
  EXPECT_EQ(op->engine(), "sw");
  EXPECT_EQ(op->output().bytes, (std::vector<uint8_t>{'s', 'w'}));
}

TEST_F(DispatcherTest, CompletedOpIsNotKeptUntilItsDeadline) {
  make("async");
  engine_->script = {SubmitResult::kPending, SubmitResult::kPending};
  int completions = 0;
  OpRef op = make_op(&completions);
  std::weak_ptr<Op> watch = op;
  EXPECT_FALSE(dispatcher_->submit(op));
  engine_->finish_oldest(true);
  ASSERT_EQ(completions, 1);
  // Its deadline entry is still queued (op_timeout has not passed), but only the owner holds
  // the op: dropping it destroys it now, on the owner's thread.
  op.reset();
  EXPECT_TRUE(watch.expired());

  // An op whose engine and owner both let go before the deadline (nobody can wait for it) is
  // dropped at it: no timeout counted, no software redo, no callback.
  OpRef gone = make_op(&completions);
  EXPECT_FALSE(dispatcher_->submit(gone));
  watch = gone;
  gone.reset();
  engine_->pending.clear();
  EXPECT_TRUE(watch.expired());
  run_until([&] { return dispatcher_->inflight() == 0; });
  EXPECT_EQ(dispatcher_->inflight(), 0u);
  EXPECT_EQ(completions, 1);
  EXPECT_EQ(software_calls_, 0);
  EXPECT_EQ(ops_count("async", "rsa_sign", "timeout"), 0u);
}

TEST_F(DispatcherTest, CircuitBreakerTakesEngineOutAndProbesItBack) {
  make("breaker");
  for (int i = 0; i < CircuitBreaker::kFailuresToOpen; ++i) {
    engine_->script.push_back(SubmitResult::kFailed);
  }
  int completions = 0;
  for (int i = 0; i < CircuitBreaker::kFailuresToOpen; ++i) {
    EXPECT_TRUE(dispatcher_->submit(make_op(&completions)));
  }
  CircuitBreaker& breaker = CircuitBreaker::for_engine("breaker");
  EXPECT_FALSE(breaker.up());
  EXPECT_NE(metrics::Registry::global().render().find(
                "accelgate_offload_engine_up{engine=\"breaker\"} 0"),
            std::string::npos);
  // While out, ops skip it entirely.
  int submits = engine_->submits;
  OpRef skipped = make_op(&completions);
  EXPECT_TRUE(dispatcher_->submit(skipped));
  EXPECT_EQ(engine_->submits, submits);
  EXPECT_EQ(skipped->engine(), "sw");
  // After retry_interval one probe goes to the engine; it succeeds and the engine is back.
  std::this_thread::sleep_for(settings_.retry_interval + 5ms);
  OpRef probe = make_op(&completions);
  EXPECT_TRUE(dispatcher_->submit(probe));
  EXPECT_EQ(engine_->submits, submits + 1);
  EXPECT_EQ(probe->engine(), "breaker");
  EXPECT_TRUE(breaker.up());
  EXPECT_NE(metrics::Registry::global().render().find(
                "accelgate_offload_engine_up{engine=\"breaker\"} 1"),
            std::string::npos);
}

TEST_F(DispatcherTest, FailedProbeKeepsEngineOut) {
  make("probe-fails");
  for (int i = 0; i < CircuitBreaker::kFailuresToOpen + 1; ++i) {
    engine_->script.push_back(SubmitResult::kFailed);
  }
  int completions = 0;
  for (int i = 0; i < CircuitBreaker::kFailuresToOpen; ++i) {
    dispatcher_->submit(make_op(&completions));
  }
  std::this_thread::sleep_for(settings_.retry_interval + 5ms);
  int submits = engine_->submits;
  EXPECT_TRUE(dispatcher_->submit(make_op(&completions)));  // the probe, fails
  EXPECT_EQ(engine_->submits, submits + 1);
  EXPECT_TRUE(dispatcher_->submit(make_op(&completions)));  // out again: skipped
  EXPECT_EQ(engine_->submits, submits + 1);
  EXPECT_FALSE(CircuitBreaker::for_engine("probe-fails").up());
}

TEST_F(DispatcherTest, FallbackOffFailsTheOp) {
  make("no-fallback", /*fallback=*/false);
  engine_->script = {SubmitResult::kFailed, SubmitResult::kPending};
  int completions = 0;
  OpRef a = make_op(&completions);
  EXPECT_TRUE(dispatcher_->submit(a));
  EXPECT_FALSE(a->ok());
  OpRef b = make_op(&completions);
  EXPECT_FALSE(dispatcher_->submit(b));
  engine_->finish_oldest(false);
  EXPECT_EQ(completions, 1);
  EXPECT_FALSE(b->ok());
  EXPECT_EQ(software_calls_, 0);
}

TEST_F(DispatcherTest, KindsAnEngineDoesNotAccelerateSkipIt) {
  make("rsa-only");
  engine_->skipped_kind = OpKind::kX25519Derive;
  int completions = 0;
  OpRef op = make_op(&completions, OpKind::kX25519Derive);
  EXPECT_TRUE(dispatcher_->submit(op));
  EXPECT_EQ(engine_->submits, 0);
  EXPECT_EQ(op->engine(), "sw");
  EXPECT_EQ(ops_count("sw", "x25519_derive", "ok"), 1u);  // not a fallback: nothing was refused
}

TEST_F(DispatcherTest, CurrentIsPerThread) {
  make("current");
  EXPECT_EQ(Dispatcher::current(), nullptr);
  dispatcher_->make_current();
  EXPECT_EQ(Dispatcher::current(), dispatcher_.get());
  Dispatcher* other = dispatcher_.get();
  std::thread([&other] { other = Dispatcher::current(); }).join();
  EXPECT_EQ(other, nullptr);
  dispatcher_.reset();
  EXPECT_EQ(Dispatcher::current(), nullptr);
}

TEST_F(DispatcherTest, CreateFromSettings) {
  config::OffloadSettings s;
  s.crypto = "sw";
  auto d = Dispatcher::create(loop_.get(), s);
  ASSERT_TRUE(d);
  EXPECT_EQ((*d)->primary_engine(), "sw");
  int completions = 0;
  OpRef op = make_op(&completions);
  EXPECT_TRUE((*d)->submit(op));
  EXPECT_EQ(op->engine(), "sw");
  EXPECT_EQ(op->output().bytes, (std::vector<uint8_t>{'s', 'w'}));

  s.crypto = "openssl:/nonexistent/card.so";  // cannot load: with fallback on, software serves
  auto fallback = Dispatcher::create(loop_.get(), s);
  ASSERT_TRUE(fallback);
  EXPECT_EQ((*fallback)->primary_engine(), "sw");
  s.fallback = false;
  auto refused = Dispatcher::create(loop_.get(), s);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("\"openssl:/nonexistent/card.so\" cannot be used"),
            std::string::npos);
}

TEST(RegistryTest, AutoPicksAvailableAndDescribesAll) {
  config::OffloadSettings s;
  // auto: mb where the CPU has IFMA, else sw; pool and emu are never auto.
  EXPECT_EQ(resolve_crypto(s), crypto::mb::detect_ifma().usable ? "mb" : "sw");
  s.crypto = "emu";
  EXPECT_EQ(resolve_crypto(s), "emu");
  auto all = describe_engines(s);
  std::vector<std::string> names;
  for (const auto& e : all) names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"openssl", "mb", "pool", "emu", "sw"}));
  for (const auto& e : all) {
    EXPECT_EQ(e.available, e.reason.empty()) << e.name;
    EXPECT_EQ(e.chosen, e.name == "emu") << e.name;
  }
  EXPECT_EQ(find_engine("openssl:qatprovider"), find_engine("openssl"));
  EXPECT_EQ(find_engine("nope"), nullptr);
}

}  // namespace
}  // namespace accelgate::offload

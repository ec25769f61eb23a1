#pragma once

// Shared by the pool and emu engine tests: a real EventLoop on the test thread, a CompletionSink
// that records every completion (with the thread and loop iteration it ran on), and ops whose
// software function is a small deterministic stand-in for OpenSSL.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "accelgate/event/event_loop.h"
#include "accelgate/offload/engine.h"
#include "accelgate/offload/op.h"

namespace accelgate::offload::testing {

using namespace std::chrono_literals;

// Completion is one call of RecordingSink::complete.
struct Completion {
  OpRef op;
  uint64_t ticket = 0;
  bool ok = false;
  std::vector<uint8_t> bytes;
  std::thread::id thread;
  uint64_t iteration = 0;  // the loop iteration it arrived in
  Clock::time_point at;
};

class RecordingSink final : public CompletionSink {
 public:
  void complete(const OpRef& op, uint64_t ticket, bool ok, OpOutput&& output) override {
    records.push_back({op, ticket, ok, std::move(output.bytes), std::this_thread::get_id(),
                       iteration, Clock::now()});
  }

  std::vector<Completion> records;
  uint64_t iteration = 0;  // advanced by the fixture's idle hook
};

// OpCounters are what the test ops' software functions report.
struct OpCounters {
  std::atomic<int> calls{0};
  std::atomic<int> running{0};
  std::atomic<int> max_running{0};
};

// make_op returns an RSA-sign op whose software function writes {id, id ^ 0xff} after sleeping
// |work|, counting calls and concurrency in |counters|; |gate| (when set) holds it until true.
inline OpRef make_op(OpCounters* counters, uint8_t id, std::chrono::microseconds work = 0us,
                     const std::atomic<bool>* gate = nullptr) {
  return std::make_shared<Op>(OpKind::kRsaSign, 2048, [=](OpOutput* out) {
    int now = counters->running.fetch_add(1) + 1;
    int seen = counters->max_running.load();
    while (now > seen && !counters->max_running.compare_exchange_weak(seen, now)) {
    }
    if (gate != nullptr) {
      auto give_up = Clock::now() + 10s;
      while (!gate->load() && Clock::now() < give_up) std::this_thread::sleep_for(100us);
    }
    if (work > 0us) std::this_thread::sleep_for(work);
    out->bytes = {id, static_cast<uint8_t>(id ^ 0xff)};
    counters->running.fetch_sub(1);
    counters->calls.fetch_add(1);
    return true;
  });
}

// wait_for calls |done| (off the loop) every millisecond until it returns true or |timeout|
// passes; returns its last answer.
inline bool wait_for(const std::function<bool()>& done, std::chrono::milliseconds timeout = 10s) {
  auto give_up = Clock::now() + timeout;
  for (;;) {
    if (done()) return true;
    if (Clock::now() >= give_up) return false;
    std::this_thread::sleep_for(1ms);
  }
}

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loop = event::EventLoop::create();
    ASSERT_TRUE(loop.ok()) << loop.error().message;
    loop_ = std::move(*loop);
    loop_->add_idle_hook([this] {
      ++sink_.iteration;
      if (stop_when_ && stop_when_()) loop_->stop();
      return false;
    });
  }

  EngineContext context() { return {loop_.get(), &sink_}; }

  // run_until runs the loop on this thread until |done| holds or |timeout| passes; returns
  // done(). The condition is checked every iteration and at least every 2 ms.
  bool run_until(std::function<bool()> done, std::chrono::milliseconds timeout = 10s) {
    auto give_up = Clock::now() + timeout;
    stop_when_ = [&] { return done() || Clock::now() >= give_up; };
    event::Timer* tick_ptr = nullptr;
    event::Timer tick(loop_.get(), [&tick_ptr] { tick_ptr->arm(2ms); });
    tick_ptr = &tick;
    tick.arm(2ms);
    loop_->run();
    stop_when_ = nullptr;
    return done();
  }

  // run_for runs the loop for |d|.
  void run_for(std::chrono::milliseconds d) {
    auto end = Clock::now() + d;
    run_until([end] { return Clock::now() >= end; }, d + 1s);
  }

  std::unique_ptr<event::EventLoop> loop_;
  RecordingSink sink_;
  std::function<bool()> stop_when_;
};

}  // namespace accelgate::offload::testing

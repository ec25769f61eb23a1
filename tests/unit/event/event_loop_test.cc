#include "accelgate/event/event_loop.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

namespace accelgate::event {
namespace {

std::unique_ptr<EventLoop> make_loop() {
  auto loop = EventLoop::create();
  EXPECT_TRUE(loop.ok());
  return std::move(*loop);
}

TEST(EventLoop, TimersFireInDeadlineOrder) {
  auto loop = make_loop();
  std::vector<int> order;
  Timer late(loop.get(), [&] {
    order.push_back(2);
    loop->stop();
  });
  Timer early(loop.get(), [&] { order.push_back(1); });
  late.arm(Millis(30));
  early.arm(Millis(5));
  loop->run();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(EventLoop, DisarmedTimerDoesNotFire) {
  auto loop = make_loop();
  bool fired = false;
  Timer t(loop.get(), [&] { fired = true; });
  Timer stop(loop.get(), [&] { loop->stop(); });
  t.arm(Millis(5));
  t.disarm();
  stop.arm(Millis(20));
  loop->run();
  EXPECT_FALSE(fired);
}

TEST(EventLoop, PostFromAnotherThreadWakesTheLoop) {
  auto loop = make_loop();
  std::thread::id ran_on;
  std::thread poster([&] {
    loop->post([&] {
      ran_on = std::this_thread::get_id();
      loop->stop();
    });
  });
  loop->run();
  poster.join();
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST(EventLoop, IdleHookRunsBeforeBlockingAndDeferredTasksRun) {
  auto loop = make_loop();
  int idle_calls = 0;
  bool deferred_ran = false;
  loop->add_idle_hook([&] {
    ++idle_calls;
    if (idle_calls == 1) loop->defer([&] { deferred_ran = true; });
    if (idle_calls == 3) loop->stop();
    return idle_calls < 3;  // "did work": poll again without blocking
  });
  loop->run();
  EXPECT_EQ(idle_calls, 3);
  EXPECT_TRUE(deferred_ran);
}

struct Reader : IoHandler {
  int fd;
  EventLoop* loop;
  std::string got;
  void on_io(uint32_t events) override {
    if (!(events & kReadable)) return;
    char buf[64];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof(buf))) > 0) got.append(buf, n);
    if (got == "ping") loop->stop();
  }
};

// wake_by from an idle hook: the loop sleeps (a few iterations, not a spin) and wakes by then,
// with no timer armed; with a timer due earlier, the timer still comes first. A later post stops
// the loop should the wake-up never come.
TEST(EventLoop, WakeByEndsTheWaitOnTimeWithoutSpinning) {
  auto loop = make_loop();
  const Clock::time_point start = Clock::now();
  const Clock::time_point when = start + std::chrono::microseconds(3000);
  int iterations = 0;
  Clock::time_point woke{};
  loop->add_idle_hook([&] {
    ++iterations;
    Clock::time_point now = Clock::now();
    if (now >= when) {
      woke = now;
      loop->stop();
    } else {
      loop->wake_by(when);
    }
    return false;
  });
  std::atomic<bool> ran{false};
  std::thread guard([&] {
    for (int i = 0; i < 200 && !ran; ++i) std::this_thread::sleep_for(Millis(10));
    loop->post([&] { loop->stop(); });
  });
  loop->run();
  ran = true;
  guard.join();
  ASSERT_NE(woke, Clock::time_point{}) << "the loop slept past wake_by";
  EXPECT_GE(woke - start, std::chrono::microseconds(3000));
  EXPECT_LT(woke - start, Millis(1000));
  EXPECT_LT(iterations, 20) << "the loop spun instead of sleeping";
}

TEST(EventLoop, ReadableEdgeDeliversData) {
  auto loop = make_loop();
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  Reader r;
  r.fd = sv[0];
  r.loop = loop.get();
  ASSERT_TRUE(loop->add(sv[0], &r).ok());
  Timer writer(loop.get(), [&] { ASSERT_EQ(::write(sv[1], "ping", 4), 4); });
  writer.arm(Millis(1));
  Timer guard(loop.get(), [&] { loop->stop(); });
  guard.arm(Millis(5000));
  loop->run();
  EXPECT_EQ(r.got, "ping");
  loop->remove(sv[0]);
  ::close(sv[0]);
  ::close(sv[1]);
}

}  // namespace
}  // namespace accelgate::event

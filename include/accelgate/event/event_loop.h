#pragma once

// EventLoop: one per worker thread; epoll in edge-triggered mode, timers, tasks posted from other
// threads (one eventfd), tasks deferred to the end of the current iteration (no system call), and
// idle hooks that run before the loop blocks (DESIGN.md, "The async contract": the offload
// dispatcher flushes partial batches there).
//
// Everything except post() must be called on the loop's own thread.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "accelgate/common/result.h"

struct epoll_event;  // <sys/epoll.h>

namespace accelgate::event {

using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;

// Readiness bits passed to IoHandler::on_io.
enum IoEvent : uint32_t {
  kReadable = 1u << 0,
  kWritable = 1u << 1,
  kHangup = 1u << 2,  // peer closed or error; a read will tell which
};

// IoHandler receives readiness for the fds it registered. The loop never owns handlers; a handler
// that is destroyed must remove() its fd first (and should defer its deletion with defer() when it
// may still have events queued in the current iteration).
class IoHandler {
 public:
  virtual ~IoHandler() = default;
  virtual void on_io(uint32_t events) = 0;
};

class EventLoop;

// Timer is a one-shot timer owned by its user. arm() (re)starts it; it is disarmed automatically
// when destroyed. The callback runs on the loop's thread.
class Timer {
 public:
  Timer(EventLoop* loop, std::function<void()> callback);
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  void arm(Millis delay);
  void disarm();
  bool armed() const { return armed_; }

 private:
  friend class EventLoop;
  EventLoop* loop_;
  std::function<void()> callback_;
  std::multimap<Clock::time_point, Timer*>::iterator pos_;
  bool armed_ = false;
};

class EventLoop {
 public:
  static Result<std::unique_ptr<EventLoop>> create();
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // add registers |fd| for readable and writable edges (EPOLLET), hangups always reported.
  Status add(int fd, IoHandler* handler);
  // add_readable registers |fd| for readable edges only (eventfds, wait fds).
  Status add_readable(int fd, IoHandler* handler);
  // add_listener registers a listening socket, level-triggered: while connections are queued
  // the loop keeps reporting it, so a handler may accept one per wake-up (nginx without
  // multi_accept) and never needs an accept() that fails with EAGAIN to learn it is drained.
  Status add_listener(int fd, IoHandler* handler);
  void remove(int fd);

  // run processes events until stop(); returns when the loop has stopped. May be called again.
  void run();
  // running_on_this_thread is the loop whose run() is executing on the calling thread, or null.
  static EventLoop* running_on_this_thread();

  // stop makes run() return after the current iteration.
  void stop() { stopping_ = true; }

  // post queues |task| from any thread and wakes the loop (one eventfd write).
  void post(std::function<void()> task);
  // defer queues |task| to run on this thread after the current batch of events, before the
  // loop waits again; no system call.
  void defer(std::function<void()> task);
  // add_idle_hook registers a function called before the loop blocks; it returns whether it did
  // work (then the loop polls again without blocking).
  void add_idle_hook(std::function<bool()> hook);
  // wake_by, called from an idle hook, keeps the loop's coming wait from lasting past |when|
  // (to the microsecond, unlike a Timer): a batch waiting a few microseconds for company
  // sleeps instead of spinning. Holds for the current iteration only.
  void wake_by(Clock::time_point when) {
    if (when < wake_by_) wake_by_ = when;
  }

  // now is the time cached at the start of the iteration (as nginx's ngx_current_msec).
  Clock::time_point now() const { return now_; }
  // wall_time is the cached system time of the same moment, in seconds since the epoch.
  time_t wall_time() const { return wall_time_; }

 private:
  EventLoop(int epoll_fd, int wake_fd);
  void update_time();
  int next_timeout_ms();
  int wait(::epoll_event* events, int max, bool worked);
  void run_timers();
  bool run_deferred();

  friend class Timer;
  int epoll_fd_;
  int wake_fd_;
  bool stopping_ = false;
  Clock::time_point now_;
  time_t wall_time_ = 0;
  std::multimap<Clock::time_point, Timer*> timers_;
  std::vector<std::function<void()>> deferred_;
  std::vector<std::function<bool()>> idle_hooks_;
  Clock::time_point wake_by_ = Clock::time_point::max();
  bool have_pwait2_ = true;  // epoll_pwait2 (Linux 5.11) until it says ENOSYS
  std::mutex posted_mutex_;
  std::vector<std::function<void()>> posted_;
};

}  // namespace accelgate::event

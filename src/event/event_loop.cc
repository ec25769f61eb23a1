#include "accelgate/event/event_loop.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "accelgate/common/log.h"

namespace accelgate::event {
namespace {

constexpr int kMaxEvents = 512;

// WakeHandler marks the eventfd that post() writes; it is recognised by pointer, never called.
IoHandler* const kWakeHandler = nullptr;

}  // namespace

Timer::Timer(EventLoop* loop, std::function<void()> callback)
    : loop_(loop), callback_(std::move(callback)) {}

Timer::~Timer() { disarm(); }

void Timer::arm(Millis delay) {
  disarm();
  pos_ = loop_->timers_.emplace(loop_->now_ + delay, this);
  armed_ = true;
}

void Timer::disarm() {
  if (!armed_) return;
  loop_->timers_.erase(pos_);
  armed_ = false;
}

Result<std::unique_ptr<EventLoop>> EventLoop::create() {
  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) return sys_error("epoll_create1()", errno);
  int wake = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake < 0) {
    int err = errno;
    ::close(ep);
    return sys_error("eventfd()", err);
  }
  std::unique_ptr<EventLoop> loop(new EventLoop(ep, wake));
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLET;
  ev.data.ptr = kWakeHandler;
  if (::epoll_ctl(ep, EPOLL_CTL_ADD, wake, &ev) < 0) return sys_error("epoll_ctl(eventfd)", errno);
  return loop;
}

EventLoop::EventLoop(int epoll_fd, int wake_fd) : epoll_fd_(epoll_fd), wake_fd_(wake_fd) {
  update_time();
}

EventLoop::~EventLoop() {
  for (auto& [when, timer] : timers_) timer->armed_ = false;
  ::close(wake_fd_);
  ::close(epoll_fd_);
}

Status EventLoop::add(int fd, IoHandler* handler) {
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  ev.data.ptr = handler;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) < 0) return sys_error("epoll_ctl(ADD)", errno);
  return {};
}

Status EventLoop::add_readable(int fd, IoHandler* handler) {
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLET;
  ev.data.ptr = handler;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) < 0) return sys_error("epoll_ctl(ADD)", errno);
  return {};
}

Status EventLoop::add_listener(int fd, IoHandler* handler) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = handler;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) < 0) return sys_error("epoll_ctl(ADD)", errno);
  return {};
}

void EventLoop::remove(int fd) { ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr); }

void EventLoop::post(std::function<void()> task) {
  bool first = false;
  {
    std::lock_guard lock(posted_mutex_);
    first = posted_.empty();
    posted_.push_back(std::move(task));
  }
  // Only the first task of a batch wakes the loop: the loop takes the whole list under the lock
  // after reading the eventfd, so a task added to a non-empty list is taken with the ones before
  // it (one write per batch of posts instead of one per post: the module's driver gets eight
  // ops per batch from openssl speed's jobs).
  if (!first) return;
  uint64_t one = 1;
  ssize_t rc = ::write(wake_fd_, &one, sizeof(one));
  (void)rc;  // EAGAIN means the counter is already non-zero: the loop will wake anyway
}

void EventLoop::defer(std::function<void()> task) { deferred_.push_back(std::move(task)); }

void EventLoop::add_idle_hook(std::function<bool()> hook) {
  idle_hooks_.push_back(std::move(hook));
}

void EventLoop::update_time() {
  now_ = Clock::now();
  wall_time_ = ::time(nullptr);
}

int EventLoop::next_timeout_ms() {
  if (timers_.empty()) return -1;
  auto delta = timers_.begin()->first - Clock::now();
  if (delta <= Clock::duration::zero()) return 0;
  // Round up so a timer never fires early and the loop does not spin on a sub-millisecond rest.
  return static_cast<int>(std::chrono::ceil<Millis>(delta).count());
}

// wait is epoll_wait with the iteration's timeout: none when |worked|, else until the next
// timer (whole milliseconds) or wake_by_ (microseconds, through epoll_pwait2), whichever is first.
int EventLoop::wait(epoll_event* events, int max, bool worked) {
  int timeout_ms = worked ? 0 : next_timeout_ms();
  if (timeout_ms != 0 && wake_by_ != Clock::time_point::max()) {
    auto rest = std::chrono::duration_cast<std::chrono::nanoseconds>(wake_by_ - Clock::now());
    if (rest.count() <= 0) return ::epoll_wait(epoll_fd_, events, max, 0);
    if (timeout_ms < 0 || rest < std::chrono::milliseconds(timeout_ms)) {
      if (have_pwait2_) {
        timespec ts{static_cast<time_t>(rest.count() / 1'000'000'000),
                    static_cast<long>(rest.count() % 1'000'000'000)};
        int n = ::epoll_pwait2(epoll_fd_, events, max, &ts, nullptr);
        if (n >= 0 || errno != ENOSYS) return n;
        have_pwait2_ = false;
      }
      timeout_ms = static_cast<int>(std::chrono::ceil<Millis>(rest).count());
    }
  }
  return ::epoll_wait(epoll_fd_, events, max, timeout_ms);
}

void EventLoop::run_timers() {
  while (!timers_.empty() && timers_.begin()->first <= now_) {
    Timer* t = timers_.begin()->second;
    timers_.erase(timers_.begin());
    t->armed_ = false;
    t->callback_();  // may re-arm |t| or destroy it
  }
}

bool EventLoop::run_deferred() {
  bool ran = false;
  // Tasks may defer more tasks; run until the queue is empty, swapping so new ones are kept.
  while (!deferred_.empty()) {
    std::vector<std::function<void()>> batch;
    batch.swap(deferred_);
    for (auto& task : batch) task();
    ran = true;
  }
  return ran;
}

namespace {
thread_local EventLoop* t_running = nullptr;
}  // namespace

EventLoop* EventLoop::running_on_this_thread() { return t_running; }

void EventLoop::run() {
  EventLoop* outer = t_running;
  t_running = this;
  stopping_ = false;
  epoll_event events[kMaxEvents];
  while (!stopping_) {
    run_deferred();
    bool worked = false;
    wake_by_ = Clock::time_point::max();
    for (auto& hook : idle_hooks_) worked |= hook();
    if (run_deferred()) worked = true;
    if (stopping_) break;
    int n = wait(events, kMaxEvents, worked);
    update_time();
    if (n < 0) {
      if (errno == EINTR) continue;
      AG_LOG_CRIT("epoll_wait() failed: %s", std::strerror(errno));
      break;
    }
    for (int i = 0; i < n; ++i) {
      auto* handler = static_cast<IoHandler*>(events[i].data.ptr);
      if (handler == kWakeHandler) {
        uint64_t count;
        ssize_t rc = ::read(wake_fd_, &count, sizeof(count));
        (void)rc;
        std::vector<std::function<void()>> tasks;
        {
          std::lock_guard lock(posted_mutex_);
          tasks.swap(posted_);
        }
        for (auto& task : tasks) task();
        // The emptied vector's capacity goes back to posted_ (unless new posts came), so a burst
        // of posts does not grow a fresh vector, allocation by allocation, every time.
        tasks.clear();
        std::lock_guard lock(posted_mutex_);
        if (posted_.empty()) posted_.swap(tasks);
        continue;
      }
      uint32_t ev = events[i].events;
      uint32_t bits = 0;
      if (ev & EPOLLIN) bits |= kReadable;
      if (ev & EPOLLOUT) bits |= kWritable;
      if (ev & (EPOLLERR | EPOLLHUP | EPOLLRDHUP)) bits |= kHangup | kReadable;
      handler->on_io(bits);
    }
    run_timers();
  }
  run_deferred();
  t_running = outer;
}

}  // namespace accelgate::event

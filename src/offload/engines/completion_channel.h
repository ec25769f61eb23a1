#pragma once

// CompletionChannel: how an engine's own threads (the pool's crypto threads, the emulated
// device's thread) hand finished ops back to the loop that submitted them, as nginx's thread pool
// does: a lock-free list any thread pushes to (a Treiber stack) and one eventfd registered in the
// loop, written only when the list was empty before the push, so a burst of completions costs the
// loop one wake-up. The loop takes the whole list with one exchange and calls the sink for each
// op, on its own thread.
//
// Lifetime: each per-loop Engine opens one channel and close()s it when it is destroyed. Every
// EngineJob on an engine thread holds a reference to its channel, so a thread that finishes an op
// for a dead Engine pushes into a live channel, which drops the op without calling anyone. The
// eventfd is closed with the last reference, when no thread can write it any more.

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <utility>

#include "accelgate/common/result.h"
#include "accelgate/event/event_loop.h"
#include "accelgate/offload/engine.h"
#include "accelgate/offload/op.h"
#include "engines/engines.h"

namespace accelgate::offload {

class CompletionChannel;

// EngineJob is one op on its way through an engine's thread and back. Made by the Engine's submit
// on the loop thread, owned then by the engine's queue, by the thread that works on it, and by
// the channel it is delivered to.
struct EngineJob {
  OpRef op;
  uint64_t ticket = 0;
  std::shared_ptr<CompletionChannel> channel;  // where the result goes; released on delivery
  Clock::time_point due{};                     // emu: when the emulated device finishes it
  bool ok = false;
  // report false: the engine gave up on the op (a hung emu op that it releases); the loop only
  // counts it out of inflight(), the sink is never called for it.
  bool report = true;
  OpOutput output;
  EngineJob* next = nullptr;  // link in the channel's list
};

class CompletionChannel final : public event::IoHandler,
                                public std::enable_shared_from_this<CompletionChannel> {
 public:
  // open makes the channel of one Engine object and registers its eventfd in |context.loop|.
  // Loop thread.
  static Result<std::shared_ptr<CompletionChannel>> open(const EngineContext& context) {
    int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) return sys_error("eventfd()", errno);
    std::shared_ptr<CompletionChannel> channel(new CompletionChannel(context, fd));
    Status added = context.loop->add_readable(fd, channel.get());
    if (!added) return added.error();
    channel->registered_ = true;
    return channel;
  }

  CompletionChannel(const CompletionChannel&) = delete;
  CompletionChannel& operator=(const CompletionChannel&) = delete;

  ~CompletionChannel() override {
    free_list(head_.exchange(nullptr, std::memory_order_acquire));
    ::close(event_fd_);
  }

  // deliver pushes |job| back to the loop that submitted it; any thread. The job's reference to
  // the channel is released here, so a finished job never keeps its channel alive.
  static void deliver(std::unique_ptr<EngineJob> job) {
    std::shared_ptr<CompletionChannel> channel = std::move(job->channel);
    channel->push(std::move(job));
  }

  // closed says the Engine is gone; any thread (engine threads skip the work of a closed channel).
  bool closed() const { return closed_.load(std::memory_order_acquire); }

  // count_submitted counts one more op handed to the engine's threads. Loop thread.
  void count_submitted() { ++inflight_; }
  // inflight is the number of ops submitted and not yet reaped. Loop thread.
  size_t inflight() const { return inflight_; }

  // reap calls the sink for every delivered op; returns whether there were any. Loop thread
  // (Engine::poll). No system call when the list is empty.
  bool reap() {
    if (head_.load(std::memory_order_relaxed) == nullptr) return false;
    // Clear the eventfd before taking the list: a push after the exchange finds the list empty
    // and writes again, so no completion is left without a wake-up.
    drain_eventfd();
    return reap_list();
  }

  // on_io is the eventfd's readiness. Loop thread.
  void on_io(uint32_t) override {
    if (closed()) return;
    drain_eventfd();
    reap_list();
  }

  // close detaches the channel from its Engine, which is being destroyed: ops delivered later
  // are dropped. The eventfd leaves the loop now; the channel itself is kept until the end of the
  // loop's current batch of events, which may still name it. Loop thread.
  void close() {
    closed_.store(true, std::memory_order_release);
    if (registered_) loop_->remove(event_fd_);
    registered_ = false;
    free_list(head_.exchange(nullptr, std::memory_order_acquire));
    loop_->defer([keep = shared_from_this()] {});
  }

 private:
  CompletionChannel(const EngineContext& context, int fd)
      : loop_(context.loop), sink_(context.sink), event_fd_(fd) {}

  void push(std::unique_ptr<EngineJob> job) {
    if (closed()) return;  // the Engine is gone: drop the op here
    EngineJob* node = job.release();
    EngineJob* old = head_.load(std::memory_order_relaxed);
    do {
      node->next = old;
    } while (!head_.compare_exchange_weak(old, node, std::memory_order_release,
                                          std::memory_order_relaxed));
    // Only the push that found the list empty wakes the loop: the loop takes every job pushed
    // before it reads the list, so later pushes of the same burst ride on this wake-up.
    if (old == nullptr) {
      uint64_t one = 1;
      ssize_t rc = ::write(event_fd_, &one, sizeof(one));
      (void)rc;  // EAGAIN only when the counter is about to overflow: the loop is awake anyway
    }
  }

  void drain_eventfd() {
    uint64_t count = 0;
    ssize_t rc = ::read(event_fd_, &count, sizeof(count));
    (void)rc;  // EAGAIN: nothing written since the last read
  }

  bool reap_list() {
    EngineJob* list = head_.exchange(nullptr, std::memory_order_acquire);
    if (list == nullptr) return false;
    // The stack holds the newest job first; reverse it so ops complete in the order they ended.
    EngineJob* ordered = nullptr;
    while (list != nullptr) {
      EngineJob* next = list->next;
      list->next = ordered;
      ordered = list;
      list = next;
    }
    // A sink may destroy the Engine (and close this channel) from inside complete(): keep the
    // channel alive and stop calling the sink once it is closed.
    std::shared_ptr<CompletionChannel> keep = shared_from_this();
    size_t reported = 0;
    while (ordered != nullptr) {
      std::unique_ptr<EngineJob> job(ordered);
      ordered = job->next;
      if (closed()) continue;
      --inflight_;
      if (!job->report) continue;
      ++reported;
      sink_->complete(job->op, job->ticket, job->ok, std::move(job->output));
    }
    if (reported > 0) observe_batch_size(reported);
    return true;
  }

  static void free_list(EngineJob* list) {
    while (list != nullptr) {
      EngineJob* next = list->next;
      delete list;
      list = next;
    }
  }

  event::EventLoop* const loop_;
  CompletionSink* const sink_;
  const int event_fd_;
  bool registered_ = false;                // loop thread
  size_t inflight_ = 0;                    // loop thread
  std::atomic<EngineJob*> head_{nullptr};  // newest delivered job first
  std::atomic<bool> closed_{false};
};

}  // namespace accelgate::offload

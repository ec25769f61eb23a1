#include "run_op.h"

#include <openssl/async.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "accelgate/offload/dispatcher.h"
#include "backend.h"
#include "standalone_driver.h"
#include "stats.h"

namespace accelgate::provider {
namespace {

// kWaitFdKey identifies our eventfd among a wait ctx's fds (its address is the key).
const char kWaitFdKey = 0;

void close_wait_fd(ASYNC_WAIT_CTX*, const void*, OSSL_ASYNC_FD fd, void*) { ::close(fd); }

// wait_fd returns the eventfd registered on |ctx| for our ops, creating it on first use; -1 when
// it cannot be made.
int wait_fd(ASYNC_WAIT_CTX* ctx) {
  OSSL_ASYNC_FD fd = -1;
  void* custom = nullptr;
  if (ASYNC_WAIT_CTX_get_fd(ctx, &kWaitFdKey, &fd, &custom) == 1) return fd;
  fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) return -1;
  if (ASYNC_WAIT_CTX_set_wait_fd(ctx, &kWaitFdKey, fd, nullptr, close_wait_fd) != 1) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Waiter is what a paused job and its op's completion share. The completion may run on another
// thread (the standalone driver's) and the job may be resumed spuriously, so the end is handed
// over with atomic flags: |done_| once the result is stored, |released_| once the completion has
// stopped touching the wait ctx (after which the application may free it, once the job has
// returned). The wake-up is written outside any lock: a job woken by it never blocks on a lock
// that its (preempted) completer holds, which on a shared core cost two more context switches
// per op.
class Waiter {
 public:
  Waiter(ASYNC_WAIT_CTX* wait_ctx) : wait_ctx_(wait_ctx) {
    if (ASYNC_WAIT_CTX_get_callback(wait_ctx, &callback_, &callback_arg_) != 1 ||
        callback_ == nullptr) {
      callback_ = nullptr;
      fd_ = wait_fd(wait_ctx);
    }
  }

  // can_wait says whether the job can be woken at all (a callback or a wait fd).
  bool can_wait() const { return callback_ != nullptr || fd_ >= 0; }

  // finish records the end and wakes the job. Any thread; once.
  void finish(bool ok, offload::OpOutput&& output, std::string_view engine) {
    result_.ok = ok;
    result_.output = std::move(output);
    engine_ = engine;
    if (callback_ != nullptr) {
      // The callback may resume the job at once: it must see the result.
      done_.store(true, std::memory_order_release);
      ASYNC_WAIT_CTX_set_status(wait_ctx_, ASYNC_STATUS_OK);
      callback_(callback_arg_);
    } else {
      done_.store(true, std::memory_order_release);
      uint64_t one = 1;
      ssize_t n = ::write(fd_, &one, sizeof(one));
      (void)n;  // an eventfd write fails only when the counter would overflow: still readable
    }
    released_.store(true, std::memory_order_release);
  }

  // wait pauses the job until finish() has run, then returns the result.
  OpResult wait(std::string* engine) {
    while (!done_.load(std::memory_order_acquire)) {
      if (ASYNC_pause_job() == 0) return {};  // not in a job after all: cannot happen, see run_op
    }
    // The completer has stored the result and is waking us; let it finish (a few instructions
    // unless it was preempted on this core, which yielding lets it resume).
    while (!released_.load(std::memory_order_acquire)) sched_yield();
    if (fd_ >= 0) {
      uint64_t count = 0;
      ssize_t n = ::read(fd_, &count, sizeof(count));  // non-blocking: drain the wake-up
      (void)n;
    }
    *engine = engine_;
    return std::move(result_);
  }

  bool done() const { return done_.load(std::memory_order_acquire); }

 private:
  ASYNC_WAIT_CTX* wait_ctx_;
  ASYNC_callback_fn callback_ = nullptr;
  void* callback_arg_ = nullptr;
  int fd_ = -1;
  std::atomic<bool> done_{false};
  std::atomic<bool> released_{false};
  OpResult result_;
  std::string engine_;
};

OpResult compute_inline(const offload::OpRef& op) {
  OpResult r;
  r.ok = op->compute_in_software(&r.output);
  count_op(op->kind(), "inline");
  return r;
}

}  // namespace

bool in_async_job() { return ASYNC_get_current_job() != nullptr; }

bool library_fn_wanted() {
  if (offload::Dispatcher* dispatcher = offload::Dispatcher::current(); dispatcher != nullptr) {
    return dispatcher->uses_library_fn();
  }
  StandaloneDriver* driver = Backend::get().driver();
  return driver != nullptr && driver->uses_library_fn();
}

OpResult run_op(const offload::OpRef& op) {
  Backend& backend = Backend::get();
  ASYNC_JOB* job = ASYNC_get_current_job();
  ASYNC_WAIT_CTX* wait_ctx = job != nullptr ? ASYNC_get_wait_ctx(job) : nullptr;
  if (wait_ctx == nullptr) return compute_inline(op);
  auto waiter = std::make_shared<Waiter>(wait_ctx);
  if (!waiter->can_wait()) return compute_inline(op);

  std::string engine;
  if (offload::Dispatcher* dispatcher = offload::Dispatcher::current(); dispatcher != nullptr) {
    op->set_on_complete([waiter](offload::Op& ended) {
      waiter->finish(ended.ok(), std::move(ended.output()), ended.engine());
    });
    if (dispatcher->submit(op)) {
      // Computed inside submit: no completion callback, nothing to wait for.
      count_op(op->kind(), op->engine());
      return {op->ok(), std::move(op->output())};
    }
  } else if (StandaloneDriver* driver = backend.driver(); driver != nullptr) {
    driver->submit(op, [waiter](bool ok, offload::OpOutput&& output, std::string_view engine) {
      waiter->finish(ok, std::move(output), engine);
    });
  } else {
    return compute_inline(op);
  }
  OpResult r = waiter->wait(&engine);
  if (!waiter->done()) {
    // ASYNC_pause_job failed: we were not in a job after all. Never leave without a result.
    return compute_inline(op);
  }
  count_op(op->kind(), engine);
  return r;
}

}  // namespace accelgate::provider

// pool: `pool_threads` crypto threads compute ops with OpenSSL's software implementation, off the
// worker loops. All loops share one PoolDevice (the threads and a lock-free submission queue);
// each loop's PoolEngine gets its completions back through its own CompletionChannel (one eventfd
// per loop, written once per burst), as nginx's thread pool does. See README.md.

#include <pthread.h>
#include <semaphore.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <exception>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "accelgate/common/metrics.h"
#include "accelgate/offload/registry.h"
#include "engines/completion_channel.h"
#include "engines/engines.h"
#include "engines/pool/mpmc_queue.h"

namespace accelgate::offload {
namespace {

// Queue slots per crypto thread. An RSA-2048 signature takes about 1 ms in software, so a thread
// gets through about 50 ops within the default op_timeout (50 ms); ops queued beyond that would
// time out and be computed twice. A full queue answers Busy and the dispatcher falls back at once.
constexpr size_t kQueueSlotsPerThread = 64;

size_t online_cpus() {
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<size_t>(n) : 1;
}

size_t thread_count(const config::OffloadSettings& settings) {
  return settings.pool_threads > 0 ? static_cast<size_t>(settings.pool_threads) : online_cpus();
}

// WorkSemaphore counts queued jobs so idle crypto threads sleep instead of spinning. glibc's
// sem_t is a futex with a waiter count: post and wait make no system call while a token is
// available or nobody sleeps, which is the busy case.
class WorkSemaphore {
 public:
  WorkSemaphore() { ::sem_init(&sem_, 0, 0); }
  ~WorkSemaphore() { ::sem_destroy(&sem_); }
  WorkSemaphore(const WorkSemaphore&) = delete;
  WorkSemaphore& operator=(const WorkSemaphore&) = delete;

  void post() { ::sem_post(&sem_); }
  void wait() {
    while (::sem_wait(&sem_) != 0 && errno == EINTR) {
    }
  }

 private:
  sem_t sem_{};
};

// PoolDevice is the process-wide part of the pool: the crypto threads and the submission queue
// they share. Made through DeviceStore, so every loop's PoolEngine with the same thread count
// shares it; the threads stop and are joined when the last PoolEngine lets it go.
class PoolDevice {
 public:
  explicit PoolDevice(size_t threads) : queue_(threads * kQueueSlotsPerThread) {}
  PoolDevice(const PoolDevice&) = delete;
  PoolDevice& operator=(const PoolDevice&) = delete;

  ~PoolDevice() {
    stop();
    EngineJob* left = nullptr;
    while (queue_.try_pop(&left)) delete left;  // ops of engines that are gone
  }

  // start launches |threads| crypto threads named "ag-crypto-N".
  Status start(size_t threads) {
    try {
      threads_.reserve(threads);
      for (size_t i = 0; i < threads; ++i) {
        threads_.emplace_back([this] { run(); });
        // Named here rather than by the thread itself, so the name is there when start returns.
        std::string name = "ag-crypto-" + std::to_string(i);
        ::pthread_setname_np(threads_.back().native_handle(), name.c_str());
        metrics::thread_count("crypto").add(1);
      }
    } catch (const std::system_error& e) {
      stop();
      return Error{std::string("pool: cannot start a crypto thread: ") + e.what(),
                   e.code().value()};
    }
    return {};
  }

  // try_submit queues |job| for a crypto thread; false (job untouched) when the queue is full.
  // Any thread.
  bool try_submit(std::unique_ptr<EngineJob>& job) {
    EngineJob* raw = job.get();
    if (!queue_.try_push(raw)) return false;
    EngineJob* queued = job.release();  // the queue owns it now
    (void)queued;
    work_.post();
    return true;
  }

 private:
  void stop() {
    stopping_.store(true, std::memory_order_release);
    for (size_t i = 0; i < threads_.size(); ++i) work_.post();
    for (auto& t : threads_) t.join();
    metrics::thread_count("crypto").add(-static_cast<int64_t>(threads_.size()));
    threads_.clear();
  }

  void run() {
    for (;;) {
      work_.wait();
      if (stopping_.load(std::memory_order_acquire)) return;
      EngineJob* raw = nullptr;
      // Each token stands for a finished push, but the cell at the head may belong to a producer
      // that claimed it and has not published it yet; it is a few instructions from done.
      while (!queue_.try_pop(&raw)) std::this_thread::yield();
      std::unique_ptr<EngineJob> job(raw);
      if (job->channel->closed()) continue;  // its loop's engine is gone: nobody wants it
      try {
        job->ok = job->op->compute_in_software(&job->output);
      } catch (...) {
        job->ok = false;  // a throwing SoftwareFn fails the op, not the thread
      }
      CompletionChannel::deliver(std::move(job));
    }
  }

  pool::BoundedMpmcQueue<EngineJob*> queue_;
  WorkSemaphore work_;  // one token per queued job, and one per thread at stop
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> threads_;
};

// PoolEngine is one loop's handle on the shared PoolDevice.
class PoolEngine final : public Engine {
 public:
  PoolEngine(std::shared_ptr<PoolDevice> device, std::shared_ptr<CompletionChannel> channel)
      : device_(std::move(device)), channel_(std::move(channel)) {}
  PoolEngine(const PoolEngine&) = delete;
  PoolEngine& operator=(const PoolEngine&) = delete;
  // Ops still on the crypto threads are dropped when they finish; the device's threads stop with
  // the last engine (member destruction, after the channel is closed).
  ~PoolEngine() override { channel_->close(); }

  std::string_view name() const override { return "pool"; }
  bool accelerates(const Op&) const override { return true; }

  SubmitResult submit(const OpRef& op, uint64_t ticket, OpOutput*) override {
    auto job = std::make_unique<EngineJob>();
    job->op = op;
    job->ticket = ticket;
    job->channel = channel_;
    if (!device_->try_submit(job)) return SubmitResult::kBusy;
    channel_->count_submitted();
    return SubmitResult::kPending;
  }

  bool poll() override { return channel_->reap(); }
  size_t inflight() const override { return channel_->inflight(); }

 private:
  std::shared_ptr<PoolDevice> device_;
  std::shared_ptr<CompletionChannel> channel_;
};

}  // namespace

std::string probe_pool(const config::OffloadSettings& settings) {
  if (settings.pool_threads < 0) return "pool_threads is negative";
  return {};
}

Result<std::unique_ptr<Engine>> create_pool(const config::OffloadSettings& settings,
                                            const EngineContext& context) {
  std::string why = probe_pool(settings);
  if (!why.empty()) return Error{"pool: " + why};
  size_t threads = thread_count(settings);
  Status started;
  std::shared_ptr<PoolDevice> device;
  try {
    device = DeviceStore::global().get<PoolDevice>(
        "pool:threads=" + std::to_string(threads), [&]() -> std::shared_ptr<PoolDevice> {
          auto made = std::make_shared<PoolDevice>(threads);
          started = made->start(threads);
          if (!started) return nullptr;
          return made;
        });
  } catch (const std::bad_alloc&) {
    return Error{"pool: out of memory"};
  }
  if (!started) return started.error();
  auto channel = CompletionChannel::open(context);
  if (!channel) return Error{"pool: " + channel.error().message, channel.error().sys_errno};
  return std::unique_ptr<Engine>(new PoolEngine(std::move(device), std::move(*channel)));
}

}  // namespace accelgate::offload

// emu: an emulated accelerator, for tests and demonstrations. It is not a card: one device
// thread ("ag-emu") computes ops with OpenSSL's software implementation, but the device behaves
// as a card does towards the framework: completions come later (|latency|), it holds a limited
// number of ops (|capacity|), it fails some (|error_rate|), loses some (|hang_rate|), and goes down
// and up on command (the |control| file). See README.md.

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <random>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "accelgate/common/log.h"
#include "accelgate/common/metrics.h"
#include "accelgate/offload/registry.h"
#include "engines/completion_channel.h"
#include "engines/engines.h"

namespace accelgate::offload {
namespace {

using EmuSettings = config::OffloadSettings::Emu;

// How often the device thread re-reads its control file.
constexpr auto kControlInterval = std::chrono::milliseconds(20);
// How long a hung op keeps its slot before the device lets go of it (without completing it). The
// dispatcher has long given up on it (op_timeout); the op's memory is released and the slot freed.
constexpr auto kHungHold = std::chrono::seconds(1);

std::string format_rate(double rate) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), rate);
  if (ec != std::errc()) return "?";
  return {buf, end};
}

// device_key spells out every setting, so loops and config snapshots with the same emu settings
// share one device and any change makes a new one.
std::string device_key(const EmuSettings& s) {
  return "emu:latency=" + std::to_string(s.latency.count()) +
         "us,capacity=" + std::to_string(s.capacity) + ",error_rate=" + format_rate(s.error_rate) +
         ",hang_rate=" + format_rate(s.hang_rate) + ",control=" + s.control;
}

// control_says_down reads the control file: content starting with "down" means down; anything
// else, or no file, means up.
bool control_says_down(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "re");
  if (f == nullptr) return false;
  char head[4] = {};
  size_t n = std::fread(head, 1, sizeof(head), f);
  std::fclose(f);
  return n == sizeof(head) && std::string_view(head, n) == "down";
}

// EmuDevice is the emulated card, shared by every loop's EmuEngine with the same settings.
//
// Threads: submit() runs on the loops' threads; everything else on the device thread. |queued_|
// and |stopping_| are guarded by |mutex_|; |down_| and |in_flight_| are atomics read by submit().
class EmuDevice {
 public:
  explicit EmuDevice(EmuSettings settings)
      : settings_(std::move(settings)), random_(std::random_device{}()) {}
  EmuDevice(const EmuDevice&) = delete;
  EmuDevice& operator=(const EmuDevice&) = delete;

  ~EmuDevice() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) {
      thread_.join();
      metrics::thread_count("emu").add(-1);
    }
  }

  // start reads the control file once (so a device made "down" starts down) and starts the
  // device thread.
  Status start() {
    if (!settings_.control.empty() && control_says_down(settings_.control)) set_down(true);
    try {
      thread_ = std::thread([this] { run(); });
      ::pthread_setname_np(thread_.native_handle(), "ag-emu");
      metrics::thread_count("emu").add(1);
    } catch (const std::system_error& e) {
      return Error{std::string("emu: cannot start the device thread: ") + e.what(),
                   e.code().value()};
    }
    return {};
  }

  // submit accepts |job| (taking it) or says why not. Any loop thread.
  SubmitResult submit(std::unique_ptr<EngineJob>& job) {
    if (down_.load(std::memory_order_acquire)) return SubmitResult::kFailed;
    if (in_flight_.fetch_add(1, std::memory_order_acq_rel) >= settings_.capacity) {
      in_flight_.fetch_sub(1, std::memory_order_acq_rel);
      return SubmitResult::kBusy;
    }
    job->due = Clock::now() + settings_.latency;
    bool was_empty = false;
    {
      std::lock_guard lock(mutex_);
      was_empty = queued_.empty();
      queued_.push_back(std::move(job));
    }
    // One latency for all ops keeps |queued_| in due order: the thread only needs waking when it
    // is not already waiting for an earlier op.
    if (was_empty) wake_.notify_one();
    return SubmitResult::kPending;
  }

 private:
  struct HungJob {
    Clock::time_point release_at;
    std::unique_ptr<EngineJob> job;
  };

  void run() {
    auto next_control = Clock::now();
    std::vector<std::unique_ptr<EngineJob>> batch;
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      auto now = Clock::now();
      if (!settings_.control.empty() && now >= next_control) {
        lock.unlock();
        set_down(control_says_down(settings_.control));
        next_control = now + kControlInterval;
        lock.lock();
        continue;
      }
      // A device that is down fails every op it holds at once.
      bool down = down_.load(std::memory_order_acquire);
      while (!queued_.empty() && (down || queued_.front()->due <= now)) {
        batch.push_back(std::move(queued_.front()));
        queued_.pop_front();
      }
      if (!batch.empty()) {
        lock.unlock();
        for (auto& job : batch) process(std::move(job), down, now);
        batch.clear();
        lock.lock();
        continue;
      }
      auto wake_at = release_hung(now);
      if (!queued_.empty()) wake_at = std::min(wake_at, queued_.front()->due);
      if (!settings_.control.empty()) wake_at = std::min(wake_at, next_control);
      if (wake_at == Clock::time_point::max()) {
        wake_.wait(lock);
      } else {
        wake_.wait_until(lock, wake_at);
      }
    }
  }

  // process ends one op that is due (or the device is down): it hangs, fails or is computed.
  void process(std::unique_ptr<EngineJob> job, bool down, Clock::time_point now) {
    if (job->channel->closed()) {
      in_flight_.fetch_sub(1, std::memory_order_acq_rel);
      return;  // the loop's engine is gone
    }
    if (!down && draw(settings_.hang_rate)) {
      hung_.push_back({now + kHungHold, std::move(job)});  // keeps its slot
      return;
    }
    if (down || draw(settings_.error_rate)) {
      job->ok = false;
    } else {
      try {
        job->ok = job->op->compute_in_software(&job->output);
      } catch (...) {
        job->ok = false;
      }
    }
    in_flight_.fetch_sub(1, std::memory_order_acq_rel);
    CompletionChannel::deliver(std::move(job));
  }

  // release_hung lets go of hung ops whose hold is over or whose engine is gone: their slots are
  // freed and their engines count them out, but nobody is told they completed. Returns when the
  // next one is due.
  Clock::time_point release_hung(Clock::time_point now) {
    auto next = Clock::time_point::max();
    for (auto it = hung_.begin(); it != hung_.end();) {
      if (it->release_at <= now || it->job->channel->closed()) {
        it->job->report = false;
        in_flight_.fetch_sub(1, std::memory_order_acq_rel);
        CompletionChannel::deliver(std::move(it->job));
        it = hung_.erase(it);
      } else {
        next = std::min(next, it->release_at);
        ++it;
      }
    }
    return next;
  }

  bool draw(double rate) {
    if (rate <= 0) return false;
    return std::uniform_real_distribution<double>(0, 1)(random_) < rate;
  }

  void set_down(bool down) {
    bool was = down_.exchange(down, std::memory_order_acq_rel);
    if (down && !was) {
      AG_LOG_WARN("emu: device down (control file \"%s\"); ops fail until it is up",
                  settings_.control.c_str());
    } else if (!down && was) {
      AG_LOG_NOTICE("emu: device up again (control file \"%s\")", settings_.control.c_str());
    }
  }

  const EmuSettings settings_;
  std::atomic<bool> down_{false};
  std::atomic<uint32_t> in_flight_{0};  // ops accepted and not yet completed or released

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<EngineJob>> queued_;  // guarded by mutex_; in due order
  bool stopping_ = false;                          // guarded by mutex_

  // Device thread only.
  std::mt19937_64 random_;
  std::vector<HungJob> hung_;

  std::thread thread_;
};

// EmuEngine is one loop's handle on the shared EmuDevice.
class EmuEngine final : public Engine {
 public:
  EmuEngine(std::shared_ptr<EmuDevice> device, std::shared_ptr<CompletionChannel> channel)
      : device_(std::move(device)), channel_(std::move(channel)) {}
  EmuEngine(const EmuEngine&) = delete;
  EmuEngine& operator=(const EmuEngine&) = delete;
  // Ops still on the device are dropped (hung ones released) by the device thread; the device
  // stops with the last engine.
  ~EmuEngine() override { channel_->close(); }

  std::string_view name() const override { return "emu"; }
  bool accelerates(const Op&) const override { return true; }

  SubmitResult submit(const OpRef& op, uint64_t ticket, OpOutput*) override {
    auto job = std::make_unique<EngineJob>();
    job->op = op;
    job->ticket = ticket;
    job->channel = channel_;
    SubmitResult result = device_->submit(job);
    if (result == SubmitResult::kPending) channel_->count_submitted();
    return result;
  }

  bool poll() override { return channel_->reap(); }
  size_t inflight() const override { return channel_->inflight(); }

 private:
  std::shared_ptr<EmuDevice> device_;
  std::shared_ptr<CompletionChannel> channel_;
};

}  // namespace

std::string probe_emu(const config::OffloadSettings& settings) {
  const EmuSettings& emu = settings.emu;
  if (emu.capacity == 0) return "emu capacity is 0";
  if (!(emu.error_rate >= 0 && emu.error_rate <= 1)) return "emu error_rate is not within 0..1";
  if (!(emu.hang_rate >= 0 && emu.hang_rate <= 1)) return "emu hang_rate is not within 0..1";
  if (emu.latency.count() < 0) return "emu latency is negative";
  return {};
}

Result<std::unique_ptr<Engine>> create_emu(const config::OffloadSettings& settings,
                                           const EngineContext& context) {
  std::string why = probe_emu(settings);
  if (!why.empty()) return Error{"emu: " + why};
  Status started;
  std::shared_ptr<EmuDevice> device;
  try {
    device = DeviceStore::global().get<EmuDevice>(
        device_key(settings.emu), [&]() -> std::shared_ptr<EmuDevice> {
          auto made = std::make_shared<EmuDevice>(settings.emu);
          started = made->start();
          if (!started) return nullptr;
          return made;
        });
  } catch (const std::bad_alloc&) {
    return Error{"emu: out of memory"};
  }
  if (!started) return started.error();
  auto channel = CompletionChannel::open(context);
  if (!channel) return Error{"emu: " + channel.error().message, channel.error().sys_errno};
  return std::unique_ptr<Engine>(new EmuEngine(std::move(device), std::move(*channel)));
}

}  // namespace accelgate::offload

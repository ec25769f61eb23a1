// openssl: a card through its vendor's OpenSSL 3 provider (qatprovider, uadk_provider) or
// OpenSSL ENGINE (qatengine, kae), driven in async mode as asynch_mode_nginx drives QAT_Engine:
// each op runs in an OpenSSL ASYNC job of this engine on the worker loop's thread; the vendor
// pauses the job, and the job is resumed when its wait fds turn readable (notify event: the fds
// are in the loop's epoll) or when polled (notify poll: heuristic, timer or busy; an ENGINE with
// a POLL command is asked for completions first, QAT_Engine's external polling).
//
// The op reaches the vendor through Op::compute_with_library with the Vendor's target
// (vendor.h): the provider that made the op exports the key and the operation's parameters into
// the vendor's library context, or binds the key to the ENGINE (src/provider/engine_op.h).
//
// A job is never started inside another: submit() is called from inside a TLS handshake's job,
// so it only queues the op; the job starts from the loop (EventLoop::defer), outside any job.

#include <openssl/async.h>
#include <openssl/err.h>
#include <poll.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "accelgate/common/log.h"
#include "accelgate/event/event_loop.h"
#include "accelgate/offload/registry.h"
#include "engines/engines.h"
#include "engines/openssl/vendor.h"

namespace accelgate::offload {
namespace {

constexpr size_t kMaxInflight = 1024;  // per loop; beyond it the op is Busy (falls back)

std::string vendor_id(const config::OffloadSettings& settings) {
  const std::string& c = settings.crypto;
  return c.starts_with("openssl:") ? c.substr(8) : std::string();
}

VendorOptions vendor_options(const config::OffloadSettings& settings) {
  VendorOptions o;
  o.id = vendor_id(settings);
  o.ctrls = settings.engine_ctrls;
  o.external_polling = settings.notify == config::OffloadSettings::Notify::kPoll;
  return o;
}

// vendor_key spells out every setting a Vendor is opened with: the DeviceStore key, so loops
// and configuration snapshots with the same settings share one vendor (one ENGINE_init per
// process) and any change opens a new one.
std::string vendor_key(const VendorOptions& o) {
  std::string key = "openssl:" + o.id;
  if (o.external_polling) key += "|notify=poll";
  for (const auto& c : o.ctrls) key += "|ctrl:" + c.name + (c.has_value ? "=" + c.value : "");
  return key;
}

// open_vendor_now loads |o.id| as a provider or, when it is none, as an ENGINE: a provider comes
// first (the future-proof interface; OpenSSL 4.0 has no ENGINEs), and an id that is not one
// costs only a failed module lookup.
Result<std::unique_ptr<Vendor>> open_vendor_now(const VendorOptions& o) {
  auto provider = open_provider_vendor(o.id);
  if (provider) {
    if (!o.ctrls.empty()) {
      const auto& c = o.ctrls.front();
      std::string where =
          c.where.file.empty() ? "" : c.where.file + ":" + std::to_string(c.where.line) + ": ";
      return Error{where + "openssl_engine_ctrl is for OpenSSL ENGINEs, and \"" + o.id +
                   "\" is a provider"};
    }
    return provider;
  }
  ERR_clear_error();
  bool loaded = false;
  auto engine = open_engine_vendor(o, &loaded);
  if (engine) return engine;
  // An id that loaded as an ENGINE failed later (a control command, ENGINE_init): that is the
  // whole story. Otherwise it is neither.
  if (loaded) return engine.error();
  return Error{provider.error().message + "; " + engine.error().message};
}

// VendorCache is what open_vendor remembers, process-wide (never destroyed: a vendor kept here
// at exit is not torn down after OpenSSL's own cleanup).
struct VendorCache {
  std::mutex mutex;
  // failures: a vendor that cannot load is not retried by `--engines`, `-t` and every worker.
  std::map<std::string, std::string> failures;
  // probed: the vendor a probe opened, kept until create_openssl takes it. A worker probes and
  // then creates (Dispatcher::build); without this the vendor, with nothing holding it between
  // the two, would be opened twice (an ENGINE initialised, finished and initialised again).
  std::map<std::string, std::shared_ptr<Vendor>> probed;
};

VendorCache& vendor_cache() {
  static auto* cache = new VendorCache();
  return *cache;
}

// open_vendor returns the shared Vendor of |settings| (see VendorCache).
Result<std::shared_ptr<Vendor>> open_vendor(const config::OffloadSettings& settings) {
  VendorCache& cache = vendor_cache();
  VendorOptions options = vendor_options(settings);
  std::string key = vendor_key(options);
  {
    std::lock_guard lock(cache.mutex);
    auto it = cache.failures.find(key);
    if (it != cache.failures.end()) return Error{it->second};
  }
  std::string error;
  std::shared_ptr<Vendor> vendor = DeviceStore::global().get<Vendor>(key, [&] {
    auto opened = open_vendor_now(options);
    if (!opened) {
      error = opened.error().message;
      return std::shared_ptr<Vendor>();
    }
    return std::shared_ptr<Vendor>(std::move(*opened));
  });
  if (vendor) return vendor;
  std::lock_guard lock(cache.mutex);
  cache.failures[key] = error;
  return Error{error};
}

class OpensslEngine;

// Job is one op on its way through the vendor: its ASYNC job, wait context and watched fds.
struct Job {
  OpensslEngine* engine = nullptr;
  OpRef op;
  uint64_t ticket = 0;
  ASYNC_JOB* async_job = nullptr;
  ASYNC_WAIT_CTX* wait_ctx = nullptr;
  OpOutput output;
  int ret = 0;  // job_main's answer, written by the ASYNC_start_job call that finishes the job
  bool ok = false;
  std::vector<int> fds;  // in the loop's epoll (notify event)
};

class FdWatcher final : public event::IoHandler {
 public:
  FdWatcher(OpensslEngine* engine, Job* job) : engine_(engine), job_(job) {}
  void on_io(uint32_t) override;

 private:
  OpensslEngine* engine_;
  Job* job_;
};

// How often paused jobs are polled (notify poll: heuristic and timer; notify event: jobs that
// paused without a wait fd). A card answers in tens to hundreds of microseconds.
constexpr std::chrono::milliseconds kPollInterval{1};

class OpensslEngine final : public Engine {
 public:
  OpensslEngine(std::shared_ptr<Vendor> vendor, const config::OffloadSettings& settings,
                const EngineContext& context)
      : vendor_(std::move(vendor)),
        target_(vendor_->target()),
        // An ENGINE set up for external polling completes only when POLLed, whatever a later
        // configuration says (vendor_engine.cc warns about that).
        notify_(vendor_->has_poll_command() ? config::OffloadSettings::Notify::kPoll
                                            : settings.notify),
        poll_mode_(settings.poll_mode),
        loop_(context.loop),
        sink_(context.sink),
        poll_timer_(context.loop, [this] { on_poll_timer(); }) {}

  ~OpensslEngine() override {
    // A paused job cannot be dropped: run each to its end (bounded), then free it. Happens only
    // when a reload or a stop replaces this engine while ops are in flight.
    auto deadline = Clock::now() + std::chrono::seconds(5);
    for (auto& job : jobs_) finish_blocking(*job, deadline);
  }

  std::string_view name() const override { return "openssl"; }
  // What the vendor does not implement goes to the next engine, uncounted: X25519 keygen always
  // (its output must be a key of the caller's default provider, which a LibraryFn cannot make),
  // and for an ENGINE whatever its methods leave to OpenSSL (vendor_engine.cc).
  bool accelerates(const Op& op) const override {
    return op.kind() != OpKind::kX25519Keygen && vendor_->accelerates(op.kind());
  }
  bool uses_library_fn() const override { return true; }

  SubmitResult submit(const OpRef& op, uint64_t ticket, OpOutput*) override {
    if (!op->has_library_fn()) return SubmitResult::kFailed;
    if (jobs_.size() >= kMaxInflight) return SubmitResult::kBusy;
    auto job = std::make_unique<Job>();
    job->engine = this;
    job->op = op;
    job->ticket = ticket;
    job->wait_ctx = ASYNC_WAIT_CTX_new();
    if (job->wait_ctx == nullptr) return SubmitResult::kFailed;
    starting_.push_back(job.get());
    jobs_.push_back(std::move(job));
    if (!start_scheduled_) {
      start_scheduled_ = true;
      loop_->defer([this] { start_queued(); });
    }
    return SubmitResult::kPending;
  }

  // poll is called before the loop blocks. notify poll: `busy` polls every time and keeps the
  // loop from blocking while jobs are paused; `heuristic` polls now, when the loop has nothing
  // else to do (the moment asynch_mode_nginx's heuristic polling picks), with the timer as a
  // backstop; `timer` polls on the timer only.
  bool poll() override {
    if (notify_ != config::OffloadSettings::Notify::kPoll || paused_ == 0) return false;
    switch (poll_mode_) {
      case config::OffloadSettings::PollMode::kBusy:
        poll_round();
        return paused_ > 0;
      case config::OffloadSettings::PollMode::kHeuristic:
        return poll_round() > 0;
      case config::OffloadSettings::PollMode::kTimer:
        return false;
    }
    return false;
  }

  size_t inflight() const override { return jobs_.size(); }

  // run starts or resumes |job| (outside any other job); it may complete and free it.
  void run(Job& job) {
    JobArg arg{&job};
    bool resuming = job.async_job != nullptr;
    int rc = ASYNC_start_job(&job.async_job, job.wait_ctx, &job.ret, job_main, &arg, sizeof(arg));
    if (resuming && rc != ASYNC_PAUSE) --paused_;
    switch (rc) {
      case ASYNC_PAUSE:
        if (!resuming) ++paused_;
        watch(job);
        return;
      case ASYNC_FINISH:
        job.ok = job.ret == 1;
        break;
      default:  // ASYNC_ERR, ASYNC_NO_JOBS
        job.ok = false;
        break;
    }
    // The job ran on this thread's error queue: what a failed op left there (a vendor's error,
    // an operation a LibraryFn refused) must not reach the next SSL_get_error of this loop.
    // run() is only called from the loop, outside any TLS call.
    ERR_clear_error();
    complete(job);
  }

 private:
  // JobArg is what ASYNC_start_job copies into the job: the Job it works for.
  struct JobArg {
    Job* job;
  };

  static int job_main(void* arg) {
    Job* job = static_cast<JobArg*>(arg)->job;
    return job->op->compute_with_library(job->engine->target_, &job->output) ? 1 : 0;
  }

  bool polled() const { return notify_ == config::OffloadSettings::Notify::kPoll; }

  void start_queued() {
    start_scheduled_ = false;
    std::vector<Job*> starting;
    starting.swap(starting_);
    for (Job* job : starting) run(*job);
  }

  // watch puts the paused job's wait fds in epoll (notify event) or arms polling.
  void watch(Job& job) {
    if (polled()) {
      if (poll_mode_ != config::OffloadSettings::PollMode::kBusy && !poll_timer_.armed()) {
        poll_timer_.arm(kPollInterval);
      }
      return;
    }
    size_t added = 0, deleted = 0;
    ASYNC_WAIT_CTX_get_changed_fds(job.wait_ctx, nullptr, &added, nullptr, &deleted);
    std::vector<OSSL_ASYNC_FD> add(added), del(deleted);
    ASYNC_WAIT_CTX_get_changed_fds(job.wait_ctx, add.data(), &added, del.data(), &deleted);
    for (int fd : del) {
      loop_->remove(fd);
      std::erase(job.fds, fd);
      watchers_.erase(fd);
    }
    for (int fd : add) {
      auto w = std::make_unique<FdWatcher>(this, &job);
      if (Status st = loop_->add_readable(fd, w.get()); !st) {
        AG_LOG_ALERT("openssl engine: cannot watch a wait fd: %s", st.error().message.c_str());
        continue;
      }
      job.fds.push_back(fd);
      watchers_[fd] = std::move(w);
    }
    if (job.fds.empty()) {
      // The vendor paused without a wait fd: fall back to polling this job.
      if (!poll_timer_.armed()) poll_timer_.arm(kPollInterval);
    }
  }

  // pollable says whether polling (not epoll) resumes |job|: every paused job with notify poll,
  // and with notify event a job paused without a wait fd. (A queued job has no ASYNC job yet.)
  bool pollable(const Job& job) const {
    return job.async_job != nullptr && (polled() || job.fds.empty());
  }

  // ready_to_resume picks the pollable jobs worth resuming: with notify poll, those whose wait
  // fds are readable (one poll(2) for all of them) and those without a wait fd (the vendor
  // gave none: only resuming tells); with notify event, the jobs without a wait fd.
  std::vector<Job*> ready_to_resume() {
    std::vector<Job*> ready;
    std::vector<Job*> watched;  // jobs whose fds are polled below
    std::vector<pollfd> fds;
    std::vector<size_t> owner;  // fds[i] is a wait fd of watched[owner[i]]
    for (auto& job : jobs_) {
      if (!pollable(*job)) continue;
      size_t n = 0;
      if (polled()) ASYNC_WAIT_CTX_get_all_fds(job->wait_ctx, nullptr, &n);
      if (n == 0) {
        ready.push_back(job.get());
        continue;
      }
      std::vector<OSSL_ASYNC_FD> own(n);
      ASYNC_WAIT_CTX_get_all_fds(job->wait_ctx, own.data(), &n);
      for (size_t i = 0; i < n; ++i) {
        fds.push_back({own[i], POLLIN, 0});
        owner.push_back(watched.size());
      }
      watched.push_back(job.get());
    }
    if (fds.empty() || ::poll(fds.data(), fds.size(), 0) <= 0) return ready;
    std::vector<bool> taken(watched.size(), false);
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0 || taken[owner[i]]) continue;
      taken[owner[i]] = true;
      ready.push_back(watched[owner[i]]);
    }
    return ready;
  }

  // poll_round asks the device for completions (an ENGINE's POLL command, with notify poll)
  // and resumes the jobs that may have finished; the vendor pauses again a job that has not.
  // Returns how many jobs ended.
  size_t poll_round() {
    if (polled() && vendor_->has_poll_command()) vendor_->poll_device();
    size_t before = jobs_.size();
    for (Job* job : ready_to_resume()) run(*job);
    return before - jobs_.size();
  }

  void on_poll_timer() {
    poll_round();
    bool still = std::any_of(jobs_.begin(), jobs_.end(),
                             [this](const std::unique_ptr<Job>& j) { return pollable(*j); });
    // With notify poll and poll_mode busy, poll() polls on every loop iteration instead.
    bool busy = polled() && poll_mode_ == config::OffloadSettings::PollMode::kBusy;
    if (still && !busy && !poll_timer_.armed()) poll_timer_.arm(kPollInterval);
  }

  void unwatch(Job& job) {
    for (int fd : job.fds) {
      loop_->remove(fd);
      watchers_.erase(fd);
    }
    job.fds.clear();
  }

  void complete(Job& job) {
    unwatch(job);
    ASYNC_WAIT_CTX_free(job.wait_ctx);
    job.wait_ctx = nullptr;
    job.async_job = nullptr;
    OpRef op = std::move(job.op);
    uint64_t ticket = job.ticket;
    bool ok = job.ok;
    OpOutput output = std::move(job.output);
    std::erase_if(jobs_, [&job](const std::unique_ptr<Job>& j) { return j.get() == &job; });
    sink_->complete(op, ticket, ok, std::move(output));
  }

  void finish_blocking(Job& job, Clock::time_point deadline) {
    while (job.async_job != nullptr && Clock::now() < deadline) {
      std::vector<pollfd> fds;
      for (int fd : job.fds) fds.push_back({fd, POLLIN, 0});
      if (!fds.empty()) {
        ::poll(fds.data(), fds.size(), 10);
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));  // polled: do not spin
        if (polled() && vendor_->has_poll_command()) vendor_->poll_device();
      }
      JobArg arg{&job};
      if (ASYNC_start_job(&job.async_job, job.wait_ctx, &job.ret, job_main, &arg, sizeof(arg)) !=
          ASYNC_PAUSE) {
        job.async_job = nullptr;
      }
    }
    unwatch(job);
    if (job.async_job == nullptr) ASYNC_WAIT_CTX_free(job.wait_ctx);
    // else: a vendor job that never ends is leaked rather than freed under its feet.
  }

  friend class FdWatcher;
  std::shared_ptr<Vendor> vendor_;
  LibraryTarget target_;
  config::OffloadSettings::Notify notify_;
  config::OffloadSettings::PollMode poll_mode_;
  event::EventLoop* loop_;
  CompletionSink* sink_;
  event::Timer poll_timer_;
  std::vector<std::unique_ptr<Job>> jobs_;
  std::vector<Job*> starting_;
  std::map<int, std::unique_ptr<FdWatcher>> watchers_;
  bool start_scheduled_ = false;
  size_t paused_ = 0;
};

void FdWatcher::on_io(uint32_t) {
  // Readable: the vendor completed the job's work; resume it. Deferred, so that this watcher
  // (which run() may free) is not used after.
  OpensslEngine* engine = engine_;
  Job* job = job_;
  engine->loop_->defer([engine, job] {
    for (auto& j : engine->jobs_) {
      if (j.get() == job && job->async_job != nullptr) {
        engine->run(*job);
        return;
      }
    }
  });
}

}  // namespace

std::string probe_openssl(const config::OffloadSettings& settings) {
  if (vendor_id(settings).empty()) {
    return "needs `crypto openssl:ID;` naming a vendor's OpenSSL provider (qatprovider, "
           "uadk_provider) or ENGINE (qatengine, kae), or a path to one";
  }
  auto vendor = open_vendor(settings);
  if (!vendor) return vendor.error().message;
  VendorCache& cache = vendor_cache();
  std::lock_guard lock(cache.mutex);
  cache.probed[vendor_key(vendor_options(settings))] = std::move(*vendor);
  return {};
}

std::string describe_openssl(const config::OffloadSettings& settings) {
  std::string out = "OpenSSL ENGINE support: " + engine_api_status();
  if (vendor_id(settings).empty()) return out;
  auto vendor = open_vendor(settings);
  if (vendor) out += "; loaded: " + (*vendor)->description();
  return out;
}

Result<std::unique_ptr<Engine>> create_openssl(const config::OffloadSettings& settings,
                                               const EngineContext& context) {
  auto vendor = open_vendor(settings);
  if (!vendor) return vendor.error();
  auto engine = std::make_unique<OpensslEngine>(std::move(*vendor), settings, context);
  VendorCache& cache = vendor_cache();
  std::lock_guard lock(cache.mutex);
  cache.probed.erase(vendor_key(vendor_options(settings)));  // held by the engine now
  return std::unique_ptr<Engine>(std::move(engine));
}

}  // namespace accelgate::offload

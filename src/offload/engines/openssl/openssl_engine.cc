// openssl: a vendor's OpenSSL 3 provider (qatprovider, uadk_provider, or any other) loaded into a
// library context of its own, driven in async mode as asynch_mode_nginx drives QAT_Engine: each
// op runs in an OpenSSL ASYNC job of this engine on the worker loop's thread; the provider
// pauses the job, and the job is resumed when its wait fds turn readable (notify event: the fds
// are in the loop's epoll) or when polled (notify poll: heuristic, timer or busy).
//
// The op reaches the vendor through Op::compute_with_library: the provider that made the op
// exports the key and the operation's parameters into this engine's library context.
//
// A job is never started inside another: submit() is called from inside a TLS handshake's job,
// so it only queues the op; the job starts from the loop (EventLoop::defer), outside any job.

#include <openssl/async.h>
#include <openssl/core_dispatch.h>
#include <openssl/err.h>
#include <openssl/provider.h>
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

namespace accelgate::offload {
namespace {

constexpr size_t kMaxInflight = 1024;  // per loop; beyond it the op is Busy (falls back)

std::string openssl_errors() {
  std::string out;
  unsigned long e;
  while ((e = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "no OpenSSL error recorded" : out;
}

// provider_property returns the value of the `provider` property that |prov|'s algorithms
// declare (qatprovider's say "provider=qatprovider"), or its name when none does. The two differ
// for a provider loaded by path (the name is then the path), and a query for a value that no
// algorithm declares picks any implementation: the default provider's as well as the vendor's.
std::string provider_property(OSSL_PROVIDER* prov) {
  constexpr std::string_view kKey = "provider=";
  for (int operation : {OSSL_OP_SIGNATURE, OSSL_OP_KEYEXCH, OSSL_OP_ASYM_CIPHER, OSSL_OP_KEYMGMT}) {
    int no_cache = 0;
    const OSSL_ALGORITHM* algs = OSSL_PROVIDER_query_operation(prov, operation, &no_cache);
    std::string value;
    for (const OSSL_ALGORITHM* a = algs; a != nullptr && a->algorithm_names != nullptr; ++a) {
      std::string_view props = a->property_definition != nullptr ? a->property_definition : "";
      // A definition is a comma-separated list of name=value (OpenSSL's property(7)).
      for (size_t pos = 0; pos < props.size() && value.empty();) {
        size_t end = std::min(props.find(',', pos), props.size());
        std::string_view item = props.substr(pos, end - pos);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        if (item.starts_with(kKey)) value = std::string(item.substr(kKey.size()));
        pos = end + 1;
      }
      if (!value.empty()) break;
    }
    if (algs != nullptr) OSSL_PROVIDER_unquery_operation(prov, operation, algs);
    if (!value.empty()) return value;
  }
  return OSSL_PROVIDER_get0_name(prov);
}

// VendorLibrary is the process-wide part: a library context with the vendor's provider and the
// default one (for everything the vendor does not implement). Shared by every loop, and across
// reloads while `crypto openssl:ID` stays the same (DeviceStore).
class VendorLibrary {
 public:
  static Result<std::shared_ptr<VendorLibrary>> open(const std::string& id) {
    auto lib = std::shared_ptr<VendorLibrary>(new VendorLibrary());
    lib->ctx_ = OSSL_LIB_CTX_new();
    if (lib->ctx_ == nullptr) return Error{"OSSL_LIB_CTX_new() failed"};
    lib->vendor_ = OSSL_PROVIDER_load(lib->ctx_, id.c_str());
    if (lib->vendor_ == nullptr) {
      return Error{"cannot load the OpenSSL provider \"" + id + "\" (" + openssl_errors() +
                   "); OpenSSL ENGINEs (qatengine, kae) are not supported: use the vendor's "
                   "provider (qatprovider, uadk_provider)"};
    }
    lib->default_ = OSSL_PROVIDER_load(lib->ctx_, "default");
    if (lib->default_ == nullptr) return Error{"cannot load the default provider"};
    lib->propq_ = "?provider=" + provider_property(lib->vendor_);
    return lib;
  }
  ~VendorLibrary() {
    if (vendor_ != nullptr) OSSL_PROVIDER_unload(vendor_);
    if (default_ != nullptr) OSSL_PROVIDER_unload(default_);
    OSSL_LIB_CTX_free(ctx_);
  }
  OSSL_LIB_CTX* ctx() const { return ctx_; }
  const char* propq() const { return propq_.c_str(); }

 private:
  VendorLibrary() = default;
  OSSL_LIB_CTX* ctx_ = nullptr;
  OSSL_PROVIDER* vendor_ = nullptr;
  OSSL_PROVIDER* default_ = nullptr;
  std::string propq_;
};

std::string vendor_id(const config::OffloadSettings& settings) {
  const std::string& c = settings.crypto;
  return c.starts_with("openssl:") ? c.substr(8) : std::string();
}

// open_library returns the shared library context of |id|; a failure is remembered, so that
// `--engines`, `-t` and every worker do not retry a provider that cannot load.
Result<std::shared_ptr<VendorLibrary>> open_library(const std::string& id) {
  static std::mutex mutex;
  static std::map<std::string, std::string> failures;
  {
    std::lock_guard lock(mutex);
    auto it = failures.find(id);
    if (it != failures.end()) return Error{it->second};
  }
  std::shared_ptr<VendorLibrary> lib;
  std::string error;
  lib = DeviceStore::global().get<VendorLibrary>("openssl:" + id, [&] {
    auto opened = VendorLibrary::open(id);
    if (!opened) {
      error = opened.error().message;
      return std::shared_ptr<VendorLibrary>();
    }
    return *opened;
  });
  if (lib) return lib;
  std::lock_guard lock(mutex);
  failures[id] = error;
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
  std::vector<int> fds;
};

class FdWatcher final : public event::IoHandler {
 public:
  FdWatcher(OpensslEngine* engine, Job* job) : engine_(engine), job_(job) {}
  void on_io(uint32_t) override;

 private:
  OpensslEngine* engine_;
  Job* job_;
};

class OpensslEngine final : public Engine {
 public:
  OpensslEngine(std::shared_ptr<VendorLibrary> lib, const config::OffloadSettings& settings,
                const EngineContext& context)
      : lib_(std::move(lib)),
        notify_(settings.notify),
        poll_mode_(settings.poll_mode),
        loop_(context.loop),
        sink_(context.sink),
        poll_timer_(context.loop, [this] { poll_paused(); }) {}

  ~OpensslEngine() override {
    // A paused job cannot be dropped: run each to its end (bounded), then free it. Happens only
    // when a reload or a stop replaces this engine while ops are in flight.
    auto deadline = Clock::now() + std::chrono::seconds(5);
    for (auto& job : jobs_) finish_blocking(*job, deadline);
  }

  std::string_view name() const override { return "openssl"; }
  // X25519 keygen is not offered: its output must be a key of the caller's default provider,
  // which a LibraryFn cannot produce (the provider makes no LibraryFn for it).
  bool accelerates(const Op& op) const override { return op.kind() != OpKind::kX25519Keygen; }

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

  bool poll() override {
    if (notify_ == config::OffloadSettings::Notify::kPoll &&
        poll_mode_ == config::OffloadSettings::PollMode::kBusy && paused_ > 0) {
      poll_paused();
      return paused_ > 0;  // busy polling: the loop does not block while jobs are paused
    }
    return false;
  }

  size_t inflight() const override { return jobs_.size(); }

  // run starts or resumes |job| (outside any other job).
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
    return job->op->compute_with_library(job->engine->lib_->ctx(), job->engine->lib_->propq(),
                                         &job->output)
               ? 1
               : 0;
  }

  void start_queued() {
    start_scheduled_ = false;
    std::vector<Job*> starting;
    starting.swap(starting_);
    for (Job* job : starting) run(*job);
  }

  // watch puts the paused job's wait fds in epoll (notify event) or arms polling.
  void watch(Job& job) {
    if (notify_ == config::OffloadSettings::Notify::kPoll) {
      if (poll_mode_ != config::OffloadSettings::PollMode::kBusy && !poll_timer_.armed()) {
        poll_timer_.arm(std::chrono::milliseconds(1));
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
      // The provider paused without a wait fd: fall back to polling this job.
      if (!poll_timer_.armed()) poll_timer_.arm(std::chrono::milliseconds(1));
    }
  }

  // poll_paused resumes every paused job (the provider pauses again if it is not done).
  void poll_paused() {
    std::vector<Job*> paused;
    for (auto& job : jobs_) {
      bool queued = std::find(starting_.begin(), starting_.end(), job.get()) != starting_.end();
      if (job->async_job != nullptr && !queued &&
          (notify_ == config::OffloadSettings::Notify::kPoll || job->fds.empty())) {
        paused.push_back(job.get());
      }
    }
    for (Job* job : paused) run(*job);
    bool still = false;
    for (auto& job : jobs_) {
      still |= job->async_job != nullptr &&
               (notify_ == config::OffloadSettings::Notify::kPoll || job->fds.empty());
    }
    // heuristic and timer both poll every millisecond while jobs are paused (a card answers in
    // tens to hundreds of microseconds); busy polls on every loop iteration (poll()).
    if (still && poll_mode_ != config::OffloadSettings::PollMode::kBusy) {
      poll_timer_.arm(std::chrono::milliseconds(1));
    }
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
  std::shared_ptr<VendorLibrary> lib_;
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
  std::string id = vendor_id(settings);
  if (id.empty()) {
    return "needs `crypto openssl:ID;` naming a vendor's OpenSSL provider (qatprovider, "
           "uadk_provider, or a module path)";
  }
  auto lib = open_library(id);
  return lib ? std::string() : lib.error().message;
}

Result<std::unique_ptr<Engine>> create_openssl(const config::OffloadSettings& settings,
                                               const EngineContext& context) {
  auto lib = open_library(vendor_id(settings));
  if (!lib) return lib.error();
  return std::unique_ptr<Engine>(new OpensslEngine(std::move(*lib), settings, context));
}

}  // namespace accelgate::offload

// ag_emu_engine: an EMULATED accelerator as an OpenSSL dynamic ENGINE (build/ag_emu_engine.so),
// for tests and demonstrations of `crypto openssl:<engine>`. It is not a card and accelerates
// nothing: it behaves towards its caller as QAT_Engine does, and computes with OpenSSL's own
// software methods. See README.md.
//
// - RSA private operations (RSA_METHOD priv_enc, priv_dec), ECDSA sign and ECDH (EC_KEY_METHOD
//   sign, compute_key). Inside an ASYNC job an operation is submitted to the "device" (one
//   thread) and the job pauses (ASYNC_pause_job) until the device completes it after the
//   latency: the device writes the job's wait fd (ASYNC_WAIT_CTX_set_wait_fd, an eventfd). Then
//   OpenSSL's default method computes it. Outside a job it computes inline, at once.
// - External polling, as QAT_Engine's: after ENABLE_EXTERNAL_POLLING (before ENGINE_init) the
//   device completes nothing by itself; the application's POLL command completes what is due.
// - Error injection: a fraction of operations fail after their latency.
//
// Settings (environment, read when the engine is bound; the control commands override them):
//   AG_EMU_ENGINE_LATENCY_US  latency of every operation (default 1000), command LATENCY_US
//   AG_EMU_ENGINE_ERROR_RATE  fraction 0..1 of operations that fail (default 0; 1: all),
//                             command ERROR_RATE
//   AG_EMU_ENGINE_STATS       a file rewritten every 100 ms while counts change, and at finish:
//                             "NAME COUNT" lines (rsa_priv_enc, rsa_priv_dec, ecdsa_sign,
//                             ecdh_compute_key: operations served; async, inline: how; failed;
//                             polls: POLL commands; rsa_keys, ec_keys: keys made with its
//                             methods, i.e. bound to it)
//   AG_EMU_ENGINE_LOG         a file that gets one line per event: "bind", "init", "finish",
//                             "ctrl NAME[ VALUE]"
//
// OPENSSL_SUPPRESS_DEPRECATED, before any OpenSSL header: an ENGINE and its RSA_METHOD and
// EC_KEY_METHOD are deprecated APIs of OpenSSL 3.0, and this file exists to be one.
#define OPENSSL_SUPPRESS_DEPRECATED

#include <fcntl.h>
#include <openssl/async.h>
#include <openssl/ec.h>
#include <openssl/engine.h>
#include <openssl/err.h>
#include <openssl/rsa.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kEngineId = "ag_emu";
constexpr const char* kEngineName = "accelgate emulated engine (tests; not an accelerator)";
constexpr auto kStatsInterval = std::chrono::milliseconds(100);

// ---- Settings and counters. Settings are per ENGINE structure (each `dynamic` LOAD binds a new
// one; control commands go to one); the device, the counters and the files are per process.

// EngineState is one ENGINE structure's settings and the operations due that wait for its POLL.
struct Request;
struct EngineState {
  std::atomic<long> latency_us{1000};
  std::atomic<double> error_rate{0};
  std::atomic<bool> external_polling{false};
  std::atomic<bool> initialised{false};
  std::mutex mutex;
  std::vector<std::shared_ptr<Request>> ready;  // due, waiting for POLL (external polling)
};

std::string* g_stats_path = nullptr;
std::string* g_log_path = nullptr;

enum Counter : int {
  kRsaPrivEnc,
  kRsaPrivDec,
  kEcdsaSign,
  kEcdhComputeKey,
  kAsync,
  kInline,
  kFailed,
  kPolls,
  kRsaKeys,
  kEcKeys,
  kCounterCount,
};
constexpr const char* kCounterNames[kCounterCount] = {
    "rsa_priv_enc", "rsa_priv_dec", "ecdsa_sign", "ecdh_compute_key", "async",
    "inline",       "failed",       "polls",      "rsa_keys",         "ec_keys"};
std::atomic<unsigned long> g_counts[kCounterCount];

void log_event(const std::string& line) {
  if (g_log_path == nullptr) return;
  int fd = ::open(g_log_path->c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  std::string text = line + "\n";
  ssize_t n = ::write(fd, text.data(), text.size());
  (void)n;
  ::close(fd);
}

void write_stats() {
  if (g_stats_path == nullptr) return;
  // The device thread and the exit-time writer may both write; never destroyed (exit).
  static auto* mutex = new std::mutex();
  std::lock_guard lock(*mutex);
  std::string tmp = *g_stats_path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "we");
  if (f == nullptr) return;
  for (int i = 0; i < kCounterCount; ++i) {
    std::fprintf(f, "%s %lu\n", kCounterNames[i], g_counts[i].load());
  }
  std::fclose(f);
  std::rename(tmp.c_str(), g_stats_path->c_str());  // readers see a whole file
}

// The exit-time write, for applications that exit with the engine still initialised (openssl
// speed, and keys that hold it): the counts since the device thread's last write.
struct ExitWriter {
  ~ExitWriter() { write_stats(); }
} g_exit_writer;

bool parse_rate(const char* text, double* out) {
  if (text == nullptr) return false;
  std::string_view s(text);
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !(v >= 0 && v <= 1)) return false;
  *out = v;
  return true;
}

bool draw_failure(const EngineState& state) {
  double rate = state.error_rate.load();
  if (rate <= 0) return false;
  if (rate >= 1) return true;
  thread_local std::minstd_rand random(std::random_device{}());
  return std::uniform_real_distribution<double>(0, 1)(random) < rate;
}

// ---- The device: one thread that completes requests when they are due.

// Request is one operation on the device. The job that submitted it waits for |done|; the
// device sets it and writes the job's wait fd under |mutex|, so the job (which frees the fd with
// its wait context once it sees |done|) never has its fd written after that.
struct Request {
  std::shared_ptr<EngineState> state;  // of the engine the operation came through
  std::mutex mutex;
  std::condition_variable cv;  // for a job that could not pause
  bool done = false;
  int fd = -1;  // the job's wait fd, borrowed

  void complete() {
    std::lock_guard lock(mutex);
    done = true;
    if (fd >= 0) {
      uint64_t one = 1;
      ssize_t n = ::write(fd, &one, sizeof(one));
      (void)n;
    }
    cv.notify_all();
  }
  bool is_done() {
    std::lock_guard lock(mutex);
    return done;
  }
};

// Device is the emulated card: one thread that completes requests when they are due, for every
// ENGINE structure of the process. With external polling an engine's due requests wait for its
// POLL command instead.
class Device {
 public:
  void start() {
    std::lock_guard lock(mutex_);
    if (users_++ > 0) return;
    stopping_ = false;
    thread_ = std::thread([this] { run(); });
  }

  // stop is an ENGINE's finish; the last one stops the thread. Nothing may wait for ever on a
  // device that is gone: what it holds completes now.
  void stop(EngineState* state) {
    poll(state);
    std::thread t;
    {
      std::lock_guard lock(mutex_);
      if (users_ == 0 || --users_ > 0) return;
      stopping_ = true;
      t = std::move(thread_);
    }
    cv_.notify_all();
    t.join();
    std::multimap<Clock::time_point, std::shared_ptr<Request>> left;
    {
      std::lock_guard lock(mutex_);
      left.swap(pending_);
    }
    for (auto& [due, r] : left) r->complete();
    write_stats();
  }

  // submit queues |r| to complete after its engine's latency; false when the device is not
  // running.
  bool submit(const std::shared_ptr<Request>& r) {
    auto due = Clock::now() + std::chrono::microseconds(r->state->latency_us.load());
    {
      std::lock_guard lock(mutex_);
      if (users_ == 0 || stopping_) return false;
      pending_.emplace(due, r);
    }
    cv_.notify_one();
    return true;
  }

  // poll is the POLL command: completes what is due for |state| (external polling).
  static void poll(EngineState* state) {
    std::vector<std::shared_ptr<Request>> due;
    {
      std::lock_guard lock(state->mutex);
      due.swap(state->ready);
    }
    for (auto& r : due) r->complete();
  }

 private:
  void run() {
    auto next_stats = Clock::now() + kStatsInterval;
    unsigned long written = ~0UL;
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      auto now = Clock::now();
      std::vector<std::shared_ptr<Request>> due;
      while (!pending_.empty() && pending_.begin()->first <= now) {
        due.push_back(std::move(pending_.begin()->second));
        pending_.erase(pending_.begin());
      }
      if (!due.empty() || now >= next_stats) {
        lock.unlock();
        for (auto& r : due) {
          if (r->state->external_polling.load()) {
            std::lock_guard state_lock(r->state->mutex);
            r->state->ready.push_back(r);  // for the engine's next POLL
          } else {
            r->complete();
          }
        }
        if (now >= next_stats) {
          unsigned long sum = 0;
          for (auto& c : g_counts) sum += c.load();
          if (sum != written) write_stats();
          written = sum;
          next_stats = now + kStatsInterval;
        }
        lock.lock();
        continue;
      }
      auto wake = next_stats;
      if (!pending_.empty()) wake = std::min(wake, pending_.begin()->first);
      cv_.wait_until(lock, wake);
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::multimap<Clock::time_point, std::shared_ptr<Request>> pending_;
  std::thread thread_;
  int users_ = 0;  // ENGINE structures initialised
  bool stopping_ = false;
};

// Never destroyed: jobs may still hold requests when the process exits, and a std::thread
// destroyed while running would end the process.
Device& device() {
  static auto* d = new Device();
  return *d;
}

// ---- Waiting for the device inside an ASYNC job.

// The key of our wait fd in a job's ASYNC_WAIT_CTX.
const char kWaitKey = 0;

void close_wait_fd(ASYNC_WAIT_CTX*, const void*, OSSL_ASYNC_FD fd, void*) { ::close(fd); }

// wait_fd returns the wait fd of |ctx|, made (an eventfd, closed with the wait context) on first
// use and kept for the next operations of the same context, as QAT_Engine does.
int wait_fd(ASYNC_WAIT_CTX* ctx) {
  OSSL_ASYNC_FD fd = -1;
  void* custom = nullptr;
  if (ASYNC_WAIT_CTX_get_fd(ctx, &kWaitKey, &fd, &custom) == 1) return fd;
  fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) return -1;
  if (ASYNC_WAIT_CTX_set_wait_fd(ctx, &kWaitKey, fd, nullptr, close_wait_fd) != 1) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// ---- Engine states, found from the key an operation works on.

// ENGINE ex_data: a std::shared_ptr<EngineState>* per ENGINE structure, set by bind.
int state_index() {
  static int index = ENGINE_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

// For a key whose method is ours but that holds no engine (RSA_set_method): the environment's
// settings. Never destroyed.
std::shared_ptr<EngineState>& unbound_state() {
  static auto* state = new std::shared_ptr<EngineState>(std::make_shared<EngineState>());
  return *state;
}

std::shared_ptr<EngineState> state_of(const ENGINE* e) {
  if (e != nullptr) {
    if (auto* state =
            static_cast<std::shared_ptr<EngineState>*>(ENGINE_get_ex_data(e, state_index()));
        state != nullptr) {
      return *state;
    }
  }
  return unbound_state();
}

void apply_environment(EngineState* state) {
  if (const char* v = std::getenv("AG_EMU_ENGINE_LATENCY_US"); v != nullptr) {
    long us = 0;
    std::string_view s(v);
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), us);
    if (ec == std::errc() && end == s.data() + s.size() && us >= 0) state->latency_us = us;
  }
  if (double rate = 0; parse_rate(std::getenv("AG_EMU_ENGINE_ERROR_RATE"), &rate)) {
    state->error_rate = rate;
  }
}

// device_wait is what every operation does before computing: inside a job, wait for the device
// (pausing the job); outside, nothing. False when the operation is to fail (error injection).
bool device_wait(Counter op, const ENGINE* engine) {
  std::shared_ptr<EngineState> state = state_of(engine);
  bool fail = draw_failure(*state);
  ASYNC_JOB* job = ASYNC_get_current_job();
  ASYNC_WAIT_CTX* ctx = job != nullptr ? ASYNC_get_wait_ctx(job) : nullptr;
  int fd = ctx != nullptr ? wait_fd(ctx) : -1;
  auto request = std::make_shared<Request>();
  request->state = state;
  request->fd = fd;
  if (fd >= 0 && device().submit(request)) {
    g_counts[kAsync].fetch_add(1);
    while (!request->is_done()) {
      if (ASYNC_pause_job() != 1) {
        // Cannot pause (not really in a job): wait here, as a synchronous card would.
        std::unique_lock lock(request->mutex);
        request->cv.wait(lock, [&] { return request->done; });
      }
    }
    uint64_t count = 0;
    ssize_t n = ::read(fd, &count, sizeof(count));  // drain it for the next operation
    (void)n;
  } else {
    g_counts[kInline].fetch_add(1);
  }
  if (fail) {
    g_counts[kFailed].fetch_add(1);
    ERR_raise_data(ERR_LIB_ENGINE, ERR_R_OPERATION_FAIL, "ag_emu: injected device error");
    return false;
  }
  g_counts[op].fetch_add(1);
  return true;
}

// ---- The methods: wait for the device, then OpenSSL's own implementation.

int emu_rsa_priv_enc(int flen, const unsigned char* from, unsigned char* to, RSA* rsa,
                     int padding) {
  if (!device_wait(kRsaPrivEnc, RSA_get0_engine(rsa))) return -1;
  return RSA_meth_get_priv_enc(RSA_PKCS1_OpenSSL())(flen, from, to, rsa, padding);
}

int emu_rsa_priv_dec(int flen, const unsigned char* from, unsigned char* to, RSA* rsa,
                     int padding) {
  if (!device_wait(kRsaPrivDec, RSA_get0_engine(rsa))) return -1;
  return RSA_meth_get_priv_dec(RSA_PKCS1_OpenSSL())(flen, from, to, rsa, padding);
}

using EcSign = int (*)(int, const unsigned char*, int, unsigned char*, unsigned int*, const BIGNUM*,
                       const BIGNUM*, EC_KEY*);
using EcSignSetup = int (*)(EC_KEY*, BN_CTX*, BIGNUM**, BIGNUM**);
using EcSignSig = ECDSA_SIG* (*)(const unsigned char*, int, const BIGNUM*, const BIGNUM*, EC_KEY*);
using EcComputeKey = int (*)(unsigned char**, size_t*, const EC_POINT*, const EC_KEY*);

EcSign own_sign() {
  EcSign sign = nullptr;
  EC_KEY_METHOD_get_sign(EC_KEY_OpenSSL(), &sign, nullptr, nullptr);
  return sign;
}

EcComputeKey own_compute_key() {
  EcComputeKey compute = nullptr;
  EC_KEY_METHOD_get_compute_key(EC_KEY_OpenSSL(), &compute);
  return compute;
}

int emu_ecdsa_sign(int type, const unsigned char* dgst, int dlen, unsigned char* sig,
                   unsigned int* siglen, const BIGNUM* kinv, const BIGNUM* r, EC_KEY* key) {
  if (!device_wait(kEcdsaSign, EC_KEY_get0_engine(key))) return 0;
  return own_sign()(type, dgst, dlen, sig, siglen, kinv, r, key);
}

int emu_ecdh_compute_key(unsigned char** out, size_t* outlen, const EC_POINT* peer,
                         const EC_KEY* key) {
  if (!device_wait(kEcdhComputeKey, EC_KEY_get0_engine(key))) return 0;
  return own_compute_key()(out, outlen, peer, key);
}

// The key counters: OpenSSL calls a method's init for every key made with it.
int emu_rsa_init(RSA* rsa) {
  g_counts[kRsaKeys].fetch_add(1);
  auto own = RSA_meth_get_init(RSA_PKCS1_OpenSSL());
  return own != nullptr ? own(rsa) : 1;
}

int emu_ec_init(EC_KEY* key) {
  g_counts[kEcKeys].fetch_add(1);
  int (*own)(EC_KEY*) = nullptr;
  EC_KEY_METHOD_get_init(EC_KEY_OpenSSL(), &own, nullptr, nullptr, nullptr, nullptr, nullptr);
  return own != nullptr ? own(key) : 1;
}

// The methods are made once per process and never freed: keys made with them may outlive any
// one ENGINE structure (the shared object is never unloaded, -z nodelete).
RSA_METHOD* rsa_method() {
  static RSA_METHOD* method = [] {
    RSA_METHOD* m = RSA_meth_dup(RSA_PKCS1_OpenSSL());
    if (m != nullptr) {
      RSA_meth_set1_name(m, "ag_emu RSA (emulated)");
      RSA_meth_set_priv_enc(m, emu_rsa_priv_enc);
      RSA_meth_set_priv_dec(m, emu_rsa_priv_dec);
      RSA_meth_set_init(m, emu_rsa_init);
    }
    return m;
  }();
  return method;
}

EC_KEY_METHOD* ec_method() {
  static EC_KEY_METHOD* method = [] {
    EC_KEY_METHOD* m = EC_KEY_METHOD_new(EC_KEY_OpenSSL());
    if (m != nullptr) {
      EcSign sign = nullptr;
      EcSignSetup setup = nullptr;
      EcSignSig sign_sig = nullptr;
      EC_KEY_METHOD_get_sign(EC_KEY_OpenSSL(), &sign, &setup, &sign_sig);
      EC_KEY_METHOD_set_sign(m, emu_ecdsa_sign, setup, sign_sig);
      EC_KEY_METHOD_set_compute_key(m, emu_ecdh_compute_key);
      // Ours counts and calls OpenSSL's own (if any); the rest stay OpenSSL's.
      using Init = int (*)(EC_KEY*);
      using Finish = void (*)(EC_KEY*);
      using Copy = int (*)(EC_KEY*, const EC_KEY*);
      using SetGroup = int (*)(EC_KEY*, const EC_GROUP*);
      using SetPrivate = int (*)(EC_KEY*, const BIGNUM*);
      using SetPublic = int (*)(EC_KEY*, const EC_POINT*);
      Init init = nullptr;
      Finish finish = nullptr;
      Copy copy = nullptr;
      SetGroup set_group = nullptr;
      SetPrivate set_private = nullptr;
      SetPublic set_public = nullptr;
      EC_KEY_METHOD_get_init(EC_KEY_OpenSSL(), &init, &finish, &copy, &set_group, &set_private,
                             &set_public);
      EC_KEY_METHOD_set_init(m, emu_ec_init, finish, copy, set_group, set_private, set_public);
    }
    return m;
  }();
  return method;
}

// ---- The ENGINE: commands, init, finish, bind.

enum Command : int {
  kCmdLatency = ENGINE_CMD_BASE,
  kCmdErrorRate,
  kCmdExternalPolling,
  kCmdPoll,
};

const ENGINE_CMD_DEFN kCommands[] = {
    {kCmdLatency, "LATENCY_US", "Latency of every operation, in microseconds",
     ENGINE_CMD_FLAG_NUMERIC},
    {kCmdErrorRate, "ERROR_RATE", "Fraction (0..1) of operations that fail",
     ENGINE_CMD_FLAG_STRING},
    {kCmdExternalPolling, "ENABLE_EXTERNAL_POLLING",
     "Complete operations only when the application sends POLL (before init)",
     ENGINE_CMD_FLAG_NO_INPUT},
    {kCmdPoll, "POLL", "Complete the operations that are due; p: int* status (0)",
     ENGINE_CMD_FLAG_NO_INPUT},
    {0, nullptr, nullptr, 0},
};

int emu_ctrl(ENGINE* e, int cmd, long i, void* p, void (*)()) {
  std::shared_ptr<EngineState> state = state_of(e);
  switch (cmd) {
    case kCmdLatency:
      if (i < 0 || i > 10'000'000) return 0;
      state->latency_us = i;
      log_event("ctrl LATENCY_US " + std::to_string(i));
      return 1;
    case kCmdErrorRate: {
      double rate = 0;
      if (!parse_rate(static_cast<const char*>(p), &rate)) return 0;
      state->error_rate = rate;
      log_event(std::string("ctrl ERROR_RATE ") + static_cast<const char*>(p));
      return 1;
    }
    case kCmdExternalPolling:
      if (state->initialised.load()) return 0;  // as QAT_Engine: before init only
      state->external_polling = true;
      log_event("ctrl ENABLE_EXTERNAL_POLLING");
      return 1;
    case kCmdPoll:
      g_counts[kPolls].fetch_add(1);
      Device::poll(state.get());
      if (p != nullptr) *static_cast<int*>(p) = 0;
      return 1;
    default:
      return 0;
  }
}

int emu_init(ENGINE* e) {
  state_of(e)->initialised = true;
  device().start();
  log_event("init");
  return 1;
}

int emu_finish(ENGINE* e) {
  std::shared_ptr<EngineState> state = state_of(e);
  device().stop(state.get());
  state->initialised = false;
  log_event("finish");
  return 1;
}

int emu_destroy(ENGINE* e) {
  delete static_cast<std::shared_ptr<EngineState>*>(ENGINE_get_ex_data(e, state_index()));
  ENGINE_set_ex_data(e, state_index(), nullptr);
  return 1;
}

void read_paths() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (const char* v = std::getenv("AG_EMU_ENGINE_STATS"); v != nullptr && *v != '\0') {
      g_stats_path = new std::string(v);
    }
    if (const char* v = std::getenv("AG_EMU_ENGINE_LOG"); v != nullptr && *v != '\0') {
      g_log_path = new std::string(v);
    }
    apply_environment(unbound_state().get());
  });
}

int bind(ENGINE* e, const char* id) {
  if (id != nullptr && std::string_view(id) != kEngineId) return 0;
  if (rsa_method() == nullptr || ec_method() == nullptr || state_index() < 0) return 0;
  read_paths();
  auto state = std::make_shared<EngineState>();
  apply_environment(state.get());
  if (ENGINE_set_id(e, kEngineId) != 1 || ENGINE_set_name(e, kEngineName) != 1 ||
      ENGINE_set_RSA(e, rsa_method()) != 1 || ENGINE_set_EC(e, ec_method()) != 1 ||
      ENGINE_set_init_function(e, emu_init) != 1 ||
      ENGINE_set_finish_function(e, emu_finish) != 1 ||
      ENGINE_set_destroy_function(e, emu_destroy) != 1 ||
      ENGINE_set_ctrl_function(e, emu_ctrl) != 1 || ENGINE_set_cmd_defns(e, kCommands) != 1) {
    return 0;
  }
  auto* held = new std::shared_ptr<EngineState>(std::move(state));
  if (ENGINE_set_ex_data(e, state_index(), held) != 1) {
    delete held;
    return 0;
  }
  log_event("bind");
  return 1;
}

}  // namespace

// The two symbols OpenSSL's `dynamic` engine looks up (what IMPLEMENT_DYNAMIC_CHECK_FN and
// IMPLEMENT_DYNAMIC_BIND_FN would define), written out so that C++ and the version script see
// them plainly.
extern "C" __attribute__((visibility("default"))) unsigned long v_check(unsigned long v) {
  return v >= OSSL_DYNAMIC_OLDEST ? OSSL_DYNAMIC_VERSION : 0;
}

extern "C" __attribute__((visibility("default"))) int bind_engine(ENGINE* e, const char* id,
                                                                  const dynamic_fns* fns) {
  if (ENGINE_get_static_state() != fns->static_state) {
    // A loader with a libcrypto of its own: use its allocator, as the macro does.
    CRYPTO_set_mem_functions(fns->mem_fns.malloc_fn, fns->mem_fns.realloc_fn, fns->mem_fns.free_fn);
    OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, nullptr);
  }
  return bind(e, id) ? 1 : 0;
}

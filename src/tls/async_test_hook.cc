#include "async_test_hook.h"

#include <openssl/async.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "accelgate/common/log.h"

namespace accelgate::tls {
namespace {

enum class Mode { kOff, kCallback, kFd };

struct HookSettings {
  Mode mode = Mode::kOff;
  int delay_ms = 0;
};

const HookSettings& settings() {
  static const HookSettings s = [] {
    HookSettings out;
    const char* env = std::getenv("ACCELGATE_TEST_ASYNC_PAUSE");
    if (env == nullptr) return out;
    std::string v = env;
    size_t colon = v.find(':');
    std::string mode = v.substr(0, colon);
    out.delay_ms = colon == std::string::npos ? 10 : std::atoi(v.c_str() + colon + 1);
    if (mode == "callback") out.mode = Mode::kCallback;
    if (mode == "fd") out.mode = Mode::kFd;
    if (out.mode != Mode::kOff) {
      AG_LOG_WARN("test hook active: every TLS handshake pauses its async job for %d ms (%s)",
                  out.delay_ms, mode.c_str());
    }
    return out;
  }();
  return s;
}

const char kWaitKey[] = "accelgate-test-hook";

// pause_once runs inside the handshake's async job (the certificate callback is called from
// SSL_do_handshake, which SSL_MODE_ASYNC runs as a job).
int pause_once(SSL*, void*) {
  const HookSettings& s = settings();
  ASYNC_JOB* job = ASYNC_get_current_job();
  if (job == nullptr) return 1;  // not in a job: compute inline, as an engine would
  ASYNC_WAIT_CTX* wait_ctx = ASYNC_get_wait_ctx(job);
  auto delay = std::chrono::milliseconds(s.delay_ms);
  if (s.mode == Mode::kCallback) {
    ASYNC_callback_fn callback = nullptr;
    void* arg = nullptr;
    if (ASYNC_WAIT_CTX_get_callback(wait_ctx, &callback, &arg) != 1 || callback == nullptr) {
      return 1;
    }
    std::thread([callback, arg, delay] {
      std::this_thread::sleep_for(delay);
      callback(arg);
    }).detach();
    ASYNC_pause_job();
    return 1;
  }
  int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) return 1;
  if (ASYNC_WAIT_CTX_set_wait_fd(wait_ctx, kWaitKey, fd, nullptr, nullptr) != 1) {
    ::close(fd);
    return 1;
  }
  std::thread([fd, delay] {
    std::this_thread::sleep_for(delay);
    uint64_t one = 1;
    ssize_t rc = ::write(fd, &one, sizeof(one));
    (void)rc;
  }).detach();
  // A wait-fd engine is resumed by the fd alone: make sure no callback short-cuts it.
  ASYNC_pause_job();
  ASYNC_WAIT_CTX_clear_fd(wait_ctx, kWaitKey);
  // The helper thread has written (the job was resumed by it), so closing cannot race.
  ::close(fd);
  return 1;
}

}  // namespace

void install_async_test_hook(SSL_CTX* ctx) {
  if (settings().mode == Mode::kOff) return;
  SSL_CTX_set_cert_cb(ctx, pause_once, nullptr);
}

}  // namespace accelgate::tls

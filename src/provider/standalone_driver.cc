#include "standalone_driver.h"

#include <pthread.h>

#include <charconv>
#include <cstdlib>
#include <future>
#include <sstream>

#include "accelgate/offload/dispatcher.h"

namespace accelgate::provider {
namespace {

// parse_micros reads "200us", "2ms", "1s" or a bare number of microseconds.
bool parse_micros(std::string_view text, std::chrono::microseconds* out) {
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end == text.data()) return false;
  std::string_view unit(end, text.data() + text.size() - end);
  uint64_t scale = 0;
  if (unit.empty() || unit == "us") {
    scale = 1;
  } else if (unit == "ms") {
    scale = 1000;
  } else if (unit == "s") {
    scale = UINT64_C(1000000);
  } else {
    return false;
  }
  if (n > UINT64_C(1) << 40) return false;
  *out = std::chrono::microseconds(n * scale);
  return true;
}

bool parse_fraction(std::string_view text, double* out) {
  std::string s(text);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !(v >= 0 && v <= 1)) return false;
  *out = v;
  return true;
}

Status parse_emu(std::string_view spec, config::OffloadSettings::Emu* emu) {
  std::istringstream words{std::string(spec)};
  std::string word;
  while (words >> word) {
    size_t eq = word.find('=');
    std::string_view key = std::string_view(word).substr(0, eq);
    std::string_view value =
        eq == std::string::npos ? std::string_view() : std::string_view(word).substr(eq + 1);
    bool ok = eq != std::string::npos;
    if (ok && key == "latency") {
      ok = parse_micros(value, &emu->latency);
    } else if (ok && key == "capacity") {
      uint64_t n = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      ok = ec == std::errc() && end == value.data() + value.size() && n >= 1 && n <= 1'000'000;
      emu->capacity = static_cast<uint32_t>(n);
    } else if (ok && key == "error_rate") {
      ok = parse_fraction(value, &emu->error_rate);
    } else if (ok && key == "hang_rate") {
      ok = parse_fraction(value, &emu->hang_rate);
    } else if (ok && key == "control") {
      emu->control = std::string(value);
      ok = !value.empty();
    } else {
      ok = false;
    }
    if (!ok) return Error{"ACCELGATE_EMU: invalid \"" + word + "\""};
  }
  return {};
}

bool valid_crypto(std::string_view v) {
  for (std::string_view name : {"auto", "off", "sw", "pool", "emu", "mb"}) {
    if (v == name) return true;
  }
  return v.starts_with("openssl:") && v.size() > 8;
}

}  // namespace

Result<config::OffloadSettings> standalone_settings(const std::string& crypto_param) {
  config::OffloadSettings settings;
  if (!crypto_param.empty()) {
    settings.crypto = crypto_param;
  } else if (const char* env = std::getenv("ACCELGATE_CRYPTO"); env != nullptr && *env != 0) {
    settings.crypto = env;
  }
  if (!valid_crypto(settings.crypto)) {
    return Error{"crypto \"" + settings.crypto +
                 "\": expecting auto, off, sw, pool, emu, mb or openssl:<id>"};
  }
  if (const char* env = std::getenv("ACCELGATE_FALLBACK"); env != nullptr && *env != 0) {
    std::string_view v(env);
    if (v != "on" && v != "off") {
      return Error{"ACCELGATE_FALLBACK \"" + std::string(v) + "\": expecting on or off"};
    }
    settings.fallback = v == "on";
  }
  // Ops come one at a time from the application's threads: let a partial mb batch wait a
  // little for company (config.h, mb_flush).
  settings.mb_flush = std::chrono::microseconds(20);
  if (const char* env = std::getenv("ACCELGATE_MB_FLUSH"); env != nullptr && *env != 0) {
    char* end = nullptr;
    long us = std::strtol(env, &end, 10);
    if (end == env || *end != '\0' || us < 0 || us > 1'000'000) {
      return Error{"ACCELGATE_MB_FLUSH \"" + std::string(env) +
                   "\": expecting microseconds, 0 to 1000000"};
    }
    settings.mb_flush = std::chrono::microseconds(us);
  }
  if (const char* env = std::getenv("ACCELGATE_EMU"); env != nullptr) {
    if (Status st = parse_emu(env, &settings.emu); !st) return st.error();
  }
  return settings;
}

Result<std::unique_ptr<StandaloneDriver>> StandaloneDriver::start(
    const config::OffloadSettings& settings) {
  std::unique_ptr<StandaloneDriver> driver(new StandaloneDriver());
  std::promise<Status> started;
  std::future<Status> result = started.get_future();
  driver->thread_ = std::thread([d = driver.get(), settings, &started] {
    d->run(settings, [&started](Status st) { started.set_value(std::move(st)); });
  });
  Status st = result.get();
  if (!st) {
    driver->thread_.join();
    return st.error();
  }
  return driver;
}

void StandaloneDriver::run(const config::OffloadSettings& settings,
                           const std::function<void(Status)>& started) {
  pthread_setname_np(pthread_self(), "ag-offload");
  // SCHED_BATCH: a post from the application does not preempt the application's thread (the
  // scheduler gives batch threads no wake-up preemption), so on a shared core the application
  // goes on submitting, and the driver finds a full batch, instead of running once per op. On a
  // core of its own nothing changes. Any user may choose it; if refused, nothing is lost.
  sched_param batch{};
  pthread_setschedparam(pthread_self(), SCHED_BATCH, &batch);
  auto loop = event::EventLoop::create();
  if (!loop) {
    started(loop.error());
    return;
  }
  auto dispatcher = offload::Dispatcher::create(loop->get(), settings);
  if (!dispatcher) {
    started(dispatcher.error());
    return;
  }
  (*dispatcher)->make_current();
  uses_library_fn_ = (*dispatcher)->uses_library_fn();
  loop_ = loop->get();
  started(Status());
  // |started| refers to the starter's promise, which is gone from here on.
  loop_->run();
  dispatcher->reset();
}

StandaloneDriver::~StandaloneDriver() {
  if (thread_.joinable()) {
    loop_->post([loop = loop_] { loop->stop(); });
    thread_.join();
  }
}

void StandaloneDriver::submit(offload::OpRef op, Done done) {
  loop_->post([op = std::move(op), done = std::move(done)]() mutable {
    auto* dispatcher = offload::Dispatcher::current();
    auto shared_done = std::make_shared<Done>(std::move(done));
    op->set_on_complete([shared_done](offload::Op& ended) {
      (*shared_done)(ended.ok(), std::move(ended.output()), ended.engine());
    });
    if (dispatcher->submit(op)) (*shared_done)(op->ok(), std::move(op->output()), op->engine());
  });
}

}  // namespace accelgate::provider

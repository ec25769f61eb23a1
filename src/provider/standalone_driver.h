#pragma once

// StandaloneDriver: the offload machinery of the module when it runs inside another application
// (`openssl speed`, `openssl s_server`), which has no event loop of ours. One background thread,
// "ag-offload", runs an EventLoop with a Dispatcher; an async job hands its op over with submit()
// and the op's completion, on that thread, wakes the job (see run_op.h).

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "accelgate/common/result.h"
#include "accelgate/config/config.h"
#include "accelgate/event/event_loop.h"
#include "accelgate/offload/op.h"

namespace accelgate::provider {

// standalone_settings builds the offload settings of the module: `crypto` from the provider's
// configuration parameter |crypto_param| or else the environment variable ACCELGATE_CRYPTO or
// else "auto" (values as the `crypto` directive); for emu, the directive's arguments from
// ACCELGATE_EMU ("latency=200us capacity=64 error_rate=0 hang_rate=0 control=FILE"); `fallback`
// from ACCELGATE_FALLBACK ("on", the default, or "off": an op the engine fails then fails).
Result<config::OffloadSettings> standalone_settings(const std::string& crypto_param);

class StandaloneDriver {
 public:
  // Done receives an op's end on the driver thread: whether it produced an output, the output
  // (moved from the op) and the engine that produced it.
  using Done = std::function<void(bool ok, offload::OpOutput&& output, std::string_view engine)>;

  // start starts the thread and builds its dispatcher; fails when the dispatcher cannot be made.
  static Result<std::unique_ptr<StandaloneDriver>> start(const config::OffloadSettings& settings);
  // The destructor stops the loop and joins the thread; ops still in flight are dropped (their
  // waiters are gone: teardown happens after the application's last job).
  ~StandaloneDriver();
  StandaloneDriver(const StandaloneDriver&) = delete;
  StandaloneDriver& operator=(const StandaloneDriver&) = delete;

  // submit runs |op| through the dispatcher on the driver thread and calls |done| there once.
  // Any thread.
  void submit(offload::OpRef op, Done done);
  // uses_library_fn is the driver's Dispatcher::uses_library_fn (fixed at start). Any thread.
  bool uses_library_fn() const { return uses_library_fn_; }

 private:
  StandaloneDriver() = default;
  void run(const config::OffloadSettings& settings, const std::function<void(Status)>& started);

  event::EventLoop* loop_ = nullptr;  // owned by the thread; valid while it runs
  bool uses_library_fn_ = false;      // set before start() returns
  std::thread thread_;
};

}  // namespace accelgate::provider

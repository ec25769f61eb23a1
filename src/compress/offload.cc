#include "accelgate/compress/offload.h"

#include <unistd.h>

#include <cerrno>

#include "accelgate/offload/dispatcher.h"
#include "accelgate/offload/op.h"

namespace accelgate::compress {
namespace {

// kGzipOpTimeout is the gzip ops' deadline: a day. The dispatcher redoes an op in software when
// its deadline passes, which for compression would block the loop for as long as the body takes
// and compute it twice; the pool's threads always finish their work, so there is nothing to
// recover from.
constexpr config::Millis kGzipOpTimeout{24LL * 3600 * 1000};

}  // namespace

GzipJob::~GzipJob() {
  if (fd >= 0) ::close(fd);
}

bool GzipJob::run() {
  bool expected = false;
  if (!claimed_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) return false;
  if (fd >= 0) {
    size_t got = 0;
    while (got < length) {
      ssize_t n = ::pread(fd, input.data() + got, length - got, offset + static_cast<off_t>(got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        read_failed = true;
        read_errno = n < 0 ? errno : 0;
        break;
      }
      got += static_cast<size_t>(n);
    }
  }
  if (!read_failed) {
    result = gzip_buffer(codec, level, std::span<const uint8_t>(input.data(), length),
                         std::span<uint8_t>(output.data(), output.capacity()));
  }
  finished_.store(true, std::memory_order_release);
  return true;
}

config::OffloadSettings gzip_offload_settings(const config::OffloadSettings& offload) {
  config::OffloadSettings s = offload;
  s.crypto = "pool";
  s.fallback = true;
  s.op_timeout = kGzipOpTimeout;
  return s;
}

GzipOffload::GzipOffload(std::unique_ptr<offload::Dispatcher> dispatcher)
    : dispatcher_(std::move(dispatcher)) {}

GzipOffload::~GzipOffload() = default;

Result<std::unique_ptr<GzipOffload>> GzipOffload::create(event::EventLoop* loop,
                                                         const config::OffloadSettings& settings) {
  auto dispatcher = offload::Dispatcher::create(loop, gzip_offload_settings(settings));
  if (!dispatcher) return dispatcher.error();
  return std::unique_ptr<GzipOffload>(new GzipOffload(std::move(*dispatcher)));
}

Status GzipOffload::reconfigure(const config::OffloadSettings& settings) {
  return dispatcher_->reconfigure(gzip_offload_settings(settings));
}

std::string_view GzipOffload::engine_name() const { return dispatcher_->primary_engine(); }

bool GzipOffload::submit(std::shared_ptr<GzipJob> job, std::function<void()> done) {
  GzipJob* raw = job.get();
  auto op = std::make_shared<offload::Op>(
      offload::OpKind::kGzip, 0, [job = std::move(job)](offload::OpOutput*) { return job->run(); });
  op->set_on_complete([done = std::move(done)](offload::Op&) { done(); });
  if (dispatcher_->submit(op)) {
    // Ended inside submit: computed by sw, or (impossible with sw last) by no engine at all;
    // then the loop computes it here so the caller always gets a finished job.
    if (!raw->finished()) raw->run();
    return true;
  }
  return false;
}

}  // namespace accelgate::compress

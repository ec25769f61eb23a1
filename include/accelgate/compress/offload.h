#pragma once

// Compression off the event loop (issue 7, item 3). A GzipJob is one body to compress; GzipOffload
// runs jobs as OpKind::kGzip ops through an offload Dispatcher of its own whose chain is
// [pool, sw]: the pool engine's threads, or the loop itself (sw) when the pool is busy or cannot
// start. The crypto dispatcher is a different one, so the `crypto` setting never decides where
// compression runs; with the same `pool_threads` both share the pool's threads (DeviceStore).

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <memory>

#include "accelgate/common/buffer_pool.h"
#include "accelgate/common/result.h"
#include "accelgate/compress/codec.h"
#include "accelgate/compress/gzip.h"
#include "accelgate/config/config.h"
#include "accelgate/event/event_loop.h"

namespace accelgate::offload {
class Dispatcher;
}

namespace accelgate::compress {

// GzipJob is one body and what became of it. The caller fills the input side (and the buffers,
// from its worker's BufferPool) on the loop thread; run() happens once, on an engine thread or
// inline; the caller reads the result after the job's completion. The op holds the job, so its
// buffers stay alive while an engine thread works on them even if the response that wanted them
// is gone; the job then dies where the op does, freeing its buffers and closing its file.
struct GzipJob {
  GzipJob() = default;
  GzipJob(const GzipJob&) = delete;
  GzipJob& operator=(const GzipJob&) = delete;
  ~GzipJob();

  // Input: |length| bytes of file |fd| from |offset| (the job owns fd and closes it), read into
  // |input| by run(); or, with fd < 0, the first |length| bytes already in |input|.
  int fd = -1;
  off_t offset = 0;
  size_t length = 0;
  Buffer input;
  Buffer output;  // at least max_compressed_size(length) bytes
  Codec codec = Codec::kZlib;
  int level = 1;

  // Results, valid once finished() is true.
  GzipResult result;
  bool read_failed = false;  // the file did not give |length| bytes (it shrank, or an I/O error)
  int read_errno = 0;

  // run reads the input (file) and compresses it with fallback. Runs once: a second call (an op
  // retried elsewhere while still running) returns false at once and does nothing.
  bool run();
  bool finished() const { return finished_.load(std::memory_order_acquire); }

 private:
  std::atomic<bool> claimed_{false};
  std::atomic<bool> finished_{false};
};

class GzipOffload {
 public:
  // create builds the worker's gzip dispatcher for |loop| from the offload block's settings
  // (pool_threads; the chain and the deadline are the gzip path's own).
  static Result<std::unique_ptr<GzipOffload>> create(event::EventLoop* loop,
                                                     const config::OffloadSettings& settings);
  ~GzipOffload();
  GzipOffload(const GzipOffload&) = delete;
  GzipOffload& operator=(const GzipOffload&) = delete;

  // reconfigure follows a reload's settings; jobs in flight finish where they are.
  Status reconfigure(const config::OffloadSettings& settings);

  // submit runs |job|. Returns true when it ran inline (the pool was busy or is not there):
  // |done| is not called. Otherwise |done| runs later on the loop's thread, once, after the job
  // ran; it must not assume that whoever submitted is still there (capture it weakly).
  bool submit(std::shared_ptr<GzipJob> job, std::function<void()> done);

  // engine_name is the first engine of the gzip chain ("pool", or "sw" when the pool could not
  // start).
  std::string_view engine_name() const;

 private:
  explicit GzipOffload(std::unique_ptr<offload::Dispatcher> dispatcher);
  std::unique_ptr<offload::Dispatcher> dispatcher_;
};

// gzip_offload_settings are the settings of the gzip dispatcher, made from the offload block's:
// engine pool, fallback on, and no practical deadline (a large body at a high level takes
// seconds; a job is never computed twice).
config::OffloadSettings gzip_offload_settings(const config::OffloadSettings& offload);

}  // namespace accelgate::compress

#pragma once

// GzipBody: the compressed body of a connection's current response (issue 7). It comes from the
// gzip cache, or is compressed inline (bodies shorter than gzip_offload_min_length, and bodies in
// memory), or by an offload op on the pool's threads while the loop serves other connections.
// It owns the buffers (from the worker's BufferPool) or the cache entry the connection writes
// from, until reset() at the end of the response or when the connection closes. A connection
// that closes while its op is in flight just drops its part: the op owns the job, its file and
// its buffers, which die with it after the engine thread is done with them.
//
// One per connection, reused from response to response; loop thread only.

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "accelgate/common/buffer_pool.h"
#include "accelgate/compress/cache.h"
#include "accelgate/compress/offload.h"
#include "accelgate/config/config.h"
#include "static_file.h"

namespace accelgate::http {

class WorkerContext;

class GzipBody {
 public:
  explicit GzipBody(WorkerContext* ctx) : ctx_(ctx) {}
  ~GzipBody() { reset(); }
  GzipBody(const GzipBody&) = delete;
  GzipBody& operator=(const GzipBody&) = delete;

  enum class Outcome {
    kNone,        // nothing started
    kPending,     // an op is compressing it
    kCompressed,  // body() is the gzip stream
    kIdentity,    // every codec failed: body() is the file's bytes, to send uncompressed
    kFailed,      // the file could not be read whole: the response cannot be made
  };

  // start_file compresses the whole of |file| (status 200) as |settings| say. Returns false when
  // it could not start (no memory for the buffers; counted as a fallback to identity): the file
  // is then untouched and the caller serves it uncompressed. Otherwise it has taken |file|.fd, and
  // either the outcome is known now, or it is kPending and |done| runs on the loop's thread once it
  // is known (never after reset()).
  bool start_file(const config::GzipSettings& settings, StaticFile& file,
                  std::function<void()> done);

  // compress_memory compresses |body| inline. The outcome is kCompressed, or kIdentity (send
  // |body| as it is).
  void compress_memory(const config::GzipSettings& settings, std::string_view body);

  Outcome outcome() const { return outcome_; }
  bool pending() const { return outcome_ == Outcome::kPending; }
  std::span<const uint8_t> body() const { return body_; }
  compress::Codec engine() const { return engine_; }

  // reset ends the response: buffers go back to the pool, the cache entry is let go, an op in
  // flight is forgotten (its completion will find nobody).
  void reset();

 private:
  void on_job_done();
  void finish_job(const char* source);

  WorkerContext* ctx_;
  Outcome outcome_ = Outcome::kNone;
  compress::Codec engine_ = compress::Codec::kZlib;
  std::span<const uint8_t> body_;
  Buffer input_;
  Buffer output_;
  std::shared_ptr<const compress::CachedBody> cached_;
  std::shared_ptr<compress::GzipJob> job_;
  std::shared_ptr<GzipBody*> waiter_;  // the op's completion holds it weakly
  std::function<void()> done_;
  std::string path_;  // the file being compressed
  // What the cache needs once the body is made (file bodies with gzip_cache only).
  bool cache_it_ = false;
  int cache_level_ = 0;
  compress::Codec cache_codec_ = compress::Codec::kZlib;
  compress::FileIdentity cache_file_;
};

// count_gzip_response counts one response in accelgate_gzip_responses_total{source}: "inline",
// "offload", "cache", "static" (gzip_static) or "identity" (sent uncompressed after a fallback).
void count_gzip_response(const char* source);

// engine_setting is `gzip_engine` as the compress layer takes it (nullopt: auto).
std::optional<compress::Codec> engine_setting(config::GzipSettings::Engine engine);

}  // namespace accelgate::http

#include "gzip_body.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "accelgate/common/log.h"
#include "accelgate/common/metrics.h"
#include "accelgate/compress/gzip.h"
#include "accelgate/http/connection.h"

namespace accelgate::http {

using compress::Codec;

void count_gzip_response(const char* source) {
  static auto& family = metrics::Registry::global().counter(
      "accelgate_gzip_responses_total",
      "Compressed responses by where the body came from: inline, offload (pool threads), cache, "
      "static (gzip_static .gz files), identity (sent uncompressed after every codec failed).",
      {"source"});
  // The five children, looked up once.
  static metrics::Counter* const kCounters[] = {
      &family.with({"inline"}), &family.with({"offload"}),  &family.with({"cache"}),
      &family.with({"static"}), &family.with({"identity"}),
  };
  static constexpr const char* kNames[] = {"inline", "offload", "cache", "static", "identity"};
  for (size_t i = 0; i < std::size(kNames); ++i) {
    if (std::strcmp(kNames[i], source) == 0) kCounters[i]->inc();
  }
}

std::optional<Codec> engine_setting(config::GzipSettings::Engine engine) {
  switch (engine) {
    case config::GzipSettings::Engine::kIsal:
      return Codec::kIsal;
    case config::GzipSettings::Engine::kLibdeflate:
      return Codec::kLibdeflate;
    case config::GzipSettings::Engine::kZlib:
      return Codec::kZlib;
    case config::GzipSettings::Engine::kAuto:
      return std::nullopt;
  }
  return std::nullopt;
}

bool GzipBody::start_file(const config::GzipSettings& settings, StaticFile& file,
                          std::function<void()> done) {
  reset();
  Codec codec = compress::choose_codec(engine_setting(settings.engine), settings.level);
  compress::FileIdentity identity{static_cast<uint64_t>(file.file_size), file.mtime_ns, file.inode,
                                  file.device};
  compress::ResponseCache& cache = compress::ResponseCache::global();
  path_ = file.file_path;  // assigned, not copied anew: its capacity is reused
  cache_it_ = settings.cache_size > 0 && cache.capacity() > 0;
  if (cache_it_) {
    cached_ = cache.find(file.file_path, codec, settings.level, identity);
    if (cached_) {
      ::close(file.fd);
      file.fd = -1;
      outcome_ = Outcome::kCompressed;
      engine_ = cached_->engine;
      body_ = std::span<const uint8_t>(cached_->bytes.get(), cached_->size);
      count_gzip_response("cache");
      return true;
    }
    cache_level_ = settings.level;
    cache_codec_ = codec;
    cache_file_ = identity;
  }
  auto length = static_cast<size_t>(file.length);
  BufferPool& pool = ctx_->buffer_pool();
  Buffer input = pool.acquire(length);
  Buffer output = pool.acquire(compress::max_compressed_size(length));
  std::shared_ptr<compress::GzipJob> job;
  if (!input.empty() && !output.empty()) {
    try {
      job = std::make_shared<compress::GzipJob>();
    } catch (const std::bad_alloc&) {
    }
  }
  if (!job) {
    pool.release(std::move(input));
    pool.release(std::move(output));
    compress::count_fallback(codec, true);
    cache_it_ = false;
    return false;
  }
  job->fd = file.fd;
  file.fd = -1;
  job->offset = file.offset;
  job->length = length;
  job->input = std::move(input);
  job->output = std::move(output);
  job->codec = codec;
  job->level = settings.level;
  job_ = std::move(job);

  compress::GzipOffload* offload = ctx_->gzip_offload();
  if (offload == nullptr || length < settings.offload_min_length) {
    job_->run();
    finish_job("inline");
    return true;
  }
  waiter_ = std::make_shared<GzipBody*>(this);
  bool ran_inline = offload->submit(job_, [w = std::weak_ptr<GzipBody*>(waiter_)] {
    if (auto self = w.lock()) (*self)->on_job_done();
  });
  if (ran_inline) {
    waiter_.reset();
    finish_job("inline");  // the pool was busy: the loop compressed it
    return true;
  }
  outcome_ = Outcome::kPending;
  done_ = std::move(done);
  return true;
}

void GzipBody::on_job_done() {
  waiter_.reset();
  finish_job("offload");
  std::function<void()> done = std::move(done_);
  done_ = nullptr;
  if (done) done();  // may reset() this body (the connection closes): nothing follows
}

void GzipBody::finish_job(const char* source) {
  std::shared_ptr<compress::GzipJob> job = std::move(job_);
  if (!job->finished() || job->read_failed) {
    // Not finished cannot happen (a job is run once and completes before its op does); a file
    // that shrank or failed to read leaves no body to send.
    if (job->finished()) {
      AG_LOG_ERROR("reading \"%s\" to compress it failed: %s", path_.c_str(),
                   job->read_errno != 0 ? std::strerror(job->read_errno) : "the file shrank");
    }
    outcome_ = Outcome::kFailed;
    return;
  }
  input_ = std::move(job->input);
  output_ = std::move(job->output);
  const compress::GzipResult& r = job->result;
  if (!r.compressed) {
    outcome_ = Outcome::kIdentity;
    body_ = std::span<const uint8_t>(input_.data(), job->length);
    count_gzip_response("identity");
    return;
  }
  outcome_ = Outcome::kCompressed;
  engine_ = r.engine;
  body_ = std::span<const uint8_t>(output_.data(), r.size);
  count_gzip_response(source);
  if (cache_it_) {
    compress::ResponseCache& cache = compress::ResponseCache::global();
    auto entry = compress::ResponseCache::make_body(cache_file_, r.engine, output_.data(), r.size);
    if (entry && cache.insert(path_, cache_codec_, cache_level_, entry)) {
      // Written from the cache entry from now on: the big buffers go back to the pool at once.
      cached_ = std::move(entry);
      body_ = std::span<const uint8_t>(cached_->bytes.get(), cached_->size);
      BufferPool& pool = ctx_->buffer_pool();
      pool.release(std::move(input_));
      pool.release(std::move(output_));
    }
  }
}

void GzipBody::compress_memory(const config::GzipSettings& settings, std::string_view body) {
  reset();
  Codec codec = compress::choose_codec(engine_setting(settings.engine), settings.level);
  BufferPool& pool = ctx_->buffer_pool();
  output_ = pool.acquire(compress::max_compressed_size(body.size()));
  compress::GzipResult r;
  if (!output_.empty()) {
    r = compress::gzip_buffer(
        codec, settings.level,
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(body.data()), body.size()),
        std::span<uint8_t>(output_.data(), output_.capacity()));
  } else {
    compress::count_fallback(codec, true);
  }
  if (!r.compressed) {
    outcome_ = Outcome::kIdentity;
    count_gzip_response("identity");
    return;
  }
  outcome_ = Outcome::kCompressed;
  engine_ = r.engine;
  body_ = std::span<const uint8_t>(output_.data(), r.size);
  count_gzip_response("inline");
}

void GzipBody::reset() {
  waiter_.reset();
  done_ = nullptr;
  job_.reset();  // in flight: the op keeps the job (and its buffers) until the engine is done
  BufferPool& pool = ctx_->buffer_pool();
  pool.release(std::move(input_));
  pool.release(std::move(output_));
  cached_.reset();
  body_ = {};
  outcome_ = Outcome::kNone;
  cache_it_ = false;
  path_.clear();
}

}  // namespace accelgate::http

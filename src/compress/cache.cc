#include "accelgate/compress/cache.h"

#include <cstring>
#include <new>

#include "accelgate/common/metrics.h"

namespace accelgate::compress {
namespace {

// kEntryOverhead approximates an entry's bookkeeping (list node, hash node, CachedBody) so many
// tiny bodies cannot hold much more memory than the capacity says.
constexpr size_t kEntryOverhead = 160;

}  // namespace

struct ResponseCache::Metrics {
  metrics::Counter& hits = metrics::Registry::global()
                               .counter("accelgate_gzip_cache_hits_total",
                                        "Compressed static responses served from the gzip cache.")
                               .get();
  metrics::Counter& misses =
      metrics::Registry::global()
          .counter("accelgate_gzip_cache_misses_total",
                   "Lookups in the gzip cache that found nothing, or a changed file.")
          .get();
  metrics::Counter& evictions =
      metrics::Registry::global()
          .counter("accelgate_gzip_cache_evictions_total",
                   "Entries the gzip cache dropped to make room (least recently used first).")
          .get();
  metrics::Gauge& bytes = metrics::Registry::global()
                              .gauge("accelgate_gzip_cache_bytes",
                                     "Bytes held by the gzip cache, bookkeeping included.")
                              .get();
  metrics::Gauge& entries =
      metrics::Registry::global()
          .gauge("accelgate_gzip_cache_entries", "Compressed responses held by the gzip cache.")
          .get();
};

ResponseCache& ResponseCache::global() {
  static Metrics metrics;
  static ResponseCache cache(&metrics);
  return cache;
}

void ResponseCache::make_key(std::string* out, std::string_view path, Codec codec, int level) {
  out->assign(path);
  out->push_back('\0');  // paths never hold NUL (the http layer refuses it)
  out->push_back(static_cast<char>('0' + static_cast<int>(codec)));
  out->push_back(static_cast<char>('0' + level));
}

void ResponseCache::set_capacity(uint64_t bytes) {
  std::lock_guard lock(mutex_);
  capacity_ = bytes;
  evict_to(bytes);
  publish();
}

uint64_t ResponseCache::capacity() const {
  std::lock_guard lock(mutex_);
  return capacity_;
}

uint64_t ResponseCache::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

size_t ResponseCache::entries() const {
  std::lock_guard lock(mutex_);
  return lru_.size();
}

std::shared_ptr<const CachedBody> ResponseCache::find(std::string_view path, Codec codec, int level,
                                                      const FileIdentity& file) {
  thread_local std::string key;  // reused: a lookup allocates nothing once it has grown
  make_key(&key, path, codec, level);
  std::lock_guard lock(mutex_);
  auto it = index_.find(std::string_view(key));
  if (it == index_.end() || !(it->second->body->file == file)) {
    if (it != index_.end()) {
      erase(it->second);  // the file changed: its old body can never be served again
      publish();
    }
    if (metrics_ != nullptr) metrics_->misses.inc();
    return nullptr;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  if (metrics_ != nullptr) metrics_->hits.inc();
  return it->second->body;
}

bool ResponseCache::insert(std::string_view path, Codec codec, int level,
                           std::shared_ptr<const CachedBody> body) {
  if (!body) return false;
  try {
    std::string key;
    make_key(&key, path, codec, level);
    size_t cost = body->size + key.size() * 2 + kEntryOverhead;
    std::lock_guard lock(mutex_);
    if (capacity_ == 0 || cost > capacity_ / 8) return false;
    if (auto it = index_.find(std::string_view(key)); it != index_.end()) erase(it->second);
    evict_to(capacity_ - cost);
    lru_.push_front(Entry{key, std::move(body), cost});
    index_.emplace(std::move(key), lru_.begin());
    bytes_ += cost;
    publish();
    return true;
  } catch (const std::bad_alloc&) {
    return false;  // the cache is an optimisation: without memory the response is still served
  }
}

std::shared_ptr<const CachedBody> ResponseCache::make_body(const FileIdentity& file, Codec engine,
                                                           const uint8_t* data, size_t size) {
  std::shared_ptr<CachedBody> body;
  try {
    body = std::make_shared<CachedBody>();
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
  body->file = file;
  body->engine = engine;
  body->bytes.reset(new (std::nothrow) uint8_t[size == 0 ? 1 : size]);
  if (!body->bytes) return nullptr;
  if (size > 0) std::memcpy(body->bytes.get(), data, size);
  body->size = size;
  return body;
}

void ResponseCache::evict_to(uint64_t limit) {
  while (bytes_ > limit && !lru_.empty()) {
    erase(std::prev(lru_.end()));
    if (metrics_ != nullptr) metrics_->evictions.inc();
  }
}

void ResponseCache::erase(List::iterator it) {
  bytes_ -= it->cost;
  index_.erase(it->key);
  lru_.erase(it);
}

void ResponseCache::publish() {
  if (metrics_ == nullptr) return;
  metrics_->bytes.set(static_cast<int64_t>(bytes_));
  metrics_->entries.set(static_cast<int64_t>(lru_.size()));
}

}  // namespace accelgate::compress

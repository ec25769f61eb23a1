#pragma once

// ResponseCache: compressed static responses kept in memory, shared by every worker thread
// (issue 7, item 4; `gzip_cache SIZE`). An entry is keyed by the file's path, the codec and the
// level, and remembers the file's identity (size, modification time to the nanosecond, inode and
// device): a lookup whose file no longer has that identity misses and drops the stale entry, so a
// file is compressed once until it changes. Least recently used entries go first when the cache
// is full. Thread-safe (one mutex; the critical sections are a hash lookup and a list splice).

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "accelgate/compress/codec.h"

namespace accelgate::compress {

// FileIdentity is what says a file is unchanged.
struct FileIdentity {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t inode = 0;
  uint64_t device = 0;
  bool operator==(const FileIdentity&) const = default;
};

// CachedBody is one compressed response body. Immutable once in the cache; readers hold it by
// shared_ptr, so an entry evicted while a response is being written from it stays alive.
struct CachedBody {
  FileIdentity file;
  Codec engine = Codec::kZlib;  // the codec that made it (a fallback may differ from the key's)
  std::unique_ptr<uint8_t[]> bytes;
  size_t size = 0;
};

class ResponseCache {
 public:
  // global is the process's cache (capacity 0, off, until set_capacity); it alone reports the
  // metrics accelgate_gzip_cache_{hits,misses,evictions}_total and _{bytes,entries}.
  static ResponseCache& global();

  ResponseCache() = default;
  ResponseCache(const ResponseCache&) = delete;
  ResponseCache& operator=(const ResponseCache&) = delete;

  // set_capacity sets the most bytes the cache holds (0 turns it off and empties it); evicts
  // down to it at once.
  void set_capacity(uint64_t bytes);
  uint64_t capacity() const;

  // find returns the body cached for |path| at |codec| and |level| if its file still has
  // identity |file|, else null (counted as a miss; a stale entry is dropped).
  std::shared_ptr<const CachedBody> find(std::string_view path, Codec codec, int level,
                                         const FileIdentity& file);
  // insert keeps |body| for |path|, |codec|, |level| (replacing what was there), evicting the
  // least recently used entries to make room. A body larger than an eighth of the capacity is not
  // kept (one large file would otherwise push out many small ones); returns whether it was kept.
  bool insert(std::string_view path, Codec codec, int level,
              std::shared_ptr<const CachedBody> body);

  // make_body copies |size| bytes into a new CachedBody; null when memory is short.
  static std::shared_ptr<const CachedBody> make_body(const FileIdentity& file, Codec engine,
                                                     const uint8_t* data, size_t size);

  uint64_t bytes() const;  // held now, keys and bookkeeping included
  size_t entries() const;

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<const CachedBody> body;
    size_t cost = 0;
  };
  using List = std::list<Entry>;  // most recently used first
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  static void make_key(std::string* out, std::string_view path, Codec codec, int level);
  void evict_to(uint64_t limit);  // with mutex_ held
  void erase(List::iterator it);  // with mutex_ held

  struct Metrics;
  explicit ResponseCache(Metrics* metrics) : metrics_(metrics) {}
  void publish();  // with mutex_ held: the gauges

  Metrics* metrics_ = nullptr;
  mutable std::mutex mutex_;
  uint64_t capacity_ = 0;
  uint64_t bytes_ = 0;
  List lru_;
  std::unordered_map<std::string, List::iterator, KeyHash, std::equal_to<>> index_;
};

}  // namespace accelgate::compress

// ResponseCache: hits and misses, invalidation when the file's identity changes, least recently
// used eviction, the size limits, and concurrent use from several threads.

#include "accelgate/compress/cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace accelgate::compress {
namespace {

FileIdentity file(uint64_t size, int64_t mtime = 100, uint64_t inode = 7) {
  return FileIdentity{size, mtime, inode, 1};
}

std::shared_ptr<const CachedBody> body(const FileIdentity& f, size_t size, uint8_t fill) {
  std::vector<uint8_t> bytes(size, fill);
  return ResponseCache::make_body(f, Codec::kIsal, bytes.data(), bytes.size());
}

TEST(ResponseCache, FindsWhatWasInsertedForTheSameFileCodecAndLevel) {
  ResponseCache cache;
  cache.set_capacity(1 << 20);
  FileIdentity f = file(5000);
  ASSERT_TRUE(cache.insert("/srv/a.html", Codec::kIsal, 1, body(f, 1000, 'a')));
  auto hit = cache.find("/srv/a.html", Codec::kIsal, 1, f);
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->size, 1000u);
  EXPECT_EQ(hit->bytes[0], 'a');
  EXPECT_EQ(cache.find("/srv/a.html", Codec::kIsal, 6, f), nullptr);  // another level
  EXPECT_EQ(cache.find("/srv/a.html", Codec::kZlib, 1, f), nullptr);  // another codec
  EXPECT_EQ(cache.find("/srv/b.html", Codec::kIsal, 1, f), nullptr);  // another file
  EXPECT_EQ(cache.find("/srv/a.html", Codec::kIsal, 1, f), hit);      // still there
  EXPECT_EQ(cache.entries(), 1u);
}

TEST(ResponseCache, AChangedFileMissesAndDropsTheStaleEntry) {
  ResponseCache cache;
  cache.set_capacity(1 << 20);
  FileIdentity f = file(5000);
  ASSERT_TRUE(cache.insert("/a", Codec::kIsal, 1, body(f, 100, 'x')));
  for (FileIdentity changed : {file(5001), file(5000, 101), file(5000, 100, 8)}) {
    ASSERT_TRUE(cache.insert("/a", Codec::kIsal, 1, body(f, 100, 'x')));
    EXPECT_EQ(cache.find("/a", Codec::kIsal, 1, changed), nullptr);
    EXPECT_EQ(cache.entries(), 0u);  // dropped: the old body can never be served again
    EXPECT_EQ(cache.bytes(), 0u);
  }
  // A new body for the changed file replaces it.
  FileIdentity g = file(6000, 200);
  ASSERT_TRUE(cache.insert("/a", Codec::kIsal, 1, body(g, 100, 'y')));
  auto hit = cache.find("/a", Codec::kIsal, 1, g);
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->bytes[0], 'y');
}

TEST(ResponseCache, EvictsTheLeastRecentlyUsedFirst) {
  ResponseCache cache;
  cache.set_capacity(80000);  // room for about seven 10 KB bodies (an eighth is 10,000 bytes)
  FileIdentity f = file(1);
  std::vector<std::string> paths;
  for (int i = 0; i < 7; ++i) {
    paths.push_back("/f" + std::to_string(i));
    ASSERT_TRUE(cache.insert(paths.back(), Codec::kZlib, 1, body(f, 9000, 'z')));
  }
  EXPECT_NE(cache.find("/f0", Codec::kZlib, 1, f), nullptr);  // f0 is now the most recent
  for (int i = 7; i < 10; ++i) {
    ASSERT_TRUE(cache.insert("/f" + std::to_string(i), Codec::kZlib, 1, body(f, 9000, 'z')));
  }
  EXPECT_LE(cache.bytes(), 80000u);
  EXPECT_NE(cache.find("/f0", Codec::kZlib, 1, f), nullptr);
  EXPECT_EQ(cache.find("/f1", Codec::kZlib, 1, f), nullptr);  // the oldest went first
  EXPECT_NE(cache.find("/f9", Codec::kZlib, 1, f), nullptr);
}

TEST(ResponseCache, KeepsNothingTooLargeOrWhenOff) {
  ResponseCache cache;
  FileIdentity f = file(1);
  EXPECT_FALSE(cache.insert("/a", Codec::kZlib, 1, body(f, 10, 'a')));  // capacity 0: off
  cache.set_capacity(80000);
  EXPECT_FALSE(cache.insert("/big", Codec::kZlib, 1, body(f, 20000, 'b')));  // > capacity / 8
  EXPECT_TRUE(cache.insert("/a", Codec::kZlib, 1, body(f, 10, 'a')));
  EXPECT_GT(cache.bytes(), 10u);
  cache.set_capacity(0);
  EXPECT_EQ(cache.entries(), 0u);
  EXPECT_EQ(cache.bytes(), 0u);
  EXPECT_EQ(cache.find("/a", Codec::kZlib, 1, f), nullptr);
}

TEST(ResponseCache, AReaderKeepsAnEvictedBodyAlive) {
  ResponseCache cache;
  cache.set_capacity(80000);
  FileIdentity f = file(1);
  ASSERT_TRUE(cache.insert("/a", Codec::kZlib, 1, body(f, 5000, 'q')));
  auto held = cache.find("/a", Codec::kZlib, 1, f);
  cache.set_capacity(0);
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(held->bytes[4999], 'q');
}

TEST(ResponseCache, IsSafeFromSeveralThreads) {
  ResponseCache cache;
  cache.set_capacity(1 << 20);
  std::atomic<int> hits{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        int n = (i + t) % 50;
        std::string path = "/p" + std::to_string(n);
        FileIdentity f = file(static_cast<uint64_t>(n % 3));
        if (cache.find(path, Codec::kIsal, 1, f)) {
          hits.fetch_add(1);
        } else {
          cache.insert(path, Codec::kIsal, 1, body(f, 100 + static_cast<size_t>(i % 7), 'm'));
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_GT(hits.load(), 0);
  EXPECT_LE(cache.bytes(), uint64_t{1} << 20);
  EXPECT_LE(cache.entries(), 50u);
}

}  // namespace
}  // namespace accelgate::compress

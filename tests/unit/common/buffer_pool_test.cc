// BufferPool: buffers are reused by size class, the pool keeps no more than its limits, and a
// buffer outlives its pool (it owns its memory).

#include "accelgate/common/buffer_pool.h"

#include <gtest/gtest.h>

#include <cstring>

namespace accelgate {
namespace {

TEST(BufferPool, RoundsUpToASizeClassAndReusesReleasedBuffers) {
  BufferPool pool;
  Buffer a = pool.acquire(5000);
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a.capacity(), 8192u);
  std::memset(a.data(), 1, a.capacity());
  uint8_t* first = a.data();
  pool.release(std::move(a));
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): release empties it
  EXPECT_EQ(pool.kept_buffers(), 1u);
  EXPECT_EQ(pool.kept_bytes(), 8192u);
  Buffer b = pool.acquire(8000);  // same class: the same memory, no allocation
  EXPECT_EQ(b.data(), first);
  EXPECT_EQ(pool.kept_buffers(), 0u);
  Buffer small = pool.acquire(1);
  EXPECT_EQ(small.capacity(), 4096u);
  Buffer zero = pool.acquire(0);
  EXPECT_EQ(zero.capacity(), 4096u);
}

TEST(BufferPool, KeepsNoMoreThanItsLimits) {
  BufferPool pool(/*max_kept_bytes=*/64 * 1024, /*max_per_class=*/2);
  std::vector<Buffer> out;
  for (int i = 0; i < 4; ++i) out.push_back(pool.acquire(16 * 1024));
  for (auto& b : out) pool.release(std::move(b));
  EXPECT_EQ(pool.kept_buffers(), 2u);     // two per class
  pool.release(pool.acquire(64 * 1024));  // would pass 64 KiB kept: freed instead
  EXPECT_EQ(pool.kept_bytes(), 32u * 1024);
  pool.release(Buffer::allocate(10000));  // not a size class: freed
  EXPECT_EQ(pool.kept_buffers(), 2u);
  pool.release(Buffer());
  EXPECT_EQ(pool.kept_buffers(), 2u);
}

TEST(BufferPool, ABufferOutlivesItsPool) {
  Buffer b;
  {
    BufferPool pool;
    b = pool.acquire(100000);
  }
  ASSERT_GE(b.capacity(), 100000u);
  std::memset(b.data(), 7, b.capacity());  // still ours (ASan would say otherwise)
  EXPECT_EQ(b.data()[99999], 7);
}

TEST(Buffer, AllocateZeroIsEmpty) {
  // (An allocation that fails is empty too; not tried here: ASan aborts on one instead.)
  Buffer none = Buffer::allocate(0);
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.data(), nullptr);
  EXPECT_EQ(Buffer::allocate(10).capacity(), 10u);
}

}  // namespace
}  // namespace accelgate

#pragma once

// Buffer and BufferPool: large byte buffers (a response body to compress, its compressed form),
// reused per worker so that serving a body does not allocate on the hot path (DESIGN.md, "common":
// buffers and pools).
//
// A Buffer owns its memory outright: it may travel to another thread (an offload op's input and
// output) and be destroyed there, which frees it. Only its pool's own thread gives it back with
// BufferPool::release, which keeps it for the next request. So a buffer never points back at a
// pool, and a pool may go away while its buffers are still out.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace accelgate {

class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() = default;

  // allocate returns a buffer of exactly |capacity| bytes (uninitialised), or an empty one when
  // the memory is not there (never throws).
  static Buffer allocate(size_t capacity);

  uint8_t* data() { return bytes_.get(); }
  const uint8_t* data() const { return bytes_.get(); }
  size_t capacity() const { return capacity_; }
  bool empty() const { return capacity_ == 0; }

 private:
  std::unique_ptr<uint8_t[]> bytes_;
  size_t capacity_ = 0;
};

// BufferPool keeps released buffers by size class (powers of two from 4 KiB) for reuse. Not
// thread-safe: one per worker loop, used on its thread only.
class BufferPool {
 public:
  static constexpr size_t kMinClassBits = 12;  // 4 KiB
  static constexpr size_t kMaxClassBits = 30;  // 1 GiB: larger requests are not pooled

  // |max_kept_bytes| bounds the memory the pool keeps idle; |max_per_class| the buffers it keeps
  // of one size.
  explicit BufferPool(size_t max_kept_bytes = size_t{32} << 20, size_t max_per_class = 4);

  // acquire returns a buffer of at least |size| bytes (its capacity rounded up to the size
  // class), a kept one when there is one; empty when memory is short.
  Buffer acquire(size_t size);
  // release keeps |buffer| for reuse, or frees it when the pool is full (or it is not of a size
  // class). The buffer is empty afterwards.
  void release(Buffer&& buffer);

  size_t kept_bytes() const { return kept_bytes_; }
  size_t kept_buffers() const;

 private:
  static size_t class_of(size_t size);

  size_t max_kept_bytes_;
  size_t max_per_class_;
  size_t kept_bytes_ = 0;
  std::vector<std::vector<Buffer>> free_;  // by class: index bits - kMinClassBits
};

}  // namespace accelgate

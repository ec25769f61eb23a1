#include "accelgate/common/buffer_pool.h"

#include <bit>
#include <new>

namespace accelgate {

Buffer::Buffer(Buffer&& other) noexcept
    : bytes_(std::move(other.bytes_)), capacity_(other.capacity_) {
  other.capacity_ = 0;
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    bytes_ = std::move(other.bytes_);
    capacity_ = other.capacity_;
    other.capacity_ = 0;
  }
  return *this;
}

Buffer Buffer::allocate(size_t capacity) {
  Buffer b;
  if (capacity == 0) return b;
  b.bytes_.reset(new (std::nothrow) uint8_t[capacity]);
  if (b.bytes_) b.capacity_ = capacity;
  return b;
}

BufferPool::BufferPool(size_t max_kept_bytes, size_t max_per_class)
    : max_kept_bytes_(max_kept_bytes),
      max_per_class_(max_per_class),
      free_(kMaxClassBits - kMinClassBits + 1) {
  for (auto& list : free_) list.reserve(max_per_class_);  // release never allocates
}

size_t BufferPool::class_of(size_t size) {
  size_t bits = size <= (size_t{1} << kMinClassBits) ? kMinClassBits : std::bit_width(size - 1);
  return bits;
}

Buffer BufferPool::acquire(size_t size) {
  size_t bits = class_of(size);
  if (bits > kMaxClassBits) return Buffer::allocate(size);
  std::vector<Buffer>& list = free_[bits - kMinClassBits];
  if (!list.empty()) {
    Buffer b = std::move(list.back());
    list.pop_back();
    kept_bytes_ -= b.capacity();
    return b;
  }
  return Buffer::allocate(size_t{1} << bits);
}

void BufferPool::release(Buffer&& buffer) {
  Buffer b = std::move(buffer);
  size_t cap = b.capacity();
  if (cap == 0 || !std::has_single_bit(cap)) return;  // not one of ours: freed here
  size_t bits = std::bit_width(cap) - 1;
  if (bits < kMinClassBits || bits > kMaxClassBits) return;
  std::vector<Buffer>& list = free_[bits - kMinClassBits];
  if (list.size() >= max_per_class_ || kept_bytes_ + cap > max_kept_bytes_) return;
  kept_bytes_ += cap;
  list.push_back(std::move(b));
}

size_t BufferPool::kept_buffers() const {
  size_t n = 0;
  for (const auto& list : free_) n += list.size();
  return n;
}

}  // namespace accelgate

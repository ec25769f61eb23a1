#pragma once

// BoundedMpmcQueue: a lock-free, bounded, multi-producer multi-consumer FIFO ring, after Dmitry
// Vyukov's "bounded MPMC queue" (1024cores.net). The pool engine's submission queue: every worker
// loop pushes, every crypto thread pops, and nobody takes a lock.
//
// How it works: each cell carries a sequence number that says whose turn it is. A producer that
// has claimed position |pos| (by advancing enqueue_pos_ with a CAS) may write the cell when its
// sequence equals pos; it then publishes the value by storing pos + 1. A consumer at position pos
// may read the cell when its sequence equals pos + 1, and hands the cell to the producer of the
// next lap by storing pos + capacity. A sequence behind the position means the ring is full (for
// a producer) or empty (for a consumer); one ahead means another thread took that position first,
// so the thread reloads the position and tries again.
//
// Pushes and pops are linearizable but not wait-free: a consumer can find the cell at the head not
// yet published by a producer that has claimed it (try_pop then says empty although a later cell
// is full). Callers that count items separately (the pool's semaphore) retry in that case.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>

namespace accelgate::offload::pool {

template <typename T>
class BoundedMpmcQueue {
 public:
  // |capacity| is rounded up to a power of two, at least 2.
  explicit BoundedMpmcQueue(size_t capacity)
      : capacity_(round_up(capacity)), mask_(capacity_ - 1), cells_(new Cell[capacity_]) {
    for (size_t i = 0; i < capacity_; ++i) cells_[i].sequence.store(i, std::memory_order_relaxed);
  }
  BoundedMpmcQueue(const BoundedMpmcQueue&) = delete;
  BoundedMpmcQueue& operator=(const BoundedMpmcQueue&) = delete;

  size_t capacity() const { return capacity_; }

  // try_push appends |value| (moved from only on success); false when the ring is full. Any
  // thread.
  bool try_push(T& value) {
    size_t pos = enqueue_pos_.load(std::memory_order_relaxed);
    Cell* cell = nullptr;
    for (;;) {
      cell = &cells_[pos & mask_];
      size_t seq = cell->sequence.load(std::memory_order_acquire);
      auto diff = static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos);
      if (diff == 0) {
        if (enqueue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
        // |pos| was reloaded by the failed CAS.
      } else if (diff < 0) {
        return false;  // the cell still holds the value of the previous lap: full
      } else {
        pos = enqueue_pos_.load(std::memory_order_relaxed);
      }
    }
    cell->value = std::move(value);
    cell->sequence.store(pos + 1, std::memory_order_release);
    return true;
  }

  // try_pop moves the oldest value into |*out|; false when the ring is empty (or its head is
  // claimed but not yet published, see above). Any thread.
  bool try_pop(T* out) {
    size_t pos = dequeue_pos_.load(std::memory_order_relaxed);
    Cell* cell = nullptr;
    for (;;) {
      cell = &cells_[pos & mask_];
      size_t seq = cell->sequence.load(std::memory_order_acquire);
      auto diff = static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos + 1);
      if (diff == 0) {
        if (dequeue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
      } else if (diff < 0) {
        return false;  // not yet written in this lap: empty
      } else {
        pos = dequeue_pos_.load(std::memory_order_relaxed);
      }
    }
    *out = std::move(cell->value);
    cell->value = T{};  // leave nothing behind in the cell (a moved-from value may hold memory)
    cell->sequence.store(pos + mask_ + 1, std::memory_order_release);
    return true;
  }

 private:
  // Cells are aligned to a cache line so that a producer and a consumer working on neighbouring
  // cells do not share one.
  struct alignas(64) Cell {
    std::atomic<size_t> sequence{0};
    T value{};
  };

  static size_t round_up(size_t n) {
    size_t c = 2;
    while (c < n) c <<= 1;
    return c;
  }

  const size_t capacity_;
  const size_t mask_;
  std::unique_ptr<Cell[]> cells_;
  alignas(64) std::atomic<size_t> enqueue_pos_{0};
  alignas(64) std::atomic<size_t> dequeue_pos_{0};
};

}  // namespace accelgate::offload::pool

// RingQueue<T>: a FIFO over a power-of-two ring that grows by doubling and never shrinks on
// its own, so a steady-state pipeline pushes and pops without allocating. Single-threaded.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace redmux::detail {

template <class T>
class RingQueue {
 public:
  bool empty() const noexcept { return size_ == 0; }
  std::size_t size() const noexcept { return size_; }

  T& front() noexcept { return slots_[head_]; }
  const T& front() const noexcept { return slots_[head_]; }
  /// The i-th element from the front. REQUIRES: i < size().
  T& operator[](std::size_t i) noexcept { return slots_[(head_ + i) & (slots_.size() - 1)]; }
  const T& operator[](std::size_t i) const noexcept {
    return slots_[(head_ + i) & (slots_.size() - 1)];
  }

  void push_back(T value) {
    if (size_ == slots_.size()) grow();
    slots_[(head_ + size_) & (slots_.size() - 1)] = std::move(value);
    ++size_;
  }
  void pop_front() noexcept {
    head_ = (head_ + 1) & (slots_.size() - 1);
    --size_;
  }
  void clear() noexcept {
    head_ = 0;
    size_ = 0;
  }
  /// Gives back memory beyond `keep` slots once the queue has drained (after a burst).
  void shrink_to(std::size_t keep) {
    if (size_ == 0 && slots_.size() > keep) {
      std::vector<T>().swap(slots_);
      head_ = 0;
    }
  }

 private:
  void grow() {
    std::vector<T> bigger(slots_.empty() ? 64 : slots_.size() * 2);
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = std::move((*this)[i]);
    slots_.swap(bigger);
    head_ = 0;
  }

  std::vector<T> slots_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace redmux::detail

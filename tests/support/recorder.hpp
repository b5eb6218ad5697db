// Recorder<T>: what a callback saw, kept for a test to read. The callbacks run on redmux's
// I/O threads while the test reads from its own: add() and the reads take a mutex, and the
// reads return copies. For hooks and events (on_batch, on_connection_event, on_command).
#pragma once

#include <cstddef>
#include <mutex>
#include <utility>
#include <vector>

namespace redmux::test {

template <typename T>
class Recorder {
 public:
  void add(T value) {
    std::lock_guard lock(mutex_);
    seen_.push_back(std::move(value));
  }
  /// Everything recorded so far, in the order it was added.
  std::vector<T> all() const {
    std::lock_guard lock(mutex_);
    return seen_;
  }
  /// How many of them satisfy `predicate`.
  template <typename Predicate>
  std::size_t count_if(Predicate&& predicate) const {
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const T& value : seen_) n += predicate(value) ? 1 : 0;
    return n;
  }
  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return seen_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<T> seen_;
};

}  // namespace redmux::test

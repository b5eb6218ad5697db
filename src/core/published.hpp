// Published<T>: a value that every caller thread reads and a few events replace (a cluster's
// slot map), read without a lock or a shared reference count once a thread has seen it.
//
// A shared_ptr copied under a mutex for each read costs every reader a write to the same two
// cache lines (the mutex and the count), which move between CPUs on every read when many
// threads route at once. Here the owner replaces the value with set(), which also advances
// a version; a reader keeps the last value it read, with its version and its publisher, in
// a Seen of its own (a thread_local) and takes the lock only when the version moved.
//
// Threads: set() and the slow path of read() hold `mutex` (the owner's, which also guards
// what goes with the value); version() and the fast path of read() take no lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>

namespace redmux::detail {

template <class T>
class Published {
 public:
  /// What one thread last read: valid until its next read() with this Seen.
  struct Seen {
    std::uint64_t publisher = 0;
    std::uint64_t version = 0;
    std::shared_ptr<const T> value;  ///< keeps it alive until this thread reads again
  };

  Published() noexcept : id_(next_id().fetch_add(1, std::memory_order_relaxed)) {}
  Published(const Published&) = delete;
  Published& operator=(const Published&) = delete;

  /// Replaces the value. REQUIRES: the owner's mutex held (the one read() is given).
  void set(std::shared_ptr<const T> value) noexcept {
    value_ = std::move(value);
    version_.fetch_add(1, std::memory_order_release);
  }
  /// The value. REQUIRES: the owner's mutex held.
  const std::shared_ptr<const T>& get() const noexcept { return value_; }
  std::uint64_t version() const noexcept { return version_.load(std::memory_order_acquire); }

  /// The current value (null when none was set), through `seen`: the lock is taken only
  /// when `seen` holds another publisher's value or an older version.
  const T* read(Seen& seen, std::mutex& mutex) const {
    if (seen.publisher != id_ || seen.version != version()) {
      std::lock_guard lock(mutex);
      seen.value = value_;
      seen.publisher = id_;
      seen.version = version_.load(std::memory_order_relaxed);  // the one value_ goes with
    }
    return seen.value.get();
  }

 private:
  // An id per publisher rather than its address: a later one may be built at the same one.
  static std::atomic<std::uint64_t>& next_id() noexcept {
    static std::atomic<std::uint64_t> next{1};
    return next;
  }

  const std::uint64_t id_;
  std::shared_ptr<const T> value_;
  std::atomic<std::uint64_t> version_{1};  ///< starts past a fresh Seen's 0
};

}  // namespace redmux::detail

// Countdown: a bounded wait until a number of asynchronous steps have each reported done,
// for closes that start shutdowns on I/O threads and wait for them from the caller's.
//
// The count may grow while the steps are being started: it begins at one (the starter's
// own), each start adds what it will report, and started() gives the starter's one back,
// so no step finishing early can bring the count to zero before every start has counted.
//
// Threads: any. done() runs on the threads that finish the steps; wait_for() must not run
// on one of them (it would wait for itself).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>

namespace redmux::detail {

class Countdown : public std::enable_shared_from_this<Countdown> {
 public:
  static std::shared_ptr<Countdown> make() { return std::shared_ptr<Countdown>(new Countdown); }

  /// `steps` more to be reported through done().
  void add(std::size_t steps) {
    std::lock_guard lock(mutex_);
    remaining_ += steps;
  }
  /// What a step calls when it has finished; holds the countdown.
  std::function<void()> done() {
    return [self = shared_from_this()] { self->one_done(); };
  }
  /// Every step has been started (and counted).
  void started() { one_done(); }
  /// Until every step has reported, or `timeout`; true when every step has.
  bool wait_for(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return finished_.wait_for(lock, timeout, [this] { return remaining_ == 0; });
  }

 private:
  Countdown() = default;
  void one_done() {
    std::lock_guard lock(mutex_);
    if (--remaining_ == 0) finished_.notify_all();
  }

  std::mutex mutex_;
  std::condition_variable finished_;
  std::size_t remaining_ = 1;  ///< the starter's, until started()
};

}  // namespace redmux::detail

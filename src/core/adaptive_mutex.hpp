// AdaptiveMutex: a mutex for critical sections of a few dozen nanoseconds taken by many
// threads at once (the submission queue). A locker that finds it held spins briefly before
// it sleeps, where std::mutex goes to the futex at once: with hundreds of callers on a few
// CPUs, the holder is usually about to let go, and a sleep would cost the locker a
// context switch and the holder a futex wake. glibc's PTHREAD_MUTEX_ADAPTIVE_NP, which
// bounds the spin and then sleeps like std::mutex. Lockable: std::lock_guard and
// std::unique_lock take it.
#pragma once

#include <pthread.h>

namespace redmux::detail {

class AdaptiveMutex {
 public:
  AdaptiveMutex() noexcept {
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&mutex_, &attr);
    pthread_mutexattr_destroy(&attr);
  }
  ~AdaptiveMutex() { pthread_mutex_destroy(&mutex_); }
  AdaptiveMutex(const AdaptiveMutex&) = delete;
  AdaptiveMutex& operator=(const AdaptiveMutex&) = delete;

  void lock() noexcept { pthread_mutex_lock(&mutex_); }
  bool try_lock() noexcept { return pthread_mutex_trylock(&mutex_) == 0; }
  void unlock() noexcept { pthread_mutex_unlock(&mutex_); }

 private:
  pthread_mutex_t mutex_;
};

}  // namespace redmux::detail

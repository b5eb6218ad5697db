// Starting a Task on an IoPool thread (include/redmux/task.hpp): the one piece of the task
// type that needs Asio.
#include <cstddef>  // before Asio: its allocation configuration must match every other file's

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <utility>

#include "redmux/io_pool.hpp"
#include "redmux/task.hpp"

namespace redmux::detail {
namespace {

/// The posted handler. If the io_context is destroyed before running it (the pool stopped),
/// the destructor abandons the coroutine instead, so its future still completes.
class StartTask {
 public:
  StartTask(void* frame, void (*resume)(void*), void (*abandon)(void*)) noexcept
      : frame_(frame), resume_(resume), abandon_(abandon) {}
  StartTask(StartTask&& other) noexcept
      : frame_(std::exchange(other.frame_, nullptr)),
        resume_(other.resume_),
        abandon_(other.abandon_) {}
  StartTask(const StartTask&) = delete;
  StartTask& operator=(const StartTask&) = delete;
  StartTask& operator=(StartTask&&) = delete;
  ~StartTask() {
    if (frame_) abandon_(frame_);
  }

  void operator()() {
    IoThreadScope scope;  // the task runs as I/O work: a blocking wait in it is refused
    resume_(std::exchange(frame_, nullptr));
  }

 private:
  void* frame_;
  void (*resume_)(void*);
  void (*abandon_)(void*);
};

}  // namespace

void start_on_pool(IoPool& pool, void* frame, void (*resume)(void*), void (*abandon)(void*)) {
  asio::post(pool.next_work_context(), StartTask(frame, resume, abandon));
}

}  // namespace redmux::detail

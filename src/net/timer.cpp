#include "net/timer.hpp"

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>

namespace redmux::detail {

void post_to(asio::io_context& io, std::function<void()> task) {
  asio::post(io, std::move(task));
}

void run_after(asio::io_context& io, std::chrono::milliseconds delay, std::function<void()> task) {
  if (delay.count() <= 0) {
    asio::post(io, std::move(task));
    return;
  }
  auto timer = std::make_shared<asio::steady_timer>(io, delay);
  timer->async_wait([timer, task = std::move(task)](const asio::error_code& ec) {
    if (!ec) task();
  });
}

struct Timer::Impl {
  explicit Impl(asio::io_context& io) : io(io), timer(io) {}
  asio::io_context& io;
  asio::steady_timer timer;
};

Timer::Timer(asio::io_context& io) : impl_(std::make_unique<Impl>(io)) {}

Timer::~Timer() = default;

void Timer::wait_until(Clock::time_point at, Handler handler) {
  impl_->timer.expires_at(at);
  impl_->timer.async_wait(
      [handler = std::move(handler)](const asio::error_code& ec) { handler(!ec); });
}

void Timer::wait_for(Clock::duration delay, Handler handler) {
  impl_->timer.expires_after(delay);
  impl_->timer.async_wait(
      [handler = std::move(handler)](const asio::error_code& ec) { handler(!ec); });
}

void Timer::cancel() {
  impl_->timer.cancel();
}

asio::io_context& Timer::context() noexcept {
  return impl_->io;
}

}  // namespace redmux::detail

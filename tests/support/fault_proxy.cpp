#include "support/fault_proxy.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/write.hpp>
#include <future>
#include <optional>
#include <set>
#include <system_error>
#include <vector>

namespace redmux::test {

namespace {

using Tcp = asio::ip::tcp;

constexpr std::size_t kChunk = 64 * 1024;

Tcp::endpoint loopback(std::uint16_t port) {
  return {asio::ip::address_v4::loopback(), port};
}

/// Opens `socket` (an Asio socket or acceptor) close-on-exec: Asio opens without it, and a
/// child process a test starts would keep the proxy's sockets open (and the client's view of
/// a cut connection wrong) for as long as it lives.
template <class Socket>
void open_cloexec(Socket& socket) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "socket()");
  socket.assign(Tcp::v4(), fd);
}

}  // namespace

// Everything below runs on the proxy thread only (FaultProxy's control calls post to it),
// so none of it needs a lock; the counters the test reads are the owner's atomics.
class FaultProxy::Impl {
 public:
  class Pair;

  explicit Impl(FaultProxy& owner) : owner_(owner), acceptor_(io_) {}

  asio::io_context io_;
  FaultProxy& owner_;
  Tcp::acceptor acceptor_;
  std::uint16_t server_port_ = 0;
  std::uint16_t port_ = 0;
  std::uint64_t accept_generation_ = 0;  ///< handlers of an older listener are stale
  std::set<std::shared_ptr<Pair>> pairs_;
  Admission admission_ = Admission::Forward;
  bool stall_new_ = false;
  std::chrono::milliseconds delay_{0};
  bool drip_ = false;
  /// Server→client bytes left before a cut. Spent when a write is issued (not when it
  /// completes): a write issued before the budget was set must not spend it, as the client
  /// may already have those bytes, and two pairs must not both spend the same bytes.
  std::optional<std::size_t> cut_budget_;

  void listen(std::uint16_t port);
  void stop_listening();
  void accept();
  void close_all(bool counted_as_cut);
};

class FaultProxy::Impl::Pair : public std::enable_shared_from_this<Pair> {
 public:
  Pair(Impl& proxy, Tcp::socket client)
      : proxy_(proxy),
        client_(std::move(client)),
        server_(proxy.io_),
        up_{&client_, &server_, false, {}, 0, 0, false, Timer(proxy.io_)},
        down_{&server_, &client_, true, {}, 0, 0, false, Timer(proxy.io_)} {
    stalled_ = proxy.stall_new_;
  }

  void start() {
    std::error_code opened;
    try {
      open_cloexec(server_);
    } catch (const std::system_error& e) {
      opened = e.code();
    }
    if (opened) {
      close(false);
      return;
    }
    server_.async_connect(loopback(proxy_.server_port_),
                          [self = shared_from_this()](const std::error_code& ec) {
                            if (self->closed_) return;
                            if (ec) {
                              self->close(false);
                              return;
                            }
                            const asio::ip::tcp::no_delay no_delay(true);
                            std::error_code ignored;
                            self->client_.set_option(no_delay, ignored);
                            self->server_.set_option(no_delay, ignored);
                            self->proxy_.owner_.pairs_started_.fetch_add(1);
                            self->read(self->up_);
                            self->read(self->down_);
                          });
  }

  void set_stalled(bool on) {
    if (stalled_ == on) return;
    stalled_ = on;
    if (on) return;
    for (Direction* direction : {&up_, &down_}) {
      if (direction->held) {
        direction->held = false;
        forward(*direction);
      }
    }
  }

  /// Closes both sockets; every pending operation completes with an error and is ignored.
  void close(bool counted_as_cut) {
    if (closed_) return;
    closed_ = true;
    // Counted before the sockets close: a test that sees the close sees the count.
    if (counted_as_cut) proxy_.owner_.pairs_cut_.fetch_add(1);
    proxy_.owner_.open_pairs_.fetch_sub(1);
    std::error_code ignored;
    client_.close(ignored);
    server_.close(ignored);
    up_.delay_timer.cancel();
    down_.delay_timer.cancel();
    proxy_.pairs_.erase(shared_from_this());
  }

 private:
  using Timer = asio::steady_timer;

  // One direction of the pair. Invariant: at most one operation (read, delay wait or write)
  // is pending per direction, and the next chunk is read only once the previous one was
  // written, so the proxy holds at most kChunk bytes per direction.
  struct Direction {
    Tcp::socket* from;
    Tcp::socket* to;
    bool to_client;
    std::vector<char> buffer;
    std::size_t begin;  ///< first byte not yet forwarded
    std::size_t end;    ///< one past the last byte read
    bool held;          ///< waiting for the stall to end
    Timer delay_timer;
  };

  void read(Direction& direction) {
    if (closed_) return;
    direction.buffer.resize(kChunk);
    direction.begin = direction.end = 0;
    direction.from->async_read_some(
        asio::buffer(direction.buffer),
        [self = shared_from_this(), &direction](const std::error_code& ec, std::size_t n) {
          if (self->closed_) return;
          if (ec) {  // EOF or reset on one side: the pair goes (no half-close)
            self->close(false);
            return;
          }
          direction.end = n;
          self->delay_then_forward(direction);
        });
  }

  void delay_then_forward(Direction& direction) {
    if (proxy_.delay_.count() == 0) {
      forward(direction);
      return;
    }
    direction.delay_timer.expires_after(proxy_.delay_);
    direction.delay_timer.async_wait(
        [self = shared_from_this(), &direction](const std::error_code& ec) {
          if (self->closed_ || ec) return;
          self->forward(direction);
        });
  }

  void forward(Direction& direction) {
    if (closed_) return;
    if (stalled_) {
      direction.held = true;
      return;
    }
    if (direction.begin == direction.end) {
      read(direction);
      return;
    }
    std::size_t size = direction.end - direction.begin;
    bool cut_after = false;  // this write spends the last of the budget
    if (direction.to_client) {
      if (proxy_.drip_) size = 1;
      if (auto& budget = proxy_.cut_budget_) {
        if (*budget == 0) {
          budget.reset();
          close(true);
          return;
        }
        size = std::min(size, *budget);
        *budget -= size;
        if (*budget == 0) {
          budget.reset();
          cut_after = true;
        }
      }
    }
    asio::async_write(
        *direction.to, asio::buffer(direction.buffer.data() + direction.begin, size),
        [self = shared_from_this(), &direction, cut_after](const std::error_code& ec,
                                                           std::size_t n) {
          if (self->closed_) return;
          if (ec) {
            self->close(false);
            return;
          }
          direction.begin += n;
          auto& owner = self->proxy_.owner_;
          (direction.to_client ? owner.bytes_to_client_ : owner.bytes_to_server_).fetch_add(n);
          if (cut_after) {
            self->close(true);
            return;
          }
          self->forward(direction);
        });
  }

  Impl& proxy_;
  Tcp::socket client_;
  Tcp::socket server_;
  Direction up_;    ///< client → server
  Direction down_;  ///< server → client
  bool stalled_ = false;
  bool closed_ = false;
};

void FaultProxy::Impl::listen(std::uint16_t port) {
  const Tcp::endpoint endpoint = loopback(port);
  open_cloexec(acceptor_);
  acceptor_.set_option(Tcp::acceptor::reuse_address(true));
  acceptor_.bind(endpoint);
  acceptor_.listen();
  acceptor_.non_blocking(true);  // accept4() after a wake-up must not block
  port_ = acceptor_.local_endpoint().port();
  ++accept_generation_;
  accept();
}

void FaultProxy::Impl::stop_listening() {
  std::error_code ignored;
  acceptor_.close(ignored);
  ++accept_generation_;
}

void FaultProxy::Impl::accept() {
  // Waits for a connection, then accepts it with accept4(SOCK_CLOEXEC): Asio's own accept
  // gives a socket that a child process would inherit.
  acceptor_.async_wait(
      Tcp::acceptor::wait_read, [this, generation = accept_generation_](const std::error_code& ec) {
        if (generation != accept_generation_) return;  // the listener was closed meanwhile
        if (ec) {
          if (ec != asio::error::operation_aborted) accept();
          return;
        }
        const int fd = ::accept4(acceptor_.native_handle(), nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) {
          accept();  // EAGAIN (another wake-up took it), or the client gave up
          return;
        }
        Tcp::socket socket(io_);
        std::error_code assigned;
        socket.assign(Tcp::v4(), fd, assigned);
        if (assigned) {
          ::close(fd);
          accept();
          return;
        }
        owner_.accepted_.fetch_add(1);
        if (admission_ == Admission::Forward) {
          auto pair = std::make_shared<Pair>(*this, std::move(socket));
          pairs_.insert(pair);
          owner_.open_pairs_.fetch_add(1);
          pair->start();
        } else {
          std::error_code ignored;
          socket.close(ignored);
        }
        accept();
      });
}

void FaultProxy::Impl::close_all(bool counted_as_cut) {
  // close() erases from pairs_: iterate over a copy.
  const std::vector<std::shared_ptr<Pair>> pairs(pairs_.begin(), pairs_.end());
  for (const auto& pair : pairs) pair->close(counted_as_cut);
}

FaultProxy::FaultProxy(std::uint16_t server_port) : impl_(std::make_unique<Impl>(*this)) {
  impl_->server_port_ = server_port;
  impl_->listen(0);  // before the thread starts: nothing else touches impl_ yet
  port_ = impl_->port_;
  thread_ = std::thread([impl = impl_.get()] {
    auto work = asio::make_work_guard(impl->io_);
    impl->io_.run();
  });
}

FaultProxy::~FaultProxy() {
  run_on_proxy([impl = impl_.get()] {
    impl->stop_listening();
    impl->close_all(false);
    impl->io_.stop();
  });
  thread_.join();
  // Handlers still queued (holding pairs) are destroyed with the io_context, on this
  // thread, after the proxy thread has ended.
  impl_.reset();
}

void FaultProxy::run_on_proxy(std::function<void()> task) {
  std::promise<void> done;
  std::future<void> applied = done.get_future();
  asio::post(impl_->io_, [&task, &done] {
    try {
      task();
      done.set_value();
    } catch (...) {
      done.set_exception(std::current_exception());
    }
  });
  applied.get();  // rethrows what the task threw (a bind failure when listening again)
}

void FaultProxy::cut_all() {
  run_on_proxy([impl = impl_.get()] { impl->close_all(true); });
}

void FaultProxy::stall(bool on) {
  run_on_proxy([impl = impl_.get(), on] {
    impl->stall_new_ = on;
    const std::vector<std::shared_ptr<Impl::Pair>> pairs(impl->pairs_.begin(), impl->pairs_.end());
    for (const auto& pair : pairs) pair->set_stalled(on);
  });
}

void FaultProxy::stall_existing() {
  run_on_proxy([impl = impl_.get()] {
    for (const auto& pair : impl->pairs_) pair->set_stalled(true);
  });
}

void FaultProxy::set_delay(std::chrono::milliseconds delay) {
  run_on_proxy([impl = impl_.get(), delay] { impl->delay_ = delay; });
}

void FaultProxy::set_drip(bool on) {
  run_on_proxy([impl = impl_.get(), on] { impl->drip_ = on; });
}

void FaultProxy::set_admission(Admission admission) {
  run_on_proxy([impl = impl_.get(), admission] {
    const bool listening = impl->acceptor_.is_open();
    impl->admission_ = admission;
    if (admission == Admission::Refuse && listening) impl->stop_listening();
    if (admission != Admission::Refuse && !listening) impl->listen(impl->port_);
  });
}

void FaultProxy::cut_after_bytes(std::size_t bytes) {
  run_on_proxy([impl = impl_.get(), bytes] { impl->cut_budget_ = bytes; });
}

}  // namespace redmux::test

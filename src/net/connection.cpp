#include "net/connection.hpp"

#include <algorithm>
#include <asio/ip/address.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/post.hpp>
#include <vector>

#include "net/io_load.hpp"
#include "net/resolver_thread_name.hpp"
#include "resp/encoder.hpp"

namespace redmux::detail {

Connection::Connection(asio::io_context& io, std::shared_ptr<IoPool::Load> load,
                       std::shared_ptr<SharedContext> shared, Endpoint endpoint,
                       std::shared_ptr<TlsContext> tls)
    : io_(io),
      load_(std::move(load)),
      shared_(shared),
      transport_(io, tls),
      resolver_(io),
      deadline_timer_(io),
      connect_timer_(io),
      health_timer_(io),
      machine_(std::move(shared), std::move(endpoint), tls != nullptr) {
  machine_.set_ready_hook([this] {
    if (ready_hook_) ready_hook_(*this);
  });
  machine_.set_role_hook([this] {
    if (role_hook_) role_hook_(*this);
  });
  machine_.set_down_hook([this](bool retargeted) {
    if (down_hook_) down_hook_(*this, retargeted);
  });
}

template <class Body>
auto Connection::current(std::uint64_t generation, Body body) {
  return [self = shared_from_this(), generation, body = std::move(body)](auto&&... args) mutable {
    if (generation != self->machine_.generation()) return;
    BusyScope busy(*self->load_);
    body(*self, std::forward<decltype(args)>(args)...);
  };
}

// ---------------------------------------------------------------------------------------
// Any thread: posted to the I/O thread

void Connection::start(FirstResult first) {
  asio::post(io_, [self = shared_from_this(), first = std::move(first)]() mutable {
    BusyScope busy(*self->load_);
    self->perform(self->machine_.start(std::move(first), Clock::now()));
  });
}

void Connection::reconnect_now() {
  asio::post(io_, [self = shared_from_this()] {
    BusyScope busy(*self->load_);
    self->perform(self->machine_.reconnect_now(Clock::now()));
  });
}

void Connection::post(std::function<void()> task) {
  asio::post(io_, [self = shared_from_this(), task = std::move(task)] {
    BusyScope busy(*self->load_);
    task();
  });
}

void Connection::check_role() {
  asio::post(io_, [self = shared_from_this()] {
    BusyScope busy(*self->load_);
    self->perform(self->machine_.check_role(Clock::now()));
  });
}

void Connection::retarget(Endpoint endpoint) {
  asio::post(io_, [self = shared_from_this(), endpoint = std::move(endpoint)]() mutable {
    BusyScope busy(*self->load_);
    self->perform(self->machine_.retarget(std::move(endpoint), Clock::now()));
  });
}

void Connection::shutdown(std::function<void()> closed) {
  asio::post(io_, [self = shared_from_this(), closed = std::move(closed)] {
    BusyScope busy(*self->load_);
    self->perform(self->machine_.shutdown(Clock::now()));
    if (closed) closed();
  });
}

bool Connection::submit(int db, std::span<const Arg> args, PendingCommand command) {
  switch (machine_.submit(db, args, command)) {
    case SubmissionQueue::Pushed::WriteInline:
      write_inline();
      break;
    case SubmissionQueue::Pushed::QueuedWake:
      post_wake();
      break;
    case SubmissionQueue::Pushed::QueuedRearm:
      post_rearm(command.deadline);
      break;
    case SubmissionQueue::Pushed::Forward:
      forward(db, args, command);
      break;
    case SubmissionQueue::Pushed::Queued:
      break;
    case SubmissionQueue::Pushed::Closed:
      return false;
  }
  return true;
}

void Connection::forward(int db, std::span<const Arg> args, const PendingCommand& refused) {
  std::string bytes;  // a command routed by a slot map just replaced
  resp::encode_command(bytes, args);
  PendingCommand command = refused;
  command.bytes_begin = 0;
  command.bytes_end = bytes.size();
  forward_hook_(db, bytes, std::span<PendingCommand>(&command, 1));
}

void Connection::post_rearm(Clock::time_point deadline) {
  asio::post(io_, [self = shared_from_this(), deadline] {
    BusyScope busy(*self->load_);
    self->perform(self->machine_.on_rearm(deadline, Clock::now()));
  });
}

void Connection::send_on(const PendingCommand& refused) {
  PendingCommand moved = refused;
  const std::string& bytes = refused.state->retained_command;
  moved.bytes_begin = 0;
  moved.bytes_end = bytes.size();
  ++moved.redirects;
  submit_batch(refused.db, bytes, std::span<PendingCommand>(&moved, 1));
}

bool Connection::submit_batch(int db, std::string_view bytes, std::span<PendingCommand> commands,
                              bool fail_fast) {
  switch (machine_.submit_batch(db, bytes, commands, fail_fast)) {
    case SubmissionQueue::Pushed::WriteInline:
      write_inline();
      break;
    case SubmissionQueue::Pushed::QueuedWake:
      asio::post(io_, [self = shared_from_this()] {
        BusyScope busy(*self->load_);
        self->perform(self->machine_.on_wake(Clock::now()));
      });
      break;
    case SubmissionQueue::Pushed::QueuedRearm:
      // Commands moved here from another connection (held through a failover, or handed on
      // when a cluster slot moved) may be due sooner than anything the deadline timer waits
      // for.
      post_rearm(earliest_deadline(commands));
      break;
    case SubmissionQueue::Pushed::Forward:
      forward_hook_(db, bytes, commands);
      break;
    case SubmissionQueue::Pushed::Queued:
      break;
    case SubmissionQueue::Pushed::Closed:
      return false;
  }
  return true;
}

void Connection::post_wake() {
  asio::post(io_, in_arena(wake_arena_, [self = shared_from_this()] {
               BusyScope busy(*self->load_);
               self->perform(self->machine_.on_wake(Clock::now()));
             }));
}

void Connection::write_inline() {
  // The queue was idle and the connection ready: this caller owns the writer role, so it
  // sends its bytes itself (non-blocking) instead of waking the I/O thread — one thread
  // hand-off less per command at low load. The I/O thread still reads every reply.
  Writer::Inline result = machine_.write_inline(
      [this](std::string_view bytes) {
        Writer::SendResult sent;
        sent.sent = transport_.send_now(bytes, sent.error);
        return sent;
      },
      Clock::now());
  switch (result.then) {
    case Writer::Inline::Then::Done:
      return;
    case Writer::Inline::Then::Wake:
      post_wake();
      return;
    case Writer::Inline::Then::Absorb:
      asio::post(io_, [self = shared_from_this()] {
        BusyScope busy(*self->load_);
        self->perform(self->machine_.on_absorb(Clock::now()));
      });
      return;
    case Writer::Inline::Then::HandOver:
      // Not ready any more, the socket is full, or it failed: the I/O thread takes over.
      // The generation the bytes were sent under, not the one now: copying a large rest
      // takes long enough for the connection to break and reconnect meanwhile, and the new
      // connection must not take the rest of a command whose start went to the old one.
      asio::post(io_, [self = shared_from_this(), result = std::move(result)]() mutable {
        BusyScope busy(*self->load_);
        const std::uint64_t generation = result.generation;
        self->perform(
            self->machine_.on_inline_handover(std::move(result), generation, Clock::now()));
      });
      return;
  }
}

// ---------------------------------------------------------------------------------------
// I/O thread: the machine's actions

void Connection::perform(ConnectionMachine::Actions actions) {
  const std::uint64_t generation = machine_.generation();
  for (const IoAction& action : actions) {
    if (action.bound_to_generation() && action.generation != generation) continue;
    switch (action.kind) {
      case IoAction::Kind::CloseSocket:
        transport_.close();
        break;
      case IoAction::Kind::Connect:
        connect(generation);
        break;
      case IoAction::Kind::StartTls:
        start_tls(generation);
        break;
      case IoAction::Kind::WriteHandshake:
        write_handshake(generation);
        break;
      case IoAction::Kind::Read:
        read(generation);
        break;
      case IoAction::Kind::Write:
        write(generation);
        break;
      case IoAction::Kind::ArmTimer:
        arm(action.timer, action.at, action.generation);
        break;
      case IoAction::Kind::CancelTimer:
        cancel(action.timer);
        break;
      case IoAction::Kind::Submit:
        submit_own(action.own);
        break;
    }
  }
}

void Connection::submit_own(std::uint8_t index) {
  const OwnCommand& own = machine_.to_submit(index);
  submit(-1, own.args, own.command);
}

void Connection::connect(std::uint64_t generation) {
  transport_.renew();  // a fresh TLS session: one cannot be reused after its socket closed
  const Endpoint& target = machine_.target();
  auto connected =
      current(generation, [](Connection& self, const asio::error_code& ec) { self.connected(ec); });
  // Every socket is opened by the transport, close-on-exec (Asio would open it without).
  if (target.is_unix()) {
    asio::local::stream_protocol::endpoint local(target.unix_path);
    transport_.async_connect({asio::generic::stream_protocol::endpoint(local)},
                             std::move(connected));
    return;
  }
  addresses_.clear();
  asio::error_code not_numeric;
  const asio::ip::address address = asio::ip::make_address(target.host, not_numeric);
  if (!not_numeric) {
    // An IP address needs no resolver (and so no resolver thread).
    transport_.async_connect(
        {asio::generic::stream_protocol::endpoint(asio::ip::tcp::endpoint(address, target.port))},
        std::move(connected));
    return;
  }
  if (const HostResolver& resolve = shared_->config().resolver) {
    // The application's resolver, asked again at every attempt: a moved name is followed.
    std::vector<asio::ip::tcp::endpoint> endpoints;
    std::string failure;
    try {
      for (std::string text : resolve(target.host)) {
        if (text.size() > 2 && text.front() == '[' && text.back() == ']') {
          text = text.substr(1, text.size() - 2);
        }
        asio::error_code bad;
        const asio::ip::address each = asio::ip::make_address(text, bad);
        if (bad) {
          failure = "the resolver returned \"" + text + "\", which is not an IP address";
          break;
        }
        endpoints.emplace_back(asio::ip::tcp::endpoint(each, target.port));
      }
      if (failure.empty() && endpoints.empty()) failure = "the resolver returned no address";
    } catch (const std::exception& e) {
      failure = e.what();
    } catch (...) {
      failure = "the resolver threw a non-standard exception";
    }
    if (!failure.empty()) {
      // Posted: an event must not run inside the one that asked for the connection.
      asio::post(io_, current(generation, [failure](Connection& self) {
                   self.perform(self.machine_.on_resolve_failed(failure, Clock::now()));
                 }));
      return;
    }
    connect_each(endpoints, std::move(connected));
    return;
  }
  ResolverThreadName naming;  // the resolver thread this may start is named redmux-dns-N
  resolver_.async_resolve(
      target.host, std::to_string(target.port),
      current(generation, [connected = std::move(connected)](
                              Connection& self, const asio::error_code& ec,
                              asio::ip::tcp::resolver::results_type results) mutable {
        if (ec) {
          self.perform(self.machine_.on_resolve_failed(ec.message(), Clock::now()));
          return;
        }
        std::vector<asio::ip::tcp::endpoint> endpoints;
        for (const auto& entry : results) endpoints.push_back(entry.endpoint());
        self.connect_each(endpoints, std::move(connected));
      }));
}

template <class Handler>
void Connection::connect_each(const std::vector<asio::ip::tcp::endpoint>& addresses,
                              Handler&& connected) {
  std::vector<asio::generic::stream_protocol::endpoint> endpoints;
  for (const asio::ip::tcp::endpoint& address : addresses) {
    endpoints.emplace_back(address);
    // Kept for the error that lists what each address said (connected()).
    const std::string ip = address.address().to_string();
    const std::string port = std::to_string(address.port());
    addresses_.push_back(address.address().is_v6() ? "[" + ip + "]:" + port : ip + ":" + port);
  }
  transport_.async_connect(std::move(endpoints), std::forward<Handler>(connected));
}

void Connection::connected(const asio::error_code& ec) {
  if (ec) {
    const std::vector<asio::error_code>& each = transport_.connect_errors();
    if (addresses_.size() < 2 || each.size() != addresses_.size()) {
      perform(machine_.on_connect_failed(ec.message(), Clock::now()));
      return;
    }
    // A host name with several addresses: what each one said, in the order tried.
    std::string reason = "each of its " + std::to_string(addresses_.size()) + " addresses failed:";
    for (std::size_t i = 0; i < each.size(); ++i) {
      reason += (i ? ", " : " ") + addresses_[i] + " (" + each[i].message() + ")";
    }
    perform(machine_.on_connect_failed(reason, Clock::now()));
    return;
  }
  if (!machine_.target().is_unix()) {
    // Written bytes the peer has not acknowledged for this long close the connection (the
    // kernel's own half-open detection, for when the heartbeat cannot be answered).
    const Config& config = shared_->config();
    transport_.set_tcp_options(
        config.keep_alive, std::max(std::chrono::milliseconds(10000), 3 * config.async_timeout));
  }
  perform(machine_.on_connected(Clock::now()));
}

void Connection::start_tls(std::uint64_t generation) {
  std::string server_name = machine_.tls_server_name();
  transport_.async_handshake(
      server_name, current(generation, [server_name](Connection& self, const asio::error_code& ec) {
        if (ec) {
          Error error(errc::connection_failed, self.transport_.handshake_error(
                                                   ec, self.machine_.target_text(), server_name));
          self.perform(self.machine_.on_tls_failed(std::move(error), Clock::now()));
          return;
        }
        self.perform(self.machine_.on_tls_done(Clock::now()));
      }));
}

void Connection::write_handshake(std::uint64_t generation) {
  auto buffer = std::make_shared<std::string>(machine_.take_handshake_bytes());
  transport_.async_write(
      asio::buffer(*buffer),
      current(generation, [buffer](Connection& self, const asio::error_code& ec,
                                   std::size_t bytes) {
        if (!ec) {  // handshake bytes are not part of the callers' stream, only counted
          self.machine_.handshake_written(bytes, Clock::now());
          return;
        }
        self.perform(self.machine_.on_handshake_write_failed(
            ec.message(), self.transport_.error_hint(ec, /*during_handshake=*/true), Clock::now()));
      }));
}

void Connection::read(std::uint64_t generation) {
  const std::span<char> space = machine_.read_space();
  transport_.async_read_some(
      asio::buffer(space.data(), space.size()),
      current(generation, [](Connection& self, const asio::error_code& ec, std::size_t bytes) {
        if (ec) {
          const bool handshaking = self.state() == ConnectionState::Handshaking;
          self.perform(self.machine_.on_read_failed(Transport::closed_by_peer(ec), ec.message(),
                                                    self.transport_.error_hint(ec, handshaking),
                                                    Clock::now()));
          return;
        }
        self.perform(self.machine_.on_read(bytes, Clock::now()));
      }));
}

void Connection::write(std::uint64_t generation) {
  const std::string_view bytes = machine_.write_buffer();
  transport_.async_write(
      asio::buffer(bytes.data(), bytes.size()),
      in_arena(write_arena_, current(generation, [](Connection& self, const asio::error_code& ec,
                                                    std::size_t written) {
                 if (ec) {
                   self.perform(self.machine_.on_write_failed(written, ec.message(), Clock::now()));
                   return;
                 }
                 self.perform(self.machine_.on_written(written, Clock::now()));
               })));
}

void Connection::arm(IoTimer timer, Clock::time_point at, std::uint64_t generation) {
  if (timer == IoTimer::Deadline) {
    // Not tied to a socket: deadlines run while the connection is down too.
    deadline_timer_.expires_at(at);
    deadline_timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
      if (ec == asio::error::operation_aborted) return;
      BusyScope busy(*self->load_);
      self->perform(self->machine_.on_timer(IoTimer::Deadline, Clock::now(), self->socket_facts()));
    });
    return;
  }
  asio::steady_timer& waiting = timer == IoTimer::Connect ? connect_timer_ : health_timer_;
  waiting.expires_at(at);
  waiting.async_wait(current(generation, [timer](Connection& self, const asio::error_code& ec) {
    if (!ec) self.perform(self.machine_.on_timer(timer, Clock::now()));
  }));
}

void Connection::cancel(IoTimer timer) {
  switch (timer) {
    case IoTimer::Deadline:
      deadline_timer_.cancel();
      break;
    case IoTimer::Connect:
      resolver_.cancel();
      connect_timer_.cancel();
      break;
    case IoTimer::Health:
      health_timer_.cancel();
      break;
  }
}

SocketFacts Connection::socket_facts() const {
  SocketFacts facts;
  facts.unread_bytes = transport_.unread_bytes();
  facts.io_busy_percent = load_->busy_percent();
  return facts;
}

}  // namespace redmux::detail

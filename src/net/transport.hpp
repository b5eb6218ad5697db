// Transport: the byte stream of one connection — a plain TCP or Unix socket, or TLS over it
// (ssl=true) — with the few operations Connection needs: connect through socket(), then
// set_tcp_options() and async_handshake() (TLS only), async_read_some(), async_write(),
// send_now() for a caller's inline write, close().
//
// TLS sessions: renew() makes a fresh SSL session, with its own socket, for every connection
// attempt (a session cannot be reused after its socket closed). A session that still has an
// operation pending when it is replaced stays alive until that operation's handler is gone:
// every TLS operation's handler holds a reference to its session. Because each session owns
// its socket, an old session's last steps (Asio's TLS operations may take one more step
// after an error) can only touch its own closed socket, never the next connection's.
//
// Never write to native_handle() directly under TLS: the bytes would bypass encryption.
// Connection turns inline writes off for TLS connections for this reason.
//
// Close-on-exec: every socket is opened here with SOCK_CLOEXEC (async_connect() below), never
// by Asio, which opens without it. A child the application starts (system(), posix_spawn, a
// fork and exec) would otherwise inherit every connection and keep it open on the server
// after the multiplexer closed it, for as long as the child lives.
//
// Threads: like the socket it wraps — one operation of each kind at a time, all on the
// connection's I/O thread; is_tls() is constant.
#pragma once

#include <asio/associated_allocator.hpp>
#include <asio/bind_allocator.hpp>
#include <asio/error.hpp>
#include <asio/generic/stream_protocol.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/write.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#if REDMUX_WITH_TLS
#include <algorithm>
#include <asio/associated_allocator.hpp>
#include <asio/buffer.hpp>
#include <asio/ssl/stream.hpp>

#include "net/tls_context.hpp"
#endif

namespace redmux::detail {

class TlsContext;

#if REDMUX_WITH_TLS
/// A handler that keeps its TLS session alive until it is destroyed.
template <class Handler, class Session>
struct KeepTlsSession {
  Handler handler;
  std::shared_ptr<Session> session;  // declared last: released before the handler

  template <class... Args>
  void operator()(Args&&... args) {
    handler(std::forward<Args>(args)...);
  }
};

/// Writes a whole buffer to a TLS session, at most one record's worth of plain text per step,
/// and completes with handler(error, bytes). On an error, the step that failed counts as
/// written: OpenSSL may have sent part of it, and Asio reports 0 bytes for a failed step.
/// So `bytes` never undercounts what may have reached the server. (asio::async_write would
/// report only the steps that succeeded, and a command the server may have received would
/// then look "never sent, safe to retry".)
template <class Handler, class Session>
struct TlsWriteAll {
  static constexpr std::size_t kStep = 16 * 1024;  // a TLS record's largest plain text
  Handler handler;
  std::shared_ptr<Session> session;  // keeps the session alive while a step is pending
  asio::const_buffer rest;
  std::size_t done = 0;
  std::size_t step = 0;

  void start() {
    step = std::min(rest.size(), kStep);
    Session& target = *session;
    target.async_write_some(asio::const_buffer(rest.data(), step), std::move(*this));
  }
  void operator()(const asio::error_code& ec, std::size_t bytes) {
    if (ec) {
      handler(ec, done + step);
      return;
    }
    done += bytes;
    rest += bytes;
    if (rest.size() == 0) {
      handler(ec, done);
      return;
    }
    start();
  }
};
#endif

/// asio::async_write's completion condition without its 64 KiB step: each send() offers the
/// kernel everything not yet written. asio::transfer_all offers at most 64 KiB per send(), so
/// the I/O thread's writes under load (hundreds of KiB of small commands from hundreds of
/// threads) left in about 25 sends each, and the I/O thread read 6 × as often per write.
/// Offered whole, 500 threads' INCRs ran about 1.2 × faster (docs/performance.md).
struct TransferAllAtOnce {
  std::size_t operator()(const asio::error_code& error, std::size_t) const noexcept {
    return error ? 0 : std::numeric_limits<std::size_t>::max();
  }
};

/// Writes all of `buffer` to `stream` (an AsyncWriteStream), each step offering the rest;
/// completes with handler(error, bytes written).
template <class Stream, class Buffer, class Handler>
void write_all(Stream& stream, const Buffer& buffer, Handler&& handler) {
  asio::async_write(stream, buffer, TransferAllAtOnce{}, std::forward<Handler>(handler));
}

/// TransferAllAtOnce that also stops when `epoch` moved since the write began: the socket was
/// closed, and perhaps opened again for the next connection.
struct TransferAllInOneEpoch {
  const std::uint64_t* epoch;
  std::uint64_t began;
  std::size_t operator()(const asio::error_code& error, std::size_t bytes) const noexcept {
    return *epoch != began ? 0 : TransferAllAtOnce{}(error, bytes);
  }
};

/// write_all() on a socket that close() and open() may reuse for the next connection while a
/// step is under way (`epoch` counts them). A step whose completion was already on its way
/// when the break closed the socket must not be followed by another: it would go out on the
/// socket opened for the next connection, and the server would read the rest of the value as
/// commands. Such a write ends with operation_aborted and the bytes of the steps done.
template <class Stream, class Buffer, class Handler>
void write_all(Stream& stream, const Buffer& buffer, const std::uint64_t& epoch,
               Handler&& handler) {
  const std::uint64_t began = epoch;
  auto allocator = asio::get_associated_allocator(handler);
  asio::async_write(
      stream, buffer, TransferAllInOneEpoch{&epoch, began},
      asio::bind_allocator(allocator, [&epoch, began, handler = std::forward<Handler>(handler)](
                                          asio::error_code error, std::size_t bytes) mutable {
        if (!error && epoch != began) error = asio::error::operation_aborted;
        handler(error, bytes);
      }));
}

class Transport {
 public:
  using Socket = asio::generic::stream_protocol::socket;

  /// `tls` null: a plain socket. REQUIRES: non-null only when built with REDMUX_WITH_TLS.
  Transport(asio::io_context& io, std::shared_ptr<TlsContext> tls);

  bool is_tls() const noexcept { return tls_context_ != nullptr; }
  /// The TCP or Unix socket itself: to connect it and set socket options.
  Socket& socket() noexcept { return lowest(); }
  bool is_open() const noexcept { return lowest().is_open(); }
  int native_handle() const { return lowest().native_handle(); }
  /// Closes the socket (no TLS close_notify: the session is dropped with the connection).
  void close() noexcept;
  /// Connects to the first of `endpoints` that accepts, trying each in turn on a new
  /// close-on-exec socket. handler(asio::error_code): the last endpoint's error when none
  /// accepted; operation_aborted when close() or renew() ran meanwhile (the steps of an
  /// abandoned attempt never touch the next attempt's socket).
  template <class Handler>
  void async_connect(std::vector<Socket::endpoint_type> endpoints, Handler&& handler);
  /// What each endpoint of the last async_connect() said, in order, up to the one that
  /// accepted (for the error listing every address of a host name). I/O thread only.
  const std::vector<asio::error_code>& connect_errors() const noexcept { return connect_errors_; }
  /// A TCP socket just connected: no Nagle delay; keepalive probes after `keep_alive` idle
  /// (0: none); unacknowledged bytes close it after `user_timeout`.
  void set_tcp_options(std::chrono::seconds keep_alive,
                       std::chrono::milliseconds user_timeout) noexcept;
  /// One non-blocking send of `bytes` on the socket itself, from any thread: how many it
  /// took; `error` is set to the errno of a failure (left 0 when the socket was just full).
  /// REQUIRES: !is_tls(), and no close() or renew() meanwhile (the caller's lock sees to it).
  std::size_t send_now(std::string_view bytes, int& error) noexcept;
  /// Bytes received and not read yet (0 when closed): for diagnostics.
  std::size_t unread_bytes() const noexcept;
  /// Prepares for a new connection attempt: under TLS, a fresh session and socket (the
  /// previous socket must be closed). I/O thread only.
  void renew();

  /// TLS client handshake; checks and sends `server_name` as TLSContext::prepare_session()
  /// describes. handler(asio::error_code). REQUIRES: is_tls(), connected.
  template <class Handler>
  void async_handshake(const std::string& server_name, Handler&& handler);
  template <class Buffers, class Handler>
  void async_read_some(const Buffers& buffers, Handler&& handler);
  /// Writes all of `buffer` (one contiguous buffer). handler(error, bytes): under TLS, after
  /// an error `bytes` also counts the part whose fate is unknown (see TlsWriteAll).
  template <class Buffer, class Handler>
  void async_write(const Buffer& buffer, Handler&& handler);

  /// The message for a failed async_handshake(): endpoint, OpenSSL's reason, a hint.
  std::string handshake_error(const asio::error_code& ec, const std::string& endpoint_text,
                              const std::string& server_name) const;
  /// What to add to the message of a failed read or write ("" when nothing): under TLS, a
  /// hint for alerts such as "certificate required", and `during_handshake` (the Redis
  /// handshake, right after the TLS one) for the server closing the connection.
  std::string error_hint(const asio::error_code& ec, bool during_handshake) const;
  /// True when `ec` means the peer ended the stream: EOF, reset, or a TLS stream that ended
  /// without close_notify (which is how a server that exits ends it).
  static bool closed_by_peer(const asio::error_code& ec) noexcept;

 private:
  /// The socket in use: the plain one, or the current TLS session's. (Non-const from a
  /// const Transport: native_handle() for FIONREAD in const diagnostics.)
  Socket& lowest() const noexcept {
#if REDMUX_WITH_TLS
    if (tls_) return tls_->next_layer();
#endif
    return socket_;
  }

  template <class Handler>
  struct ConnectEach;

  /// Opens the socket in use for `protocol`, close-on-exec (closing it first if open).
  asio::error_code open(const Socket::protocol_type& protocol);

  mutable Socket socket_;  ///< plain connections only
  std::shared_ptr<TlsContext> tls_context_;
  std::vector<asio::error_code> connect_errors_;  ///< of the last async_connect()
  std::uint64_t epoch_ = 0;  ///< bumps at close() and renew(): a connect in progress is stale

#if REDMUX_WITH_TLS
  using TlsStream = asio::ssl::stream<Socket>;
  std::shared_ptr<TlsStream> tls_;  ///< the current session; null for plain connections

  template <class Handler>
  KeepTlsSession<std::decay_t<Handler>, TlsStream> keep_session(Handler&& handler) const {
    return {std::forward<Handler>(handler), tls_};
  }
#endif
};

template <class Handler>
void Transport::async_handshake(const std::string& server_name, Handler&& handler) {
#if REDMUX_WITH_TLS
  tls_context_->prepare_session(tls_->native_handle(), server_name);
  tls_->async_handshake(asio::ssl::stream_base::client,
                        keep_session(std::forward<Handler>(handler)));
#else
  (void)server_name;
  asio::post(socket_.get_executor(), [handler = std::forward<Handler>(handler)]() mutable {
    handler(asio::error_code(asio::error::operation_not_supported));
  });
#endif
}

/// The steps of async_connect(): one endpoint after another, each on a fresh socket.
template <class Handler>
struct Transport::ConnectEach {
  Transport* transport;  // outlives the operation: the handler holds its connection
  std::uint64_t epoch;
  std::vector<Socket::endpoint_type> endpoints;
  std::size_t next = 0;
  asio::error_code last = asio::error::host_not_found;
  Handler handler;

  void start() {
    while (next < endpoints.size()) {
      if (transport->epoch_ != epoch) break;
      const Socket::endpoint_type endpoint = endpoints[next++];
      if (asio::error_code ec = transport->open(endpoint.protocol())) {
        last = ec;
        transport->connect_errors_.push_back(ec);
        continue;
      }
      epoch = transport->epoch_;  // open() closed the socket of the previous step
      Socket& socket = transport->lowest();
      socket.async_connect(endpoint, std::move(*this));
      return;
    }
    handler(transport->epoch_ != epoch ? asio::error_code(asio::error::operation_aborted) : last);
  }
  void operator()(const asio::error_code& ec) {
    if (!ec || ec == asio::error::operation_aborted || transport->epoch_ != epoch) {
      handler(transport->epoch_ != epoch ? asio::error_code(asio::error::operation_aborted) : ec);
      return;
    }
    last = ec;
    transport->connect_errors_.push_back(ec);
    start();
  }
};

template <class Handler>
void Transport::async_connect(std::vector<Socket::endpoint_type> endpoints, Handler&& handler) {
  connect_errors_.clear();
  ConnectEach<std::decay_t<Handler>>{this,
                                     epoch_,
                                     std::move(endpoints),
                                     0,
                                     asio::error::host_not_found,
                                     std::forward<Handler>(handler)}
      .start();
}

template <class Buffers, class Handler>
void Transport::async_read_some(const Buffers& buffers, Handler&& handler) {
#if REDMUX_WITH_TLS
  if (tls_) {
    tls_->async_read_some(buffers, keep_session(std::forward<Handler>(handler)));
    return;
  }
#endif
  socket_.async_read_some(buffers, std::forward<Handler>(handler));
}

template <class Buffer, class Handler>
void Transport::async_write(const Buffer& buffer, Handler&& handler) {
#if REDMUX_WITH_TLS
  if (tls_) {
    TlsWriteAll<std::decay_t<Handler>, TlsStream>{std::forward<Handler>(handler), tls_,
                                                  asio::const_buffer(buffer)}
        .start();
    return;
  }
#endif
  write_all(socket_, buffer, epoch_, std::forward<Handler>(handler));
}

}  // namespace redmux::detail

#if REDMUX_WITH_TLS
// TlsWriteAll and KeepTlsSession allocate from the wrapped handler's allocator (a
// connection's HandlerArena).
template <class Handler, class Session, class Allocator>
struct asio::associated_allocator<redmux::detail::TlsWriteAll<Handler, Session>, Allocator> {
  using type = asio::associated_allocator_t<Handler, Allocator>;
  static type get(const redmux::detail::TlsWriteAll<Handler, Session>& op,
                  const Allocator& fallback = Allocator()) noexcept {
    return asio::get_associated_allocator(op.handler, fallback);
  }
};

template <class Handler, class Session, class Allocator>
struct asio::associated_allocator<redmux::detail::KeepTlsSession<Handler, Session>, Allocator> {
  using type = asio::associated_allocator_t<Handler, Allocator>;
  static type get(const redmux::detail::KeepTlsSession<Handler, Session>& wrapper,
                  const Allocator& fallback = Allocator()) noexcept {
    return asio::get_associated_allocator(wrapper.handler, fallback);
  }
};
#endif

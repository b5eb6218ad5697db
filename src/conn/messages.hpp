// What a connection tells its callers and the application when something goes wrong: every
// error text of the connection core in one place (sans-IO). Each says what happened, to
// which command and endpoint, and what to do; none carries a secret (the configuration's
// name and numbers only).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "conn/pending_command.hpp"
#include "redmux/config.hpp"
#include "redmux/error.hpp"

namespace redmux::detail {

/// Milliseconds from `then` to `now`; -1 when `then` never happened (time_point{}).
long long ms_since(Clock::time_point then, Clock::time_point now) noexcept;

/// What a timeout message reports besides the command: the connection as it is now.
struct TimeoutFacts {
  std::string_view endpoint;
  std::string_view client_name;
  std::string_view state;           ///< to_string(ConnectionState)
  std::size_t queued_commands = 0;  ///< queued, not taken for writing
  std::size_t queued_bytes = 0;
  std::size_t in_flight = 0;     ///< written (or being written), awaiting replies
  std::uint64_t written = 0;     ///< stream offset the socket accepted up to
  std::uint64_t taken = 0;       ///< stream offset taken for writing up to
  std::size_t unread_bytes = 0;  ///< read and not parsed, plus what the socket holds
  Clock::time_point last_read{};
  Clock::time_point last_write{};
  int io_busy_percent = 0;
  bool ready = false;                   ///< the connection is ready
  bool held_for_replies = false;        ///< the writer holds queued commands for the next replies
  const Error* last_attempt = nullptr;  ///< why the last attempt failed (or the last break)
};

/// The timeout error of `command` at `now`: in flight (`in_flight`) or still queued.
Error timeout_error(const PendingCommand& command, Clock::time_point now, bool in_flight,
                    const TimeoutFacts& facts);

/// A command lost with its connection: not_sent when its first byte is at or past `written`
/// (it never reached the socket: safe to retry), else outcome_unknown.
Error broken_error(const PendingCommand& command, const Error& cause, std::uint64_t written,
                   std::string_view endpoint);

/// A queued command that leaves without being sent: "<name> not sent: <error><why>".
Error not_sent_error(const PendingCommand& command, const Error& error, errc code,
                     std::string_view why);

/// A command refused at submission: the connection is down under backlogPolicy=failFast, or
/// it was shut down.
Error refused_at_submit(std::string_view name, std::string_view endpoint, std::string_view state,
                        bool fail_fast);

/// A Sentinel's "unknown command" for a command a data multiplexer sent it: the reply, and
/// that the endpoint is a Sentinel, which serviceName= reaches the servers of.
Error refused_by_sentinel(std::string_view reply, std::string_view endpoint);
/// The Warning when a data connection's server says it is a Sentinel (mode=sentinel).
std::string connected_to_sentinel(std::string_view endpoint);

/// A caller's command a replica answered -REDIRECT (`reply`: "REDIRECT host:port"), not
/// followed: no connection of the multiplexer goes to that primary, or the command was
/// redirected kMaxRedirects times already. It did not run.
Error redirect_not_followed(const PendingCommand& command, std::string_view reply,
                            std::string_view endpoint, bool too_many);

namespace connect_error {
Error resolve_failed(std::string_view host, std::string_view reason);
Error connect_failed(std::string_view endpoint, std::string_view reason);
/// The attempt took longer than connectTimeout; `phase`: "connecting", "handshaking" or
/// "TLS handshake". `in_tls`: it was the TLS handshake (adds a hint about the TLS port).
/// `provider_took`: when not zero, how long the credential provider held the attempt up.
Error timed_out(std::string_view endpoint, std::chrono::milliseconds connect_timeout,
                std::string_view phase, bool in_tls,
                std::chrono::milliseconds provider_took = std::chrono::milliseconds(0));
/// The credential provider took `took` on an I/O thread (Warning; docs/credentials.md).
std::string slow_provider(std::string_view endpoint, std::chrono::milliseconds took);
Error handshake_write_failed(std::string_view endpoint, std::string_view reason,
                             std::string_view hint);
/// The first series gave up: `attempts` failed (why the first ones did in `reasons`, the
/// last `last`). Attempts that failed alike are named once: "attempts 1–4: <why>".
Error gave_up(std::string_view endpoint, int attempts, const Config& config,
              const std::vector<std::string>& reasons, const Error& last);
}  // namespace connect_error

/// The credential provider threw while connecting to (or re-authenticating on) `endpoint`.
Error credential_provider_failed(std::string_view endpoint, std::string_view what);
/// A ready connection's AUTH with renewed credentials was refused with `reply_text`.
Error reauth_refused(std::string_view endpoint, std::string_view user, std::string_view reply_text);

namespace break_cause {
/// `hint`: the transport's (TLS alerts); `plain_handshake`: a plain connection was in its
/// handshake (a TLS port closes it at the first bytes); `partial`: bytes of a reply read;
/// `refusal`: an error the server answered the handshake with before it closed (a server at
/// its maxclients limit says so, then closes), named instead of the TLS guess.
Error read_failed(std::string_view endpoint, bool closed_by_peer, std::string_view reason,
                  std::string_view hint, bool plain_handshake, std::size_t partial,
                  std::string_view refusal = {});
Error write_failed(std::string_view endpoint, std::string_view reason);
Error not_resp(std::string_view endpoint, const Error& parser_error);
Error unexpected_reply(std::string_view endpoint);
Error select_failed(std::string_view endpoint, std::string_view reply_text);
/// `oldest`: the oldest command awaiting its reply (empty: none), issued `oldest_age_ms` ago
/// (negative: unknown). A script or function there may be running still: the server answers
/// nothing on its connection until it ends, which the message says.
Error dead(std::string_view endpoint, long long silent_ms, const Config& config,
           std::string_view oldest = {}, long long oldest_age_ms = -1);
Error moved(std::string_view new_endpoint);
/// A RESP2 subscriber connection replaced to authenticate with renewed credentials.
Error renewing_credentials(std::string_view endpoint);
/// Commands written inline found the connection no longer ready.
Error not_ready(std::string_view endpoint, std::string_view state);
/// `note`: what close(deadline) says about its deadline (empty for close()).
Error closed(std::string_view note = {});
}  // namespace break_cause

}  // namespace redmux::detail

#include "conn/messages.hpp"

#include <algorithm>

#include "core/script_commands.hpp"
#include "redmux/version.hpp"

namespace redmux::detail {
namespace {

std::string ago(Clock::time_point then, Clock::time_point now) {
  const long long ms = ms_since(then, now);
  return ms < 0 ? std::string("never") : std::to_string(ms) + " ms ago";
}

std::string text(std::string_view view) {
  return std::string(view);
}

}  // namespace

long long ms_since(Clock::time_point then, Clock::time_point now) noexcept {
  if (then == Clock::time_point{}) return -1;
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - then).count();
}

Error timeout_error(const PendingCommand& command, Clock::time_point now, bool in_flight,
                    const TimeoutFacts& facts) {
  const long long elapsed_ms = ms_since(created_at(command), now);
  // In flight, offsets count bytes since the connection started; queued, nothing is sent.
  const bool sent = in_flight && command.bytes_end <= facts.written;
  std::string_view which;
  switch (command.timeout_source) {
    case TimeoutSource::AsyncTimeout:
      which = "asyncTimeout";
      break;
    case TimeoutSource::Call:
      which = "this call's timeout";
      break;
    case TimeoutSource::Blocking:
      which = "the block time plus the call's timeout";
      break;
  }
  std::string message = "Timeout awaiting reply to " + text(command.name) + " after " +
                        std::to_string(elapsed_ms) + " ms (" + text(which) + " " +
                        std::to_string(command.timeout_ms) + " ms) from " + text(facts.endpoint);
  if (!facts.client_name.empty()) message += " (client name \"" + text(facts.client_name) + "\")";
  message += ": command " + std::string(sent        ? "was sent"
                                        : in_flight ? "was being written"
                                                    : "was still queued, not sent");
  if (!in_flight && facts.ready && facts.held_for_replies) {
    // Not a stall: under load a small write waits for the replies already due
    // (Writer::coalescing_threshold()), and this command's deadline came first.
    message += " (held for the next replies: " + std::to_string(facts.in_flight) +
               " commands were awaiting theirs)";
  }
  message += "; queued-unsent=" + std::to_string(facts.queued_commands);
  message += ", sent-awaiting-reply=" + std::to_string(facts.in_flight);
  message += ", bytes-to-write=" +
             // A write in progress counts only on a ready connection: after a break, what a failed
             // write did not send is back in the queue, and the old stream's offsets mean nothing.
             std::to_string(facts.queued_bytes + (facts.ready ? facts.taken - facts.written : 0));
  message += ", bytes-unread=" + std::to_string(facts.unread_bytes);
  message += ", connection=" + text(facts.state);
  message += ", last-read=" + ago(facts.last_read, now);
  message += ", last-write=" + ago(facts.last_write, now);
  message += ", io=" + std::to_string(facts.io_busy_percent) + "% busy";
  message += ", redmux " + std::string(kVersion);
  if (!facts.ready && facts.last_attempt && *facts.last_attempt) {
    // With abortConnect=false a connection that cannot be made shows only as timeouts:
    // say why the last attempt failed (a wrong password, a refused port …).
    message +=
        ". The connection is not ready; its last attempt failed: " + facts.last_attempt->message();
  }
  switch (command.timeout_source) {
    case TimeoutSource::AsyncTimeout:
      message +=
          ". If the server is busy or far away raise asyncTimeout (or give this call a "
          "longer CallOptions::timeout)";
      break;
    case TimeoutSource::Call:
      message += ". If the server is busy or far away raise this call's CallOptions::timeout";
      break;
    case TimeoutSource::Blocking:
      message +=
          ". A blocking command's deadline is its block time plus the call's timeout "
          "(CallOptions::timeout, else asyncTimeout): raise that";
      break;
  }
  message += "; if replies are slow to be read, check the I/O thread is not blocked by callbacks.";
  // Still queued: never written, and a command that times out is never written later. One
  // queued again after a break (resends) may have been written before it: not said.
  if (!in_flight && command.resends == 0)
    return Error::never_ran(errc::timeout, std::move(message));
  return Error(errc::timeout, std::move(message));
}

Error broken_error(const PendingCommand& command, const Error& cause, std::uint64_t written,
                   std::string_view endpoint) {
  if (command.bytes_begin >= written) {
    return Error(errc::not_sent, text(command.name) + " was not sent: connection to " +
                                     text(endpoint) + " lost (" + cause.message() +
                                     "); safe to retry");
  }
  return Error(errc::outcome_unknown, "connection to " + text(endpoint) + " lost after " +
                                          text(command.name) + " was sent (" + cause.message() +
                                          "): it may or may not have run");
}

Error not_sent_error(const PendingCommand& command, const Error& error, errc code,
                     std::string_view why) {
  return Error(code, text(command.name) + " not sent: " + error.message() + text(why));
}

Error refused_at_submit(std::string_view name, std::string_view endpoint, std::string_view state,
                        bool fail_fast) {
  if (fail_fast) {
    // "idle" is a connection not started yet (abortConnect=false, just connected).
    return Error(errc::disconnected, text(name) + " not sent: " + text(endpoint) +
                                         " is not connected (" + text(state) +
                                         ") and backlogPolicy=failFast");
  }
  return Error(errc::shut_down, text(name) + " not sent: the multiplexer was closed");
}

namespace {
std::string sentinel_advice(std::string_view endpoint) {
  return "to reach the servers it monitors, list the Sentinels with serviceName=<the "
         "monitored service's name>, e.g. \"" +
         text(endpoint) + ",serviceName=mymaster\"";
}
}  // namespace

Error refused_by_sentinel(std::string_view reply, std::string_view endpoint) {
  return Error(errc::server_error,
               text(reply) + " (" + text(endpoint) +
                   " is a Redis Sentinel, not a data server: " + sentinel_advice(endpoint) + ")");
}

std::string connected_to_sentinel(std::string_view endpoint) {
  return text(endpoint) +
         " is a Redis Sentinel (its HELLO says mode=sentinel), not a data server: commands "
         "sent to it run on the Sentinel itself; " +
         sentinel_advice(endpoint);
}

Error redirect_not_followed(const PendingCommand& command, std::string_view reply,
                            std::string_view endpoint, bool too_many) {
  std::string primary(reply.substr(std::min(reply.size(), std::string_view("REDIRECT ").size())));
  std::string why =
      too_many ? "; it was redirected " + std::to_string(kMaxRedirects) +
                     " times already (the servers disagree about their primary: a failover in "
                     "progress?)"
               : "; no connection of this multiplexer goes to " + primary +
                     " (list the primary among the endpoints, or connect through Sentinel)";
  return Error(errc::server_error, text(reply) + ": " + text(command.name) + " did not run: " +
                                       text(endpoint) + " is a replica of " + primary + why);
}

namespace connect_error {

Error resolve_failed(std::string_view host, std::string_view reason) {
  return Error(errc::connection_failed, "resolving " + text(host) + " failed: " + text(reason));
}

Error connect_failed(std::string_view endpoint, std::string_view reason) {
  return Error(errc::connection_failed,
               "connecting to " + text(endpoint) + " failed: " + text(reason));
}

Error timed_out(std::string_view endpoint, std::chrono::milliseconds connect_timeout,
                std::string_view phase, bool in_tls, std::chrono::milliseconds provider_took) {
  const std::string ms = std::to_string(connect_timeout.count());
  return Error(
      errc::connection_failed,
      "connecting to " + text(endpoint) + " timed out after " + ms + " ms (" + text(phase) +
          "; connectTimeout=" + ms + ")" +
          (in_tls ? "; is this the server's TLS port (tls-port)?" : "") +
          (provider_took.count() > 0
               ? "; the credential provider took " + std::to_string(provider_took.count()) +
                     " ms of it (it runs on an I/O thread and must not block)"
               : ""));
}

std::string slow_provider(std::string_view endpoint, std::chrono::milliseconds took) {
  return "the credential provider took " + std::to_string(took.count()) + " ms for " +
         text(endpoint) +
         ", on an I/O thread: every connection on that thread waited for it (a provider must "
         "not block: return credentials fetched ahead of time)";
}

Error handshake_write_failed(std::string_view endpoint, std::string_view reason,
                             std::string_view hint) {
  return Error(errc::connection_failed, "writing the handshake to " + text(endpoint) +
                                            " failed: " + text(reason) + text(hint));
}

Error gave_up(std::string_view endpoint, int attempts, const Config& config,
              const std::vector<std::string>& reasons, const Error& last) {
  if (attempts <= 1) return last;
  std::string message =
      "could not connect to " + text(endpoint) + " in " + std::to_string(attempts) +
      " attempts (connectRetry=" + std::to_string(config.connect_retry) +
      ", connectTimeout=" + std::to_string(config.connect_timeout.count()) + " ms)";
  for (std::size_t first = 0; first < reasons.size();) {
    std::size_t last_alike = first;
    while (last_alike + 1 < reasons.size() && reasons[last_alike + 1] == reasons[first]) {
      ++last_alike;
    }
    const std::string from = std::to_string(first + 1);
    const std::string to = std::to_string(last_alike + 1);
    message += last_alike == first       ? "; attempt " + from
               : last_alike == first + 1 ? "; attempts " + from + " and " + to
                                         : "; attempts " + from + "–" + to;
    message += ": " + reasons[first];
    first = last_alike + 1;
  }
  if (static_cast<std::size_t>(attempts) > reasons.size()) message += "; …";
  return Error(last.code(), std::move(message));
}

}  // namespace connect_error

Error credential_provider_failed(std::string_view endpoint, std::string_view what) {
  return Error(errc::authentication_failed,
               "the credential provider failed for " + text(endpoint) + ": " + text(what));
}

Error reauth_refused(std::string_view endpoint, std::string_view user,
                     std::string_view reply_text) {
  return Error(errc::authentication_failed,
               "re-authentication to " + text(endpoint) + " as user \"" +
                   text(user.empty() ? std::string_view("default") : user) +
                   "\" refused: " + text(reply_text) +
                   "; the connection keeps its earlier session (check what the credential "
                   "provider returns)");
}

namespace break_cause {

Error read_failed(std::string_view endpoint, bool closed_by_peer, std::string_view reason,
                  std::string_view hint, bool plain_handshake, std::size_t partial,
                  std::string_view refusal) {
  std::string why = closed_by_peer ? text(endpoint) + " closed the connection"
                                   : "reading from " + text(endpoint) + " failed: " + text(reason);
  why += hint;
  if (closed_by_peer && !refusal.empty()) {
    why += " during the handshake, after answering it with \"" + text(refusal) + "\"";
  } else if (closed_by_peer && plain_handshake) {
    // A TLS port closes a plain connection at its first bytes (the HELLO).
    why += " during the handshake: is this a TLS port? set ssl=true (or use rediss://)";
  }
  if (partial > 0) {
    why += "; a reply was cut short (" + std::to_string(partial) + " bytes of it had arrived)";
  }
  return Error(errc::outcome_unknown, std::move(why));
}

Error write_failed(std::string_view endpoint, std::string_view reason) {
  return Error(errc::outcome_unknown, "writing to " + text(endpoint) + " failed: " + text(reason));
}

Error not_resp(std::string_view endpoint, const Error& parser_error) {
  return Error(errc::protocol_error,
               "reply from " + text(endpoint) + " is not valid RESP: " + parser_error.message());
}

Error unexpected_reply(std::string_view endpoint) {
  return Error(errc::protocol_error,
               "a reply arrived from " + text(endpoint) + " with no command waiting for it");
}

Error select_failed(std::string_view endpoint, std::string_view reply_text) {
  return Error(errc::outcome_unknown,
               "a SELECT redmux sent to switch databases failed on " + text(endpoint) + " (" +
                   text(reply_text) +
                   "); commands written behind it may have run against the previous database, "
                   "so the connection was reset");
}

Error dead(std::string_view endpoint, long long silent_ms, const Config& config,
           std::string_view oldest, long long oldest_age_ms) {
  std::string message = "no reply from " + text(endpoint) + " for " + std::to_string(silent_ms) +
                        " ms while commands were overdue (asyncTimeout=" +
                        std::to_string(config.async_timeout.count()) + " ms, heartbeatInterval=" +
                        std::to_string(config.heartbeat_interval.count()) + " ms)";
  if (runs_script(oldest)) {
    message += ": the oldest command awaiting its reply is " + text(oldest);
    if (oldest_age_ms >= 0) message += ", issued " + std::to_string(oldest_age_ms) + " ms ago";
    message +=
        ", and a script or function still running answers nothing on its connection until it "
        "ends (other connections get BUSY; SCRIPT KILL or FUNCTION KILL ends one that has not "
        "written); the server is busy or the connection dead or half-open, and it was replaced";
  } else {
    message += ": the connection looks dead or half-open and was replaced";
  }
  return Error(errc::outcome_unknown, std::move(message));
}

Error moved(std::string_view new_endpoint) {
  return Error(errc::disconnected, "moved to " + text(new_endpoint) + ": the primary changed");
}

Error renewing_credentials(std::string_view endpoint) {
  return Error(errc::disconnected, text(endpoint) +
                                       " replaced to authenticate with renewed credentials (a "
                                       "RESP2 subscriber connection cannot send AUTH)");
}

Error not_ready(std::string_view endpoint, std::string_view state) {
  return Error(errc::disconnected, text(endpoint) + " is " + text(state));
}

Error closed(std::string_view note) {
  if (note.empty()) return Error(errc::shut_down, "the multiplexer was closed");
  return Error(errc::shut_down, "the multiplexer was closed (" + text(note) + ")");
}

}  // namespace break_cause

}  // namespace redmux::detail

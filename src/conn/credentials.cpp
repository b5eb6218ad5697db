// ConnectionMachine, the credential provider's part: who a handshake authenticates as, and
// authenticating again before the credentials expire.
//
// Rules:
// - The provider is asked before every handshake (each attempt, each reconnect), so a
//   rotated password or a fresh token is what a new connection uses.
// - A ready connection asks again once three quarters of `expires_in` have passed (at the
//   first health tick after that). RESP3, or RESP2 not in subscriber mode: AUTH is queued as
//   redmux's own command, so it is written in order with the callers' commands — nothing
//   queued or in flight is dropped, failed or resent, and the commands after it run as the
//   renewed user. A RESP2 subscriber connection cannot send AUTH while subscribed: it is
//   replaced (broken and connected again at once, its pipeline empty so no (UN)SUBSCRIBE is
//   cut in half); the new handshake uses the credentials just returned and the hub
//   subscribes again on ready.
// - A refused AUTH is reported once (ConnectionEventKind::AuthRefused, and the error
//   callback), naming the user and never the secret. The server keeps the session it had
//   authenticated, so the connection goes on; it is not asked again on this session (no
//   retry loop against a server that refuses): the next connection attempt asks the provider.
#include <exception>

#include "conn/connection_machine.hpp"
#include "conn/messages.hpp"

namespace redmux::detail {
namespace {

constexpr std::string_view kAuth = "AUTH";
/// A provider slower than this is logged: every connection on its I/O thread waited.
constexpr std::chrono::milliseconds kSlowProvider{100};

/// The reply to an AUTH in place. Holds what it needs to report a refusal (the shared
/// context outlives every connection's commands); its one reference is the pipeline's.
template <class Renewal>
class ReauthReply final : public CommandState {
 public:
  ReauthReply(std::shared_ptr<SharedContext> shared, std::string endpoint, std::string user,
              std::weak_ptr<Renewal> renewal, Clock::time_point next)
      : shared_(std::move(shared)),
        endpoint_(std::move(endpoint)),
        user_(std::move(user)),
        renewal_(std::move(renewal)),
        next_(next) {}
  void deliver(NodeSpan reply) noexcept override {
    if (!claim()) return;
    const bool refused = is_error_reply(reply);
    // Accepted: the renewed credentials' own time. Refused: never again on this session.
    if (auto renewal = renewal_.lock(); renewal && !refused) renewal->at = next_;
    if (refused) {
      try {
        report(reauth_refused(endpoint_, user_, reply.empty() ? "" : reply[0].value));
      } catch (...) {  // out of memory building the message: nothing else to do
      }
    }
    publish();
  }
  void fail(Error) noexcept override {
    // The connection broke first: the next handshake asks the provider again.
    if (claim()) publish();
  }

 private:
  void report(const Error& error) {
    ConnectionEvent event;
    event.kind = ConnectionEventKind::AuthRefused;
    event.endpoint = endpoint_;
    event.error = error;
    shared_->report_event(event);
    shared_->report_error(error);
  }

  std::shared_ptr<SharedContext> shared_;
  std::string endpoint_;
  std::string user_;
  std::weak_ptr<Renewal> renewal_;
  Clock::time_point next_;
};

}  // namespace

Credentials ConnectionMachine::ask_provider() {
  // The provider runs here, on the I/O thread: while it does, nothing else on the thread
  // runs (not even this attempt's timer), which a timeout would otherwise blame on the server.
  const auto started = Clock::now();
  Credentials credentials = config_.credentials();
  provider_took_ = Clock::now() - started;
  if (const auto slow = slow_provider_took();
      slow.count() > 0 && observer_.logs(LogLevel::Warning)) {
    log(LogLevel::Warning, connect_error::slow_provider(endpoint_text_, slow));
  }
  return credentials;
}

std::chrono::milliseconds ConnectionMachine::slow_provider_took() const {
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(provider_took_);
  return took >= kSlowProvider ? took : std::chrono::milliseconds(0);
}

bool ConnectionMachine::credentials_for_handshake(Credentials& out) {
  provider_took_ = Clock::duration(0);  // this attempt's, if asked below
  if (std::optional<Credentials> renewed = std::exchange(renewed_, std::nullopt)) {
    out = std::move(*renewed);  // a replaced subscriber connection: asked just before
  } else if (!config_.credentials) {
    out = Credentials{config_.user, config_.password, {}};
  } else {
    try {
      out = ask_provider();
    } catch (const std::exception& e) {
      attempt_failed(credential_provider_failed(endpoint_text_, e.what()));
      return false;
    } catch (...) {
      attempt_failed(credential_provider_failed(endpoint_text_, "an exception"));
      return false;
    }
    // The provider held this thread past the attempt's connectTimeout, so the Connect timer
    // has expired behind it. Fail now, before the handshake is written: otherwise the
    // outcome would depend on whether the server's reply or the timer is handled first.
    if (now_ + provider_took_ >= attempt_deadline_) {
      attempt_failed(connect_error::timed_out(endpoint_text_, config_.connect_timeout,
                                              to_string(state()), false, slow_provider_took()));
      return false;
    }
  }
  note_credentials(out);
  return true;
}

Clock::time_point ConnectionMachine::renewal_time(const Credentials& credentials) const {
  return config_.credentials && credentials.expires_in.count() > 0
             ? now_ + credentials.expires_in * 3 / 4
             : Clock::time_point::max();
}

void ConnectionMachine::note_credentials(const Credentials& credentials) {
  // A new session: an AUTH of the last one that is still answered changes nothing here.
  renewal_ = std::make_shared<Renewal>();
  renewal_->at = renewal_time(credentials);
}

void ConnectionMachine::renew_credentials() {
  const bool resp2_subscriber = reader_.subscriber_mode() && server_->identity().protocol == 2;
  if (resp2_subscriber && !pipeline_.empty()) return;  // the next tick, between commands
  renewal_->at = Clock::time_point::max();             // until the AUTH is answered
  Credentials credentials;
  try {
    credentials = ask_provider();
  } catch (const std::exception& e) {
    const Error error = credential_provider_failed(endpoint_text_, e.what());
    report_event(ConnectionEventKind::AuthRefused, error);
    shared_->report_error(error);
    return;
  } catch (...) {
    const Error error = credential_provider_failed(endpoint_text_, "an exception");
    report_event(ConnectionEventKind::AuthRefused, error);
    shared_->report_error(error);
    return;
  }
  if (resp2_subscriber) {
    renewed_ = std::move(credentials);
    connection_broken(break_cause::renewing_credentials(endpoint_text_));
    if (phase_ == Phase::Backoff) connect_attempt();  // at once: nothing is wrong with it
    return;
  }
  const Clock::time_point next = renewal_time(credentials);
  auth_words_.clear();
  auth_words_.emplace_back(kAuth);
  if (!credentials.user.empty()) auth_words_.push_back(credentials.user);
  auth_words_.push_back(std::move(credentials.password));
  auth_args_.assign(auth_words_.begin(), auth_words_.end());
  auto* reply = new ReauthReply<Renewal>(shared_, endpoint_text_, credentials.user, renewal_, next);
  submit_own({own_command(kAuth, PendingKind::Internal, reply), auth_args_});
}

}  // namespace redmux::detail

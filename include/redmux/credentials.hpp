// CredentialProvider: the application's way to hand redmux the user and the password or
// token to authenticate with, asked afresh at every connection attempt and again before the
// credentials it returned expire — rotating passwords, short-lived tokens of a managed
// service (Entra ID, ElastiCache IAM). Set Config::credentials (the data servers: every
// interactive, subscription, dedicated and cluster node connection, and the primary and
// replicas found through Sentinel) or Config::sentinel_credentials (the Sentinels
// themselves); the configuration string cannot carry a provider.
//
// When it runs: on a connection's I/O thread, before each handshake (HELLO … AUTH), and on a
// ready connection once three quarters of `Credentials::expires_in` have passed (checked at
// each health tick, every heartbeatInterval). A ready connection then authenticates again in
// place: AUTH on the same connection, in order with the callers' commands, nothing dropped,
// failed or resent. A RESP2 connection in subscriber mode cannot send AUTH: it is replaced by
// a new connection (authenticated with the new credentials) and its subscriptions restored.
// A refused re-authentication leaves the connection as it was (the server keeps the session
// it authenticated), reports ConnectionEventKind::AuthRefused with an error naming the user
// (never the secret), and is not retried on that connection: the next attempt to connect
// asks the provider again.
//
// Threads: it is called on I/O threads, possibly several at once, and must not block: answer
// from what the application already holds (a token it refreshes elsewhere). An exception it
// throws fails the attempt (or the re-authentication) with its what(). A copy shares the
// same function.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>

namespace redmux {

/// What a CredentialProvider returns. `password` is never printed or logged.
struct Credentials {
  std::string user;      ///< the ACL user; empty: "default"
  std::string password;  ///< the password or token
  /// How long these credentials stay valid from now; 0: until they are replaced. redmux asks
  /// again once three quarters of it have passed.
  std::chrono::milliseconds expires_in{0};
};

class CredentialProvider {
 public:
  using Function = std::function<Credentials()>;

  CredentialProvider() = default;
  explicit CredentialProvider(Function function)
      : function_(function ? std::make_shared<const Function>(std::move(function)) : nullptr) {}

  /// True when a function is set (otherwise user= and password= are used).
  explicit operator bool() const noexcept { return function_ != nullptr; }
  /// REQUIRES: *this is true.
  Credentials operator()() const { return (*function_)(); }
  /// Two providers are equal when they share one function (or both are empty).
  bool operator==(const CredentialProvider&) const = default;

 private:
  std::shared_ptr<const Function> function_;
};

}  // namespace redmux

// HostResolver: the application's own way to turn a host name into addresses, in place of
// the system resolver (getaddrinfo): service discovery, a name whose address the
// application learns from elsewhere, a test that moves a name. Set Config::resolver; the
// configuration string cannot carry it.
//
// When it runs: at every connection attempt to an endpoint given by name (never for an IP
// address or a Unix socket), so an address that changed is used at the next reconnect. The
// addresses it returns are tried in order, each on a new socket, until one accepts; when
// none does, the error lists what each said.
//
// Threads: it is called on an I/O thread, and must not block: answer from what the
// application already knows (a cache it refreshes elsewhere). It may be called from several
// I/O threads at once. A copy shares the same function.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace redmux {

class HostResolver {
 public:
  /// Returns the IP addresses of `host` as text ("10.0.0.7", "::1" or "[::1]"), in the
  /// order to try them. An empty list, an address that is not an IP literal, or an
  /// exception fails the attempt with "resolving <host> failed: …" (the exception's
  /// what()); the connection then backs off and tries again like any failed attempt.
  using Function = std::function<std::vector<std::string>(std::string_view host)>;

  HostResolver() = default;
  explicit HostResolver(Function function)
      : function_(function ? std::make_shared<const Function>(std::move(function)) : nullptr) {}

  /// True when a function is set (otherwise the system resolver is used).
  explicit operator bool() const noexcept { return function_ != nullptr; }
  /// REQUIRES: *this is true.
  std::vector<std::string> operator()(std::string_view host) const { return (*function_)(host); }
  /// Two resolvers are equal when they share one function (or both are empty).
  bool operator==(const HostResolver&) const = default;

 private:
  std::shared_ptr<const Function> function_;
};

}  // namespace redmux

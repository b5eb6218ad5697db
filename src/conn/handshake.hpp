// Handshake: the commands a new connection sends before any caller's command, and what their
// replies mean (sans-IO).
//
// Round one goes out in a single write:
//   HELLO <3|2> [AUTH user password] [SETNAME name]
//   SELECT db                                    (defaultDatabase; a refused SELECT 0 is
//                                                 kept in identity().select_refusal; one a
//                                                 busy server refuses leaves it on 0:
//                                                 database())
//   CLIENT SETINFO LIB-NAME redmux / LIB-VER v   (errors ignored: older servers lack it)
//   INFO server
//   CONFIG GET databases                         (errors ignored: ACLs may refuse it)
//   INFO persistence                             (loading:1 → Step::Loading)
//   [CLIENT TRACKING ON [BCAST PREFIX p …|OPTIN]] (clientCache=true; refused: tracking() false)
// A standalone Valkey 8 or later, when the connection follows redirects (announce_redirect()),
// gets two more, each after the previous one's OK (INFO server says what the server is):
//   READONLY               (a replica then serves reads to this client instead of redirecting)
//   CLIENT CAPA redirect   (a write reaching a replica is answered -REDIRECT host:port)
// Any other server (Redis has no CLIENT CAPA; Valkey 7.2 neither) gets neither: its handshake
// is round one alone. A refusal of either leaves the connection without redirects.
// A server that does not know HELLO (before Redis 6) gets a second round in RESP2:
//   [AUTH [user] password] [CLIENT SETNAME name] [SELECT db] INFO server
#pragma once

#include <cstddef>
#include <string>

#include "redmux/config.hpp"
#include "redmux/credentials.hpp"
#include "redmux/error.hpp"
#include "redmux/future.hpp"
#include "redmux/reply.hpp"
#include "redmux/server_info.hpp"

namespace redmux::detail {

class Handshake {
 public:
  /// Loading: the server is still loading its dataset (INFO persistence loading:1) and would
  /// answer commands with -LOADING; probe again later with probe_loading().
  enum class Step { Continue, Done, Failed, Loading };

  /// `track`: this connection keeps a client-side cache (round one asks CLIENT TRACKING).
  /// `credentials`: who to authenticate as (user= and password=, or what the credential
  /// provider returned); no AUTH when the password is empty.
  Handshake(const Config& config, std::string endpoint, bool track, Credentials credentials);
  Handshake(const Config& config, std::string endpoint, bool track = false)
      : Handshake(config, std::move(endpoint), track, {config.user, config.password, {}}) {}

  /// Before begin(): this connection follows -REDIRECT (a multiplexer with a primary and
  /// replicas), so a server that can send it is asked to (see the top of this file).
  void announce_redirect() noexcept { want_redirect_ = true; }

  /// Appends round one to `out`.
  void begin(std::string& out);
  /// One reply, in order. May append another round to `out` (Continue).
  Step on_reply(NodeSpan reply, std::string& out);

  /// After Loading: appends one more INFO persistence; its reply gives Done or Loading.
  void probe_loading(std::string& out);

  /// After Done.
  const ServerIdentity& identity() const noexcept { return identity_; }
  /// The error the server answered HELLO with, if it did: named when the server then closes
  /// the connection (at its maxclients limit it answers "ERR max number of clients reached"
  /// to whatever comes first, and closes).
  const std::string& refusal() const noexcept { return refusal_; }
  /// After Failed: authentication_failed or connection_failed, saying why.
  const Error& error() const noexcept { return error_; }
  /// After Failed: the server refused what the next attempt would ask again in the same words
  /// (user= and password= without a credential provider, whose next answer may differ; the
  /// SELECT of defaultDatabase: out of range, not allowed in a cluster, an ACL), so
  /// retrying cannot help.
  bool refused_for_good() const noexcept { return refused_for_good_; }
  /// After Done: the server tracks keys for this session (clientCache=true, RESP3, and
  /// CLIENT TRACKING answered OK). When false, tracking_refusal() says why.
  bool tracking() const noexcept { return tracking_; }
  const std::string& tracking_refusal() const noexcept { return tracking_refusal_; }
  /// After Done: the server accepted READONLY and CLIENT CAPA redirect, so a write that
  /// reaches it while it is a replica is answered -REDIRECT host:port, not run.
  bool redirects() const noexcept { return redirects_; }
  /// After Done: the database the connection is on — defaultDatabase, or 0 when a server
  /// busy with a script refused its SELECT (BUSY): commands for another database then get
  /// a SELECT of their own, and SCRIPT KILL, which needs none, reaches the server.
  int database() const noexcept { return database_; }
  /// Replies still expected before the handshake is complete.
  std::size_t awaiting() const noexcept { return expected_.size() - next_; }

 private:
  enum class Expect {
    Hello,
    Auth,
    SetName,
    Select,
    SetInfo,
    Info,
    Databases,
    Persistence,
    Tracking,
    ReadOnly,
    Capa
  };

  void queue(std::string& out, Expect what, std::initializer_list<std::string_view> args);
  void begin_resp2(std::string& out);
  /// `for_good`: see refused_for_good(); a refused password= without a credential provider
  /// always is.
  Step fail(errc code, std::string why, bool for_good = false);
  std::string_view check_hint() const noexcept;
  void read_hello(NodeSpan reply);
  void read_info(std::string_view text);

  const Config& config_;
  std::string endpoint_;
  Credentials credentials_;
  std::vector<Expect> expected_;
  std::size_t next_ = 0;
  bool hello_unknown_ = false;
  bool loading_ = false;
  const bool track_;
  bool tracking_ = false;
  bool want_redirect_ = false;
  bool redirects_ = false;
  int database_ = 0;
  std::string tracking_refusal_;
  ServerIdentity identity_;
  std::string refusal_;
  Error error_;
  bool refused_for_good_ = false;
};

/// True when `server` knows CLIENT CAPA redirect and sends -REDIRECT: a standalone Valkey of
/// version 8 or later (Redis, Valkey 7.2, a cluster node or a Sentinel do not).
bool sends_redirect(const ServerIdentity& server) noexcept;

/// True when an error reply says the credentials were refused.
bool is_auth_error(std::string_view message) noexcept;

}  // namespace redmux::detail

// ServerProfile: what a connection knows about its server — the identity its handshake
// learned, whether the server is a replica (kept up to date by probes), how many databases it
// has, whether a replica is in sync (what its last INFO replication said) — and the one probe
// that may be in flight to ask again.
//
// The probe: INFO replication under replicaHealthCheck (the role, and whether a replica's
// data may be read: conn/replication.hpp), ROLE otherwise or once the server refused INFO (an
// ACL without it: a replica is then trusted as before the check existed). A replica's handshake
// leaves it Unfit until its first INFO answer; a retarget leaves the profile "a replica, Unfit"
// until the new server's handshake says what it is (no write goes to a server not known to be
// a primary).
//
// Ownership: the connection's machine holds it by shared_ptr; a probe in flight holds only a
// weak reference, so a reply that comes after the connection is gone changes nothing.
//
// Threads: is_replica(), health(), replication_state(), databases() and identity() from any
// thread; the rest on the connection's I/O thread, where the hooks run.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "conn/pending_command.hpp"
#include "conn/replication.hpp"
#include "redmux/arg.hpp"
#include "redmux/config.hpp"
#include "redmux/server_info.hpp"

namespace redmux::detail {

/// A command redmux sends by itself, with its arguments (static storage).
struct OwnCommand {
  PendingCommand command;
  std::span<const Arg> args;
};

class ServerProfile : public std::enable_shared_from_this<ServerProfile> {
 public:
  /// `config`: replicaHealthCheck and replicaMaxLag. REQUIRES: it outlives the profile.
  explicit ServerProfile(const Config& config) noexcept : config_(config) {}

  /// Runs when a probe found the role changed (replica ↔ primary).
  void set_changed_hook(std::function<void()> hook) { changed_ = std::move(hook); }
  /// Runs when a probe was answered (or refused: `ask_again` — the ROLE probe must follow).
  void set_answered_hook(std::function<void(bool ask_again)> hook) { answered_ = std::move(hook); }
  /// Which of the multiplexer's servers a replica's primary (INFO's master_host and
  /// master_port) is, kNoServer when none; asked at each INFO replication of a replica.
  using Locator = std::function<std::size_t(std::string_view host, int port)>;
  void set_locator(Locator locate) { locate_ = std::move(locate); }
  static constexpr std::size_t kNoServer = static_cast<std::size_t>(-1);

  bool is_replica() const noexcept { return is_replica_.load(std::memory_order_acquire); }
  /// The server has answered -MASTERDOWN (a replica that lost its primary, under
  /// replica-serve-stale-data no): it may refuse reads again, so PreferReplica reads sent
  /// to it keep their bytes to go elsewhere then. Learned, not asked: CONFIG may be refused.
  bool refuses_stale_reads() const noexcept {
    return refuses_stale_reads_.load(std::memory_order_relaxed);
  }
  void note_refused_stale_read() noexcept {
    refuses_stale_reads_.store(true, std::memory_order_relaxed);
  }
  /// The server reports the client's own availability zone (availabilityZone=, non-empty).
  bool in_zone() const noexcept { return in_zone_.load(std::memory_order_acquire); }
  /// Whether a replica may serve reads; InSync for a primary, or when the check is off or
  /// refused.
  ReplicaHealth health() const noexcept { return health_.load(std::memory_order_acquire); }
  /// Why a replica is not in sync ("" when it is), from its last INFO replication.
  std::string replication_state() const;
  /// A replica's primary as the locator found it (kNoServer: not one of them, or unknown).
  std::size_t follows() const noexcept { return follows_.load(std::memory_order_acquire); }
  /// Its primary as INFO named it ("host:port"; "" when unknown).
  std::string master() const;
  int databases() const noexcept { return databases_.load(std::memory_order_acquire); }
  /// What the handshake's SELECT found: not known before a handshake; refused (the server's
  /// words in identity().select_refusal): only database 0 can be used.
  enum class SelectAnswer : std::uint8_t { Unknown, Accepted, Refused };
  SelectAnswer select_answer() const noexcept { return select_.load(std::memory_order_acquire); }
  ServerIdentity identity() const;

  /// A new connection's handshake said this. True when replica ↔ primary changed (the hook
  /// does not run: the caller decides, since a first connection changes nothing).
  bool adopt(const ServerIdentity& identity);
  /// After adopt(): a replica whose health INFO replication must tell before it serves reads
  /// (the connection asks at once; connect() waits for the answer).
  bool awaits_replication() const noexcept { return awaiting_; }
  /// The connection points at another server: a replica, unfit, until its handshake.
  void retargeted();
  /// What a ROLE reply said ("master", "slave" …); runs the changed hook when it changed.
  void note(std::string_view role);
  /// An INFO replication reply (or the error that refused it).
  void note_replication(NodeSpan reply);

  /// The probe to send at `now`, or nullopt when one is in flight already (one at a time).
  /// A replica whose INFO replication has gone unanswered for kProbeOverdue is unfit for
  /// reads from then until an answer says otherwise: a stopped or stalled server must not
  /// keep receiving them until the dead-connection rule closes its connection.
  std::optional<OwnCommand> begin_probe(Clock::time_point now);
  static constexpr std::chrono::milliseconds kProbeOverdue{2000};
  /// A new connection: whatever probe was in flight is not waited for any more.
  void forget_probe() noexcept { probe_pending_ = false; }

 private:
  class Probe;
  bool asks_info() const noexcept { return config_.replica_health_check && !info_refused_; }
  void set_health(ReplicaHealth health, std::string reason);

  const Config& config_;
  std::function<void()> changed_;
  std::function<void(bool)> answered_;
  Locator locate_;
  std::atomic<std::size_t> follows_{kNoServer};
  std::atomic<bool> is_replica_{false};
  std::atomic<bool> refuses_stale_reads_{false};
  std::atomic<bool> in_zone_{false};
  std::atomic<ReplicaHealth> health_{ReplicaHealth::InSync};
  std::atomic<int> databases_{0};
  std::atomic<SelectAnswer> select_{SelectAnswer::Unknown};
  mutable std::mutex identity_mutex_;
  ServerIdentity identity_;
  std::string replication_state_;  ///< guarded by identity_mutex_
  std::string master_;             ///< guarded by identity_mutex_
  // I/O thread
  bool probe_pending_ = false;
  Clock::time_point probe_sent_{};  ///< when the pending probe was sent
  bool info_refused_ = false;       ///< the server refused INFO: the role comes from ROLE
  bool awaiting_ = false;           ///< a replica's first INFO replication is not answered yet
  /// Its probe went unanswered past kProbeOverdue: the answer that ends the stall is taken
  /// for its role only, the next one for its health too.
  bool stalled_ = false;
};

}  // namespace redmux::detail

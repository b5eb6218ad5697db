// ServerProfile: what a connection knows about its server — the identity its handshake
// learned, whether the server is a replica (kept up to date by ROLE probes), how many
// databases it has — and the one ROLE probe that may be in flight to ask again.
//
// Ownership: the connection's machine holds it by shared_ptr; a probe in flight holds only a
// weak reference, so a reply that comes after the connection is gone changes nothing.
//
// Threads: is_replica(), databases() and identity() from any thread; the rest on the
// connection's I/O thread. The role hook runs there, when replica ↔ primary changed.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>

#include "conn/pending_command.hpp"
#include "redmux/server_info.hpp"

namespace redmux::detail {

class ServerProfile : public std::enable_shared_from_this<ServerProfile> {
 public:
  /// Runs on the I/O thread when a ROLE probe found the role changed (replica ↔ primary).
  void set_changed_hook(std::function<void()> hook) { changed_ = std::move(hook); }

  bool is_replica() const noexcept { return is_replica_.load(std::memory_order_acquire); }
  int databases() const noexcept { return databases_.load(std::memory_order_acquire); }
  ServerIdentity identity() const;

  /// A new connection's handshake said this. True when replica ↔ primary changed (the hook
  /// does not run: the caller decides, since a first connection changes nothing).
  bool adopt(const ServerIdentity& identity);
  /// What a ROLE reply said ("master", "slave" …); runs the hook when the role changed.
  void note(std::string_view role);

  /// The ROLE probe to send, or nullopt when one is in flight already (one at a time).
  std::optional<PendingCommand> begin_probe();
  /// A new connection: whatever probe was in flight is not waited for any more.
  void forget_probe() noexcept { probe_pending_ = false; }

 private:
  class Probe;

  std::function<void()> changed_;
  std::atomic<bool> is_replica_{false};
  std::atomic<int> databases_{0};
  mutable std::mutex identity_mutex_;
  ServerIdentity identity_;
  bool probe_pending_ = false;  ///< I/O thread
};

}  // namespace redmux::detail

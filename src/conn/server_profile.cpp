#include "conn/server_profile.hpp"

namespace redmux::detail {
namespace {

constexpr std::string_view kRole = "ROLE";

bool names_replica(std::string_view role) noexcept {
  return role == "replica" || role == "slave";
}

}  // namespace

/// The reply to a ROLE probe: ["master" | "slave" | "sentinel", …]. Its one reference is the
/// pipeline's.
class ServerProfile::Probe final : public CommandState {
 public:
  explicit Probe(std::weak_ptr<ServerProfile> server) : server_(std::move(server)) {}
  void deliver(NodeSpan reply) noexcept override {
    if (!claim()) return;
    if (auto server = server_.lock()) {
      server->probe_pending_ = false;
      if (!is_error_reply(reply) && reply.size() > 1) server->note(reply[1].value);
    }
    publish();
  }
  void fail(Error) noexcept override {
    if (!claim()) return;
    if (auto server = server_.lock()) server->probe_pending_ = false;
    publish();
  }

 private:
  std::weak_ptr<ServerProfile> server_;
};

ServerIdentity ServerProfile::identity() const {
  std::lock_guard lock(identity_mutex_);
  return identity_;
}

bool ServerProfile::adopt(const ServerIdentity& identity) {
  std::lock_guard lock(identity_mutex_);
  identity_ = identity;
  const bool replica = names_replica(identity_.role);
  databases_.store(identity_.databases, std::memory_order_release);
  return is_replica_.exchange(replica, std::memory_order_acq_rel) != replica;
}

void ServerProfile::note(std::string_view role) {
  const bool replica = names_replica(role);
  const bool was_replica = is_replica_.exchange(replica, std::memory_order_acq_rel);
  {
    std::lock_guard lock(identity_mutex_);
    identity_.role = replica ? "replica" : std::string(role);
  }
  if (was_replica != replica && changed_) changed_();
}

std::optional<PendingCommand> ServerProfile::begin_probe() {
  if (probe_pending_) return std::nullopt;
  probe_pending_ = true;
  return own_command(kRole, PendingKind::Internal, new Probe(weak_from_this()));
}

}  // namespace redmux::detail

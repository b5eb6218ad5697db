// RedirectState: stands between a cluster node's pipeline and the caller's state. It keeps
// the command's bytes and performs what its RedirectPolicy (topology/redirect_policy.hpp)
// says of each error reply: follows MOVED and ASK by resending them to the node named, waits
// out CLUSTERDOWN and TRYAGAIN and resends within the command's own deadline
// (retryClusterDown), and gives every other reply, and every failure, to the caller.
//
// Completion rule (DESIGN, ordering and delivery): it claims itself when it completes its
// target — by a final reply, a timeout, a broken connection, a refusal — so that the queue
// and the timeout scan, which look at the state of each entry, drop it: a command whose
// future has completed is never written afterwards, on any connection, after any hop. While
// it waits between two sends it is in no queue; the router holds it (park()).
//
// Its slot of maxQueuedCommands is its own (when `holds_slot`): given back when it completes,
// before the caller's future does, so the slot is held across every hop and wait.
//
// Threads: one entry of it is in one queue or pipeline at a time, or parked; each step runs
// on the thread that owns it then. relocated() runs under the router's relocate_mutex_.
#pragma once

#include <array>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "conn/pending_command.hpp"
#include "redmux/arg.hpp"
#include "redmux/future.hpp"
#include "redmux/reply.hpp"
#include "topology/redirect_policy.hpp"

namespace redmux::detail {

class ClusterRouter;
class Connection;

/// The command redmux writes before one that follows an ASK redirect. Its PendingCommand's
/// name is this very string: a queue that moves to another node leaves it behind.
inline constexpr std::string_view kAsking = "ASKING";

class RedirectState final : public CommandState {
 public:
  /// Commands encoded in up to this many bytes are kept in the state itself (no allocation).
  static constexpr std::size_t kInlineBytes = 128;

  /// `args`: the command, encoded here once. `prototype`: name, deadline, timeout, kind of
  /// its entries.
  /// `holds_slot`: it gives back one slot of maxQueuedCommands when it completes. `tallied`:
  /// its entries stand for the command in status() (false for the parts of a split command
  /// but the first). Takes a reference to `target`.
  RedirectState(std::shared_ptr<ClusterRouter> router, CommandState* target,
                std::span<const Arg> args, PendingCommand prototype, int db, std::uint16_t slot,
                bool holds_slot, bool tallied);

  /// The command was sent by other means (a batch) to `connection`.
  void sent_by_caller(Connection* connection) noexcept;
  /// Its queued entry moved to `connection` (the slot changed owner).
  void relocated(Connection* connection) noexcept;

  void deliver(NodeSpan reply) noexcept override;
  void fail(Error error) noexcept override;

  /// Sends the command (first time, or again) to `connection`, behind ASKING when `ask`.
  void resend(Connection* connection, bool ask) noexcept;

  /// The entry for a send of it: `follow_map` for the first one (routed by the map).
  PendingCommand entry(bool follow_map) noexcept;

 protected:
  ~RedirectState() override;

 private:
  /// Completes the caller with `reply` (claims, gives the slot back first).
  void finish(NodeSpan reply) noexcept;

  std::shared_ptr<ClusterRouter> router_;
  CommandState* target_;
  Connection* sent_to_ = nullptr;
  std::string_view bytes() const noexcept {
    return bytes_size_ <= kInlineBytes ? std::string_view(inline_bytes_.data(), bytes_size_)
                                       : std::string_view(heap_bytes_.get(), bytes_size_);
  }

  std::unique_ptr<char[]> heap_bytes_;  ///< the bytes when there are more than kInlineBytes
  std::size_t bytes_size_;
  std::array<char, kInlineBytes> inline_bytes_;
  /// What each entry of it starts from: the caller's name, deadline and timeout, and its
  /// database, slot and tally (entry()).
  PendingCommand prototype_;
  RedirectPolicy policy_;  ///< what each error reply leads to: hops, waits, their limits
  bool holds_slot_;
  bool last_ask_ = false;
};

}  // namespace redmux::detail

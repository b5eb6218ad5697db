// ShardRouter: what pub/sub asks of its multiplexer about shard channels (SSUBSCRIBE) in a
// Redis Cluster — which node serves a channel's slot, and the hub that carries that node's
// shard channels. The multiplexer implements it (MuxCore, mux/core.hpp), so pub/sub needs
// nothing of the multiplexer's insides.
//
// Threads: every member is safe from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "redmux/config.hpp"
#include "redmux/result.hpp"

namespace redmux::detail {

class SubscriptionHub;

class ShardRouter {
 public:
  /// True in a Redis Cluster: shard channels then go to the node serving their slot.
  virtual bool routes_shard_channels() const noexcept = 0;
  /// The node serving `slot`. Errors: no node is known for it yet.
  virtual Result<Endpoint> shard_node(std::uint16_t slot) = 0;
  /// The hub whose connection carries the shard channels `node` serves (made on first use).
  virtual std::shared_ptr<SubscriptionHub> shard_hub(const Endpoint& node) = 0;
  /// Every shard hub made so far (for status).
  virtual std::vector<std::shared_ptr<SubscriptionHub>> shard_hubs() const = 0;

 protected:
  ~ShardRouter() = default;
};

}  // namespace redmux::detail

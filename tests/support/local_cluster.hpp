// LocalCluster: a real 6-node Redis Cluster (3 primaries × 1 replica) from Debian's
// redis-server, created with redis-cli --cluster create on free loopback ports, for the
// integration tests (cluster_test.cpp, cache_cluster_test.cpp). The constructor returns once
// every node says cluster_state:ok and knows which node replicates which; it throws
// std::runtime_error otherwise.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "support/ports.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace redmux::test {

using namespace std::chrono_literals;

class LocalCluster {
 public:
  explicit LocalCluster(int node_timeout_ms = 3000) {
    for (int i = 0; i < 6; ++i) {
      ServerOptions options;
      // The cluster bus port is given explicitly: port + 10000 may not be free (or valid).
      options.args = {"--cluster-enabled",      "yes",
                      "--cluster-node-timeout", std::to_string(node_timeout_ms),
                      "--cluster-port",         std::to_string(free_loopback_port())};
      nodes_.push_back(std::make_unique<RedisServer>(options));
    }
    std::vector<std::string> create = {"redis-cli", "--cluster", "create"};
    for (const auto& node : nodes_) create.push_back(node->address());
    create.insert(create.end(), {"--cluster-replicas", "1", "--cluster-yes"});
    ProcessResult created = run_process(create, 60s);
    if (!created.ok()) {
      throw std::runtime_error("redis-cli --cluster create: " + created.describe() + "\n" +
                               created.out + created.err);
    }
    const bool settled = wait_until(
        [&] {
          for (const auto& node : nodes_) {
            const std::string info = node->cli({"CLUSTER", "INFO"});
            if (info.find("cluster_state:ok") == std::string::npos ||
                info.find("cluster_known_nodes:6") == std::string::npos) {
              return false;
            }
            // Every node knows which node replicates which.
            const std::string nodes = node->cli({"CLUSTER", "NODES"});
            std::size_t replicas = 0;
            for (std::size_t at = nodes.find("slave"); at != std::string::npos;
                 at = nodes.find("slave", at + 1)) {
              ++replicas;
            }
            if (replicas != 3) return false;
          }
          return true;
        },
        60s);
    if (!settled) throw std::runtime_error("the cluster did not settle within 60 s");
  }

  RedisServer& node(std::size_t i) { return *nodes_[i]; }
  /// Every node that runs says cluster_state:ok and knows which node replicates which.
  bool settled() {
    for (const auto& node : nodes_) {
      if (!node->running()) return false;
      const ProcessResult info = node->try_cli({"CLUSTER", "INFO"}, 5s);
      if (!info.ok() || info.out.find("cluster_state:ok") == std::string::npos) return false;
      const ProcessResult nodes = node->try_cli({"CLUSTER", "NODES"}, 5s);
      if (!nodes.ok() || nodes.out.find("fail") != std::string::npos) return false;
    }
    return true;
  }
  std::size_t size() const { return nodes_.size(); }
  /// Every node, as a redmux configuration string's endpoint list.
  std::string seeds() const {
    std::string out;
    for (const auto& node : nodes_) out += (out.empty() ? "" : ",") + node->address();
    return out;
  }
  std::string id_of(const RedisServer& node) const { return node.cli({"CLUSTER", "MYID"}); }
  bool is_primary(const RedisServer& node) const { return node.info_field("role") == "master"; }
  /// The node (primary) that serves `key`'s slot.
  RedisServer& owner_of(std::string_view key) {
    const std::string slot = nodes_.front()->cli({"CLUSTER", "KEYSLOT", std::string(key)});
    const std::string slots = nodes_.front()->cli({"CLUSTER", "SLOTS"});
    // CLUSTER SLOTS as redis-cli prints it: start, end, ip, port, id, … per line.
    std::vector<std::string> lines;
    std::size_t at = 0;
    while (at <= slots.size()) {
      const std::size_t end = slots.find('\n', at);
      lines.push_back(slots.substr(at, end == std::string::npos ? std::string::npos : end - at));
      if (end == std::string::npos) break;
      at = end + 1;
    }
    const long long wanted = std::stoll(slot);
    for (std::size_t i = 0; i + 3 < lines.size(); ++i) {
      long long start = 0, end = 0;
      try {
        start = std::stoll(lines[i]);
        end = std::stoll(lines[i + 1]);
      } catch (const std::exception&) {
        continue;
      }
      if (start <= wanted && wanted <= end && lines[i + 2].find('.') != std::string::npos) {
        const int port = std::stoi(lines[i + 3]);
        for (auto& node : nodes_) {
          if (node->port() == port) return *node;
        }
      }
    }
    throw std::runtime_error("no owner found for slot " + slot);
  }
  std::vector<RedisServer*> primaries() {
    std::vector<RedisServer*> out;
    for (auto& node : nodes_) {
      if (is_primary(*node)) out.push_back(node.get());
    }
    return out;
  }
  /// A primary other than `node`.
  RedisServer& another_primary(const RedisServer& node) {
    for (RedisServer* primary : primaries()) {
      if (primary != &node) return *primary;
    }
    throw std::runtime_error("the cluster has no other primary");
  }
  /// Moves `slot` from `source` to `target` as redis-cli --cluster reshard does: IMPORTING
  /// and MIGRATING, the keys with MIGRATE, then SETSLOT NODE on every primary.
  void reshard(const std::string& slot, RedisServer& source, RedisServer& target) {
    const std::string source_id = id_of(source);
    const std::string target_id = id_of(target);
    target.cli({"CLUSTER", "SETSLOT", slot, "IMPORTING", source_id});
    source.cli({"CLUSTER", "SETSLOT", slot, "MIGRATING", target_id});
    for (;;) {
      const std::string keys = source.cli({"CLUSTER", "GETKEYSINSLOT", slot, "100"});
      if (keys.empty()) break;
      std::vector<std::string> migrate = {
          "MIGRATE", "127.0.0.1", std::to_string(target.port()), "", "0", "5000", "KEYS"};
      for (std::size_t at = 0; at < keys.size();) {
        const std::size_t end = keys.find('\n', at);
        migrate.push_back(keys.substr(at, end == std::string::npos ? std::string::npos : end - at));
        if (end == std::string::npos) break;
        at = end + 1;
      }
      source.cli(migrate);
    }
    target.cli({"CLUSTER", "SETSLOT", slot, "NODE", target_id});
    source.cli({"CLUSTER", "SETSLOT", slot, "NODE", target_id});
    for (RedisServer* primary : primaries()) {
      if (primary != &target && primary != &source) {
        primary->cli({"CLUSTER", "SETSLOT", slot, "NODE", target_id});
      }
    }
  }
  std::vector<RedisServer*> replicas() {
    std::vector<RedisServer*> out;
    for (auto& node : nodes_) {
      if (!is_primary(*node)) out.push_back(node.get());
    }
    return out;
  }

 private:
  std::vector<std::unique_ptr<RedisServer>> nodes_;
};

/// The fixture of a suite that shares one LocalCluster (creating one takes seconds): made
/// before the suite's first test and stopped after its last; each test starts with every
/// primary flushed. `Suite` is the fixture deriving from it, so each suite has its own
/// cluster; `kNodeTimeoutMs` is the cluster's node timeout.
template <class Suite, int kNodeTimeoutMs = 3000>
class ClusterSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_ = new LocalCluster(kNodeTimeoutMs); }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override {
    for (RedisServer* primary : cluster_->primaries()) primary->cli({"FLUSHALL"});
  }
  static inline LocalCluster* cluster_ = nullptr;
};

}  // namespace redmux::test

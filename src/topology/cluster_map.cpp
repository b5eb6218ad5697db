#include "topology/cluster_map.hpp"

#include <charconv>
#include <string>

#include "redmux/future.hpp"
#include "topology/slot.hpp"

namespace redmux::detail {
namespace {

Error shape_error(std::string_view command, std::string_view what) {
  return Error(errc::protocol_error,
               "unexpected " + std::string(command) + " reply: " + std::string(what));
}

// What both slot-map replies must be before their contents are read: there, not an error
// reply, an array. Returns no error when they are.
Error check_top_array(NodeSpan reply, std::string_view command) {
  if (reply.empty()) return shape_error(command, "empty");
  if (is_error_reply(reply)) return server_error_from(reply, command);
  if (reply[0].type != ReplyType::Array) return shape_error(command, "not an array");
  return Error();
}

bool to_number(std::string_view text, long long& out) noexcept {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

bool is_aggregate(const Node& node) noexcept {
  return node.type == ReplyType::Array || node.type == ReplyType::Map ||
         node.type == ReplyType::Set;
}

/// The children of the aggregate at `index`, as indexes into `reply`.
std::vector<std::size_t> children(NodeSpan reply, std::size_t index) {
  std::vector<std::size_t> out;
  const std::size_t end = subtree_end(reply, index);
  for (std::size_t i = index + 1; i < end; i = subtree_end(reply, i)) out.push_back(i);
  return out;
}

/// Key/value pairs of a map (RESP3) or a flat array of key, value … (RESP2).
std::vector<std::pair<std::size_t, std::size_t>> pairs(NodeSpan reply, std::size_t index) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  const std::vector<std::size_t> items = children(reply, index);
  for (std::size_t i = 0; i + 1 < items.size(); i += 2) out.emplace_back(items[i], items[i + 1]);
  return out;
}

bool valid_port(long long port) noexcept {
  return port > 0 && port <= 65535;
}

bool valid_slot(long long slot) noexcept {
  return slot >= 0 && slot < kSlotCount;
}

Endpoint make_endpoint(std::string_view host, long long port, std::string_view seed_host) {
  Endpoint endpoint;
  endpoint.host = std::string(host.empty() || host == "?" ? seed_host : host);
  endpoint.port = static_cast<std::uint16_t>(port);
  return endpoint;
}

}  // namespace

Result<std::vector<ClusterShard>> parse_cluster_shards(NodeSpan reply, std::string_view seed_host,
                                                       bool tls) {
  constexpr std::string_view kName = "CLUSTER SHARDS";
  if (Error error = check_top_array(reply, kName)) return error;
  std::vector<ClusterShard> shards;
  for (std::size_t shard_at : children(reply, 0)) {
    if (!is_aggregate(reply[shard_at])) return shape_error(kName, "a shard is not a map");
    ClusterShard shard;
    bool has_primary = false;
    for (auto [key, value] : pairs(reply, shard_at)) {
      if (reply[key].value == "slots") {
        if (!is_aggregate(reply[value])) return shape_error(kName, "slots is not an array");
        const std::vector<std::size_t> bounds = children(reply, value);
        if (bounds.size() % 2 != 0) return shape_error(kName, "odd number of slot bounds");
        for (std::size_t i = 0; i < bounds.size(); i += 2) {
          long long start = -1, end = -1;
          if (!to_number(reply[bounds[i]].value, start) ||
              !to_number(reply[bounds[i + 1]].value, end) || !valid_slot(start) ||
              !valid_slot(end) || start > end) {
            return shape_error(kName, "bad slot range");
          }
          shard.ranges.emplace_back(static_cast<std::uint16_t>(start),
                                    static_cast<std::uint16_t>(end));
        }
      } else if (reply[key].value == "nodes") {
        if (!is_aggregate(reply[value])) return shape_error(kName, "nodes is not an array");
        for (std::size_t node_at : children(reply, value)) {
          std::string_view ip, role, health = "online";
          long long port = 0, tls_port = 0;
          for (auto [field, data] : pairs(reply, node_at)) {
            const std::string_view name = reply[field].value;
            if (name == "ip") ip = reply[data].value;
            if (name == "port") to_number(reply[data].value, port);
            if (name == "tls-port") to_number(reply[data].value, tls_port);
            if (name == "role") role = reply[data].value;
            if (name == "health") health = reply[data].value;
          }
          // A node lists "port" for plain text, "tls-port" for TLS, or both: a TLS client
          // dials the TLS one (a TLS-only node has no "port").
          if (tls && valid_port(tls_port)) port = tls_port;
          if (!valid_port(port)) continue;  // a TLS-only node, to a plain-text client
          // Redis 7.0 answers "fail"; its documentation says "failed".
          const bool failed = health == "fail" || health == "failed";
          if (role == "master") {
            shard.primary = make_endpoint(ip, port, seed_host);
            shard.primary_failed = failed;
            has_primary = true;
          } else if (!failed) {
            // "loading" too: 7.0 reports it for a replica whose offset it has not heard of
            // yet; a replica really loading is not used anyway (its connection waits).
            shard.replicas.push_back(make_endpoint(ip, port, seed_host));
          }
        }
      }
    }
    if (shard.ranges.empty()) continue;
    if (!has_primary) return shape_error(kName, "a shard with slots has no primary");
    shards.push_back(std::move(shard));
  }
  return shards;
}

Result<std::vector<ClusterShard>> parse_cluster_slots(NodeSpan reply, std::string_view seed_host) {
  constexpr std::string_view kName = "CLUSTER SLOTS";
  if (Error error = check_top_array(reply, kName)) return error;
  std::vector<ClusterShard> shards;
  for (std::size_t range_at : children(reply, 0)) {
    const std::vector<std::size_t> items = children(reply, range_at);
    if (items.size() < 3) return shape_error(kName, "a range has no primary");
    long long start = -1, end = -1;
    if (!to_number(reply[items[0]].value, start) || !to_number(reply[items[1]].value, end) ||
        !valid_slot(start) || !valid_slot(end) || start > end) {
      return shape_error(kName, "bad slot range");
    }
    ClusterShard shard;
    shard.ranges.emplace_back(static_cast<std::uint16_t>(start), static_cast<std::uint16_t>(end));
    for (std::size_t n = 2; n < items.size(); ++n) {
      const std::vector<std::size_t> node = children(reply, items[n]);
      long long port = 0;
      if (node.size() < 2 || !to_number(reply[node[1]].value, port) || !valid_port(port)) {
        return shape_error(kName, "a node without a port");
      }
      Endpoint endpoint = make_endpoint(reply[node[0]].value, port, seed_host);
      if (n == 2) {
        shard.primary = std::move(endpoint);
      } else {
        shard.replicas.push_back(std::move(endpoint));
      }
    }
    // Ranges of one primary arrive as separate entries: merge them into its shard.
    bool merged = false;
    for (ClusterShard& known : shards) {
      if (known.primary == shard.primary) {
        known.ranges.push_back(shard.ranges.front());
        merged = true;
        break;
      }
    }
    if (!merged) shards.push_back(std::move(shard));
  }
  return shards;
}

std::optional<ClusterRedirect> parse_redirect(std::string_view text,
                                              std::string_view current_host) {
  ClusterRedirect redirect;
  if (text.starts_with("MOVED ")) {
    text.remove_prefix(6);
  } else if (text.starts_with("ASK ")) {
    redirect.ask = true;
    text.remove_prefix(4);
  } else {
    return std::nullopt;
  }
  const std::size_t space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  long long slot = -1;
  if (!to_number(text.substr(0, space), slot) || !valid_slot(slot)) return std::nullopt;
  std::string_view address = text.substr(space + 1);
  const std::size_t end = address.find_first_of(" \r\n");
  if (end != std::string_view::npos) address = address.substr(0, end);
  const std::size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  long long port = 0;
  if (!to_number(address.substr(colon + 1), port) || !valid_port(port)) return std::nullopt;
  std::string_view host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);  // [::1]
  }
  redirect.slot = static_cast<std::uint16_t>(slot);
  redirect.endpoint = make_endpoint(host, port, current_host);
  return redirect;
}

}  // namespace redmux::detail

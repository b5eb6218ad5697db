#include "topology/sentinel_reply.hpp"

#include <algorithm>
#include <charconv>

namespace redmux::detail {
namespace {

bool is_text(const Node& node) noexcept {
  return node.type == ReplyType::BulkString || node.type == ReplyType::SimpleString ||
         node.type == ReplyType::VerbatimString;
}

std::optional<std::uint16_t> parse_port(std::string_view text) noexcept {
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value == 0 || value > 65535) {
    return std::nullopt;
  }
  return static_cast<std::uint16_t>(value);
}

std::optional<Endpoint> endpoint_of(std::string_view host, std::string_view port) {
  const std::optional<std::uint16_t> number = parse_port(port);
  if (host.empty() || !number) return std::nullopt;
  Endpoint endpoint;
  endpoint.host = std::string(host);
  endpoint.port = *number;
  return endpoint;
}

Error refused(std::string_view command, std::string_view service, NodeSpan reply) {
  return Error(errc::server_error, std::string(command) + " " + std::string(service) +
                                       " was refused: " + std::string(reply[0].value));
}

Error malformed(std::string_view command, NodeSpan reply) {
  return Error(errc::unexpected_reply,
               std::string(command) + " answered a " +
                   std::string(reply.empty() ? "nothing" : type_name(reply[0].type)) +
                   " redmux does not understand");
}

std::vector<std::string_view> words(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = std::min(text.find(' ', pos), text.size());
    if (end > pos) out.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

bool has_flag(std::string_view flags, std::string_view flag) {
  for (std::string_view each : words(flags)) {
    std::size_t pos = 0;
    while (pos <= each.size()) {
      const std::size_t end = std::min(each.find(',', pos), each.size());
      if (each.substr(pos, end - pos) == flag) return true;
      pos = end + 1;
    }
  }
  return false;
}

}  // namespace

std::string_view primary_address_subcommand(const ServerIdentity& sentinel) noexcept {
  int major = 0;
  const std::string& version = sentinel.version;
  std::from_chars(version.data(), version.data() + version.size(), major);
  return sentinel.product == "valkey" && major >= 8 ? "GET-PRIMARY-ADDR-BY-NAME"
                                                    : "GET-MASTER-ADDR-BY-NAME";
}

Result<Endpoint> parse_master_address(NodeSpan reply, std::string_view service) {
  static constexpr std::string_view kCommand = "SENTINEL GET-MASTER-ADDR-BY-NAME";
  if (reply.empty()) return malformed(kCommand, reply);
  if (is_error_reply(reply)) return refused(kCommand, service, reply);
  if (reply[0].type == ReplyType::Null) {
    return Error(errc::invalid_config, "it does not know a service named \"" +
                                           std::string(service) + "\" (" + std::string(kCommand) +
                                           " answered nil)");
  }
  if (reply[0].type != ReplyType::Array || reply[0].size != 2 || reply.size() != 3 ||
      !is_text(reply[1]) || !is_text(reply[2])) {
    return malformed(kCommand, reply);
  }
  std::optional<Endpoint> primary = endpoint_of(reply[1].value, reply[2].value);
  if (!primary) return malformed(kCommand, reply);
  return *primary;
}

Result<std::vector<Endpoint>> parse_replicas(NodeSpan reply, std::string_view service) {
  static constexpr std::string_view kCommand = "SENTINEL REPLICAS";
  if (reply.empty()) return malformed(kCommand, reply);
  if (is_error_reply(reply)) return refused(kCommand, service, reply);
  if (reply[0].type != ReplyType::Array && reply[0].type != ReplyType::Set) {
    return malformed(kCommand, reply);
  }
  std::vector<Endpoint> replicas;
  std::size_t entry = 1;
  while (entry < reply.size()) {
    const std::size_t entry_end = subtree_end(reply, entry);
    if (reply[entry].type == ReplyType::Map || reply[entry].type == ReplyType::Array) {
      std::string_view ip, port, flags;
      std::size_t key = entry + 1;
      while (key < entry_end) {
        const std::size_t value = subtree_end(reply, key);
        if (value >= entry_end) break;
        if (is_text(reply[key]) && is_text(reply[value])) {
          if (reply[key].value == "ip") ip = reply[value].value;
          if (reply[key].value == "port") port = reply[value].value;
          if (reply[key].value == "flags") flags = reply[value].value;
        }
        key = subtree_end(reply, value);
      }
      const bool down =
          has_flag(flags, "s_down") || has_flag(flags, "o_down") || has_flag(flags, "disconnected");
      std::optional<Endpoint> replica = endpoint_of(ip, port);
      if (replica && !down &&
          std::find(replicas.begin(), replicas.end(), *replica) == replicas.end()) {
        replicas.push_back(std::move(*replica));
      }
    }
    entry = entry_end;
  }
  return replicas;
}

std::optional<SentinelEvent> parse_sentinel_event(std::string_view channel,
                                                  std::string_view payload) {
  const std::vector<std::string_view> w = words(payload);
  SentinelEvent event;
  if (channel == "+switch-master") {
    if (w.size() != 5) return std::nullopt;
    std::optional<Endpoint> from = endpoint_of(w[1], w[2]);
    std::optional<Endpoint> to = endpoint_of(w[3], w[4]);
    if (!from || !to) return std::nullopt;
    event.kind = SentinelEvent::Kind::SwitchMaster;
    event.service = std::string(w[0]);
    event.from = std::move(*from);
    event.to = std::move(*to);
    return event;
  }
  if (channel == "+selected-slave" || channel == "+convert-to-slave") {
    // Instance details of a replica: type, name, ip, port, then "@" and its primary's.
    if (w.size() != 8 || w[0] != "slave" || w[4] != "@") return std::nullopt;
    std::optional<Endpoint> replica = endpoint_of(w[2], w[3]);
    std::optional<Endpoint> primary = endpoint_of(w[6], w[7]);
    if (!replica || !primary) return std::nullopt;
    event.service = std::string(w[5]);
    if (channel == "+selected-slave") {  // the replica is about to replace its primary
      event.kind = SentinelEvent::Kind::SelectedReplica;
      event.from = std::move(*primary);
      event.to = std::move(*replica);
    } else {  // the old primary becomes a replica of the current one
      event.kind = SentinelEvent::Kind::ConvertedToReplica;
      event.from = std::move(*replica);
      event.to = std::move(*primary);
    }
    return event;
  }
  if (channel == "-failover-abort-slave-timeout") {
    if (w.size() != 4 || w[0] != "master") return std::nullopt;
    std::optional<Endpoint> primary = endpoint_of(w[2], w[3]);
    if (!primary) return std::nullopt;
    event.kind = SentinelEvent::Kind::FailoverAborted;
    event.service = std::string(w[1]);
    event.from = std::move(*primary);
    return event;
  }
  return std::nullopt;
}

std::vector<Retarget> plan_retargets(std::span<const Endpoint> targets, const Endpoint& primary,
                                     const std::vector<Endpoint>* replicas) {
  std::vector<Endpoint> next(targets.begin(), targets.end());
  if (next.empty()) return {};
  if (next[0] != primary) {
    const auto promoted = std::find(next.begin() + 1, next.end(), primary);
    if (promoted != next.end()) *promoted = next[0];  // the old primary returns as a replica
    next[0] = primary;
  }
  if (replicas) {
    std::vector<Endpoint> missing;
    for (const Endpoint& replica : *replicas) {
      if (replica != primary && std::find(next.begin(), next.end(), replica) == next.end()) {
        missing.push_back(replica);
      }
    }
    for (std::size_t g = 1; g < next.size() && !missing.empty(); ++g) {
      const bool listed = std::find(replicas->begin(), replicas->end(), next[g]) != replicas->end();
      if (!listed) {
        next[g] = std::move(missing.front());
        missing.erase(missing.begin());
      }
    }
  }
  std::vector<Retarget> moves;
  for (std::size_t g = 0; g < next.size(); ++g) {
    if (next[g] != targets[g]) moves.push_back({g, next[g]});
  }
  return moves;
}

}  // namespace redmux::detail

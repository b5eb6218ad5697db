#include "conn/replication.hpp"

#include <charconv>

namespace redmux::detail {
namespace {

long long number_or(std::string_view text, long long fallback) {
  long long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() ? value : fallback;
}

}  // namespace

std::optional<ReplicationInfo> parse_replication_info(std::string_view text) {
  ReplicationInfo info;
  bool has_role = false;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::size_t colon = line.find(':');
    if (line.empty() || line.front() == '#' || colon == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, colon);
    const std::string_view value = line.substr(colon + 1);
    if (key == "role") {
      info.role = std::string(value);
      has_role = true;
    } else if (key == "master_link_status") {
      info.master_link_status = std::string(value);
    } else if (key == "master_sync_in_progress") {
      info.sync_in_progress = value != "0";
    } else if (key == "master_last_io_seconds_ago") {
      info.last_io_seconds = number_or(value, -1);
    } else if (key == "master_link_down_since_seconds") {
      info.link_down_seconds = number_or(value, -1);
    } else if (key == "master_host") {
      info.master_host = std::string(value);
    } else if (key == "master_port") {
      info.master_port = static_cast<int>(number_or(value, 0));
    }
  }
  if (!has_role) return std::nullopt;
  return info;
}

ReplicaVerdict judge_replica(const ReplicationInfo& info, std::chrono::seconds max_lag) {
  ReplicaVerdict verdict;
  const long long limit = max_lag.count();
  if (info.sync_in_progress) {
    verdict.health = ReplicaHealth::Unfit;
    verdict.reason =
        "master_sync_in_progress:1 (a full resynchronisation: until it has loaded the "
        "primary's data it answers from its old data set)";
    return verdict;
  }
  if (info.master_link_status != "up") {
    verdict.reason =
        "master_link_status:" +
        (info.master_link_status.empty() ? std::string("unknown") : info.master_link_status);
    if (info.link_down_seconds < 0) {
      // Not in sync since it started or was pointed at this primary: its data is whatever it
      // had before (an old primary that came back, a replica that restarted).
      verdict.health = ReplicaHealth::Unfit;
      verdict.reason += " (not in sync since it started or changed primary)";
    } else if (limit > 0 && info.link_down_seconds > limit) {
      verdict.health = ReplicaHealth::Unfit;
      verdict.reason += " for " + std::to_string(info.link_down_seconds) +
                        " s, more than replicaMaxLag=" + std::to_string(limit) + " s";
    } else {
      verdict.health = ReplicaHealth::PrimaryLost;
      verdict.reason += " for " + std::to_string(info.link_down_seconds) + " s";
    }
    return verdict;
  }
  if (limit > 0 && info.last_io_seconds > limit) {
    verdict.health = ReplicaHealth::Unfit;
    verdict.reason = "master_last_io_seconds_ago:" + std::to_string(info.last_io_seconds) +
                     " is more than replicaMaxLag=" + std::to_string(limit) + " s";
  }
  return verdict;
}

}  // namespace redmux::detail

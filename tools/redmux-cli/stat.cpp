#include "stat.hpp"

#include <charconv>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace redmux::cli {
namespace {

long long number_after(std::string_view text, std::string_view key) {
  long long value = 0;
  const char* begin = text.data() + key.size();
  std::from_chars(begin, text.data() + text.size(), value);
  return value;
}

/// At most 9 characters up to 10,000 s, so the columns stay in line: fewer decimals as the
/// value grows (0.061ms, 12.35ms, 182.3ms, 3348ms).
std::string milliseconds(std::chrono::nanoseconds d) {
  const double ms = static_cast<double>(d.count()) / 1e6;
  const char* format = ms < 10 ? "%.3fms" : ms < 100 ? "%.2fms" : ms < 1000 ? "%.1fms" : "%.0fms";
  char out[32];
  std::snprintf(out, sizeof out, format, ms);
  return out;
}

}  // namespace

void parse_info(std::string_view info, StatSample& sample) {
  sample.keys = 0;
  while (!info.empty()) {
    const std::size_t end = info.find('\n');
    std::string_view line = info.substr(0, end);
    info = end == std::string_view::npos ? std::string_view() : info.substr(end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.starts_with("used_memory_human:")) {
      sample.memory = std::string(line.substr(18));
    } else if (line.starts_with("connected_clients:")) {
      sample.clients = number_after(line, "connected_clients:");
    } else if (line.starts_with("total_commands_processed:")) {
      sample.requests = number_after(line, "total_commands_processed:");
    } else if (line.starts_with("db") && line.find(":keys=") != std::string_view::npos) {
      const std::size_t at = line.find(":keys=") + 6;  // db0:keys=3,expires=0,avg_ttl=0
      sample.keys += number_after(line.substr(at), "");
    }
  }
}

std::string stat_header() {
  return "------- data ------ ------------ load ------------ ------- redmux (this client) "
         "-------\n"
         "keys       mem      clients requests        ops/s  p50       p99       in-flight "
         "cmd/write";
}

std::string stat_line(const StatSample& s) {
  std::string requests = std::to_string(s.requests);
  if (s.new_requests >= 0) requests += " (+" + std::to_string(s.new_requests) + ")";
  char rate[32] = "-";
  if (s.new_requests >= 0) std::snprintf(rate, sizeof rate, "%.0f", s.ops_per_second);
  char out[256];
  std::snprintf(out, sizeof out, "%-10lld %-8s %-7lld %-15s %-6s %-9s %-9s %-9zu %.2f", s.keys,
                s.memory.empty() ? "-" : s.memory.c_str(), s.clients, requests.c_str(), rate,
                s.commands ? milliseconds(s.p50).c_str() : "-",
                s.commands ? milliseconds(s.p99).c_str() : "-", s.in_flight, s.commands_per_write);
  std::string line = out;
  if (s.reconnected) line += "  (reconnected)";
  return line;
}

std::string stat_json(const StatSample& s) {
  nlohmann::json out = {{"keys", s.keys},
                        {"mem", s.memory},
                        {"clients", s.clients},
                        {"requests", s.requests},
                        {"ops_per_sec", s.ops_per_second},
                        {"commands", s.commands},
                        {"p50_ms", static_cast<double>(s.p50.count()) / 1e6},
                        {"p99_ms", static_cast<double>(s.p99.count()) / 1e6},
                        {"in_flight", s.in_flight},
                        {"commands_per_write", s.commands_per_write}};
  if (s.new_requests >= 0) {
    out["new_requests"] = s.new_requests;
  } else {
    out["ops_per_sec"] = nullptr;  // the first line, or the server restarted: no rate
  }
  if (s.reconnected) out["reconnected"] = true;
  return out.dump();
}

}  // namespace redmux::cli

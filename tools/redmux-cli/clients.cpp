#include "clients.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

namespace redmux::cli {
namespace {

std::string pad(std::string text, std::size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

bool is_monitor(const ClientInfo& client) {
  // CLIENT LIST marks a MONITOR connection with flag O; its last command says so too.
  return client.flags.find('O') != std::string::npos || client.cmd == "monitor";
}

}  // namespace

std::vector<ClientGroup> group_clients(const std::vector<ClientInfo>& clients) {
  std::map<std::string, ClientGroup> by_name;
  std::map<std::string, std::set<char>> flags;
  for (const ClientInfo& client : clients) {
    const std::string name = client.name.empty() ? "(unnamed)" : client.name;
    ClientGroup& group = by_name[name];
    group.name = name;
    ++group.connections;
    group.omem += client.omem;
    group.tot_mem += client.tot_mem;
    for (const char flag : client.flags) flags[name].insert(flag);
  }
  std::vector<ClientGroup> groups;
  for (auto& [name, group] : by_name) {
    group.flags.assign(flags[name].begin(), flags[name].end());
    groups.push_back(std::move(group));
  }
  std::stable_sort(groups.begin(), groups.end(), [](const ClientGroup& a, const ClientGroup& b) {
    return a.connections > b.connections;
  });
  return groups;
}

std::vector<std::string> client_warnings(const std::vector<ClientInfo>& clients,
                                         long long omem_warn) {
  std::vector<std::string> lines;
  for (const ClientInfo& client : clients) {
    const bool big = client.omem > omem_warn;
    const bool monitor = is_monitor(client);
    if (!big && !monitor) continue;
    std::string out = "warning: client id=" + std::to_string(client.id) + " addr=" + client.addr +
                      " name=" + (client.name.empty() ? "(unnamed)" : client.name) +
                      " cmd=" + client.cmd + " omem=" + std::to_string(client.omem) + " (" +
                      human_bytes(client.omem) + ")";
    if (big) {
      out += ": its unread output is held in the server's memory (above " + human_bytes(omem_warn) +
             ")";
    }
    if (monitor) {
      out += big ? "; " : ": ";
      out +=
          "a MONITOR client: every command is copied to it, and if it stops reading the "
          "server buffers the output without limit (client-output-buffer-limit normal 0 0 0); "
          "end it with CLIENT KILL ID " +
          std::to_string(client.id);
    }
    lines.push_back(std::move(out));
  }
  return lines;
}

std::string format_clients(const std::vector<ClientInfo>& clients, long long omem_warn) {
  const std::vector<ClientGroup> groups = group_clients(clients);
  std::size_t name_width = 4;
  for (const ClientGroup& group : groups) name_width = std::max(name_width, group.name.size());
  name_width += 2;
  std::string out =
      pad("name", name_width) + pad("clients", 9) + pad("flags", 8) + pad("omem", 12) + "tot-mem\n";
  for (const ClientGroup& group : groups) {
    out += pad(group.name, name_width) + pad(std::to_string(group.connections), 9) +
           pad(group.flags, 8) + pad(human_bytes(group.omem), 12) + human_bytes(group.tot_mem) +
           "\n";
  }
  out += "total: " + std::to_string(clients.size()) + " client" + (clients.size() == 1 ? "" : "s") +
         "\n";
  for (const std::string& line : client_warnings(clients, omem_warn)) out += line + "\n";
  return out;
}

std::string human_bytes(long long bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", value, kUnits[unit]);
  return buf;
}

}  // namespace redmux::cli

// --clients: CLIENT LIST summarised by client name, so "how many connections does
// bookstore-api hold" is one line, with warnings for clients whose unread output piles up in
// the server (a stalled MONITOR can hold 100 MB there). Pure functions: safe from any thread.
#pragma once

#include <string>
#include <vector>

#include "redmux/types.hpp"

namespace redmux::cli {

/// One client name's connections.
struct ClientGroup {
  std::string name;  ///< "(unnamed)" for clients without a name
  long long connections = 0;
  std::string flags;  ///< the distinct flag letters of its connections, sorted ("NP")
  long long omem = 0;
  long long tot_mem = 0;
};

/// Groups by name, largest group first (then by name).
std::vector<ClientGroup> group_clients(const std::vector<ClientInfo>& clients);

/// One "warning: …" line (without its newline) per client whose omem exceeds `omem_warn`
/// bytes or that is a MONITOR (flag O, or last command "monitor").
std::vector<std::string> client_warnings(const std::vector<ClientInfo>& clients,
                                         long long omem_warn);

/// The table and, after it, client_warnings(), a line each.
std::string format_clients(const std::vector<ClientInfo>& clients, long long omem_warn);

/// 1536 → "1.5 KiB", 512 → "512 B".
std::string human_bytes(long long bytes);

}  // namespace redmux::cli

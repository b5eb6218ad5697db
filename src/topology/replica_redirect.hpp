// Valkey's -REDIRECT (sans-IO): a standalone replica that a client told CLIENT CAPA redirect
// answers a write (or, without READONLY, a read) with "REDIRECT host:port", naming its
// primary, instead of running it. This file reads that reply and picks, among the servers a
// multiplexer connects to (a primary and replicas, or Sentinel's), the one it names.
//
// Sans-IO, no state: safe from any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

#include "redmux/config.hpp"

namespace redmux::detail {

/// The primary named by `error_text` ("REDIRECT 10.0.0.5:6379", "REDIRECT [::1]:6379"), or
/// nullopt when it is not a well-formed -REDIRECT (another error, no port, a bad port).
std::optional<Endpoint> parse_replica_redirect(std::string_view error_text);

/// Where a command answered -REDIRECT `primary` by the server at `servers[from]` goes: the
/// index of the server that is `primary` (same host text and port), or servers.size() when
/// there is none — or when it is `from` itself, which would answer the same again.
std::size_t redirect_target(std::span<const Endpoint> servers, const Endpoint& primary,
                            std::size_t from) noexcept;

}  // namespace redmux::detail

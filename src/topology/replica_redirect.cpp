#include "topology/replica_redirect.hpp"

#include <charconv>
#include <string>

namespace redmux::detail {

std::optional<Endpoint> parse_replica_redirect(std::string_view text) {
  constexpr std::string_view kRedirect = "REDIRECT ";
  if (!text.starts_with(kRedirect)) return std::nullopt;
  std::string_view address = text.substr(kRedirect.size());
  address = address.substr(0, address.find_first_of(" \r\n"));
  const std::size_t colon = address.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  const std::string_view digits = address.substr(colon + 1);
  unsigned port = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (ec != std::errc() || end != digits.data() + digits.size() || port == 0 || port > 65535) {
    return std::nullopt;
  }
  std::string_view host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  Endpoint endpoint;
  endpoint.host = std::string(host);
  endpoint.port = static_cast<std::uint16_t>(port);
  return endpoint;
}

std::size_t redirect_target(std::span<const Endpoint> servers, const Endpoint& primary,
                            std::size_t from) noexcept {
  for (std::size_t i = 0; i < servers.size(); ++i) {
    if (i == from || servers[i].is_unix()) continue;
    if (servers[i].port == primary.port && servers[i].host == primary.host) return i;
  }
  return servers.size();
}

}  // namespace redmux::detail

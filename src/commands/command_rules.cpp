// The rules of command_rules.hpp. The names they list (and cluster_rule_of()'s, evaluated
// when the table is built) are the only command-name compares outside the table's lookups.
#include "commands/command_rules.hpp"

#include <charconv>
#include <cmath>
#include <string_view>

#include "core/ascii.hpp"
#include "redmux/commands/sink.hpp"

namespace redmux::detail {
namespace {

using std::chrono::milliseconds;

enum class TimeUnit { Seconds, Milliseconds };

std::optional<milliseconds> parse_time(std::string_view text, TimeUnit unit) noexcept {
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || !(value >= 0)) {
    return milliseconds(0);  // malformed or negative: the server refuses it at once
  }
  if (value == 0) return std::nullopt;
  const double ms = unit == TimeUnit::Seconds ? value * 1000.0 : value;
  if (ms > static_cast<double>(kForeverBlockMs)) return std::nullopt;  // and no overflow
  return milliseconds(static_cast<long long>(std::ceil(ms)));
}

std::optional<milliseconds> time_at(std::span<const Arg> args, std::size_t index,
                                    TimeUnit unit) noexcept {
  if (index == 0 || index >= args.size()) return milliseconds(0);
  return parse_time(args[index].bytes(), unit);
}

}  // namespace

BlockingTimeArg blocking_time_arg(const CommandInfo& info, std::span<const Arg> args) noexcept {
  const std::string_view name = info.name;
  const std::size_t n = args.size();
  if (name == "BLPOP" || name == "BRPOP" || name == "BZPOPMIN" || name == "BZPOPMAX") {
    return {n >= 3 ? n - 1 : 0, true};  // key… timeout
  }
  if (name == "BLMOVE") return {n > 5 ? 5u : 0u, true};      // src dst from to timeout
  if (name == "BRPOPLPUSH") return {n > 3 ? 3u : 0u, true};  // src dst timeout
  if (name == "BLMPOP" || name == "BZMPOP") return {n > 1 ? 1u : 0u, true};
  if (name == "WAIT") return {n > 2 ? 2u : 0u, false};     // numreplicas timeout
  if (name == "WAITAOF") return {n > 3 ? 3u : 0u, false};  // numlocal numreplicas timeout
  if (name == "XREAD" || name == "XREADGROUP") return {stream_block_index(info, args), false};
  return {};
}

bool ends_busy_script(const CommandInfo& info) noexcept {
  return info.name == "SCRIPT KILL" || info.name == "FUNCTION KILL";
}

std::optional<milliseconds> blocking_time(const CommandInfo& info,
                                          std::span<const Arg> args) noexcept {
  const BlockingTimeArg at = blocking_time_arg(info, args);
  return time_at(args, at.index, at.seconds ? TimeUnit::Seconds : TimeUnit::Milliseconds);
}

MovableKeys movable_keys(const CommandInfo& info, std::span<const Arg> args) noexcept {
  const std::string_view name = info.name;
  const std::size_t n = args.size();
  MovableKeys keys;
  auto is = [&](std::size_t i, std::string_view word) {
    return ascii::equals_upper(args[i].bytes(), word);
  };
  // The destination after the last STORE-like option, skipping the options' own arguments.
  auto destination = [&](std::size_t from, bool sort) {
    for (std::size_t i = from; i < n; ++i) {
      if (sort && (is(i, "BY") || is(i, "GET"))) {
        i += 1;
      } else if (sort && is(i, "LIMIT")) {
        i += 2;
      } else if (!sort && is(i, "COUNT")) {
        i += 1;
      } else if ((is(i, "STORE") || (!sort && is(i, "STOREDIST"))) && i + 1 < n) {
        keys.begin = i + 1;
        keys.end = i + 2;
        i += 1;
      }
    }
  };
  if (name == "SORT") {
    destination(2, true);  // SORT key [BY p] [LIMIT o c] [GET p …] [ASC|DESC] [ALPHA] [STORE d]
  } else if (name == "GEORADIUS") {
    destination(6, false);  // GEORADIUS key lon lat radius unit [options]
  } else if (name == "GEORADIUSBYMEMBER") {
    destination(5, false);  // GEORADIUSBYMEMBER key member radius unit [options]
  } else if (name == "MIGRATE" && n > 3 && args[3].bytes().empty()) {
    // MIGRATE host port "" db timeout [COPY] [REPLACE] [AUTH pw] [AUTH2 u pw] KEYS key…
    keys.fixed_is_key = false;
    for (std::size_t i = 6; i < n; ++i) {
      if (is(i, "AUTH")) {
        i += 1;
      } else if (is(i, "AUTH2")) {
        i += 2;
      } else if (is(i, "KEYS")) {
        keys.begin = i + 1;
        keys.end = n;
        break;
      }
    }
  }
  return keys;
}

}  // namespace redmux::detail

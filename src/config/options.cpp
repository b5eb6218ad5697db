#include "config/options.hpp"
#include "config/parser.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/ascii.hpp"

namespace redmux::config_internal {
namespace {

constexpr long long kIntMax = std::numeric_limits<int>::max();
constexpr long long kUint32Max = std::numeric_limits<std::uint32_t>::max();

std::string range_problem(long long min, long long max, std::string_view unit) {
  std::string text = "out of range; expected " + std::to_string(min) + " … " + std::to_string(max);
  if (!unit.empty()) text.append(" ").append(unit);
  return text;
}

// A negative or overflowing number gets the range message (it is a number, just not an
// allowed one); anything else that is not a plain number gets `expectation`.
std::string number_problem(std::string_view text, long long min, long long max,
                           std::string_view unit, std::string_view expectation) {
  if (!text.empty() && text.front() == '-') text.remove_prefix(1);
  return all_digits(text) ? range_problem(min, max, unit) : std::string(expectation);
}

template <auto Member>
struct BoolOption {
  static std::string set(Config& config, std::string_view value) {
    bool parsed = false;
    if (!parse_bool(value, parsed)) return "expected true/false, yes/no or 1/0";
    config.*Member = parsed;
    return {};
  }
  static std::string print(const Config& config) { return config.*Member ? "true" : "false"; }
  static std::string check(const Config&) { return {}; }
};

template <auto Member, long long Min, long long Max>
struct IntOption {
  using Field = std::remove_cvref_t<decltype(std::declval<Config&>().*Member)>;

  static std::string set(Config& config, std::string_view value) {
    unsigned long long parsed = 0;
    if (!parse_unsigned(value, parsed)) {
      return number_problem(value, Min, Max, "", "expected a whole number");
    }
    if (parsed < static_cast<unsigned long long>(Min) ||
        parsed > static_cast<unsigned long long>(Max)) {
      return range_problem(Min, Max, "");
    }
    config.*Member = static_cast<Field>(parsed);
    return {};
  }
  static std::string print(const Config& config) { return std::to_string(config.*Member); }
  static std::string check(const Config& config) {
    const auto value = config.*Member;
    if constexpr (std::is_signed_v<Field>) {
      if (value < Min) return range_problem(Min, Max, "");
    } else {
      if (value < static_cast<Field>(Min)) return range_problem(Min, Max, "");
    }
    if (static_cast<unsigned long long>(value) > static_cast<unsigned long long>(Max)) {
      return range_problem(Min, Max, "");
    }
    return {};
  }
};

// A size in bytes: a plain number, or with redis.conf's suffixes (any case): k, m, g for
// 1000, 1000^2, 1000^3; kb, mb, gb for 1024, 1024^2, 1024^3.
template <auto Member, long long Min, long long Max>
struct SizeOption {
  using Field = std::remove_cvref_t<decltype(std::declval<Config&>().*Member)>;
  static constexpr std::string_view kExpectation =
      "expected bytes, e.g. 67108864, 64mb (MiB) or 64m (millions)";

  static std::string set(Config& config, std::string_view value) {
    const std::size_t digits = leading_digits(value);
    if (digits == 0) return number_problem(value, Min, Max, "bytes", std::string(kExpectation));
    const std::string suffix = to_lower(value.substr(digits));
    static constexpr std::pair<std::string_view, unsigned long long> kUnits[] = {
        {"", 1},
        {"k", 1000},
        {"kb", 1024},
        {"m", 1000 * 1000},
        {"mb", 1024 * 1024},
        {"g", 1000 * 1000 * 1000},
        {"gb", 1024 * 1024 * 1024}};
    const auto* unit = std::find_if(std::begin(kUnits), std::end(kUnits),
                                    [&](const auto& u) { return u.first == suffix; });
    if (unit == std::end(kUnits)) return std::string(kExpectation);
    unsigned long long number = 0;
    if (!parse_unsigned(value.substr(0, digits), number) ||
        number > static_cast<unsigned long long>(Max) / unit->second) {
      return range_problem(Min, Max, "bytes");
    }
    number *= unit->second;
    if (number < static_cast<unsigned long long>(Min)) return range_problem(Min, Max, "bytes");
    config.*Member = static_cast<Field>(number);
    return {};
  }
  static std::string print(const Config& config) { return std::to_string(config.*Member); }
  static std::string check(const Config& config) {
    return IntOption<Member, Min, Max>::check(config);
  }
};

// A duration: a plain number in the field's own unit (milliseconds, or seconds for
// keepAlive), or a number with a suffix: ms, s, m (minutes).
template <auto Member, long long Min, long long Max>
struct DurationOption {
  using Field = std::remove_cvref_t<decltype(std::declval<Config&>().*Member)>;
  static constexpr bool kSeconds = std::is_same_v<Field, Config::Seconds>;
  static constexpr std::string_view kUnit = kSeconds ? "seconds" : "ms";

  static std::string expectation() {
    return kSeconds ? "expected seconds, e.g. 60, 60s or 2m"
                    : "expected milliseconds, e.g. 5000, 250ms, 5s or 1m";
  }

  static std::string set(Config& config, std::string_view value) {
    const std::size_t digits = leading_digits(value);
    const std::string suffix = to_lower(value.substr(digits));
    unsigned long long number = 0;
    if (digits == 0) return number_problem(value, Min, Max, kUnit, expectation());
    if (!parse_unsigned(value.substr(0, digits), number)) return range_problem(Min, Max, kUnit);
    // Scale to the field's unit: `multiply` for larger units, `divide` for ms in a
    // seconds field (which must then be whole seconds).
    unsigned long long multiply = 1;
    unsigned long long divide = 1;
    if (suffix.empty()) {
    } else if (suffix == "ms") {
      divide = kSeconds ? 1000 : 1;
    } else if (suffix == "s") {
      multiply = kSeconds ? 1 : 1000;
    } else if (suffix == "m") {
      multiply = kSeconds ? 60 : 60000;
    } else {
      return expectation();
    }
    if (number % divide != 0) return "expected whole seconds";
    number /= divide;
    if (number > static_cast<unsigned long long>(Max) / multiply) {
      return range_problem(Min, Max, kUnit);
    }
    number *= multiply;
    if (number < static_cast<unsigned long long>(Min)) return range_problem(Min, Max, kUnit);
    config.*Member = Field(static_cast<typename Field::rep>(number));
    return {};
  }
  static std::string print(const Config& config) {
    return std::to_string((config.*Member).count());
  }
  static std::string check(const Config& config) {
    const auto count = (config.*Member).count();
    if (count < Min || count > Max) return range_problem(Min, Max, kUnit);
    return {};
  }
};

// Free text that to_string() prints (quoted when it holds a comma, a quote or surrounding
// whitespace, so that it survives to_string() → parse()).
template <auto Member>
struct TextOption {
  static std::string set(Config& config, std::string_view value) {
    config.*Member = std::string(value);
    return {};
  }
  static std::string print(const Config& config) { return config.*Member; }
  static std::string check(const Config&) { return {}; }
};

// The client name goes to CLIENT SETNAME, which takes only the characters ! to ~ (the
// server's own check): refused here, not at every connection attempt.
struct ClientNameOption : TextOption<&Config::name> {
  static std::string check(const Config& config) {
    for (char c : config.name) {
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        return "contains whitespace, which CLIENT SETNAME refuses";
      }
      if (c < '!' || c > '~') {
        static constexpr char kHex[] = "0123456789abcdef";
        const auto byte = static_cast<unsigned char>(c);
        return std::string("contains the byte 0x") + kHex[byte >> 4] + kHex[byte & 15] +
               ", which CLIENT SETNAME refuses: a client name holds only the characters ! to ~ "
               "(printable ASCII, no spaces)";
      }
    }
    return TextOption<&Config::name>::check(config);
  }
};

// A password: any text, printed as "*****" when set so to_string() never reveals it.
template <auto Member>
struct SecretOption {
  static std::string set(Config& config, std::string_view value) {
    config.*Member = std::string(value);
    return {};
  }
  static std::string print(const Config& config) {
    return (config.*Member).empty() ? std::string() : std::string("*****");
  }
  static std::string check(const Config&) { return {}; }
};

// The names of an enumerated option's values. The first name of each value is the one
// to_string() prints; a bad value's error lists them ("expected resp3 or resp2").
template <class E>
struct EnumNames;
template <>
struct EnumNames<Protocol> {
  static constexpr std::array<std::pair<std::string_view, Protocol>, 4> kNames{{
      {"resp3", Protocol::Resp3},
      {"resp2", Protocol::Resp2},
      {"3", Protocol::Resp3},
      {"2", Protocol::Resp2},
  }};
};
template <>
struct EnumNames<QueueFullPolicy> {
  static constexpr std::array<std::pair<std::string_view, QueueFullPolicy>, 2> kNames{{
      {"fail", QueueFullPolicy::Fail},
      {"wait", QueueFullPolicy::Wait},
  }};
};
template <>
struct EnumNames<BacklogPolicy> {
  static constexpr std::array<std::pair<std::string_view, BacklogPolicy>, 2> kNames{{
      {"queue", BacklogPolicy::Queue},
      {"failFast", BacklogPolicy::FailFast},
  }};
};

template <>
struct EnumNames<ClientCacheMode> {
  static constexpr std::array<std::pair<std::string_view, ClientCacheMode>, 3> kNames{{
      {"default", ClientCacheMode::Default},
      {"bcast", ClientCacheMode::Broadcast},
      {"optin", ClientCacheMode::OptIn},
  }};
};
template <>
struct EnumNames<ClientCacheReads> {
  static constexpr std::array<std::pair<std::string_view, ClientCacheReads>, 2> kNames{{
      {"all", ClientCacheReads::All},
      {"flagged", ClientCacheReads::Flagged},
  }};
};

template <auto Member>
struct EnumOption {
  using Field = std::remove_cvref_t<decltype(std::declval<Config&>().*Member)>;
  using Names = EnumNames<Field>;

  static std::string set(Config& config, std::string_view value) {
    for (const auto& [name, enumerator] : Names::kNames) {
      if (iequals(name, value)) {
        config.*Member = enumerator;
        return {};
      }
    }
    return expected();
  }
  // "expected a, b or c": the first name of each value, in the table's order.
  static std::string expected() {
    std::vector<std::string_view> firsts;
    for (std::size_t i = 0; i < Names::kNames.size(); ++i) {
      bool named_before = false;
      for (std::size_t j = 0; j < i; ++j)
        named_before = named_before || Names::kNames[j].second == Names::kNames[i].second;
      if (!named_before) firsts.push_back(Names::kNames[i].first);
    }
    std::string out = "expected ";
    for (std::size_t i = 0; i < firsts.size(); ++i) {
      if (i > 0) out += i + 1 == firsts.size() ? " or " : ", ";
      out += firsts[i];
    }
    return out;
  }
  static std::string print(const Config& config) {
    for (const auto& [name, enumerator] : Names::kNames) {
      if (enumerator == config.*Member) return std::string(name);
    }
    return "?";
  }
  static std::string check(const Config& config) {
    for (const auto& entry : Names::kNames) {
      if (entry.second == config.*Member) return {};
    }
    return "is not a known value";
  }
};

template <class Option>
constexpr OptionSpec row(std::string_view name, std::string_view alias = {}, bool secret = false) {
  return {name, alias, secret, &Option::set, &Option::print, &Option::check};
}

using C = Config;
constexpr long long kMsMax = kIntMax;  // ~24.8 days: fits every timer API

// Order: as docs/configuration.md lists them; to_string() prints in this order.
constexpr auto kOptions = std::to_array<OptionSpec>({
    row<ClientNameOption>("name"),
    row<TextOption<&C::user>>("user"),
    row<SecretOption<&C::password>>("password", {}, true),
    row<IntOption<&C::default_database, 0, kIntMax>>("defaultDatabase", "db"),
    row<EnumOption<&C::protocol>>("protocol"),
    row<BoolOption<&C::allow_admin>>("allowAdmin"),
    row<BoolOption<&C::abort_connect>>("abortConnect"),
    row<DurationOption<&C::connect_timeout, 1, kMsMax>>("connectTimeout"),
    row<IntOption<&C::connect_retry, 0, kIntMax>>("connectRetry"),
    row<DurationOption<&C::sync_timeout, 1, kMsMax>>("syncTimeout"),
    row<DurationOption<&C::async_timeout, 1, kMsMax>>("asyncTimeout"),
    row<DurationOption<&C::keep_alive, 0, 32767>>("keepAlive"),
    row<DurationOption<&C::heartbeat_interval, 0, kMsMax>>("heartbeatInterval"),
    row<IntOption<&C::max_queued_commands, 1, kUint32Max>>("maxQueuedCommands"),
    row<EnumOption<&C::queue_full_policy>>("queueFullPolicy"),
    row<IntOption<&C::io_threads, 1, 256>>("ioThreads"),
    row<IntOption<&C::connections_per_endpoint, 1, 256>>("connectionsPerEndpoint"),
    row<BoolOption<&C::shared_subscription_connection>>("sharedSubscriptionConnection"),
    row<IntOption<&C::blocking_pool_size, 1, 1024>>("blockingPoolSize"),
    row<DurationOption<&C::reconnect_base_delay, 1, kMsMax>>("reconnectBaseDelay"),
    row<DurationOption<&C::reconnect_max_delay, 1, kMsMax>>("reconnectMaxDelay"),
    row<EnumOption<&C::backlog_policy>>("backlogPolicy"),
    row<BoolOption<&C::retry_read_only_commands>>("retryReadOnlyCommands"),
    row<BoolOption<&C::retry_cluster_down>>("retryClusterDown"),
    row<BoolOption<&C::ssl>>("ssl"),
    row<TextOption<&C::ssl_host>>("sslHost"),
    row<TextOption<&C::ssl_ca_file>>("sslCaFile"),
    row<TextOption<&C::ssl_ca_path>>("sslCaPath"),
    row<TextOption<&C::ssl_cert>>("sslCert"),
    row<TextOption<&C::ssl_key>>("sslKey"),
    row<BoolOption<&C::ssl_verify>>("sslVerify"),
    row<TextOption<&C::service_name>>("serviceName"),
    row<TextOption<&C::sentinel_user>>("sentinelUser"),
    row<SecretOption<&C::sentinel_password>>("sentinelPassword", {}, true),
    row<BoolOption<&C::replica_health_check>>("replicaHealthCheck"),
    row<DurationOption<&C::replica_max_lag, 0, 86400>>("replicaMaxLag"),
    row<TextOption<&C::availability_zone>>("availabilityZone"),
    row<BoolOption<&C::failover_wait>>("failoverWait"),
    row<BoolOption<&C::client_cache>>("clientCache"),
    row<SizeOption<&C::client_cache_bytes, 4096, (1LL << 40)>>("clientCacheBytes"),
    row<DurationOption<&C::client_cache_max_ttl, 1, kMsMax>>("clientCacheMaxTtl"),
    row<EnumOption<&C::client_cache_mode>>("clientCacheMode"),
    row<TextOption<&C::client_cache_prefixes>>("clientCachePrefixes"),
    row<EnumOption<&C::client_cache_reads>>("clientCacheReads"),
    row<BoolOption<&C::latency_histograms>>("latencyHistograms"),
    row<DurationOption<&C::slow_command_threshold, 0, kMsMax>>("slowCommandThreshold"),
});

// StackExchange.Redis options redmux deliberately does not have: a user porting a string
// gets told so rather than "unknown option".
constexpr std::array<std::string_view, 13> kStackExchangeOnly = {
    "tiebreaker",
    "version",
    "configChannel",
    "channelPrefix",
    "proxy",
    "resolveDns",
    "checkCertificateRevocation",
    "responseTimeout",
    "writeBuffer",
    "setlib",
    "highPrioritySocketThreads",
    "configCheckSeconds",
    "sslProtocols",
};

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> previous(b.size() + 1);
  std::vector<std::size_t> current(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
    }
    std::swap(previous, current);
  }
  return previous[b.size()];
}

}  // namespace

std::span<const OptionSpec> option_table() {
  return kOptions;
}

const OptionSpec* find_option(std::string_view key) {
  for (const OptionSpec& option : kOptions) {
    if (iequals(option.name, key) || (!option.alias.empty() && iequals(option.alias, key))) {
      return &option;
    }
  }
  return nullptr;
}

std::string unknown_option_message(std::string_view key, std::string_view where) {
  std::string message;
  const bool foreign = std::any_of(kStackExchangeOnly.begin(), kStackExchangeOnly.end(),
                                   [&](std::string_view name) { return iequals(name, key); });
  if (foreign) {
    message = "option \"" + std::string(key) + "\" in " + std::string(where) +
              " is a StackExchange.Redis option that redmux does not support";
  } else {
    message = "unknown option \"" + shown(key) + "\" in " + std::string(where);
    // Suggest the nearest name when it is plausibly a typo: within a third of its length.
    const std::string lowered = to_lower(key);
    const OptionSpec* best = nullptr;
    std::size_t best_distance = std::numeric_limits<std::size_t>::max();
    for (const OptionSpec& option : kOptions) {
      const std::size_t distance = edit_distance(lowered, to_lower(option.name));
      if (distance < best_distance) {
        best = &option;
        best_distance = distance;
      }
    }
    if (best != nullptr && best_distance <= std::max<std::size_t>(2, best->name.size() / 3)) {
      message += " (did you mean \"" + std::string(best->name) + "\"?)";
    }
  }
  std::vector<std::string_view> names;
  for (const OptionSpec& option : kOptions) names.push_back(option.name);
  std::sort(names.begin(), names.end(),
            [](std::string_view a, std::string_view b) { return to_lower(a) < to_lower(b); });
  message += "; valid options: ";
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) message += ", ";
    message += names[i];
  }
  for (const OptionSpec& option : kOptions) {
    if (!option.alias.empty()) {
      message +=
          " (" + std::string(option.alias) + " is an alias of " + std::string(option.name) + ")";
    }
  }
  return message;
}

bool parse_bool(std::string_view text, bool& out) {
  if (iequals(text, "true") || iequals(text, "yes") || text == "1") {
    out = true;
    return true;
  }
  if (iequals(text, "false") || iequals(text, "no") || text == "0") {
    out = false;
    return true;
  }
  return false;
}

bool parse_unsigned(std::string_view text, unsigned long long& out) {
  if (text.empty()) return false;
  unsigned long long value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    const unsigned digit = static_cast<unsigned>(c - '0');
    if (value > (std::numeric_limits<unsigned long long>::max() - digit) / 10) return false;
    value = value * 10 + digit;
  }
  out = value;
  return true;
}

std::size_t leading_digits(std::string_view text) {
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  return digits;
}

bool all_digits(std::string_view text) {
  return !text.empty() && leading_digits(text) == text.size();
}

std::string to_lower(std::string_view text) {
  return detail::ascii::lower_copy(text);
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && to_lower(a) == to_lower(b);
}

}  // namespace redmux::config_internal

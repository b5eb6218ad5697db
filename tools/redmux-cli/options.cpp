#include "options.hpp"

#include <charconv>
#include <cmath>

namespace redmux::cli {
namespace {

template <class Number>
bool parse_number(const std::string& text, Number& out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end && !text.empty();
}

bool parse_seconds(const std::string& text, std::chrono::milliseconds& out) {
  double seconds = 0;
  if (!parse_number(text, seconds) || !(seconds >= 0) || !std::isfinite(seconds)) return false;
  out = std::chrono::milliseconds(static_cast<long long>(seconds * 1000.0 + 0.5));
  return true;
}

/// Fills `out`; on a bad item, false with that item in `bad`.
bool parse_percentiles(const std::string& text, std::vector<double>& out, std::string& bad) {
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    double value = 0;
    if (!parse_number(text.substr(start, comma - start), value) || value <= 0 || value > 100) {
      bad = text.substr(start, comma - start);
      return false;
    }
    out.push_back(value);
    start = comma + 1;
  }
  return !out.empty();
}

}  // namespace

ParseResult parse_options(const std::vector<std::string>& argv) {
  ParseResult result;
  Options& o = result.options;
  bool latency = false, history = false, stat = false, clients = false, scan = false;
  bool interval_given = false;
  bool json = false;          // --json given: --raw and --no-raw are refused with it
  bool host_or_port = false;  // -h or -p: the server named apart from -u
  auto fail = [&](std::string message) {
    result.error = std::move(message);
    return result;
  };
  std::size_t i = 1;
  // The value of option argv[i]; advances i. False when missing.
  auto value_of = [&](std::string& out) {
    if (i + 1 >= argv.size()) return false;
    out = argv[++i];
    return true;
  };
  for (; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    std::string value;
    if (arg.empty() || arg[0] != '-' || arg == "-") break;  // the command starts here
    if (arg == "--") {
      ++i;
      break;
    }
    const bool takes_value =
        arg == "-h" || arg == "-p" || arg == "-a" || arg == "-u" || arg == "-n" || arg == "-i" ||
        arg == "--user" || arg == "--pass" || arg == "--latency-percentiles" ||
        arg == "--samples" || arg == "--duration" || arg == "--omem-warn" || arg == "--pattern" ||
        arg == "--count" || arg == "--type" || arg == "--timeout" || arg == "--cacert" ||
        arg == "--cacertdir" || arg == "--cert" || arg == "--key" || arg == "--sni";
    if (takes_value && !value_of(value)) return fail("option " + arg + " needs a value");
    if (arg == "-h" || arg == "-p") host_or_port = true;
    if (arg == "-h") {
      o.host = value;
    } else if (arg == "-p") {
      if (!parse_number(value, o.port) || o.port < 1 || o.port > 65535) {
        return fail("invalid port \"" + value + "\" (-p takes 1 to 65535)");
      }
    } else if (arg == "-a" || arg == "--pass") {
      o.password = value;
    } else if (arg == "--user") {
      o.user = value;
    } else if (arg == "--no-auth-warning") {
      // redis-cli's, accepted so that its scripts run: redmux-cli prints no such warning.
    } else if (arg == "-u") {
      o.uri = value;
    } else if (arg == "-n") {
      int db = 0;
      if (!parse_number(value, db) || db < 0) {
        return fail("invalid database \"" + value + "\" (-n takes a number >= 0)");
      }
      o.database = db;
    } else if (arg == "-2") {
      o.protocol = 2;
    } else if (arg == "-3") {
      o.protocol = 3;
    } else if (arg == "--tls") {
      o.tls = true;
    } else if (arg == "--cacert") {
      o.cacert = value;
    } else if (arg == "--cacertdir") {
      o.cacertdir = value;
    } else if (arg == "--cert") {
      o.cert = value;
    } else if (arg == "--key") {
      o.key = value;
    } else if (arg == "--sni") {
      o.sni = value;
    } else if (arg == "--insecure") {
      o.insecure = true;
    } else if (arg == "--raw") {
      if (json) return fail("--raw and --json: choose one");
      o.format = OutputFormat::Raw;
    } else if (arg == "--no-raw") {
      if (json) return fail("--no-raw and --json: choose one");
      o.format = OutputFormat::Human;
    } else if (arg == "--json") {
      if (o.format == OutputFormat::Raw || o.format == OutputFormat::Human) {
        return fail(std::string(o.format == OutputFormat::Raw ? "--raw" : "--no-raw") +
                    " and --json: choose one");
      }
      json = true;
      o.format = OutputFormat::Json;
    } else if (arg == "--latency") {
      latency = true;
    } else if (arg == "--latency-history") {
      history = true;
    } else if (arg == "--latency-percentiles") {
      std::string bad;
      if (!parse_percentiles(value, o.percentiles, bad)) {
        return fail("invalid percentiles \"" + value + "\": \"" + bad +
                    "\" is not a percentile above 0 and at most 100 (--latency-percentiles takes "
                    "a list such as 50,99,99.9)");
      }
      latency = true;
    } else if (arg == "--stat") {
      stat = true;
    } else if (arg == "-i") {
      if (!parse_seconds(value, o.interval) || o.interval.count() == 0) {
        return fail("invalid interval \"" + value + "\" (-i takes seconds > 0, e.g. 1 or 0.5)");
      }
      interval_given = true;
    } else if (arg == "--timeout") {
      if (!parse_seconds(value, o.timeout)) {
        return fail("invalid timeout \"" + value +
                    "\" (--timeout takes seconds >= 0, e.g. 30 or 0.5; 0 waits for as long as "
                    "the server takes)");
      }
    } else if (arg == "--samples") {
      if (!parse_number(value, o.samples) || o.samples < 1) {
        return fail("invalid sample count \"" + value + "\" (--samples takes a number >= 1)");
      }
    } else if (arg == "--duration") {
      if (!parse_seconds(value, o.duration) || o.duration.count() == 0) {
        return fail("invalid duration \"" + value + "\" (--duration takes seconds > 0)");
      }
    } else if (arg == "--clients") {
      clients = true;
    } else if (arg == "--omem-warn") {
      if (!parse_number(value, o.omem_warn) || o.omem_warn < 0) {
        return fail("invalid byte count \"" + value + "\" (--omem-warn takes bytes >= 0)");
      }
    } else if (arg == "--scan") {
      scan = true;
    } else if (arg == "--pattern") {
      o.pattern = value;
    } else if (arg == "--count") {
      if (!parse_number(value, o.count) || o.count < 1) {
        return fail("invalid count \"" + value + "\" (--count takes a number >= 1)");
      }
    } else if (arg == "--type") {
      o.key_type = value;
    } else if (arg == "--help") {
      o.mode = Mode::Help;
      return result;
    } else if (arg == "-v" || arg == "--version") {
      o.mode = Mode::Version;
      return result;
    } else if (arg == "-c") {
      return fail(
          "-c is not an option: cluster mode is automatic (given a cluster node, redmux-cli is "
          "a cluster client and follows redirections); leave out -c");
    } else {
      return fail("unknown option " + arg + " (redmux-cli --help lists them)");
    }
  }
  o.command.assign(argv.begin() + static_cast<std::ptrdiff_t>(std::min(i, argv.size())),
                   argv.end());
  if (!o.uri.empty() && host_or_port) {
    // Either names the server; one silently winning would connect where the user did not mean.
    return fail(
        "-u names the server, and so do -h and -p: give one or the other (host:port "
        "goes in -u)");
  }
  const int modes = int{latency || history} + int{stat} + int{clients} + int{scan};
  if (modes > 1) {
    return fail("choose one of --latency/--latency-history, --stat, --clients, --scan");
  }
  if (modes == 1 && !o.command.empty()) {
    return fail("a mode (--latency, --stat, --clients, --scan) takes no command, got \"" +
                o.command[0] + "\"");
  }
  if (history) {
    o.mode = Mode::LatencyHistory;
  } else if (latency) {
    o.mode = Mode::Latency;
  } else if (stat) {
    o.mode = Mode::Stat;
    if (!interval_given) o.interval = std::chrono::seconds(1);
  } else if (clients) {
    o.mode = Mode::Clients;
  } else if (scan) {
    o.mode = Mode::Scan;
  } else {
    o.mode = o.command.empty() ? Mode::Interactive : Mode::Command;
  }
  return result;
}

std::string usage_text() {
  return R"(redmux-cli: run Redis/Valkey commands through a redmux multiplexer.

Usage: redmux-cli [OPTIONS] [COMMAND [ARG...]]
  With a command: runs it once and prints the reply. Without: an interactive prompt.

Connection:
  -h HOST             server host (default 127.0.0.1)
  -p PORT             server port (default 6379)
  -u URL|CONFIG       redis://user:pass@host:port/db URL or redmux configuration string
  -a, --pass PASSWORD password (or set REDISCLI_AUTH to keep it out of the process list)
  --user USER         ACL user (needs a password)
  --no-auth-warning   accepted for redis-cli's scripts (redmux-cli never warns about -a)
  -n DB               database number
  -2 | -3             RESP2 (the default, like redis-cli) or RESP3
  --timeout SECONDS   how long a command waits for its reply; default 0: as long as the
                      server takes (a slow DEBUG SLEEP, SAVE or script), like redis-cli
TLS (also: a rediss:// URL with -u):
  --tls               connect with TLS
  --cacert FILE       trusted CA certificates (PEM); default: the system's
  --cacertdir DIR     directory of trusted CA certificates
  --cert FILE         client certificate (PEM), with --key, for mutual TLS
  --key FILE          client private key (PEM)
  --sni HOST          name to send (SNI) and to check the server's certificate against;
                      default: the host
  --insecure          do not verify the server's certificate (testing only)
Output:
  --raw | --no-raw    force the raw (pipe) or the human (terminal) format;
                      default: human on a terminal, raw otherwise
  --json              print the reply as JSON
Modes:
  --latency                    min/max/avg of PING round trips through the multiplexer (ms)
  --latency-history [-i SEC]   one line per interval (default 15 s)
  --latency-percentiles LIST   --latency plus percentiles, e.g. 50,99,99.9
  --samples N | --duration SEC stop a latency mode after N samples or SEC seconds
  --stat [-i SEC]              a line per interval (default 1 s): keys, memory, clients,
                               requests and ops/s from INFO; this client's p50/p99 (from
                               the multiplexer's histograms), in flight and commands per
                               write. --samples N: stop after N lines
  --clients [--omem-warn BYTES]
                               CLIENT LIST summarised by client name; warns about large
                               output buffers (default 32 MiB) and MONITOR clients
  --scan [--pattern P] [--count N] [--type T]
                               list keys with SCAN (never KEYS)
  --help, --version

Exit status: 0 ok, 1 the server replied with an error (or redmux refused the command),
2 usage or connection error.
)";
}

}  // namespace redmux::cli

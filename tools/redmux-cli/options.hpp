// redmux-cli's command line: redis-cli's connection flags (-h -p -a --user -n -u -2 -3,
// --tls --cacert --cacertdir --cert --key --sni --insecure),
// output flags (--raw --no-raw --json), the modes (--latency …, --clients, --scan) and the
// command to run. Parsing stops at the first word that is not an option: that word and
// everything after it are the command, so `redmux-cli INCRBY k -1` works. Pure: no I/O.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace redmux::cli {

enum class OutputFormat { Auto, Human, Raw, Json };
enum class Mode {
  Command,
  Interactive,
  Latency,
  LatencyHistory,
  Stat,
  Clients,
  Scan,
  Help,
  Version
};

struct Options {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string uri;  ///< -u: a redis:// URL or a redmux configuration string
  std::string password;
  std::string user;
  std::optional<int> database;  ///< -n
  std::optional<int> protocol;  ///< -2 / -3; unset: RESP2, like redis-cli

  // TLS, named as redis-cli names them; each maps to a Config option
  bool tls = false;       ///< --tls: ssl=true
  std::string cacert;     ///< --cacert FILE: sslCaFile
  std::string cacertdir;  ///< --cacertdir DIR: sslCaPath
  std::string cert;       ///< --cert FILE: sslCert
  std::string key;        ///< --key FILE: sslKey
  std::string sni;        ///< --sni HOST: sslHost
  bool insecure = false;  ///< --insecure: sslVerify=false
  /// --timeout SECONDS: how long a command may wait for its reply; 0 (the default): as long
  /// as the server takes, like redis-cli
  std::chrono::milliseconds timeout{0};
  OutputFormat format = OutputFormat::Auto;
  Mode mode = Mode::Interactive;

  // --latency, --latency-history, --latency-percentiles
  /// -i SECONDS: a --latency-history line's length (default 15 s), a --stat line's (1 s)
  std::chrono::milliseconds interval{15000};
  std::vector<double> percentiles;        ///< --latency-percentiles 50,99,99.9
  long long samples = 0;                  ///< --samples N: stop after N (--stat: N lines; 0: never)
  std::chrono::milliseconds duration{0};  ///< --duration SECONDS: stop after (0: never)

  // --clients
  long long omem_warn = 32LL * 1024 * 1024;  ///< --omem-warn BYTES

  // --scan
  std::string pattern;   ///< --pattern
  long long count = 0;   ///< --count (SCAN COUNT hint)
  std::string key_type;  ///< --type

  std::vector<std::string> command;  ///< the command and its arguments
};

/// Parsed options, or the usage error to print (exit status 2).
struct ParseResult {
  Options options;
  std::string error;  ///< empty on success
};

/// Parses argv[1…]. REQUIRES: argv[0] is the program name.
ParseResult parse_options(const std::vector<std::string>& argv);

/// The --help text.
std::string usage_text();

}  // namespace redmux::cli

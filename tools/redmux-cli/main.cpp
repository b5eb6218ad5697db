// redmux-cli: redis-cli's everyday face on top of a redmux multiplexer — one command, an
// interactive prompt, latency modes measured from the client's side, CLIENT LIST grouped by
// client name, and SCAN. Public API only. docs/cli.md describes every option.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <regex>
#include <string>
#include <thread>
#include <utility>

#include "clients.hpp"
#include "command_line.hpp"
#include "latency.hpp"
#include "options.hpp"
#include "prompt.hpp"
#include "redmux/redmux.hpp"
#include "redmux/scan.hpp"
#include "reply_format.hpp"
#include "stat.hpp"

namespace redmux::cli {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitServerError = 1;
constexpr int kExitUsage = 2;

std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) {
  g_interrupted.store(true);
}

void print(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

// The library's option names in messages, as the flags this command line used say them
// (--cacert for sslCaFile= …, where the credentials came from). Set once by main_cli before
// it connects; print_error applies them before the fixed table below.
std::vector<std::pair<std::string, std::string>> g_flag_names;

void replace_all(std::string& line, std::string_view option, std::string_view flag) {
  for (std::size_t at = line.find(option); at != std::string::npos;
       at = line.find(option, at + flag.size())) {
    line.replace(at, option.size(), flag);
  }
}

void print_error(std::string_view text) {
  std::string line = "redmux-cli: " + std::string(text) + "\n";
  for (const auto& [option, flag] : g_flag_names) replace_all(line, option, flag);
  // The library's advice names its configuration options; here the flags say them.
  static constexpr std::pair<std::string_view, std::string_view> kFlags[] = {
      {"set ssl=true (or use rediss://)", "use --tls (or a rediss:// URL with -u)"},
      {"set sslCaFile (or sslCaPath) to the CA that signed it",
       "give --cacert (or --cacertdir) the CA that signed it"},
      {"set sslCaFile or sslCaPath", "use --cacert or --cacertdir"},
      {"check sslCaFile/sslCaPath, sslHost and sslVerify",
       "check --cacert/--cacertdir, --sni and --insecure"},
      {"set sslHost to a name", "use --sni with a name"},
      {"sslVerify=false skips verification", "--insecure skips verification"},
      {"set sslCert and sslKey", "use --cert and --key"},
      {"client certificate in sslCert", "client certificate of --cert"},
      {"(check user= and password=)", "(check --user and -a)"},
      {"set user= and password= in the configuration",
       "give --user and -a when starting redmux-cli"},
      {"set protocol=resp2|resp3 in the configuration", "start redmux-cli with -2 or -3"},
      {"option \"user\" in configuration is set without \"password\"",
       "a user (--user) is given without a password (-a)"},
      {"set name= in the configuration", "give -u a configuration with name="},
      // A command's deadline is --timeout's; the library's other advice is an application's.
      {"(this call's timeout ", "(--timeout "},
      {"If the server is busy or far away raise this call's CallOptions::timeout",
       "The server is busy (a slow command, a SAVE, a long script) or frozen: raise --timeout, "
       "or give --timeout 0 to wait for as long as it takes"},
      {"raise asyncTimeout (or give this call a longer CallOptions::timeout)",
       "give -u a configuration with a longer asyncTimeout="},
      {"; if replies are slow to be read, check the I/O thread is not blocked by callbacks.", "."},
  };
  for (const auto& [option, flag] : kFlags) replace_all(line, option, flag);
  // "no endpoint of \"<the configuration>\" connected within syncTimeout=…": the CLI made
  // that configuration; its endpoint is what the user gave.
  constexpr std::string_view kNoEndpoint = "no endpoint of \"";
  if (const std::size_t at = line.find(kNoEndpoint); at != std::string::npos) {
    const std::size_t from = at + kNoEndpoint.size();
    const std::size_t quote = line.find('"', from);
    const std::size_t comma = line.find(',', from);
    if (quote != std::string::npos && comma != std::string::npos && comma < quote) {
      line.erase(comma, quote - comma);
    }
  }
  static const std::regex kConnectOptions(
      R"( within syncTimeout=(\d+ ms) \(connectTimeout=\d+ ms, connectRetry=\d+\))");
  line = std::regex_replace(line, kConnectOptions, " within $1");
  // "… timed out after 5000 ms (TLS handshake; connectTimeout=5000)": the time says it.
  static const std::regex kConnectTimeout(R"(; connectTimeout=\d+\))");
  line = std::regex_replace(line, kConnectTimeout, ")");
  // A TLS handshake left unanswered has asked already whether this is the TLS port.
  replace_all(
      line, "; raise syncTimeout, or use abortConnect=false to connect in the background",
      line.find("(tls-port)?") != std::string::npos
          ? std::string("; is the server up?")
          : std::string("; is the server up, and is this its port (its tls-port with --tls)?"));
  // Advice for applications on connecting in the background means nothing to a command line
  // that connects for one command.
  if (const std::size_t at = line.find(" (abortConnect=true: "); at != std::string::npos) {
    if (const std::size_t close = line.find(')', at); close != std::string::npos) {
      line.erase(at, close + 1 - at);
    }
  }
  std::fwrite(line.data(), 1, line.size(), stderr);
}

OutputFormat resolve_format(OutputFormat format) {
  if (format != OutputFormat::Auto) return format;
  return isatty(STDOUT_FILENO) ? OutputFormat::Human : OutputFormat::Raw;
}

// redmux names the command after a server's error message (" (reply to GET)"); redis-cli
// prints the server's text alone, so the CLI strips it to print what redis-cli prints.
std::string server_message(const std::string& message) {
  const std::size_t at = message.rfind(" (reply to ");
  if (at != std::string::npos && !message.empty() && message.back() == ')') {
    return message.substr(0, at);
  }
  return message;
}

// Whether Config::parse refused a user given without a password.
bool user_without_password(const Error& error) {
  const std::string& message = error.message();
  return message.find("option \"user\" in ") != std::string::npos &&
         message.find(" is set without \"password\"") != std::string::npos;
}

// `uri` (a redis:// URL or a configuration string that names a user but no password) with a
// password that parses: a URL's userinfo gets ":-", a configuration string ",password=-".
std::string with_stand_in_password(const std::string& uri) {
  const std::size_t scheme = uri.find("://");
  if (scheme == std::string::npos) return uri + ",password=-";
  const std::size_t authority = scheme + 3;
  const std::size_t end = std::min(uri.find_first_of("/?#", authority), uri.size());
  const std::size_t at = uri.rfind('@', end);
  if (at == std::string::npos || at < authority) return uri;
  std::string out = uri;
  // "alice@" becomes "alice:-@"; "alice:@" (an empty password) "alice:-@".
  const bool has_colon = uri.find(':', authority) < at;
  out.insert(at, has_colon ? "-" : ":-");
  return out;
}

// Fills g_flag_names for `o`, whose credentials came from `user_from` and `password_from`
// (a flag, "REDISCLI_AUTH", "the … in -u", or empty).
void name_flags(const Options& o, const std::string& user_from, const std::string& password_from) {
  auto& names = g_flag_names;
  names.clear();
  std::string sources;
  if (user_from == "the user in -u" && password_from == "the password in -u") {
    sources = "the user and password in -u";
  } else {
    for (const std::string& from : {user_from, password_from}) {
      if (from.empty()) continue;
      sources += (sources.empty() ? "" : " and ") + from;
    }
  }
  names.emplace_back("(check user= and password=)",
                     "(check " + (sources.empty() ? std::string("--user and -a") : sources) + ")");
  names.emplace_back("(check defaultDatabase=)",
                     o.database ? "(check -n)" : "(check the database of -u)");
  const std::pair<const std::string&, std::pair<std::string_view, std::string_view>> paths[] = {
      {o.cacert, {"sslCaFile", "--cacert"}},
      {o.cacertdir, {"sslCaPath", "--cacertdir"}},
      {o.cert, {"sslCert", "--cert"}},
      {o.key, {"sslKey", "--key"}}};
  for (const auto& [value, name] : paths) {
    if (value.empty()) continue;
    const auto& [option, flag] = name;
    names.emplace_back("TLS option " + std::string(option) + "=", std::string(flag) + " ");
    names.emplace_back("certificate in " + std::string(option) + "=",
                       "certificate of " + std::string(flag) + " ");
  }
  if (!o.cert.empty() && o.key.empty()) {
    names.emplace_back("option \"sslCert\" in configuration needs \"sslKey\" too",
                       "--cert needs --key too");
  }
  if (!o.key.empty() && o.cert.empty()) {
    names.emplace_back("option \"sslKey\" in configuration needs \"sslCert\" too",
                       "--key needs --cert too");
  }
}

Result<Config> build_config(const Options& o) {
  Config config;
  std::vector<std::string> named;  // the options -u gives
  // The password when -u gives none: -a, else REDISCLI_AUTH.
  const char* auth = std::getenv("REDISCLI_AUTH");
  const bool password_elsewhere = !o.password.empty() || (auth != nullptr && *auth != '\0');
  if (!o.uri.empty()) {
    auto parsed = Config::parse(o.uri, named);
    if (!parsed && !password_elsewhere && user_without_password(parsed.error())) {
      return Error(errc::invalid_config,
                   "the user of -u is given without a password: give it in -u, with -a, or in "
                   "REDISCLI_AUTH (ACL authentication needs both)");
    }
    if (!parsed && password_elsewhere && user_without_password(parsed.error())) {
      // -u names a user and no password, which the library refuses on its own; the password
      // comes from -a or REDISCLI_AUTH, so -u is read again with a stand-in that is replaced
      // below (and is not counted as -u's password).
      named.clear();
      parsed = Config::parse(with_stand_in_password(o.uri), named);
      if (parsed) {
        parsed->password.clear();
        std::erase(named, std::string("password"));
      }
    }
    if (!parsed) return std::move(parsed).error();
    config = std::move(*parsed);
  } else {
    config.endpoints = {Endpoint{o.host, static_cast<std::uint16_t>(o.port), {}}};
  }
  const auto gives = [&](std::string_view option) {
    return std::find(named.begin(), named.end(), option) != named.end();
  };
  // A flag and -u that set one option must agree: as with -u and -h/-p, given two answers the
  // CLI does not pick one. (Neither value is shown: one may be a password.)
  const auto disagree = [](std::string_view flag, std::string_view option) {
    return Error(errc::invalid_config, std::string(flag) + " and the " + std::string(option) +
                                           " of -u disagree: give one");
  };
  if (!o.password.empty()) {
    if (gives("password") && config.password != o.password) return disagree("-a", "password");
    config.password = o.password;
  } else if (auth && config.password.empty()) {
    config.password = auth;  // a default from the environment: -u's password comes first
  }
  if (!o.user.empty()) {
    if (gives("user") && config.user != o.user) return disagree("--user", "user");
    config.user = o.user;
  }
  // RESP2 unless asked, like redis-cli, so that both print the same; a configuration string
  // that names its protocol keeps it, and one with clientCache=true keeps RESP3 (the cache
  // needs its pushes).
  const bool uri_names_protocol = gives("protocol");
  if (o.protocol) {
    const Protocol asked = *o.protocol == 3 ? Protocol::Resp3 : Protocol::Resp2;
    if (uri_names_protocol && asked != config.protocol) {
      return disagree("-" + std::to_string(*o.protocol), "protocol=");
    }
    if (asked == Protocol::Resp2 && config.client_cache) {
      return Error(errc::invalid_config,
                   "-2 cannot go with clientCache=true: the client-side cache needs RESP3 (its "
                   "invalidations arrive as pushes); leave out -2");
    }
    config.protocol = asked;
  } else if (!uri_names_protocol && !config.client_cache) {
    config.protocol = Protocol::Resp2;
  }
  if (o.database) {
    if (gives("defaultDatabase") && config.default_database != *o.database) {
      return disagree("-n", "database");
    }
    config.default_database = *o.database;
  }
  if (o.tls) {  // a rediss:// URL sets it too; the options below need it
    if (gives("ssl") && !config.ssl) return disagree("--tls", "ssl=");
    config.ssl = true;
  }
  struct PathFlag {
    std::string_view flag;
    std::string_view option;
    const std::string& value;
    std::string Config::*field;
  };
  const PathFlag path_flags[] = {{"--cacert", "sslCaFile", o.cacert, &Config::ssl_ca_file},
                                 {"--cacertdir", "sslCaPath", o.cacertdir, &Config::ssl_ca_path},
                                 {"--cert", "sslCert", o.cert, &Config::ssl_cert},
                                 {"--key", "sslKey", o.key, &Config::ssl_key},
                                 {"--sni", "sslHost", o.sni, &Config::ssl_host}};
  // Two names of one file agree (a relative and an absolute path, a link); --sni is a name.
  const auto same = [](const PathFlag& path, const std::string& given) {
    if (given == path.value) return true;
    std::error_code error;
    return path.flag != "--sni" && std::filesystem::equivalent(given, path.value, error);
  };
  for (const PathFlag& path : path_flags) {
    if (path.value.empty()) continue;
    if (gives(path.option) && !same(path, config.*path.field)) {
      return disagree(path.flag, std::string(path.option) + "=");
    }
    config.*path.field = path.value;
  }
  if (o.insecure) {
    if (gives("sslVerify") && config.ssl_verify) return disagree("--insecure", "sslVerify=");
    config.ssl_verify = false;
  }
  if (!config.ssl && (!o.cacert.empty() || !o.cacertdir.empty() || !o.cert.empty() ||
                      !o.key.empty() || !o.sni.empty() || o.insecure)) {
    return Error(errc::invalid_config,
                 "--cacert, --cacertdir, --cert, --key, --sni and --insecure need --tls (or a "
                 "rediss:// URL with -u)");
  }
  const std::string user_from = !o.user.empty() ? "--user" : gives("user") ? "the user in -u" : "";
  const std::string password_from = !o.password.empty()        ? "-a"
                                    : gives("password")        ? "the password in -u"
                                    : !config.password.empty() ? "REDISCLI_AUTH"
                                                               : "";
  name_flags(o, user_from, password_from);
  if (config.name.empty()) config.name = "redmux-cli";
  config.allow_admin = true;  // an operator's tool: CONFIG, CLIENT, DEBUG … are its job
  config.abort_connect = true;
  config.connect_retry = 0;
  if (auto valid = config.validate(); !valid) return std::move(valid).error();
  return config;
}

/// `text` without the raw format's delimiter (its last newline) when `delimiter` is false.
std::string_view delimited(const std::string& text, bool delimiter) {
  if (delimiter || text.empty() || text.back() != '\n') return text;
  return std::string_view(text).substr(0, text.size() - 1);
}

/// Prints the outcome of one command; returns the exit status it maps to. `delimiter`:
/// whether the raw format ends its output with redis-cli's delimiter (it does not for the
/// commands it prints raw in every format).
int report(const Result<Reply>& result, OutputFormat format, bool delimiter = true) {
  if (result) {
    const Reply& reply = *result;
    switch (format) {
      case OutputFormat::Json:
        print(format_json(reply));
        break;
      case OutputFormat::Raw:
        print(delimited(format_raw(reply), delimiter));
        break;
      default:
        print(format_human(reply));
        break;
    }
    return kExitOk;
  }
  const Error& error = result.error();
  switch (error.code()) {
    case errc::server_error: {
      const std::string message = server_message(error.message());
      switch (format) {
        case OutputFormat::Json:
          print(format_json_error(message));
          break;
        case OutputFormat::Raw:
          print(delimited(format_raw_error(message), delimiter));
          break;
        default:
          print(format_human_error(message));
          break;
      }
      return kExitServerError;
    }
    case errc::not_allowed:
    case errc::admin_required:
    case errc::invalid_argument:
    case errc::unexpected_reply:
      // Refused by redmux before it reached the server: a command-level error, on stderr so
      // a pipe never mistakes it for data.
      print_error("(error) " + error.message());
      return kExitServerError;
    default:
      print_error(error.message());
      return kExitUsage;
  }
}

// Without --timeout a command waits for its reply as long as the server takes, as in
// redis-cli: 24 days, a deadline the library's millisecond counters hold. The library's
// asyncTimeout (5 s) stays the connection's own: its TCP_USER_TIMEOUT and keepalive still
// close a connection whose peer is gone.
constexpr std::chrono::milliseconds kAsLongAsItTakes = std::chrono::hours(24 * 24);
// After this long without a reply, a person at a terminal is told why nothing happens.
constexpr std::chrono::seconds kWaitNote{5};

Result<Reply> run(Database& db, const std::vector<std::string>& words,
                  std::chrono::milliseconds timeout) {
  std::vector<Arg> args(words.begin(), words.end());
  CallOptions options;
  options.timeout = timeout.count() > 0 ? timeout : kAsLongAsItTakes;
  Future<Reply> reply = db.execute(std::span<const Arg>(args), options);
  if (timeout.count() == 0 && !blocks_by_design(words) && isatty(STDERR_FILENO) != 0 &&
      !reply.wait_for(kWaitNote)) {
    print_error("still waiting for the reply to " + words[0] + " after " +
                std::to_string(kWaitNote.count()) +
                " s: the server is busy (a slow command, a SAVE, a long script) or frozen. "
                "redmux-cli waits as long as it takes: Ctrl-C gives up, --timeout SECONDS "
                "bounds the wait");
  }
  return reply.result();
}

// SELECT changes the shared connection's state, which the multiplexer refuses; the CLI
// switches the Database it sends through instead (redmux SELECTs per command as needed).
// The index is read and refused as the server reads and refuses it (string2ll, then the int
// range, then the databases it has, checked against CONFIG GET databases), in the server's
// words; a refused SELECT never switches, and the prompt stays where it was.
int select_database(Multiplexer& mux, Database& db, const std::vector<std::string>& words,
                    OutputFormat format) {
  const auto refuse = [&](std::string message) {
    return report(Result<Reply>(Error(errc::server_error, std::move(message))), format);
  };
  if (words.size() != 2) return refuse("ERR wrong number of arguments for 'select' command");
  const std::optional<long long> number = parse_server_integer(words[1]);
  if (!number) return refuse("ERR value is not an integer or out of range");
  if (*number < std::numeric_limits<int>::min() || *number > std::numeric_limits<int>::max()) {
    return refuse("ERR value is out of range, value must between -2147483648 and 2147483647");
  }
  if (mux.server_identity().mode == "cluster") {  // the server's answers there
    if (*number != 0) return refuse("ERR SELECT is not allowed in cluster mode");
    return report(Result<Reply>(Reply(ReplyType::SimpleString, "OK")), format);
  }
  const int index = static_cast<int>(*number);
  if (index < 0) return refuse("ERR DB index is out of range");
  // The server refused the handshake's SELECT (an ACL without +select): its words, as
  // redis-cli shows them; the library would refuse the PING below for the same reason.
  if (const std::string refusal = mux.server_identity().select_refusal; !refusal.empty()) {
    return refuse(refusal);
  }
  Result<Reply> databases = db.execute({"CONFIG", "GET", "databases"}).result();
  if (databases && databases->size() > 0) {
    const Reply& count = databases->elements().back();
    long long limit = 0;
    const std::string_view text = count.text();
    if (std::from_chars(text.data(), text.data() + text.size(), limit).ec == std::errc() &&
        index >= limit) {
      return refuse("ERR DB index is out of range");
    }
  }
  Database candidate = mux.database(index);
  Result<Reply> check = candidate.execute({"PING"}).result();
  if (!check) return report(check, format);
  db = candidate;
  return report(Result<Reply>(Reply(ReplyType::SimpleString, "OK")), format);
}

int run_command(Multiplexer& mux, Database& db, const std::vector<std::string>& words,
                OutputFormat format, std::chrono::milliseconds timeout) {
  if (iequals(words[0], "select")) return select_database(mux, db, words, format);
  // Like redis-cli, INFO, CLIENT LIST … print as the text they are, in the human format too.
  if (format != OutputFormat::Json && printed_raw_by_redis_cli(words)) {
    return report(run(db, words, timeout), OutputFormat::Raw, /*delimiter=*/false);
  }
  Result<Reply> result = run(db, words, timeout);
  // A server that shuts down closes the connection instead of replying: for SHUTDOWN a
  // connection lost after it was sent is the success redis-cli takes it for (silent, status
  // 0). An error reply (a failed save, say) is still printed.
  if (!result && result.error().code() == errc::outcome_unknown && iequals(words[0], "shutdown")) {
    return kExitOk;
  }
  return report(result, format);
}

std::string prompt_for(const Config& config, const Database& db) {
  std::string prompt = config.endpoints.empty() ? "redis" : config.endpoints.front().to_string();
  if (db.index() != 0) prompt += "[" + std::to_string(db.index()) + "]";
  return prompt + "> ";
}

// The server's command table for Tab completion (COMMAND, once per session); none when the
// server refuses COMMAND (an ACL user without it): the prompt then completes nothing.
CommandNames command_names(Database& db) {
  Result<Reply> table = db.execute({"COMMAND"}).result();
  return table ? CommandNames::from_command_reply(*table) : CommandNames();
}

int interactive(Multiplexer& mux, Database db, OutputFormat format,
                std::chrono::milliseconds timeout) {
  const bool terminal = isatty(STDIN_FILENO) != 0;
  Prompt prompt(history_file(std::getenv("REDMUX_HISTFILE"), std::getenv("HOME")),
                terminal ? command_names(db) : CommandNames());
  for (;;) {
    const std::optional<std::string> line = prompt.read(prompt_for(mux.config(), db));
    if (!line) break;
    const auto words = split_command_line(*line);
    if (!words) {
      print("Invalid argument(s)\n");
      continue;
    }
    if (words->empty()) continue;
    prompt.remember(*line);
    if (iequals((*words)[0], "quit") || iequals((*words)[0], "exit")) break;
    const int status = run_command(mux, db, *words, format, timeout);
    if (status == kExitUsage && !mux.is_connected()) {
      print_error("the connection is down; redmux reconnects in the background");
    }
  }
  return kExitOk;
}

bool should_stop(const Options& o, const LatencyStats& total,
                 std::chrono::steady_clock::time_point started) {
  if (g_interrupted.load()) return true;
  if (o.samples > 0 && static_cast<long long>(total.count()) >= o.samples) return true;
  return o.duration.count() > 0 && std::chrono::steady_clock::now() - started >= o.duration;
}

// Like redis-cli: a PING every 10 ms, timed from the caller's side (here, through the
// multiplexer's queue, write, read and completion: what an application sees).
int latency(Multiplexer& mux, Database& db, const Options& o, OutputFormat format) {
  signal(SIGINT, on_sigint);
  const bool tty = isatty(STDOUT_FILENO) != 0 && format != OutputFormat::Json;
  const bool history = o.mode == Mode::LatencyHistory;
  LatencyStats total, range;
  const std::uint64_t reconnects = mux.status().reconnects;
  const auto started = std::chrono::steady_clock::now();
  auto range_start = started;
  auto emit_range = [&] {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - range_start).count();
    char suffix[64];
    std::snprintf(suffix, sizeof suffix, " -- %.2f seconds range", seconds);
    if (format == OutputFormat::Json) {
      print(range.json(o.percentiles) + "\n");
    } else if (tty) {
      print("\x1b[0G\x1b[2K" + range.line(o.percentiles) + suffix + "\n");
    } else {
      print(range.line(o.percentiles) + suffix + "\n");
    }
  };
  while (!should_stop(o, total, started)) {
    const auto t0 = std::chrono::steady_clock::now();
    Result<std::string> pong = db.ping().result();
    const auto t1 = std::chrono::steady_clock::now();
    if (!pong) {
      if (tty) print("\n");
      print_error("PING failed: " + pong.error().message());
      return pong.error().code() == errc::server_error ? kExitServerError : kExitUsage;
    }
    total.add(t1 - t0);
    range.add(t1 - t0);
    if (tty) print("\x1b[0G\x1b[2K" + (history ? range : total).line(o.percentiles));
    if (history && t1 - range_start >= o.interval) {
      emit_range();
      range.clear();
      range_start = std::chrono::steady_clock::now();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (history) {
    if (range.count() > 0) {
      emit_range();
    } else if (tty) {
      print("\n");
    }
  } else if (format == OutputFormat::Json) {
    print(total.json(o.percentiles) + "\n");
  } else if (tty) {
    print("\n");
  } else {
    print(total.line(o.percentiles) + "\n");
  }
  if (const std::uint64_t again = mux.status().reconnects - reconnects; again > 0) {
    print_error("the connection was re-established " + std::to_string(again) +
                " time(s) during the run: a PING sent across a reconnect waited for it, and "
                "its sample includes the wait");
  }
  return kExitOk;
}

// Every command's time to reply so far, all names merged (this client's PINGs and INFOs).
LatencyHistogram all_replies(const Multiplexer& mux) {
  LatencyHistogram all;
  for (const redmux::LatencyStats& stats : mux.latencies().by_command) all.merge(stats.to_reply);
  return all;
}

// In a Redis Cluster a keyless command through the database goes to any node: the modes that
// read one server's view (--stat, --clients) read the node named on the command line, else
// the first primary, and say which on stderr (`what`: "the server columns are", …).
std::optional<Server> cluster_node(Multiplexer& mux, const Options& o, std::string_view what) {
  std::optional<Server> node;
  for (const ServerEndpoint& server : mux.servers()) {
    if (!server.cluster_node) continue;
    const bool named = server.endpoint.host == o.host && server.endpoint.port == o.port;
    if (named || (!node && server.role == ServerRole::Primary)) node = mux.server(server.endpoint);
    if (named) break;
  }
  if (node) {
    print_error("a Redis Cluster: " + std::string(what) + " node " + node->endpoint().to_string() +
                "'s");
  }
  return node;
}

// redis-cli --stat's line per interval, through the multiplexer (stat.hpp): meanwhile a
// PING every 10 ms, so that this client's p50/p99 (its own histograms) say what an
// application sees now; then INFO for the server's side.
int stat(Multiplexer& mux, Database& db, const Options& o, OutputFormat format) {
  signal(SIGINT, on_sigint);
  // Every line reads the same node, so that each line's requests and rate compare with the
  // line before.
  std::optional<Server> node = cluster_node(mux, o, "the server columns are");
  auto info = [&]() -> Result<std::string> {
    if (node) return node->command<std::string>("INFO").result();
    return db.command<std::string>("INFO").result();
  };
  Result<std::string> first = info();
  const auto first_asked = std::chrono::steady_clock::now();
  // A connection that breaks now (a server restarting) is given the first interval to return.
  while (!first && first.error().code() != errc::server_error && !g_interrupted.load() &&
         std::chrono::steady_clock::now() - first_asked < o.interval) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    first = info();
  }
  if (!first) {
    print_error("INFO failed: " + first.error().message());
    return first.error().code() == errc::server_error ? kExitServerError : kExitUsage;
  }
  StatSample previous;
  parse_info(*first, previous);
  LatencyHistogram before = all_replies(mux);
  std::uint64_t reconnects = mux.status().reconnects;
  bool lost = false;  // an interval's INFO failed: the next line has no rate
  if (format != OutputFormat::Json) print(stat_header() + "\n");
  const auto started = std::chrono::steady_clock::now();
  auto line_start = started;
  long long lines = 0;
  // The line's end: an interval on, or --duration's end if that comes first.
  const auto line_end = [&] {
    const auto end = line_start + o.interval;
    return o.duration.count() > 0 ? std::min(end, started + o.duration) : end;
  };
  while (!g_interrupted.load()) {
    while (!g_interrupted.load() && std::chrono::steady_clock::now() < line_end()) {
      (void)db.ping().result();  // a failure shows as fewer samples and in the INFO below
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    Result<std::string> text = info();
    const auto now = std::chrono::steady_clock::now();
    if (!text) {
      if (text.error().code() == errc::server_error) {
        print_error("INFO failed: " + text.error().message());
        return kExitServerError;
      }
      // The connection broke (the server restarted, say): no line for this interval; the
      // multiplexer reconnects, and the next line, marked, has no rate.
      print_error("INFO failed: " + text.error().message() + "; trying again");
      lost = true;
      line_start = now;
      if (o.duration.count() > 0 && now - started >= o.duration) break;
      continue;
    }
    StatSample sample;
    parse_info(*text, sample);
    const MultiplexerStatus status = mux.status();
    // A reconnect, or a server whose count went back, leaves the interval without a rate: a
    // restarted server counts from 0 (a negative rate), another one from elsewhere.
    sample.reconnected = std::exchange(lost, false) || status.reconnects != reconnects ||
                         sample.requests < previous.requests;
    reconnects = status.reconnects;
    if (!sample.reconnected) {
      // INFO counts itself once processed: the requests of the interval include this one.
      sample.new_requests = sample.requests - previous.requests;
      sample.ops_per_second = static_cast<double>(sample.new_requests) /
                              std::chrono::duration<double>(now - line_start).count();
    }
    const LatencyHistogram after = all_replies(mux);
    const LatencyHistogram interval = after.since(before);
    sample.commands = interval.count();
    sample.p50 = interval.percentile(0.5);
    sample.p99 = interval.percentile(0.99);
    sample.in_flight = status.in_flight;
    sample.commands_per_write = status.commands_per_write();
    print((format == OutputFormat::Json ? stat_json(sample) : stat_line(sample)) + "\n");
    previous = sample;
    before = after;
    line_start = now;
    ++lines;
    if (o.samples > 0 && lines >= o.samples) break;
    if (o.duration.count() > 0 && now - started >= o.duration) break;
  }
  return kExitOk;
}

int clients(Multiplexer& mux, Database& db, const Options& o, OutputFormat format) {
  std::optional<Server> node = cluster_node(mux, o, "the clients listed are");
  Result<std::vector<ClientInfo>> list = std::vector<ClientInfo>{};
  if (node) {
    Result<std::string> text = node->command<std::string>("CLIENT", "LIST").result();
    list = text ? Result<std::vector<ClientInfo>>(ClientInfo::parse_list(*text))
                : Result<std::vector<ClientInfo>>(text.error());
  } else {
    list = db.client_list().result();
  }
  if (!list) return report(Result<Reply>(list.error()), format);
  if (format == OutputFormat::Json) {
    Json out = Json::array();
    for (const ClientGroup& g : group_clients(*list)) {
      out.push_back({{"name", utf8_text(g.name)},
                     {"clients", g.connections},
                     {"flags", g.flags},
                     {"omem", g.omem},
                     {"tot_mem", g.tot_mem}});
    }
    print(out.dump() + "\n");
    // The JSON holds the groups; what needs a person's attention goes where they look.
    for (const std::string& line : client_warnings(*list, o.omem_warn)) {
      std::fprintf(stderr, "redmux-cli: %s\n", line.c_str());
    }
  } else {
    print(format_clients(*list, o.omem_warn));
  }
  return kExitOk;
}

int scan(Database& db, const Options& o, OutputFormat format) {
  try {
    if (format == OutputFormat::Json) {
      Json keys = Json::array();
      for (const std::string& key : scan_keys(db, ScanOptions{o.pattern, o.count, o.key_type})) {
        keys.push_back(utf8_text(key));
      }
      print(keys.dump() + "\n");
      return kExitOk;
    }
    std::string out;
    for (const std::string& key : scan_keys(db, ScanOptions{o.pattern, o.count, o.key_type})) {
      out += key;
      out += '\n';
      if (out.size() > 64 * 1024) {
        print(out);
        out.clear();
      }
    }
    print(out);
    return kExitOk;
  } catch (const RedmuxError& e) {
    return report(Result<Reply>(Error(e.code(), e.what())), format);
  }
}

int main_cli(int argc, char** argv) {
  const ParseResult parsed = parse_options(std::vector<std::string>(argv, argv + argc));
  if (!parsed.error.empty()) {
    print_error(parsed.error);
    return kExitUsage;
  }
  const Options& o = parsed.options;
  if (o.mode == Mode::Help) {
    print(usage_text());
    return kExitOk;
  }
  if (o.mode == Mode::Version) {
    print("redmux-cli " + std::string(kVersion) + "\n");
    return kExitOk;
  }
  Result<Config> config = build_config(o);
  if (!config) {
    print_error(config.error().message());
    return kExitUsage;
  }
  // --stat reads this client's latencies from the multiplexer's own histograms.
  if (o.mode == Mode::Stat) config->latency_histograms = true;
  std::shared_ptr<Multiplexer> mux;
  try {
    mux = Multiplexer::connect(*config);
  } catch (const RedmuxError& e) {
    print_error(e.what());
    return kExitUsage;
  }
  const OutputFormat format = resolve_format(o.format);
  Database db = mux->database();
  switch (o.mode) {
    case Mode::Command:
      return run_command(*mux, db, o.command, format, o.timeout);
    case Mode::Interactive:
      return interactive(*mux, db, format, o.timeout);
    case Mode::Latency:
    case Mode::LatencyHistory:
      return latency(*mux, db, o, format);
    case Mode::Stat:
      return stat(*mux, db, o, format);
    case Mode::Clients:
      return clients(*mux, db, o, format);
    case Mode::Scan:
      return scan(db, o, format);
    default:
      return kExitUsage;
  }
}

}  // namespace
}  // namespace redmux::cli

int main(int argc, char** argv) {
  try {
    return redmux::cli::main_cli(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "redmux-cli: %s\n", e.what());
    return 2;
  }
}

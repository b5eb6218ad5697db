// Config: the configuration string and URL forms, every option, every error, and the
// promise that no password is ever printed.
#include "redmux/config.hpp"

#include <gtest/gtest.h>
#include <chrono>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace redmux {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

Config parse_ok(std::string_view text) {
  Result<Config> parsed = Config::parse(text);
  if (!parsed) {
    ADD_FAILURE() << "parse(\"" << text << "\") failed: " << parsed.error().message();
    return Config{};
  }
  return *parsed;
}

// The message of the error parse() must return; fails the test when parse succeeds.
std::string parse_error(std::string_view text) {
  Result<Config> parsed = Config::parse(text);
  if (parsed) {
    ADD_FAILURE() << "parse(\"" << text << "\") succeeded: " << parsed->to_string();
    return {};
  }
  EXPECT_EQ(parsed.error().code(), errc::invalid_config) << text;
  return parsed.error().message();
}

std::string validate_error(const Config& config) {
  Result<void> valid = config.validate();
  if (valid) {
    ADD_FAILURE() << "validate() succeeded for " << config.to_string();
    return {};
  }
  EXPECT_EQ(valid.error().code(), errc::invalid_config);
  return valid.error().message();
}

bool contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

Endpoint tcp(std::string host, std::uint16_t port = 6379) {
  Endpoint endpoint;
  endpoint.host = std::move(host);
  endpoint.port = port;
  return endpoint;
}

Endpoint unix_socket(std::string path) {
  Endpoint endpoint;
  endpoint.unix_path = std::move(path);
  return endpoint;
}

Config with_endpoint() {
  Config config;
  config.endpoints.push_back(tcp("localhost"));
  return config;
}

// --- defaults -------------------------------------------------------------------------

TEST(ConfigDefaults, MatchTheDocumentedValues) {
  const Config config;
  EXPECT_TRUE(config.endpoints.empty());
  EXPECT_EQ(config.name, "");
  EXPECT_EQ(config.user, "");
  EXPECT_EQ(config.password, "");
  EXPECT_EQ(config.default_database, 0);
  EXPECT_EQ(config.protocol, Protocol::Resp3);
  EXPECT_FALSE(config.allow_admin);
  EXPECT_TRUE(config.abort_connect);
  EXPECT_EQ(config.connect_timeout, milliseconds(5000));
  EXPECT_EQ(config.connect_retry, 3);
  EXPECT_EQ(config.sync_timeout, milliseconds(5000));
  EXPECT_EQ(config.async_timeout, milliseconds(5000));
  EXPECT_EQ(config.keep_alive, seconds(60));
  EXPECT_EQ(config.heartbeat_interval, milliseconds(1000));
  EXPECT_EQ(config.max_queued_commands, 100000u);
  EXPECT_EQ(config.queue_full_policy, QueueFullPolicy::Fail);
  EXPECT_EQ(config.io_threads, 1);
  EXPECT_EQ(config.connections_per_endpoint, 1);
  EXPECT_FALSE(config.shared_subscription_connection);
  EXPECT_EQ(config.blocking_pool_size, 4);
  EXPECT_EQ(config.reconnect_base_delay, milliseconds(100));
  EXPECT_EQ(config.reconnect_max_delay, milliseconds(10000));
  EXPECT_EQ(config.backlog_policy, BacklogPolicy::Queue);
  EXPECT_FALSE(config.retry_read_only_commands);
  EXPECT_FALSE(config.ssl);
  EXPECT_EQ(config.ssl_host, "");
  EXPECT_EQ(config.ssl_ca_file, "");
  EXPECT_EQ(config.ssl_ca_path, "");
  EXPECT_EQ(config.ssl_cert, "");
  EXPECT_EQ(config.ssl_key, "");
  EXPECT_TRUE(config.ssl_verify);
  EXPECT_EQ(config.service_name, "");
  EXPECT_EQ(config.sentinel_user, "");
  EXPECT_EQ(config.sentinel_password, "");
}

TEST(ConfigDefaults, AHostAloneKeepsEveryDefault) {
  Config expected = with_endpoint();
  EXPECT_EQ(parse_ok("localhost"), expected);
}

// --- endpoints ------------------------------------------------------------------------

TEST(ConfigEndpoints, HostWithAndWithoutPort) {
  const Config config = parse_ok("cache-1:6380,cache-2,10.0.0.7:7000");
  ASSERT_EQ(config.endpoints.size(), 3u);
  EXPECT_EQ(config.endpoints[0], tcp("cache-1", 6380));
  EXPECT_EQ(config.endpoints[1], tcp("cache-2", 6379));
  EXPECT_EQ(config.endpoints[2], tcp("10.0.0.7", 7000));
}

TEST(ConfigEndpoints, Ipv6InBrackets) {
  const Config config = parse_ok("[::1]:6380,[fe80::1%eth0]");
  ASSERT_EQ(config.endpoints.size(), 2u);
  EXPECT_EQ(config.endpoints[0], tcp("::1", 6380));
  EXPECT_EQ(config.endpoints[1], tcp("fe80::1%eth0", 6379));
  EXPECT_EQ(config.endpoints[0].to_string(), "[::1]:6380");
  EXPECT_EQ(parse_ok("[::ffff:10.0.0.1]").endpoints[0], tcp("::ffff:10.0.0.1", 6379));
  // Brackets hold an IPv6 address, nothing else: refused here, not found out at connect.
  for (const char* bad : {"[1.2.3.4]:6379", "[example.com]", "[zz::1]:6379", "[1::2::3]"}) {
    EXPECT_TRUE(contains(parse_error(bad), "brackets are only for IPv6 addresses")) << bad;
  }
  EXPECT_TRUE(contains(parse_error("redis://[zz::1]:6379"), "brackets are only for IPv6")) << "URL";
}

TEST(ConfigEndpoints, UnixSocketPath) {
  const Config config = parse_ok("/run/redis/redis.sock,name=api");
  ASSERT_EQ(config.endpoints.size(), 1u);
  EXPECT_TRUE(config.endpoints[0].is_unix());
  EXPECT_EQ(config.endpoints[0].unix_path, "/run/redis/redis.sock");
  EXPECT_EQ(config.endpoints[0].to_string(), "/run/redis/redis.sock");
  EXPECT_EQ(config.endpoints[0], unix_socket("/run/redis/redis.sock"));
}

TEST(ConfigEndpoints, ToString) {
  EXPECT_EQ(tcp("h", 1).to_string(), "h:1");
  EXPECT_FALSE(tcp("h").is_unix());
}

TEST(ConfigEndpoints, OptionsAndEndpointsMayInterleave) {
  const Config config = parse_ok("name=api,a:1,abortConnect=false,b:2");
  ASSERT_EQ(config.endpoints.size(), 2u);
  EXPECT_EQ(config.name, "api");
  EXPECT_FALSE(config.abort_connect);
}

TEST(ConfigEndpoints, WhitespaceAndEmptyItemsAreIgnored) {
  const Config config = parse_ok("  a:1 , ,b:2,  name = api ,");
  ASSERT_EQ(config.endpoints.size(), 2u);
  EXPECT_EQ(config.endpoints[0].host, "a");
  EXPECT_EQ(config.name, "api");
}

TEST(ConfigEndpoints, BadPorts) {
  for (const char* text : {"h:0", "h:65536", "h:-1", "h:abc", "h:", "[::1]:99999", "h:6379x"}) {
    const std::string message = parse_error(text);
    EXPECT_TRUE(contains(message, "invalid port")) << message;
    EXPECT_TRUE(contains(message, "1 … 65535")) << message;
  }
}

TEST(ConfigEndpoints, APortThatIsNotANumberIsNotQuotedForItMayBeAPassword) {
  // "user:password" where an endpoint was expected: "@host" left out of a URL, or written
  // into a configuration string.
  for (const char* text :
       {"redis://:TOPSECRET", "redis://app:TOPSECRET/0", "rediss://default:TOPSECRET",
        "redis://app:TOPSECRET%40cache.internal:6380", "valkey://app:TOPSECRET,h:1",
        "127.0.0.1:6379,app:TOPSECRET"}) {
    const std::string message = parse_error(text);
    EXPECT_FALSE(contains(message, "TOPSECRET")) << text << " → " << message;
    EXPECT_TRUE(contains(message, "not shown")) << text << " → " << message;
  }
  EXPECT_EQ(parse_error("redis://app:TOPSECRET"),
            "invalid port in endpoint (not shown: a URL without \"@\" reads \"user:password\" as "
            "\"host:port\"; user info goes before \"@host\", e.g. "
            "\"redis://user:password@localhost:6379\") in URL; expected 1 … 65535");
  EXPECT_EQ(parse_error("app:TOPSECRET"),
            "invalid port in endpoint \"app:…\" in configuration string: not a number (not shown, "
            "in case it is a password; a password goes in password=); expected 1 … 65535");
  // "user:password@host" without "redis://": a URL's user info in a configuration string.
  for (const char* text :
       {"app:TOPSECRET@127.0.0.1:6379", ":TOPSECRET@127.0.0.1", "app:TOPSECRET@[::1]:6379",
        "redis//app:TOPSECRET@localhost", "127.0.0.1:6379,app:TOPSECRET@h"}) {
    EXPECT_EQ(parse_error(text),
              "endpoint in configuration string contains \"@\" (not shown: what comes before "
              "it may be a password); an endpoint is \"host:port\": give user= and password= "
              "as options, or write a URL, e.g. \"redis://user:password@localhost:6379\"")
        << text;
  }
  // A number out of range is quoted, and a URL's hosts after its user info are.
  EXPECT_TRUE(contains(parse_error("h:65536"), "invalid port \"65536\""));
  EXPECT_TRUE(contains(parse_error("redis://u:p@h:x1"), "invalid port in endpoint \"h:…\""));
}

TEST(ConfigEndpoints, BadHosts) {
  EXPECT_TRUE(contains(parse_error("::1"), "must be in brackets"));
  EXPECT_TRUE(contains(parse_error("::1:6379"), "[::1]:6379"));
  EXPECT_TRUE(contains(parse_error("[::1"), "closing"));
  EXPECT_TRUE(contains(parse_error("[::1]6379"), "\":port\""));
  EXPECT_TRUE(contains(parse_error("[localhost]:1"), "only for IPv6"));
  EXPECT_TRUE(contains(parse_error(":6379"), "has no host"));
  EXPECT_TRUE(contains(parse_error("ho st"), "invalid host \"ho st\""));
  EXPECT_TRUE(contains(parse_error("a@b:1"), "contains \"@\""));
}

TEST(ConfigEndpoints, DuplicateEndpointIsAnError) {
  EXPECT_TRUE(contains(parse_error("a:1,b:2,a:1"), "endpoint \"a:1\" is listed twice"));
  EXPECT_TRUE(contains(parse_error("a,a:6379"), "listed twice"));
  EXPECT_TRUE(contains(parse_error("Cache:1,cache:1"), "listed twice"));
  EXPECT_TRUE(contains(parse_error("/tmp/s,/tmp/s"), "listed twice"));
  EXPECT_EQ(parse_ok("a:1,a:2").endpoints.size(), 2u);
}

TEST(ConfigEndpoints, NoEndpointIsAnError) {
  for (const char* text : {"", "   ", ",", ", ,", "name=api", "abortConnect=false,name=x"}) {
    const std::string message = parse_error(text);
    EXPECT_TRUE(contains(message, "localhost:6379")) << message;
  }
  EXPECT_TRUE(contains(parse_error(""), "empty configuration string"));
  EXPECT_TRUE(contains(parse_error("name=api"), "no endpoint in configuration string"));
}

TEST(ConfigEndpoints, BareOptionNameIsAForgottenValue) {
  EXPECT_TRUE(contains(parse_error("localhost,ssl"),
                       "option \"ssl\" in configuration string "
                       "has no value; write ssl=…"));
  EXPECT_TRUE(contains(parse_error("localhost,AllowAdmin"), "allowAdmin=…"));
}

// --- every option ---------------------------------------------------------------------

TEST(ConfigOptions, Identity) {
  const Config config = parse_ok("h,name=bookstore-api,user=app,password=s3cret,defaultDatabase=7");
  EXPECT_EQ(config.name, "bookstore-api");
  EXPECT_EQ(config.user, "app");
  EXPECT_EQ(config.password, "s3cret");
  EXPECT_EQ(config.default_database, 7);
  EXPECT_EQ(parse_ok("h,db=3").default_database, 3);
}

TEST(ConfigOptions, ValueMayContainEquals) {
  EXPECT_EQ(parse_ok("h,password=a=b==").password, "a=b==");
}

TEST(ConfigOptions, EmptyValueMeansDefault) {
  EXPECT_EQ(parse_ok("h,name=").name, "");
}

TEST(ConfigOptions, Protocol) {
  EXPECT_EQ(parse_ok("h,protocol=resp3").protocol, Protocol::Resp3);
  EXPECT_EQ(parse_ok("h,protocol=resp2").protocol, Protocol::Resp2);
  EXPECT_EQ(parse_ok("h,protocol=RESP2").protocol, Protocol::Resp2);
  EXPECT_EQ(parse_ok("h,protocol=2").protocol, Protocol::Resp2);
  EXPECT_EQ(parse_ok("h,protocol=3").protocol, Protocol::Resp3);
  const std::string message = parse_error("h,protocol=resp4");
  EXPECT_EQ(message,
            "invalid value \"resp4\" for option \"protocol\" in configuration string: expected "
            "resp3 or resp2");
}

TEST(ConfigOptions, Booleans) {
  struct Case {
    const char* key;
    bool Config::*field;
  };
  const Case cases[] = {
      {"allowAdmin", &Config::allow_admin},
      {"abortConnect", &Config::abort_connect},
      {"sharedSubscriptionConnection", &Config::shared_subscription_connection},
      {"retryReadOnlyCommands", &Config::retry_read_only_commands},
      {"retryClusterDown", &Config::retry_cluster_down},
      {"ssl", &Config::ssl},
  };
  for (const Case& c : cases) {
    for (const char* yes : {"true", "TRUE", "True", "yes", "YES", "1"}) {
      EXPECT_TRUE(parse_ok(std::string("h,") + c.key + "=" + yes).*c.field) << c.key << yes;
    }
    for (const char* no : {"false", "False", "no", "NO", "0"}) {
      EXPECT_FALSE(parse_ok(std::string("h,") + c.key + "=" + no).*c.field) << c.key << no;
    }
    for (const char* bad : {"", "2", "tru", "on", "y"}) {
      const std::string message = parse_error(std::string("h,") + c.key + "=" + bad);
      EXPECT_EQ(message, std::string("invalid value \"") + bad + "\" for option \"" + c.key +
                             "\" in configuration string: expected true/false, yes/no or 1/0");
    }
  }
  EXPECT_FALSE(parse_ok("h,ssl=true,sslVerify=no").ssl_verify);
}

TEST(ConfigOptions, MillisecondDurations) {
  struct Case {
    const char* key;
    milliseconds Config::*field;
  };
  const Case cases[] = {
      {"connectTimeout", &Config::connect_timeout},
      {"syncTimeout", &Config::sync_timeout},
      {"asyncTimeout", &Config::async_timeout},
      {"heartbeatInterval", &Config::heartbeat_interval},
      {"reconnectBaseDelay", &Config::reconnect_base_delay},
      {"reconnectMaxDelay", &Config::reconnect_max_delay},
  };
  for (const Case& c : cases) {
    const std::string prefix = std::string("h,") + c.key + "=";
    // reconnectBaseDelay may not exceed reconnectMaxDelay (default 10 s): lift the latter.
    const auto good = [&](std::string_view value) {
      std::string text = prefix + std::string(value);
      if (c.field == &Config::reconnect_base_delay) text += ",reconnectMaxDelay=2147483647";
      return parse_ok(text).*c.field;
    };
    EXPECT_EQ(good("250"), milliseconds(250)) << c.key;
    EXPECT_EQ(good("250ms"), milliseconds(250)) << c.key;
    EXPECT_EQ(good("250MS"), milliseconds(250)) << c.key;
    EXPECT_EQ(good("5s"), milliseconds(5000)) << c.key;
    EXPECT_EQ(good("2m"), milliseconds(120000)) << c.key;
    EXPECT_EQ(good("2147483647"), milliseconds(2147483647)) << c.key;
    for (const char* bad : {"abc", "5 s", "5h", "1.5s", "s", ""}) {
      const std::string message = parse_error(prefix + bad);
      EXPECT_TRUE(contains(
          message, std::string("invalid value \"") + bad + "\" for option \"" + c.key + "\""))
          << message;
      EXPECT_TRUE(contains(message, "expected milliseconds, e.g. 5000, 250ms, 5s or 1m"))
          << message;
    }
    // heartbeatInterval=0 turns the heartbeat off; every other duration must be positive.
    const bool zero_allowed = c.field == &Config::heartbeat_interval;
    const std::string range = zero_allowed ? "0" : "1";
    for (const char* out_of_range : {"0", "-5", "2147483648", "2147484s", "99999999999999999999"}) {
      if (zero_allowed && std::string_view(out_of_range) == "0") continue;
      const std::string message = parse_error(prefix + out_of_range);
      EXPECT_TRUE(contains(message, "out of range; expected " + range + " … 2147483647 ms"))
          << message;
    }
  }
  EXPECT_EQ(parse_ok("h,heartbeatInterval=0").heartbeat_interval, milliseconds(0));
}

TEST(ConfigOptions, KeepAliveIsInSeconds) {
  EXPECT_EQ(parse_ok("h,keepAlive=30").keep_alive, seconds(30));
  EXPECT_EQ(parse_ok("h,keepAlive=30s").keep_alive, seconds(30));
  EXPECT_EQ(parse_ok("h,keepAlive=2m").keep_alive, seconds(120));
  EXPECT_EQ(parse_ok("h,keepAlive=3000ms").keep_alive, seconds(3));
  EXPECT_EQ(parse_ok("h,keepAlive=0").keep_alive, seconds(0));
  EXPECT_TRUE(contains(parse_error("h,keepAlive=1500ms"), "expected whole seconds"));
  EXPECT_TRUE(contains(parse_error("h,keepAlive=32768"), "expected 0 … 32767 seconds"));
  EXPECT_TRUE(contains(parse_error("h,keepAlive=-1"), "expected 0 … 32767 seconds"));
  EXPECT_TRUE(contains(parse_error("h,keepAlive=x"), "expected seconds, e.g. 60, 60s or 2m"));
}

TEST(ConfigOptions, Counts) {
  struct Case {
    const char* key;
    long long min;
    long long max;
  };
  const Case cases[] = {
      {"defaultDatabase", 0, 2147483647},
      {"connectRetry", 0, 2147483647},
      {"ioThreads", 1, 256},
      {"connectionsPerEndpoint", 1, 256},
      {"blockingPoolSize", 1, 1024},
      {"maxQueuedCommands", 1, 4294967295},
  };
  for (const Case& c : cases) {
    const std::string prefix = std::string("h,") + c.key + "=";
    const std::string range =
        "out of range; expected " + std::to_string(c.min) + " … " + std::to_string(c.max);
    EXPECT_TRUE(parse_ok(prefix + std::to_string(c.min)).to_string().size() > 0) << c.key;
    EXPECT_TRUE(parse_ok(prefix + std::to_string(c.max)).to_string().size() > 0) << c.key;
    EXPECT_TRUE(contains(parse_error(prefix + std::to_string(c.max + 1)), range)) << c.key;
    EXPECT_TRUE(contains(parse_error(prefix + "-1"), range)) << c.key;
    if (c.min > 0) {
      EXPECT_TRUE(contains(parse_error(prefix + "0"), range)) << c.key;
    }
    for (const char* bad : {"x", "1.5", "+1", "1e3", ""}) {
      EXPECT_EQ(parse_error(prefix + bad), std::string("invalid value \"") + bad +
                                               "\" for option \"" + c.key +
                                               "\" in configuration string: expected a whole "
                                               "number");
    }
  }
  const Config config = parse_ok(
      "h,connectRetry=0,ioThreads=4,connectionsPerEndpoint=8,blockingPoolSize=16,"
      "maxQueuedCommands=500");
  EXPECT_EQ(config.connect_retry, 0);
  EXPECT_EQ(config.io_threads, 4);
  EXPECT_EQ(config.connections_per_endpoint, 8);
  EXPECT_EQ(config.blocking_pool_size, 16);
  EXPECT_EQ(config.max_queued_commands, 500u);
  EXPECT_EQ(parse_ok("h,maxQueuedCommands=4294967295").max_queued_commands, 4294967295u);
}

TEST(ConfigOptions, Policies) {
  EXPECT_EQ(parse_ok("h,queueFullPolicy=wait").queue_full_policy, QueueFullPolicy::Wait);
  EXPECT_EQ(parse_ok("h,queueFullPolicy=FAIL").queue_full_policy, QueueFullPolicy::Fail);
  EXPECT_TRUE(contains(parse_error("h,queueFullPolicy=block"), "expected fail or wait"));
  EXPECT_EQ(parse_ok("h,backlogPolicy=failFast").backlog_policy, BacklogPolicy::FailFast);
  EXPECT_EQ(parse_ok("h,backlogPolicy=failfast").backlog_policy, BacklogPolicy::FailFast);
  EXPECT_EQ(parse_ok("h,backlogPolicy=queue").backlog_policy, BacklogPolicy::Queue);
  EXPECT_TRUE(contains(parse_error("h,backlogPolicy=drop"), "expected queue or failFast"));
}

TEST(ConfigOptions, Tls) {
  const Config config = parse_ok(
      "h,ssl=true,sslHost=redis.internal,sslCaFile=/etc/ca.pem,sslCaPath=/etc/ssl/certs,"
      "sslCert=/etc/client.pem,sslKey=/etc/client.key,sslVerify=false");
  EXPECT_TRUE(config.ssl);
  EXPECT_EQ(config.ssl_host, "redis.internal");
  EXPECT_EQ(config.ssl_ca_file, "/etc/ca.pem");
  EXPECT_EQ(config.ssl_ca_path, "/etc/ssl/certs");
  EXPECT_EQ(config.ssl_cert, "/etc/client.pem");
  EXPECT_EQ(config.ssl_key, "/etc/client.key");
  EXPECT_FALSE(config.ssl_verify);
}

TEST(ConfigOptions, TlsOptionsNeedSsl) {
  for (const char* option : {"sslHost=x", "sslCaFile=/ca", "sslCaPath=/d", "sslVerify=false"}) {
    const std::string message = parse_error(std::string("h,") + option);
    EXPECT_TRUE(contains(message, "needs ssl=true")) << message;
  }
  EXPECT_TRUE(contains(parse_error("h,ssl=false,sslCaFile=/ca"), "\"sslCaFile\""));
  // The default value is not "set": sslVerify=true without ssl is harmless.
  EXPECT_FALSE(parse_ok("h,sslVerify=true").ssl);
}

TEST(ConfigOptions, ClientCertificateNeedsItsKey) {
  EXPECT_TRUE(contains(parse_error("h,ssl=true,sslCert=/c"), "option \"sslCert\""));
  EXPECT_TRUE(contains(parse_error("h,ssl=true,sslCert=/c"), "needs \"sslKey\""));
  EXPECT_TRUE(contains(parse_error("h,ssl=true,sslKey=/k"), "needs \"sslCert\""));
}

TEST(ConfigOptions, Sentinel) {
  const Config config =
      parse_ok("s1:26379,s2:26379,serviceName=mymaster,sentinelUser=sen,sentinelPassword=pw");
  EXPECT_EQ(config.service_name, "mymaster");
  EXPECT_EQ(config.sentinel_user, "sen");
  EXPECT_EQ(config.sentinel_password, "pw");
  EXPECT_TRUE(contains(parse_error("h,sentinelPassword=pw"), "needs \"serviceName\""));
  EXPECT_TRUE(
      contains(parse_error("h,serviceName=m,sentinelUser=u"), "without \"sentinelPassword\""));
  EXPECT_EQ(parse_ok("h,serviceName=m,sentinelPassword=pw").sentinel_password, "pw");
}

TEST(ConfigOptions, ReplicasAndFailovers) {
  const Config defaults = parse_ok("h");
  EXPECT_TRUE(defaults.replica_health_check);
  EXPECT_EQ(defaults.replica_max_lag, std::chrono::seconds(0));
  EXPECT_TRUE(defaults.failover_wait);
  const Config config = parse_ok("h1,h2,replicaHealthCheck=false,replicaMaxLag=15,failoverWait=no");
  EXPECT_FALSE(config.replica_health_check);
  EXPECT_EQ(config.replica_max_lag, std::chrono::seconds(15));
  EXPECT_FALSE(config.failover_wait);
  EXPECT_EQ(parse_ok("h,replicaMaxLag=2m").replica_max_lag, std::chrono::seconds(120));
  EXPECT_EQ(config.to_string(),
            "h1:6379,h2:6379,replicaHealthCheck=false,replicaMaxLag=15,failoverWait=false");
  EXPECT_EQ(parse_ok(config.to_string()), config);
  EXPECT_TRUE(contains(parse_error("h,replicaMaxLag=86401"), "out of range"));
  EXPECT_TRUE(contains(parse_error("h,failoverWait=maybe"), "option \"failoverWait\""));
}

TEST(ConfigOptions, UserNeedsPassword) {
  const std::string message = parse_error("h,user=app");
  EXPECT_TRUE(contains(message,
                       "option \"user\" in configuration string is set without "
                       "\"password\""))
      << message;
  EXPECT_EQ(parse_ok("h,password=pw").user, "");  // password alone: the default user
}

TEST(ConfigOptions, ClientNameWithoutWhitespace) {
  EXPECT_TRUE(contains(parse_error("h,name=my app"), "CLIENT SETNAME"));
  // The server takes only ! to ~: é (UTF-8 0xc3 0xa9) is refused here, not at connect.
  EXPECT_TRUE(contains(parse_error("h,name=caf\xc3\xa9"), "0xc3"))
      << parse_error("h,name=caf\xc3\xa9");
  EXPECT_TRUE(Config::parse("h,name=svc-1.eu_west@!~"));
}

TEST(ConfigOptions, ReconnectDelaysInOrder) {
  EXPECT_TRUE(contains(parse_error("h,reconnectBaseDelay=5s,reconnectMaxDelay=1s"),
                       "reconnectBaseDelay=5000 is greater than reconnectMaxDelay=1000"));
  EXPECT_EQ(parse_ok("h,reconnectBaseDelay=1s,reconnectMaxDelay=1s").reconnect_base_delay,
            milliseconds(1000));
}

// --- keys are case-insensitive; unknown and repeated options ----------------------------

TEST(ConfigKeys, AnyCaseOfEveryKey) {
  const Config config = parse_ok(
      "h,NAME=a,uSeR=u,PASSWORD=p,DefaultDatabase=2,PROTOCOL=resp2,allowadmin=true,"
      "ABORTCONNECT=false,connecttimeout=1,CONNECTRETRY=1,synctimeout=2,ASYNCTIMEOUT=3,"
      "keepalive=4,HEARTBEATINTERVAL=5,maxqueuedcommands=6,QUEUEFULLPOLICY=wait,iothreads=2,"
      "CONNECTIONSPERENDPOINT=2,sharedsubscriptionconnection=true,BLOCKINGPOOLSIZE=2,"
      "reconnectbasedelay=7,RECONNECTMAXDELAY=8,backlogpolicy=failfast,"
      "RETRYREADONLYCOMMANDS=true,SSL=true,sslhost=x,SSLCAFILE=/f,sslcapath=/p,SSLCERT=/c,"
      "sslkey=/k,SSLVERIFY=false,servicename=m,SENTINELUSER=su,sentinelpassword=sp");
  EXPECT_EQ(config.name, "a");
  EXPECT_EQ(config.user, "u");
  EXPECT_EQ(config.password, "p");
  EXPECT_EQ(config.default_database, 2);
  EXPECT_EQ(config.protocol, Protocol::Resp2);
  EXPECT_TRUE(config.allow_admin);
  EXPECT_FALSE(config.abort_connect);
  EXPECT_EQ(config.connect_timeout, milliseconds(1));
  EXPECT_EQ(config.connect_retry, 1);
  EXPECT_EQ(config.sync_timeout, milliseconds(2));
  EXPECT_EQ(config.async_timeout, milliseconds(3));
  EXPECT_EQ(config.keep_alive, seconds(4));
  EXPECT_EQ(config.heartbeat_interval, milliseconds(5));
  EXPECT_EQ(config.max_queued_commands, 6u);
  EXPECT_EQ(config.queue_full_policy, QueueFullPolicy::Wait);
  EXPECT_EQ(config.io_threads, 2);
  EXPECT_EQ(config.connections_per_endpoint, 2);
  EXPECT_TRUE(config.shared_subscription_connection);
  EXPECT_EQ(config.blocking_pool_size, 2);
  EXPECT_EQ(config.reconnect_base_delay, milliseconds(7));
  EXPECT_EQ(config.reconnect_max_delay, milliseconds(8));
  EXPECT_EQ(config.backlog_policy, BacklogPolicy::FailFast);
  EXPECT_TRUE(config.retry_read_only_commands);
  EXPECT_TRUE(config.ssl);
  EXPECT_EQ(config.ssl_host, "x");
  EXPECT_EQ(config.ssl_ca_file, "/f");
  EXPECT_EQ(config.ssl_ca_path, "/p");
  EXPECT_EQ(config.ssl_cert, "/c");
  EXPECT_EQ(config.ssl_key, "/k");
  EXPECT_FALSE(config.ssl_verify);
  EXPECT_EQ(config.service_name, "m");
  EXPECT_EQ(config.sentinel_user, "su");
  EXPECT_EQ(config.sentinel_password, "sp");
}

TEST(ConfigKeys, UnknownOptionNamesItSuggestsAndListsValidOnes) {
  const std::string message = parse_error("h,abortconect=false");
  EXPECT_TRUE(contains(message,
                       "unknown option \"abortconect\" in configuration string (did you mean "
                       "\"abortConnect\"?); valid options: abortConnect, allowAdmin, "
                       "asyncTimeout, availabilityZone, backlogPolicy, blockingPoolSize,"))
      << message;
  EXPECT_TRUE(contains(message, "sslVerify, syncTimeout, user (db is an alias of defaultDatabase)"))
      << message;
  EXPECT_FALSE(contains(message, "false"));  // the value is not echoed
}

TEST(ConfigKeys, NoSuggestionWhenNothingIsClose) {
  const std::string message = parse_error("h,frobnicate=1");
  EXPECT_TRUE(contains(message, "unknown option \"frobnicate\" in configuration string; valid"))
      << message;
  EXPECT_FALSE(contains(message, "did you mean"));
}

TEST(ConfigKeys, SuggestionsForTypicalTypos) {
  EXPECT_TRUE(contains(parse_error("h,asynctimout=1"), "did you mean \"asyncTimeout\""));
  EXPECT_TRUE(contains(parse_error("h,pasword=x"), "did you mean \"password\""));
  EXPECT_TRUE(contains(parse_error("h,maxQueuedCommand=1"), "did you mean \"maxQueuedCommands\""));
}

TEST(ConfigKeys, StackExchangeOnlyOptionsAreNamedAsSuch) {
  const std::string message = parse_error("h,tiebreaker=__Booksleeve_TieBreak");
  EXPECT_TRUE(contains(message,
                       "option \"tiebreaker\" in configuration string is a "
                       "StackExchange.Redis option that redmux does not support; "
                       "valid options: "))
      << message;
  EXPECT_TRUE(contains(parse_error("h,ConfigChannel=x"), "StackExchange.Redis option"));
}

TEST(ConfigKeys, OptionGivenTwiceIsAnError) {
  EXPECT_EQ(parse_error("h,name=a,name=b"),
            "option \"name\" is given twice in configuration string");
  EXPECT_EQ(parse_error("h,Name=a,NAME=b"),
            "option \"name\" is given twice in configuration string");
  EXPECT_EQ(parse_error("h,db=1,defaultDatabase=2"),
            "option \"defaultDatabase\" is given twice in configuration string");
}

TEST(ConfigKeys, EmptyKey) {
  EXPECT_TRUE(contains(parse_error("h,=5"), "has a value but no name"));
}

// --- secrets -------------------------------------------------------------------------

TEST(ConfigSecrets, ToStringMasksPasswords) {
  const Config config =
      parse_ok("h,user=app,password=hunter2,serviceName=m,sentinelPassword=tiger7");
  const std::string text = config.to_string();
  EXPECT_FALSE(contains(text, "hunter2")) << text;
  EXPECT_FALSE(contains(text, "tiger7")) << text;
  EXPECT_TRUE(contains(text, "password=*****")) << text;
  EXPECT_TRUE(contains(text, "sentinelPassword=*****")) << text;
}

TEST(ConfigSecrets, ErrorsNeverContainPasswords) {
  const char* texts[] = {
      "h,password=hunter2,abortconect=1",
      "h,password=hunter2,connectTimeout=x",
      "h,password=hunter2,password=hunter2",
      "h,password=hunter2,tiebreaker=x",
      "h,password=hunter2,sslCert=/c",
      "h,password=hunter2,serviceName=m,sentinelUser=u,sentinelPassword=hunter2,"
      "sentinelPassword=hunter2",
      "h,sentinelPassword=hunter2",
      "redis://u:hunter2@h:1/x",
      "redis://u:hunter2@h:1/0?bogus=1",
      "redis://u:hunter2@h:99999",
      "redis://u:hunter2%zz@h",
      "redis://u%zz:hunter2@h",
      "redis://u:hunter2@h#frag",
      "redis://u:hunter2@h?password=hunter2",
      "redis://u:hunter2@h?sentinelPassword=hunter2%",
      "rediss://u:hunter2@h?ssl=false",
      "unix://u:hunter2@/tmp/s?db=x",
      "unix://u:hunter2@relative/s",
      "http://u:hunter2@h",
  };
  for (const char* text : texts) {
    const std::string message = parse_error(text);
    EXPECT_FALSE(message.empty()) << text;
    EXPECT_FALSE(contains(message, "hunter2")) << text << " → " << message;
  }
}

TEST(ConfigSecrets, ValidateNeverPrintsPasswords) {
  Config config = with_endpoint();
  config.password = "hunter2";
  config.sentinel_password = "hunter2";  // without serviceName: an error
  const std::string message = validate_error(config);
  EXPECT_FALSE(contains(message, "hunter2")) << message;
}

// --- URLs ----------------------------------------------------------------------------

TEST(ConfigUrl, HostAlone) {
  EXPECT_EQ(parse_ok("redis://localhost"), with_endpoint());
  EXPECT_EQ(parse_ok("redis://localhost/"), with_endpoint());
  EXPECT_EQ(parse_ok("REDIS://localhost"), with_endpoint());
  EXPECT_EQ(parse_ok("valkey://localhost"), with_endpoint());
}

TEST(ConfigUrl, Everything) {
  const Config config = parse_ok(
      "redis://app:p%40ss%3Aw%2Ford@cache.internal:6380/4?name=api&asyncTimeout=250ms&"
      "protocol=resp2");
  ASSERT_EQ(config.endpoints.size(), 1u);
  EXPECT_EQ(config.endpoints[0], tcp("cache.internal", 6380));
  EXPECT_EQ(config.user, "app");
  EXPECT_EQ(config.password, "p@ss:w/ord");
  EXPECT_EQ(config.default_database, 4);
  EXPECT_EQ(config.name, "api");
  EXPECT_EQ(config.async_timeout, milliseconds(250));
  EXPECT_EQ(config.protocol, Protocol::Resp2);
  EXPECT_FALSE(config.ssl);
}

TEST(ConfigErrors, AHugeBadValueIsQuotedByItsStartAndLength) {
  const std::string digits(5'000'000, '7');
  for (const std::string& text : {"h:1,connectTimeout=" + digits, "h:" + digits,
                                  "h" + std::string(100'000, '~') + "\x01:1"}) {
    const std::string message = parse_error(text);
    EXPECT_LT(message.size(), 400u) << message.substr(0, 400);
    EXPECT_TRUE(contains(message, "bytes)")) << message.substr(0, 400);
  }
}

TEST(ConfigErrors, ControlBytesInABadValueAreShownEscaped) {
  // A NUL or an escape sequence printed raw would cut the message or drive the terminal.
  EXPECT_TRUE(contains(parse_error(std::string("h:1,name=a\0b", 12)), "\"a\\x00b\""))
      << parse_error(std::string("h:1,name=a\0b", 12));
  EXPECT_TRUE(contains(parse_error("h:1,connectTimeout=5\x1b[2J"), "\"5\\x1b[2J\""));
  EXPECT_TRUE(contains(parse_error("h:1,connectTimeout=\x7f"), "\"\\x7f\""));
  EXPECT_FALSE(contains(parse_error("h:1,connectTimeout=5\x1b[2J"), "\x1b"));
  // So is an unknown option's name, and a long one by its start.
  const std::string newline = parse_error("redis://localhost?zzz%0A=1");
  EXPECT_TRUE(contains(newline, "unknown option \"zzz\\x0a\"")) << newline;
  const std::string long_name = parse_error("h," + std::string(300, 'q') + "=1");
  EXPECT_TRUE(contains(long_name, "… (300 bytes)\"")) << long_name;
  EXPECT_FALSE(contains(long_name, std::string(65, 'q'))) << long_name;
}

TEST(ConfigErrors, ADuplicateAmongTwentyThousandEndpointsIsFound) {
  // Found through a set of the endpoints seen (a scan of every earlier one took 1.4 s here).
  std::string text;
  for (int i = 0; i < 20'000; ++i) text += "h" + std::to_string(i) + ":6379,";
  EXPECT_TRUE(Config::parse(text)) << "20,000 distinct endpoints";
  EXPECT_TRUE(
      contains(parse_error(text + "H19999:6379"), "endpoint \"H19999:6379\" is listed twice"));
  EXPECT_TRUE(contains(parse_error(text + "/s,/s"), "endpoint \"/s\" is listed twice"));
  EXPECT_TRUE(Config::parse(text + "/h0:6379")) << "a socket path is not a host";
}

TEST(ConfigNamed, TheOptionsATextGivesByTheirDocumentedNames) {
  using Names = std::vector<std::string>;
  Names named{"left over"};
  ASSERT_TRUE(Config::parse("h:1,DB=2,Protocol=resp3,name=protocol=x", named));
  EXPECT_EQ(named, (Names{"defaultDatabase", "protocol", "name"}));
  ASSERT_TRUE(Config::parse("rediss://app:pw@h/3?sslCaFile=/ca.pem", named));
  EXPECT_EQ(named, (Names{"user", "password", "defaultDatabase", "sslCaFile", "ssl"}));
  ASSERT_TRUE(Config::parse("redis://h?ssl=true", named));
  EXPECT_EQ(named, (Names{"ssl"}));
  ASSERT_TRUE(Config::parse("h", named));
  EXPECT_TRUE(named.empty());
  EXPECT_FALSE(Config::parse("h,nope=1", named));
}

TEST(ConfigUrl, PasswordOnlyAndUnencodedAt) {
  const Config config = parse_ok("redis://:secret@h");
  EXPECT_EQ(config.user, "");
  EXPECT_EQ(config.password, "secret");
  EXPECT_EQ(parse_ok("redis://u:a@b@h").password, "a@b");  // the last '@' ends the user info
  EXPECT_EQ(parse_ok("redis://u:a+b@h").password, "a+b");  // '+' is not a space
  EXPECT_TRUE(contains(parse_error("redis://app@h"), "without \"password\""));
  EXPECT_EQ(parse_ok("redis://:@h"), parse_ok("redis://h"));
}

TEST(ConfigUrl, Rediss) {
  const Config config = parse_ok("rediss://h:6380");
  EXPECT_TRUE(config.ssl);
  EXPECT_EQ(config.endpoints[0].port, 6380);
  EXPECT_TRUE(parse_ok("valkeys://h").ssl);
  EXPECT_TRUE(parse_ok("rediss://h?ssl=true&sslCaFile=/ca.pem").ssl);
  EXPECT_EQ(parse_ok("rediss://h?sslCaFile=%2Fca%20x.pem").ssl_ca_file, "/ca x.pem");
  EXPECT_TRUE(contains(parse_error("rediss://h?ssl=false"), "contradicts its rediss:// scheme"));
  EXPECT_TRUE(parse_ok("redis://h?ssl=true").ssl);
  EXPECT_TRUE(contains(parse_error("redis://h?sslHost=x"), "needs ssl=true (or a rediss:// URL)"));
}

TEST(ConfigUrl, Ipv6AndSeveralHosts) {
  const Config config = parse_ok("redis://[::1]:7000,[::2],h3:7002/1");
  ASSERT_EQ(config.endpoints.size(), 3u);
  EXPECT_EQ(config.endpoints[0], tcp("::1", 7000));
  EXPECT_EQ(config.endpoints[1], tcp("::2", 6379));
  EXPECT_EQ(config.endpoints[2], tcp("h3", 7002));
  EXPECT_EQ(config.default_database, 1);
}

TEST(ConfigUrl, DatabaseInPathOrQuery) {
  EXPECT_EQ(parse_ok("redis://h/15").default_database, 15);
  EXPECT_EQ(parse_ok("redis://h?db=3").default_database, 3);
  EXPECT_EQ(parse_ok("redis://h?defaultDatabase=3").default_database, 3);
  EXPECT_EQ(parse_error("redis://h/1?db=2"), "option \"defaultDatabase\" is given twice in URL");
  EXPECT_EQ(parse_error("redis://h/x"),
            "invalid value \"x\" for option \"defaultDatabase\" in URL: expected a whole number");
  EXPECT_TRUE(contains(parse_error("redis://h/-1"), "out of range"));
  EXPECT_TRUE(contains(parse_error("redis://h/1/2"), "expected a whole number"));
}

TEST(ConfigUrl, QueryOptions) {
  const Config config = parse_ok("redis://h?abortConnect=false&&ALLOWADMIN=yes&name=a%2Db");
  EXPECT_FALSE(config.abort_connect);
  EXPECT_TRUE(config.allow_admin);
  EXPECT_EQ(config.name, "a-b");
  // Text the string form quotes when it prints it back.
  EXPECT_EQ(parse_ok("redis://h?name=a%2Cb").name, "a,b");
  EXPECT_EQ(parse_ok("redis://%20u:pw@h").user, " u");
  EXPECT_EQ(parse_ok("redis://h?sslCaFile=%2Fca%09&ssl=1").ssl_ca_file, "/ca\t");
  EXPECT_TRUE(contains(parse_error("redis://h?abortconect=false"),
                       "unknown option \"abortconect\" in URL (did you mean \"abortConnect\"?)"));
  EXPECT_EQ(parse_error("redis://h?ssl"), "option \"ssl\" in URL has no value; write ssl=…");
  EXPECT_TRUE(contains(parse_error("redis://h?=1"), "has a value but no name"));
  EXPECT_TRUE(contains(parse_error("redis://h?name=a%2"), "malformed percent-encoding"));
  EXPECT_EQ(parse_error("redis://:pw@h?password=pw"), "option \"password\" is given twice in URL");
}

TEST(ConfigUrl, Unix) {
  const Config config = parse_ok("unix:///run/redis/redis.sock?db=2&name=worker");
  ASSERT_EQ(config.endpoints.size(), 1u);
  EXPECT_EQ(config.endpoints[0], unix_socket("/run/redis/redis.sock"));
  EXPECT_EQ(config.default_database, 2);
  EXPECT_EQ(config.name, "worker");
  const Config with_auth = parse_ok("unix://app:p%2Cw@/tmp/redis%20x.sock");
  EXPECT_EQ(with_auth.user, "app");
  EXPECT_EQ(with_auth.password, "p,w");
  EXPECT_EQ(with_auth.endpoints[0].unix_path, "/tmp/redis x.sock");
  EXPECT_TRUE(contains(parse_error("unix://"), "absolute socket path"));
  EXPECT_TRUE(contains(parse_error("unix:///"), "absolute socket path"));
  EXPECT_TRUE(contains(parse_error("unix://relative.sock"), "absolute socket path"));
  // A password's unencoded '/' or '?' ends the user info early: say so, show none of it.
  for (const char* text :
       {"unix://app:Tr0ub4dor/3xyz@/tmp/r.sock", "unix://app:Tr0ub?3xyz@/tmp/r.sock"}) {
    const std::string message = parse_error(text);
    EXPECT_TRUE(contains(message, "percent-encode")) << text << " → " << message;
    for (const char* part : {"Tr0ub", "3xyz", "app", "r.sock"}) {
      EXPECT_FALSE(contains(message, part)) << text << " → " << message;
    }
  }
  EXPECT_EQ(parse_ok("unix://app:Tr0ub4dor%2F3xyz@/tmp/r.sock").password, "Tr0ub4dor/3xyz");
  EXPECT_EQ(parse_ok("unix:///tmp/a@/b.sock").endpoints[0].unix_path, "/tmp/a@/b.sock");
  // The string form could not carry these paths back: refused rather than mangled.
  EXPECT_TRUE(contains(parse_error("unix:///tmp/a=b"), "invalid Unix socket path"));
  EXPECT_TRUE(contains(parse_error("unix:///tmp/a%2Cb"), "invalid Unix socket path"));
  EXPECT_TRUE(contains(parse_error("unix:///tmp/a%20"), "invalid Unix socket path"));
  // A NUL would cut the path the system sees; other control bytes are shown escaped.
  const std::string nul = parse_error("unix:///tmp/r.sock%00junk");
  EXPECT_TRUE(contains(nul, "invalid Unix socket path \"/tmp/r.sock\\x00junk\"")) << nul;
  const std::string newline = parse_error("unix:///tmp/a%0Ab.sock");
  EXPECT_TRUE(contains(newline, "\"/tmp/a\\x0ab.sock\"")) << newline;
  // sockaddr_un holds 107 bytes and a NUL: a longer path is refused here, not found out
  // later as a connection that never comes.
  const std::string at_limit = "/tmp/" + std::string(102, 'a');
  EXPECT_EQ(parse_ok("unix://" + at_limit).endpoints[0].unix_path, at_limit);
  const std::string long_path = parse_error("unix://" + at_limit + "b");
  EXPECT_TRUE(contains(long_path, "is 108 bytes long; the system takes at most 107")) << long_path;
  EXPECT_TRUE(contains(long_path, "(108 bytes)")) << long_path;  // quoted by its start only
}

TEST(ConfigUrl, AHostIsNotPercentDecodedSoAPercentInItIsRefused) {
  const std::string encoded = parse_error("redis://app:pw@local%2Chost:6379");
  EXPECT_TRUE(contains(encoded, "invalid host \"local%2Chost\"")) << encoded;
  EXPECT_TRUE(contains(encoded, "not percent-decoded")) << encoded;
  // Without "@" nothing of the endpoint is shown (it may be user info), the advice still is.
  EXPECT_TRUE(contains(parse_error("redis://local%2Chost:6379"), "not percent-decoded"));
  EXPECT_TRUE(contains(parse_error("cache%20eu:6379"), "invalid host"));
  // An IPv6 address's zone keeps its '%'; a name of 253 bytes is fine, 254 is not.
  EXPECT_EQ(parse_ok("[fe80::1%25lo]:6379").endpoints[0].host, "fe80::1%25lo");
  const std::string longest = std::string(200, 'a') + "." + std::string(52, 'b');
  EXPECT_EQ(parse_ok(longest + ":6379").endpoints[0].host, longest);
  EXPECT_TRUE(contains(parse_error(longest + "b:6379"), "a host name has at most 253"));
}

TEST(ConfigUrl, Malformed) {
  EXPECT_EQ(parse_error("http://h"),
            "unsupported URL scheme \"http://\"; use redis://, rediss://, valkey://, valkeys:// "
            "or unix://");
  EXPECT_TRUE(contains(parse_error("redis://"), "URL has no host"));
  EXPECT_TRUE(contains(parse_error("redis:///0"), "URL has no host"));
  EXPECT_TRUE(contains(parse_error("redis://u:p@"), "URL has no host"));
  EXPECT_TRUE(contains(parse_error("redis://h#x"), "fragment"));
  EXPECT_TRUE(contains(parse_error("redis://h:0"), "invalid port in endpoint (not shown"));
  EXPECT_TRUE(contains(parse_error("redis://u:p@h:0"), "invalid port \"0\""));
  EXPECT_TRUE(contains(parse_error("redis://h,h"), "listed twice"));
  EXPECT_TRUE(contains(parse_error("redis://h,"), "empty endpoint in URL"));
  EXPECT_TRUE(contains(parse_error("redis://::1"), "must be in brackets"));
  // A scheme with one slash would read as host "redis" with port "/h".
  for (const char* text : {"redis:/h", "Rediss:/u:secret@h", "valkey:/h:1", "unix:/tmp/r.sock"}) {
    const std::string message = parse_error(text);
    EXPECT_TRUE(contains(message, "a URL has \"//\" after its scheme")) << text << " → " << message;
    EXPECT_FALSE(contains(message, "secret")) << message;
  }
  EXPECT_TRUE(contains(parse_error("unix:/tmp/r.sock"), "\"unix:///run/redis/redis.sock\""));
  EXPECT_EQ(parse_ok("redis:6379").endpoints[0].host, "redis");  // a host named redis
}

// --- to_string() and round trips ---------------------------------------------------

TEST(ConfigToString, OnlyEndpointsForDefaults) {
  EXPECT_EQ(with_endpoint().to_string(), "localhost:6379");
  EXPECT_EQ(parse_ok("a,[::1]:1,/tmp/s").to_string(), "a:6379,[::1]:1,/tmp/s");
}

TEST(ConfigToString, NonDefaultsInDocumentedOrder) {
  EXPECT_EQ(parse_ok("h,abortConnect=false,name=api,asyncTimeout=1s,protocol=2").to_string(),
            "h:6379,name=api,protocol=resp2,abortConnect=false,asyncTimeout=1000");
}

TEST(ConfigToString, RoundTripsEveryOption) {
  const char* everything =
      "a:1,[::1]:2,/tmp/redis.sock,name=api,user=app,password=hunter2,defaultDatabase=9,"
      "protocol=resp2,allowAdmin=true,abortConnect=false,connectTimeout=1,connectRetry=0,"
      "syncTimeout=2,asyncTimeout=3,keepAlive=0,heartbeatInterval=5,maxQueuedCommands=6,"
      "queueFullPolicy=wait,ioThreads=7,connectionsPerEndpoint=8,"
      "sharedSubscriptionConnection=true,blockingPoolSize=9,reconnectBaseDelay=10,"
      "reconnectMaxDelay=11,backlogPolicy=failFast,retryReadOnlyCommands=true,"
      "retryClusterDown=false,ssl=true,"
      "sslHost=redis.internal,sslCaFile=/ca.pem,sslCaPath=/certs,sslCert=/c.pem,"
      "sslKey=/c.key,sslVerify=false,serviceName=mymaster,sentinelUser=sen,"
      "sentinelPassword=tiger7";
  const Config original = parse_ok(everything);
  const std::string text = original.to_string();
  Config reparsed = parse_ok(text);
  EXPECT_EQ(reparsed.password, "*****");
  EXPECT_EQ(reparsed.sentinel_password, "*****");
  reparsed.password = original.password;
  reparsed.sentinel_password = original.sentinel_password;
  EXPECT_EQ(reparsed, original) << text;
  // Every option is non-default in `everything`, so every option appears in the text.
  EXPECT_EQ(text,
            "a:1,[::1]:2,/tmp/redis.sock,name=api,user=app,password=*****,defaultDatabase=9,"
            "protocol=resp2,allowAdmin=true,abortConnect=false,connectTimeout=1,connectRetry=0,"
            "syncTimeout=2,asyncTimeout=3,keepAlive=0,heartbeatInterval=5,maxQueuedCommands=6,"
            "queueFullPolicy=wait,ioThreads=7,connectionsPerEndpoint=8,"
            "sharedSubscriptionConnection=true,blockingPoolSize=9,reconnectBaseDelay=10,"
            "reconnectMaxDelay=11,backlogPolicy=failFast,retryReadOnlyCommands=true,"
            "retryClusterDown=false,ssl=true,"
            "sslHost=redis.internal,sslCaFile=/ca.pem,sslCaPath=/certs,sslCert=/c.pem,"
            "sslKey=/c.key,sslVerify=false,serviceName=mymaster,sentinelUser=sen,"
            "sentinelPassword=*****");
}

TEST(ConfigToString, RoundTripsUrls) {
  for (const char* url : {"rediss://app:pw@h:6380/3?name=x", "unix:///tmp/s?db=1",
                          "redis://[::1],h2?keepAlive=2m&asyncTimeout=1s"}) {
    const Config original = parse_ok(url);
    Config reparsed = parse_ok(original.to_string());
    if (!original.password.empty()) reparsed.password = original.password;
    EXPECT_EQ(reparsed, original) << url << " → " << original.to_string();
  }
}

// Mutations of valid inputs: parse() never crashes, fails only with invalid_config, and
// whatever it accepts survives to_string() → parse() unchanged (passwords aside).
TEST(ConfigToString, MutatedInputsFailCleanlyOrRoundTrip) {
  const std::vector<std::string> seeds = {
      "a:1,[::1]:2,/tmp/s,name=api,user=u,password=p,db=3,protocol=resp2,keepAlive=2m",
      "redis://u:p%40w@h:6380,[::1]/2?name=x&asyncTimeout=5s&queueFullPolicy=wait",
      "rediss://h?sslCaFile=%2Fca.pem&sslCert=%2Fc&sslKey=%2Fk&sslVerify=no",
      "unix://u:p@/tmp/redis.sock?db=1&name=n&backlogPolicy=failFast",
      "s1:26379,serviceName=m,sentinelUser=su,sentinelPassword=sp,connectRetry=0",
  };
  const std::string alphabet = "a:=,/?@[]%20 \t.-_Ssx#&0123456789";
  std::uint64_t state = 0x9e3779b97f4a7c15ull;  // fixed seed: failures reproduce
  const auto next = [&state](std::size_t bound) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return static_cast<std::size_t>(state % bound);
  };
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text = seeds[next(seeds.size())];
    for (std::size_t edits = 1 + next(4); edits > 0; --edits) {
      const std::size_t at = next(text.size() + 1);
      switch (next(3)) {
        case 0:
          text.insert(at, 1, alphabet[next(alphabet.size())]);
          break;
        case 1:
          if (at < text.size()) text.erase(at, 1);
          break;
        default:
          if (at < text.size()) text[at] = alphabet[next(alphabet.size())];
      }
    }
    Result<Config> parsed = Config::parse(text);
    if (!parsed) {
      ASSERT_EQ(parsed.error().code(), errc::invalid_config) << text;
      continue;
    }
    ++accepted;
    const std::string printed = parsed->to_string();
    Result<Config> reparsed = Config::parse(printed);
    ASSERT_TRUE(reparsed.has_value())
        << text << " → " << printed << " → " << reparsed.error().message();
    reparsed->password = parsed->password;
    reparsed->sentinel_password = parsed->sentinel_password;
    ASSERT_EQ(*reparsed, *parsed) << text << " → " << printed;
  }
  EXPECT_GT(accepted, 1000);  // the mutations must not all be rejected
}

// --- from_string() and validate() -----------------------------------------------------

TEST(ConfigFromString, ReturnsOrThrowsConfigError) {
  EXPECT_EQ(Config::from_string("localhost"), with_endpoint());
  try {
    (void)Config::from_string("h,abortconect=1");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.code(), errc::invalid_config);
    EXPECT_TRUE(contains(error.what(), "unknown option \"abortconect\""));
  }
  EXPECT_THROW((void)Config::from_string(""), ConfigError);
}

TEST(ConfigValidate, AcceptsWhatParseBuilds) {
  EXPECT_TRUE(with_endpoint().validate().has_value());
  Config socket_config;
  socket_config.endpoints.push_back(unix_socket("/tmp/s"));
  EXPECT_TRUE(socket_config.validate().has_value());
  Config ipv6;
  ipv6.endpoints.push_back(tcp("::1"));
  EXPECT_TRUE(ipv6.validate().has_value());
}

TEST(ConfigValidate, RefusesWhatParseWouldRefuse) {
  EXPECT_TRUE(contains(validate_error(Config{}), "no endpoint in configuration"));

  const auto broken = [](auto change) {
    Config config = with_endpoint();
    change(config);
    return validate_error(config);
  };
  EXPECT_TRUE(contains(broken([](Config& c) { c.endpoints[0].port = 0; }), "has port 0"));
  EXPECT_TRUE(contains(broken([](Config& c) { c.endpoints[0].host = ""; }), "has no host"));
  EXPECT_TRUE(contains(broken([](Config& c) { c.endpoints[0].host = "a b"; }), "invalid host"));
  EXPECT_TRUE(contains(broken([](Config& c) { c.endpoints[0].host = std::string(254, 'h'); }),
                       "is 254 bytes long; a host name has at most 253"));
  // "user:password@host" set in code as a host: nothing before the '@' is shown.
  const std::string user_info =
      broken([](Config& c) { c.endpoints[0].host = "user:CodeSecret1@host"; });
  EXPECT_TRUE(contains(user_info, "containing \"@\"")) << user_info;
  EXPECT_FALSE(contains(user_info, "CodeSecret1")) << user_info;
  EXPECT_TRUE(contains(broken([](Config& c) { c.endpoints[0].unix_path = "/s"; }),
                       "both a host and a Unix socket path"));
  EXPECT_TRUE(
      contains(broken([](Config& c) { c.endpoints.push_back(c.endpoints[0]); }), "listed twice"));
  EXPECT_TRUE(contains(broken([](Config& c) {
                         c.endpoints = {unix_socket("/s"), unix_socket("/s")};
                         c.endpoints[1].port = 1;  // ignored for a Unix socket
                       }),
                       "endpoint \"/s\" is listed twice"));
  EXPECT_TRUE(contains(broken([](Config& c) { c.connect_timeout = milliseconds(0); }),
                       "invalid value \"0\" for option \"connectTimeout\" in configuration: "
                       "out of range; expected 1 … 2147483647 ms"));
  EXPECT_TRUE(contains(broken([](Config& c) { c.keep_alive = seconds(-1); }), "0 … 32767"));
  EXPECT_TRUE(contains(broken([](Config& c) { c.connect_retry = -1; }), "\"connectRetry\""));
  EXPECT_TRUE(contains(broken([](Config& c) { c.default_database = -3; }), "\"-3\""));
  EXPECT_TRUE(contains(broken([](Config& c) { c.io_threads = 0; }), "\"ioThreads\""));
  EXPECT_TRUE(
      contains(broken([](Config& c) { c.max_queued_commands = 0; }), "\"maxQueuedCommands\""));
  EXPECT_TRUE(contains(broken([](Config& c) { c.max_queued_commands = 1ull << 33; }),
                       "\"maxQueuedCommands\""));
  EXPECT_TRUE(
      contains(broken([](Config& c) { c.protocol = static_cast<Protocol>(9); }), "\"protocol\""));
  EXPECT_TRUE(contains(broken([](Config& c) { c.name = "a\nb"; }), "whitespace"));
  EXPECT_TRUE(contains(broken([](Config& c) { c.user = "u"; }), "without \"password\""));
  EXPECT_TRUE(contains(broken([](Config& c) { c.ssl_ca_file = "/ca"; }), "needs ssl=true"));
  EXPECT_TRUE(contains(broken([](Config& c) { c.service_name = "m", c.sentinel_user = "u"; }),
                       "without \"sentinelPassword\""));
  EXPECT_TRUE(contains(broken([](Config& c) { c.reconnect_max_delay = milliseconds(1); }),
                       "is greater than reconnectMaxDelay"));
  // A password may hold anything, commas included: it is never printed.
  Config comma_password = with_endpoint();
  comma_password.password = "a,b";
  EXPECT_TRUE(comma_password.validate().has_value());
}

TEST(ConfigDocs, DocumentedExamplesParse) {
  for (const char* text : {
           "localhost",
           "localhost:6379,name=worker-7,abortConnect=false,asyncTimeout=250ms",
           "cache-1:6379,cache-2:6379,user=app,password=pw,defaultDatabase=2,protocol=resp2",
           "s1:26379,s2:26379,s3:26379,serviceName=mymaster,password=pw",
           "/run/redis/redis.sock,name=local-jobs",
           "redis://localhost",
           "redis://app:p%40ss@cache.internal:6380/4?name=api&connectTimeout=2s",
           "rediss://:pw@redis.example.com:6380?sslCaFile=%2Fetc%2Fssl%2Fcorp-ca.pem",
           "redis://[::1]:7000,[::1]:7001,[::1]:7002",
           "unix:///run/redis/redis.sock?db=2",
       }) {
    EXPECT_TRUE(Config::parse(text).has_value()) << text;
  }
}

// --- quoting, and secrets that never show ---------------------------------------------

TEST(ConfigQuoting, AQuotedValueHoldsCommasQuotesAndSpaces) {
  EXPECT_EQ(parse_ok("h,password=\"a,b\"").password, "a,b");
  EXPECT_EQ(parse_ok("h, password = \"a,b\" , name=x").name, "x");
  EXPECT_EQ(parse_ok("h,password=\" say \\\"hi\\\", \\\\ ok \"").password, " say \"hi\", \\ ok ");
  EXPECT_EQ(parse_ok("h,password=\"\"").password, "");
  EXPECT_EQ(parse_ok("h,name=\"a,b\",ssl=false").name, "a,b");
  EXPECT_EQ(parse_ok("h,password=a\"b").password, "a\"b");  // a quote inside is just a quote
  EXPECT_EQ(parse_ok("h,password=a=b").password, "a=b");
  EXPECT_EQ(parse_ok("h,password=\"a\\qb\"").password, "a\\qb");  // another escape stays
}

TEST(ConfigQuoting, ToStringQuotesWhatNeedsItAndParsesBack) {
  Config config = with_endpoint();
  config.name = "api,eu";
  config.ssl = true;
  config.ssl_ca_file = " /ca \"x\" \\";
  const std::string text = config.to_string();
  EXPECT_TRUE(contains(text, "name=\"api,eu\"")) << text;
  const Config back = parse_ok(text);
  EXPECT_EQ(back.name, config.name);
  EXPECT_EQ(back.ssl_ca_file, config.ssl_ca_file);
}

// Every fragment of `secret` three characters or longer, split where the string form splits.
std::vector<std::string> fragments(const std::string& secret) {
  std::vector<std::string> out;
  std::string piece;
  for (char c : secret + ",") {
    if (c == ',' || c == '"' || c == '=' || c == ' ') {
      if (piece.size() >= 3) out.push_back(piece);
      piece.clear();
    } else {
      piece += c;
    }
  }
  if (secret.size() >= 3) out.push_back(secret);
  return out;
}

TEST(ConfigSecrets, NoPartOfAPasswordAppearsInAnErrorOrInToString) {
  const std::vector<std::string> secrets = {"abc,def",   "abc,def=ghi", "abc,",      ",abc",
                                            "abc\"def",  "abc\\def",    " abc def ", "abc,ssl",
                                            "abc%2Cdef", "abc@def,ghi", "abcdefgh"};
  for (const std::string& secret : secrets) {
    for (const std::string& option : {std::string("password"), std::string("sentinelPassword")}) {
      const std::string prefix = option == "password" ? "h:1," : "h:1,serviceName=m,";
      const std::vector<std::string> texts = {
          prefix + option + "=" + secret,           prefix + option + "=" + secret + ",name=x",
          prefix + option + "=\"" + secret,          // no closing quote
          prefix + option + "=\"" + secret + "\"x",  // text after the quote
          prefix + option + "=\"" + secret + "\"",  "redis://:" + secret + "@h:1",
          "redis://u:" + secret + "@h:1?name=x",
      };
      for (const std::string& text : texts) {
        Result<Config> parsed = Config::parse(text);
        const std::string shown = parsed ? parsed->to_string() : parsed.error().message();
        for (const std::string& part : fragments(secret)) {
          EXPECT_FALSE(contains(shown, part)) << "\"" << part << "\" of the secret shows in \""
                                              << shown << "\" (parsing " << text << ")";
        }
      }
    }
  }
}

TEST(ConfigSecrets, AnUnencodedSlashOrQuestionMarkInAUrlPasswordIsRefusedWithoutShowingIt) {
  // The '/' or '?' ends the host part before the '@': the password's pieces would land in
  // the host, the port or the database number, and their errors would quote them.
  const char* texts[] = {
      "redis://app:Tr0ub4dor/3xyz@cache.internal:6380/2",
      "redis://app:Tr0ub4dor?3xyz@cache.internal",
      "redis://app:6380/Tr0ub4dor@cache.internal",
      "rediss://:Tr0ub4dor/3xyz@cache.internal",
      "valkey://app:Tr0ub4dor/3xyz@h1:1,h2:2/0?name=x",
  };
  for (const char* text : texts) {
    const std::string message = parse_error(text);
    EXPECT_NE(message.find("percent-encode"), std::string::npos) << text << " → " << message;
    for (const char* part : {"Tr0ub4dor", "3xyz", "app", "cache"}) {
      EXPECT_FALSE(contains(message, part)) << text << " → " << message;
    }
  }
  // The same with an unencoded '@' before the '/' (a walk saw "ss" of "p@ss:w/x" quoted).
  for (const char* text : {"redis://app:Tr0ub@4dor/3xyz@cache.internal:6380",
                           "redis://app:Tr0ub@4dor:55/3xyz@cache.internal/1",
                           "redis://app:Tr0ub@4dor?3xyz@cache.internal"}) {
    const std::string message = parse_error(text);
    EXPECT_NE(message.find("percent-encode"), std::string::npos) << text << " → " << message;
    for (const char* part : {"Tr0ub", "4dor", "3xyz", "app", "cache"}) {
      EXPECT_FALSE(contains(message, part)) << text << " → " << message;
    }
  }
  // An '@' in a query value is no such sign, and percent-encoded user info parses.
  Result<Config> named = Config::parse("redis://h:1?name=svc@eu");
  ASSERT_TRUE(named) << named.error().message();
  EXPECT_EQ(named->name, "svc@eu");
  Result<Config> encoded = Config::parse("redis://app:Tr0ub4dor%2F3xyz@cache.internal:6380/2");
  ASSERT_TRUE(encoded) << encoded.error().message();
  EXPECT_EQ(encoded->password, "Tr0ub4dor/3xyz");
}

TEST(ConfigSecrets, TheItemAfterAnUnquotedPasswordMustBeAnOption) {
  const std::string error = parse_error("h,password=ab,cd");
  EXPECT_TRUE(contains(error, "the item after option \"password\"")) << error;
  EXPECT_TRUE(contains(error, "password=\"…\"")) << error;
  EXPECT_FALSE(contains(error, "cd")) << error;
  EXPECT_FALSE(contains(parse_error("h,password=ab,cdx=1"), "cdx"));
  EXPECT_TRUE(contains(parse_error("h,password=\"ab"), "no closing quote"));
  EXPECT_TRUE(contains(parse_error("h,password=\"ab\"cd"), "text after its closing quote"));
  // After a quoted password, an endpoint is fine; so is an option after an unquoted one.
  EXPECT_EQ(parse_ok("h,password=\"ab\",h2").endpoints.size(), 2u);
  EXPECT_EQ(parse_ok("h,password=ab,name=n").name, "n");
  EXPECT_EQ(parse_ok("h,password=ab").password, "ab");
  // The rest of a cut password that reads as an option with a bad value is not shown either.
  const std::string bad_value = parse_error("h,password=Hunter,connectTimeout=2xyz");
  EXPECT_TRUE(contains(bad_value, "the item after option \"password\"")) << bad_value;
  EXPECT_FALSE(contains(bad_value, "2xyz")) << bad_value;
}

TEST(ConfigSecrets, TheItemAfterAPasswordInAUrlQueryIsNeverShown) {
  // An unencoded '&' cuts a query password: "Hunter&2xyz" reads as "Hunter" and an item
  // "2xyz", which must not be quoted, whatever makes it fail.
  for (const char* text :
       {"redis://h?password=Hunter&2xyz", "redis://h?password=Hunter&connectTimeout=2xyz",
        "redis://h?password=Hunter&2xyz=1", "redis://h?password=Hunter&%zz2xyz",
        "unix:///tmp/r.sock?password=Hunter&2xyz", "redis://h?user=u&password=Hunter&ssl",
        "redis://h?serviceName=m&sentinelPassword=Hunter&2xyz"}) {
    const std::string message = parse_error(text);
    EXPECT_TRUE(contains(message, "the item after option \"")) << text << " → " << message;
    EXPECT_TRUE(contains(message, "%26")) << text << " → " << message;
    EXPECT_FALSE(contains(message, "2xyz")) << text << " → " << message;
    EXPECT_FALSE(contains(message, "Hunter")) << text << " → " << message;
  }
  // Elsewhere a bad item is named as before; a valid option after a password is fine.
  EXPECT_TRUE(contains(parse_error("redis://h?name=n&2xyz"), "unknown option \"2xyz\""));
  EXPECT_EQ(parse_ok("redis://h?password=Hunter%262xyz&name=n").password, "Hunter&2xyz");
}

// --- the reference page lists every option ------------------------------------------

TEST(ConfigDocs, ReferenceListsEveryOption) {
  const std::string message = parse_error("h,no-such-option=1");
  const std::string marker = "valid options: ";
  const std::size_t start = message.find(marker);
  ASSERT_NE(start, std::string::npos);
  std::string list = message.substr(start + marker.size());
  list = list.substr(0, list.find(" ("));
  std::vector<std::string> names;
  std::stringstream stream(list);
  for (std::string name; std::getline(stream, name, ',');) {
    names.push_back(name.substr(name.find_first_not_of(' ')));
  }
  EXPECT_EQ(names.size(), 46u);

  std::ifstream file(std::string(REDMUX_SOURCE_DIR) + "/docs/configuration.md");
  ASSERT_TRUE(file) << "docs/configuration.md not found in " << REDMUX_SOURCE_DIR;
  std::stringstream docs;
  docs << file.rdbuf();
  for (const std::string& name : names) {
    EXPECT_TRUE(contains(docs.str(), "`" + name + "`")) << name << " missing from the docs";
  }
}

// The client-side cache needs RESP3 (its invalidations are pushes); its options need it on.
TEST(ConfigTest, ClientCacheOptionsAreCheckedTogether) {
  Result<Config> on = Config::parse(
      "h,clientCache=true,clientCacheBytes=1048576,clientCacheMaxTtl=5s,clientCacheMode=bcast,"
      "clientCachePrefixes=\"a: b:\",clientCacheReads=flagged");
  ASSERT_TRUE(on) << on.error().message();
  EXPECT_TRUE(on->client_cache);
  EXPECT_EQ(on->client_cache_bytes, 1048576u);
  EXPECT_EQ(on->client_cache_max_ttl, std::chrono::milliseconds(5000));
  EXPECT_EQ(on->client_cache_mode, ClientCacheMode::Broadcast);
  EXPECT_EQ(on->client_cache_prefixes, "a: b:");
  EXPECT_EQ(on->client_cache_reads, ClientCacheReads::Flagged);
  EXPECT_EQ(Config::parse(on->to_string()).value(), *on);
  EXPECT_TRUE(contains(parse_error("h,clientCache=true,protocol=resp2"), "needs protocol=resp3"));
  EXPECT_TRUE(contains(parse_error("h,clientCacheBytes=100000"), "needs clientCache=true"));
  // Sizes as redis.conf writes them.
  for (const auto& [text, bytes] :
       std::initializer_list<std::pair<const char*, std::size_t>>{{"65536", 65536},
                                                                  {"64kb", 65536},
                                                                  {"64KB", 65536},
                                                                  {"64k", 64000},
                                                                  {"64mb", 64u << 20},
                                                                  {"64m", 64000000},
                                                                  {"1gb", 1u << 30},
                                                                  {"2g", 2000000000}}) {
    EXPECT_EQ(
        parse_ok(std::string("h,clientCache=true,clientCacheBytes=") + text).client_cache_bytes,
        bytes)
        << text;
  }
  EXPECT_TRUE(contains(parse_error("h,clientCache=true,clientCacheBytes=64MiB"),
                       "expected bytes, e.g. 67108864, 64mb (MiB) or 64m (millions)"));
  EXPECT_TRUE(contains(parse_error("h,clientCache=true,clientCacheBytes=2048gb"),
                       "out of range; expected 4096 … 1099511627776 bytes"));
  EXPECT_TRUE(contains(parse_error("h,clientCache=true,clientCacheBytes=4k"), "out of range"));
  EXPECT_TRUE(contains(parse_error("h,clientCache=true,clientCachePrefixes=a"),
                       "needs clientCacheMode=bcast"));
  EXPECT_TRUE(contains(parse_error("h,clientCache=true,clientCacheMode=sometimes"),
                       "expected default, bcast or optin"));
}

}  // namespace
}  // namespace redmux

namespace redmux {

TEST(ConfigResolver, SetInCodeOnlyAndSharedByCopies) {
  Config config = Config::from_string("cache.internal:6379,name=api");
  const std::string before = config.to_string();
  config.resolver = HostResolver([](std::string_view) { return std::vector<std::string>{"::1"}; });
  EXPECT_EQ(config.to_string(), before);  // not part of the configuration string
  const Config copy = config;
  EXPECT_EQ(copy, config);  // a copy shares the function
  EXPECT_EQ(copy.resolver("cache.internal"), std::vector<std::string>{"::1"});
  Config other = config;
  other.resolver = HostResolver([](std::string_view) { return std::vector<std::string>{"::1"}; });
  EXPECT_NE(other, config);  // another function, even if it answers alike
  EXPECT_FALSE(HostResolver());
  EXPECT_FALSE(HostResolver(nullptr));
}

TEST(ConfigCredentials, SetInCodeOnlyAndExclusiveWithUserAndPassword) {
  Config config = Config::from_string("cache.internal:6379,name=api");
  const std::string before = config.to_string();
  config.credentials = CredentialProvider([] { return Credentials{"app", "t0ken", {}}; });
  EXPECT_EQ(config.to_string(), before);  // not part of the configuration string
  EXPECT_TRUE(config.validate());
  const Config copy = config;
  EXPECT_EQ(copy, config);  // a copy shares the function
  EXPECT_EQ(copy.credentials().password, "t0ken");

  Config both = Config::from_string("cache.internal:6379,user=app,password=s3cret");
  both.credentials = config.credentials;
  const auto checked = both.validate();
  ASSERT_FALSE(checked);
  EXPECT_NE(checked.error().message().find("credential provider"), std::string::npos)
      << checked.error().message();
  EXPECT_EQ(checked.error().message().find("s3cret"), std::string::npos);
  EXPECT_NE(
      checked.error().message().find("options \"user\" and \"password\" in configuration are set"),
      std::string::npos)
      << checked.error().message();
  // Only the option that is set is named.
  Config password_only = Config::from_string("cache.internal:6379,password=s3cret");
  password_only.credentials = config.credentials;
  const auto one = password_only.validate();
  ASSERT_FALSE(one);
  EXPECT_NE(one.error().message().find("option \"password\" in configuration is set together"),
            std::string::npos)
      << one.error().message();
  EXPECT_EQ(one.error().message().find("\"user\""), std::string::npos) << one.error().message();
  // A user without a password beside a provider: the provider conflict is the mistake to
  // name (adding a password would only lead to it).
  Config user_only = Config::from_string("cache.internal:6379");
  user_only.user = "app";
  user_only.credentials = config.credentials;
  const auto user = user_only.validate();
  ASSERT_FALSE(user);
  EXPECT_NE(user.error().message().find("option \"user\" in configuration is set together"),
            std::string::npos)
      << user.error().message();

  Config sentinel = Config::from_string("cache.internal:26379");
  sentinel.sentinel_credentials = config.credentials;
  const auto no_service = sentinel.validate();
  ASSERT_FALSE(no_service);
  EXPECT_NE(no_service.error().message().find("serviceName"), std::string::npos);
  EXPECT_FALSE(CredentialProvider());
}

TEST(ConfigAvailabilityZone, ParsedAndPrinted) {
  const Config config = Config::from_string("h:1,availabilityZone=use1-az1");
  EXPECT_EQ(config.availability_zone, "use1-az1");
  EXPECT_NE(config.to_string().find("availabilityZone=use1-az1"), std::string::npos);
  EXPECT_EQ(Config::from_string(config.to_string()), config);
  EXPECT_TRUE(Config::from_string("h:1").availability_zone.empty());
}

}  // namespace redmux

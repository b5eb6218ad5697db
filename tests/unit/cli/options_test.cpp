// redmux-cli's command line: connection flags, formats, modes, the command and usage errors.
#include "options.hpp"

#include <gtest/gtest.h>

namespace redmux::cli {
namespace {

ParseResult parse(std::vector<std::string> args) {
  args.insert(args.begin(), "redmux-cli");
  return parse_options(args);
}

TEST(OptionsTest, ConnectionFlagsAndCommand) {
  const ParseResult r = parse({"-h", "cache", "-p", "7000", "-a", "pw", "--user", "u", "-n", "2",
                               "-3", "INCRBY", "k", "-1"});
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.options.host, "cache");
  EXPECT_EQ(r.options.port, 7000);
  EXPECT_EQ(r.options.password, "pw");
  EXPECT_EQ(r.options.user, "u");
  EXPECT_EQ(r.options.database, 2);
  EXPECT_EQ(r.options.protocol, 3);
  EXPECT_EQ(r.options.mode, Mode::Command);
  // Options end at the command: "-1" is an argument.
  EXPECT_EQ(r.options.command, (std::vector<std::string>{"INCRBY", "k", "-1"}));
}

TEST(OptionsTest, AServerNamedByMinusUAndByMinusHOrMinusPIsRefused) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"-u", "cache:6379", "-p", "7000", "PING"},
        std::vector<std::string>{"-h", "other", "-u", "cache:6379", "PING"}}) {
    const ParseResult r = parse(args);
    EXPECT_NE(r.error.find("-u names the server"), std::string::npos) << r.error;
  }
  EXPECT_EQ(parse({"-u", "cache:6379", "-n", "2", "PING"}).error, "");
}

TEST(OptionsTest, TlsFlagsAsRedisCliNamesThem) {
  const ParseResult r =
      parse({"--tls", "--cacert", "/ca.pem", "--cacertdir", "/cas", "--cert", "/c.pem", "--key",
             "/c.key", "--sni", "redis.internal", "--insecure", "PING"});
  ASSERT_EQ(r.error, "");
  EXPECT_TRUE(r.options.tls);
  EXPECT_EQ(r.options.cacert, "/ca.pem");
  EXPECT_EQ(r.options.cacertdir, "/cas");
  EXPECT_EQ(r.options.cert, "/c.pem");
  EXPECT_EQ(r.options.key, "/c.key");
  EXPECT_EQ(r.options.sni, "redis.internal");
  EXPECT_TRUE(r.options.insecure);
  EXPECT_EQ(r.options.command, (std::vector<std::string>{"PING"}));
  EXPECT_FALSE(parse({"PING"}).options.tls);
  EXPECT_EQ(parse({"--cacert"}).error, "option --cacert needs a value");
}

TEST(OptionsTest, NoCommandIsInteractive) {
  EXPECT_EQ(parse({}).options.mode, Mode::Interactive);
  EXPECT_EQ(parse({"-p", "1"}).options.mode, Mode::Interactive);
}

TEST(OptionsTest, Formats) {
  EXPECT_EQ(parse({"PING"}).options.format, OutputFormat::Auto);
  EXPECT_EQ(parse({"--raw", "PING"}).options.format, OutputFormat::Raw);
  EXPECT_EQ(parse({"--no-raw", "PING"}).options.format, OutputFormat::Human);
  EXPECT_EQ(parse({"--json", "PING"}).options.format, OutputFormat::Json);
}

TEST(OptionsTest, LatencyModes) {
  ParseResult r = parse({"--latency", "--samples", "20"});
  EXPECT_EQ(r.options.mode, Mode::Latency);
  EXPECT_EQ(r.options.samples, 20);
  r = parse({"--latency-history", "-i", "0.5", "--duration", "2"});
  EXPECT_EQ(r.options.mode, Mode::LatencyHistory);
  EXPECT_EQ(r.options.interval, std::chrono::milliseconds(500));
  EXPECT_EQ(r.options.duration, std::chrono::milliseconds(2000));
  r = parse({"--latency-percentiles", "50,99,99.9"});
  EXPECT_EQ(r.options.mode, Mode::Latency);
  EXPECT_EQ(r.options.percentiles, (std::vector<double>{50, 99, 99.9}));
}

TEST(OptionsTest, ScanAndClients) {
  ParseResult r = parse({"--scan", "--pattern", "user:*", "--count", "100"});
  EXPECT_EQ(r.options.mode, Mode::Scan);
  EXPECT_EQ(r.options.pattern, "user:*");
  EXPECT_EQ(r.options.count, 100);
  r = parse({"--clients", "--omem-warn", "1000"});
  EXPECT_EQ(r.options.mode, Mode::Clients);
  EXPECT_EQ(r.options.omem_warn, 1000);
}

TEST(OptionsTest, TimeoutIsSecondsAndZeroByDefault) {
  EXPECT_EQ(parse({"PING"}).options.timeout, std::chrono::milliseconds(0));
  EXPECT_EQ(parse({"--timeout", "2.5", "PING"}).options.timeout, std::chrono::milliseconds(2500));
  EXPECT_EQ(parse({"--timeout", "0", "PING"}).options.timeout, std::chrono::milliseconds(0));
}

TEST(OptionsTest, UsageErrorsSayWhatIsWrong) {
  EXPECT_NE(parse({"-p"}).error.find("needs a value"), std::string::npos);
  EXPECT_NE(parse({"-p", "99999"}).error.find("invalid port"), std::string::npos);
  EXPECT_NE(parse({"--bogus"}).error.find("unknown option --bogus"), std::string::npos);
  EXPECT_NE(parse({"--latency-percentiles", "50,x"}).error.find("invalid percentiles"),
            std::string::npos);
  EXPECT_NE(parse({"--latency-percentiles", "50,101,99"}).error.find("\"101\" is not a percentile"),
            std::string::npos);
  EXPECT_NE(parse({"--raw", "--json", "PING"}).error.find("--raw and --json: choose one"),
            std::string::npos);
  EXPECT_NE(parse({"--json", "--raw", "PING"}).error.find("--raw and --json: choose one"),
            std::string::npos);
  EXPECT_NE(parse({"--no-raw", "--json", "PING"}).error.find("choose one"), std::string::npos);
  EXPECT_NE(parse({"--scan", "--clients"}).error.find("choose one"), std::string::npos);
  EXPECT_NE(parse({"--scan", "GET", "k"}).error.find("takes no command"), std::string::npos);
  EXPECT_NE(parse({"-n", "-1"}).error.find("invalid database"), std::string::npos);
  EXPECT_NE(parse({"--timeout", "-1"}).error.find("invalid timeout"), std::string::npos);
  // redis-cli's -c: cluster mode is automatic here, and the error says so.
  EXPECT_NE(parse({"-c", "GET", "k"}).error.find("-c is not an option: cluster mode is automatic"),
            std::string::npos);
}

TEST(OptionsTest, DoubleDashEndsOptions) {
  const ParseResult r = parse({"--", "--raw"});
  EXPECT_EQ(r.options.command, (std::vector<std::string>{"--raw"}));
  EXPECT_EQ(r.options.format, OutputFormat::Auto);
}

}  // namespace
}  // namespace redmux::cli

// The INFO and CLIENT LIST text parsers, and argument types, on edge cases.
#include "redmux/types.hpp"

#include <gtest/gtest.h>

#include "redmux/commands.hpp"

namespace redmux {
namespace {

TEST(InfoSections, ParsesSectionsCaseInsensitively) {
  InfoSections info = InfoSections::parse(
      "# Server\r\nredis_version:7.0.15\r\nrun_id:abc\r\n\r\n# Keyspace\r\n"
      "db0:keys=3,expires=0,avg_ttl=0\r\n");
  EXPECT_EQ(info.get("server", "redis_version"), "7.0.15");
  EXPECT_EQ(info.get("SERVER", "run_id"), "abc");
  EXPECT_EQ(info.get("keyspace", "db0"), "keys=3,expires=0,avg_ttl=0");  // first colon splits
  EXPECT_EQ(info.sections().size(), 2u);
}

TEST(InfoSections, ToleratesOddText) {
  EXPECT_TRUE(InfoSections::parse("").empty());
  InfoSections info = InfoSections::parse("loose:1\nno colon here\n#Bare\nx:2\nempty:\n");
  EXPECT_EQ(info.get("", "loose"), "1");  // before any header
  EXPECT_EQ(info.get("bare", "x"), "2");  // "\n" line ends and "#Name" without a space
  EXPECT_EQ(info.get("bare", "empty"), "");
  EXPECT_EQ(info.get_integer("bare", "empty"), std::nullopt);
  EXPECT_EQ(info.get_integer("bare", "x"), 2);
  EXPECT_EQ(info.get_double("bare", "x"), 2.0);
  EXPECT_EQ(info.get_integer("bare", "missing"), std::nullopt);
}

TEST(ClientInfo, ParsesOneLine) {
  ClientInfo c = ClientInfo::parse(
      "id=7 addr=10.0.0.1:5000 laddr=10.0.0.2:6379 fd=9 name=api age=12 idle=3 flags=x db=2 "
      "cmd=exec user=app omem=5 tot-mem=20000 resp=3 lib-name=redmux");
  EXPECT_EQ(c.id, 7);
  EXPECT_EQ(c.addr, "10.0.0.1:5000");
  EXPECT_EQ(c.laddr, "10.0.0.2:6379");
  EXPECT_EQ(c.name, "api");
  EXPECT_EQ(c.age, 12);
  EXPECT_EQ(c.idle, 3);
  EXPECT_EQ(c.flags, "x");
  EXPECT_EQ(c.db, 2);
  EXPECT_EQ(c.cmd, "exec");
  EXPECT_EQ(c.user, "app");
  EXPECT_EQ(c.omem, 5);
  EXPECT_EQ(c.tot_mem, 20000);
  EXPECT_EQ(c.resp, 3);
  EXPECT_EQ(c.get("lib-name"), "redmux");  // unknown fields kept as text
  EXPECT_EQ(c.get("nope"), std::nullopt);
}

TEST(ClientInfo, ToleratesOddText) {
  EXPECT_TRUE(ClientInfo::parse_list("").empty());
  EXPECT_TRUE(ClientInfo::parse_list("\n\r\n").empty());
  auto clients = ClientInfo::parse_list("id=1 name=\nid=x junk  id2=3\n");
  ASSERT_EQ(clients.size(), 2u);
  EXPECT_EQ(clients[0].id, 1);
  EXPECT_EQ(clients[0].name, "");
  EXPECT_EQ(clients[1].id, -1);  // not a number: left at its default
  EXPECT_EQ(clients[1].get("id2"), "3");
}

TEST(ArgumentTypes, ScoreBounds) {
  EXPECT_EQ(ScoreBound(1.5).text(), "1.5");
  EXPECT_EQ(ScoreBound::exclusive(-2).text(), "(-2");
  EXPECT_EQ(ScoreBound::min().text(), "-inf");
  EXPECT_EQ(ScoreBound::max().text(), "inf");
  ScoreBound copy = ScoreBound::exclusive(3);
  ScoreBound other(0);
  other = copy;
  EXPECT_EQ(other.text(), "(3");
  EXPECT_EQ(LexBound::inclusive("a").text(), "[a");
  EXPECT_EQ(LexBound::exclusive("b").text(), "(b");
  EXPECT_EQ(LexBound::min().text(), "-");
  EXPECT_EQ(LexBound::max().text(), "+");
}

TEST(ArgumentTypes, Expiry) {
  using namespace std::chrono_literals;
  auto words = [](const Expiry& e) {
    detail::ArgList args({"X"});
    e.append_to(args);
    std::vector<std::string> out;
    for (const Arg& a : args.span()) out.emplace_back(a.bytes());
    return out;
  };
  EXPECT_EQ(words(Expiry()), (std::vector<std::string>{"X"}));
  EXPECT_EQ(words(Expiry::after(2min)), (std::vector<std::string>{"X", "EX", "120"}));
  EXPECT_EQ(words(Expiry::after(250ms)), (std::vector<std::string>{"X", "PX", "250"}));
  EXPECT_EQ(words(Expiry::keep_ttl()), (std::vector<std::string>{"X", "KEEPTTL"}));
  EXPECT_EQ(words(Expiry::persist()), (std::vector<std::string>{"X", "PERSIST"}));
}

}  // namespace
}  // namespace redmux

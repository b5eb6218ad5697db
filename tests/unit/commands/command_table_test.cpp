#include "commands/command_table.hpp"

#include "resp/parser.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace redmux::detail {
namespace {

using Args = std::vector<Arg>;

const CommandInfo& info(const Args& args) {
  return command_info(args);
}

std::vector<std::size_t> keys(const Args& args) {
  std::vector<std::size_t> out;
  key_indexes(command_info(args), args, out);
  return out;
}

using V = std::vector<std::size_t>;

TEST(CommandTable, KeyIndexesFindsWhatKeyIndexesDoesBelowAndAboveItsInlineRoom) {
  // 0 … 20 keys: up to KeyIndexes::kInline in the object, then all of them in its vector.
  for (std::size_t n = 0; n <= 20; ++n) {
    Args args = {"MGET"};
    for (std::size_t k = 0; k < n; ++k) args.emplace_back("k");
    const KeyIndexes found(command_info(args), args);
    const V expected = keys(args);
    EXPECT_EQ(V(found.get().begin(), found.get().end()), expected) << n << " keys";
    EXPECT_EQ(found.get().size(), n);
  }
  const Args mset = {"MSET", "a", "1", "b", "2"};  // a step of 2
  const KeyIndexes pairs(command_info(mset), mset);
  EXPECT_EQ(V(pairs.get().begin(), pairs.get().end()), (V{1, 3}));
}

TEST(CommandTable, FlagsFromRedis) {
  EXPECT_TRUE(info({"GET", "k"}).is(CommandFlag::ReadOnly));
  EXPECT_FALSE(info({"GET", "k"}).is(CommandFlag::Write));
  EXPECT_TRUE(info({"SET", "k", "v"}).is(CommandFlag::Write));
  EXPECT_TRUE(info({"BLPOP", "k", "0"}).is(CommandFlag::Blocking));
  EXPECT_TRUE(info({"PUBLISH", "c", "m"}).is(CommandFlag::PubSub));
  EXPECT_TRUE(info({"EVAL", "return 1", "0"}).is(CommandFlag::NoScript));
  EXPECT_TRUE(info({"EVAL", "return 1", "0"}).is(CommandFlag::MovableKeys));
  EXPECT_FALSE(info({"EVAL", "return 1", "0"}).is(CommandFlag::ReadOnly));
  EXPECT_TRUE(info({"EVAL_RO", "return 1", "0"}).is(CommandFlag::ReadOnly));
  EXPECT_FALSE(info({"GET", "k"}).is(CommandFlag::Unknown));
  EXPECT_EQ(info({"GET", "k"}).name, "GET");
}

TEST(CommandTable, CaseInsensitive) {
  EXPECT_EQ(&info({"get", "k"}), &info({"GET", "k"}));
  EXPECT_EQ(&info({"gEt", "k"}), &info({"GET", "k"}));
  EXPECT_EQ(info({"client", "kill", "id", "1"}).name, "CLIENT KILL");
  EXPECT_EQ(info({"xread", "streams", "s", "0"}).rule, KeyRule::Streams);
  EXPECT_EQ(keys({"xread", "streams", "s", "0"}), (V{2}));
}

TEST(CommandTable, KeyPositionsRange) {
  EXPECT_EQ(keys({"GET", "k"}), (V{1}));
  EXPECT_EQ(keys({"MSET", "a", "1", "b", "2", "c", "3"}), (V{1, 3, 5}));
  EXPECT_EQ(keys({"DEL", "a", "b", "c"}), (V{1, 2, 3}));
  EXPECT_EQ(keys({"BLPOP", "a", "b", "0"}), (V{1, 2}));  // last_key -2: not the timeout
  EXPECT_EQ(keys({"LMOVE", "src", "dst", "LEFT", "RIGHT"}), (V{1, 2}));
  EXPECT_EQ(keys({"PING"}), V{});
  EXPECT_EQ(keys({"GET"}), V{});  // malformed: no key, no crash
  EXPECT_EQ(keys({"OBJECT", "ENCODING", "k"}), (V{2}));
  EXPECT_EQ(keys({"MEMORY", "USAGE", "k"}), (V{2}));
}

TEST(CommandTable, KeyPositionsNumKeys) {
  EXPECT_EQ(keys({"EVAL", "s", "2", "k1", "k2", "a1"}), (V{3, 4}));
  EXPECT_EQ(keys({"EVALSHA", "sha", "0", "a1"}), V{});
  EXPECT_EQ(keys({"FCALL", "f", "1", "k", "a"}), (V{3}));
  EXPECT_EQ(keys({"ZUNIONSTORE", "dst", "2", "a", "b", "WEIGHTS", "1", "2"}), (V{1, 3, 4}));
  EXPECT_EQ(keys({"ZINTERSTORE", "dst", "1", "a"}), (V{1, 3}));
  EXPECT_EQ(keys({"ZUNION", "2", "a", "b", "WITHSCORES"}), (V{2, 3}));
  EXPECT_EQ(keys({"LMPOP", "2", "a", "b", "LEFT"}), (V{2, 3}));
  EXPECT_EQ(keys({"BLMPOP", "0", "1", "a", "LEFT"}), (V{3}));
  EXPECT_EQ(keys({"SINTERCARD", "2", "a", "b", "LIMIT", "1"}), (V{2, 3}));
  // A count past the end or not a number: the keys that exist, no crash.
  EXPECT_EQ(keys({"EVAL", "s", "5", "k1"}), (V{3}));
  EXPECT_EQ(keys({"EVAL", "s", "x", "k1"}), V{});
  EXPECT_EQ(keys({"EVAL", "s"}), V{});
}

TEST(CommandTable, KeyPositionsAfterAKeywordAsRedisFindsThem) {
  // SORT … STORE dst: the options' own arguments are skipped (a pattern named "store").
  EXPECT_EQ(keys({"SORT", "a", "STORE", "b"}), (V{1, 3}));
  EXPECT_EQ(keys({"SORT", "a", "BY", "w_*", "LIMIT", "0", "5", "GET", "#", "ALPHA", "store", "b"}),
            (V{1, 11}));
  EXPECT_EQ(keys({"SORT", "a", "GET", "STORE"}), (V{1}));
  EXPECT_EQ(keys({"SORT", "a", "STORE", "b", "STORE", "c"}), (V{1, 5}));  // the last one
  EXPECT_EQ(keys({"SORT", "a", "STORE"}), (V{1}));                        // malformed
  EXPECT_EQ(keys({"SORT_RO", "a", "STORE", "b"}), (V{1}));                // no STORE there
  EXPECT_EQ(keys({"GEORADIUS", "a", "15", "37", "200", "km", "COUNT", "3", "STORE", "b"}),
            (V{1, 9}));
  EXPECT_EQ(keys({"GEORADIUS", "a", "15", "37", "200", "km", "STOREDIST", "b"}), (V{1, 7}));
  EXPECT_EQ(keys({"GEORADIUSBYMEMBER", "a", "m", "200", "km", "STORE", "b"}), (V{1, 6}));
  EXPECT_EQ(keys({"GEORADIUS", "a", "15", "37", "200", "km", "WITHDIST"}), (V{1}));
  // MIGRATE: its key, or "" and the keys after KEYS (AUTH's password is not one).
  EXPECT_EQ(keys({"MIGRATE", "h", "6379", "k", "0", "1000"}), (V{3}));
  EXPECT_EQ(
      keys({"MIGRATE", "h", "6379", "", "0", "1000", "COPY", "AUTH", "keys", "KEYS", "a", "b"}),
      (V{10, 11}));
  EXPECT_EQ(keys({"MIGRATE", "h", "6379", "", "0", "1000", "AUTH2", "u", "KEYS", "KEYS", "a"}),
            (V{10}));
  EXPECT_EQ(first_key_index(info({"SORT", "a", "STORE", "b"}), Args{"SORT", "a", "STORE", "b"}),
            std::optional<std::size_t>(1));
}

TEST(CommandTable, KeyPositionsStreams) {
  EXPECT_EQ(keys({"XREAD", "COUNT", "2", "STREAMS", "a", "b", "0", "0"}), (V{4, 5}));
  EXPECT_EQ(keys({"XREAD", "BLOCK", "0", "streams", "a", "$"}), (V{4}));
  EXPECT_EQ(keys({"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"}), (V{5}));
  // A group or consumer named "streams" is before index 4 and not taken for the keyword.
  EXPECT_EQ(keys({"XREADGROUP", "GROUP", "streams", "c", "STREAMS", "s", ">"}), (V{5}));
  EXPECT_EQ(keys({"XREAD", "COUNT", "2"}), V{});
}

TEST(CommandTable, FirstKeyIndex) {
  Args mset{"MSET", "a", "1", "b", "2"};
  EXPECT_EQ(first_key_index(command_info(mset), mset), 1u);
  Args eval0{"EVAL", "return 1", "0"};
  EXPECT_EQ(first_key_index(command_info(eval0), eval0), std::nullopt);
  Args xread{"XREAD", "STREAMS", "s", "0"};
  EXPECT_EQ(first_key_index(command_info(xread), xread), 2u);
  Args ping{"PING"};
  EXPECT_EQ(first_key_index(command_info(ping), ping), std::nullopt);
}

TEST(CommandTable, Blocking) {
  auto blocking = [](const Args& a) { return is_blocking(command_info(a), a); };
  EXPECT_TRUE(blocking({"BLPOP", "k", "0"}));
  EXPECT_TRUE(blocking({"BZPOPMIN", "k", "0"}));
  EXPECT_TRUE(blocking({"WAIT", "1", "0"}));
  EXPECT_TRUE(blocking({"WAITAOF", "1", "0", "0"}));
  EXPECT_FALSE(blocking({"XREAD", "STREAMS", "s", "0"}));
  EXPECT_FALSE(blocking({"XREAD", "COUNT", "1", "STREAMS", "block", "0"}));  // a key "block"
  EXPECT_TRUE(blocking({"XREAD", "block", "100", "STREAMS", "s", "$"}));
  EXPECT_TRUE(blocking({"XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"}));
  // A group, consumer or COUNT called BLOCK is not the option.
  EXPECT_FALSE(blocking({"XREADGROUP", "GROUP", "BLOCK", "BLOCK", "STREAMS", "BLOCK", ">"}));
  EXPECT_FALSE(blocking({"XREADGROUP", "GROUP", "g", "block", "COUNT", "1", "STREAMS", "s", ">"}));
  EXPECT_FALSE(blocking({"XREAD", "COUNT", "BLOCK", "STREAMS", "s", "0"}));
  EXPECT_TRUE(
      blocking({"XREADGROUP", "GROUP", "BLOCK", "BLOCK", "BLOCK", "0", "STREAMS", "BLOCK", ">"}));
  EXPECT_FALSE(blocking({"GET", "k"}));
  EXPECT_FALSE(blocking({"LPOP", "k"}));
}

TEST(CommandTable, Subcommands) {
  const CommandInfo& kill = info({"CLIENT", "KILL", "ID", "7"});
  EXPECT_EQ(kill.name, "CLIENT KILL");
  EXPECT_FALSE(kill.has_subcommands);
  EXPECT_EQ(info({"CLIENT", "id"}).name, "CLIENT ID");
  EXPECT_EQ(info({"config", "get", "maxmemory"}).name, "CONFIG GET");
  EXPECT_TRUE(info({"OBJECT", "ENCODING", "k"}).is(CommandFlag::ReadOnly));
  // Container alone or with an unknown subcommand: the container entry, conservatively Write.
  const CommandInfo& bare = info({"CLIENT"});
  EXPECT_EQ(bare.name, "CLIENT");
  EXPECT_TRUE(bare.has_subcommands);
  EXPECT_TRUE(bare.is(CommandFlag::Write));
  EXPECT_EQ(&info({"CLIENT", "NO-SUCH-THING"}), &bare);
  EXPECT_EQ(&info({"CLIENT", std::string(100, 'x')}), &bare);
  // Subcommands newer than the 7.0 server, added by hand.
  EXPECT_EQ(info({"CLIENT", "SETINFO", "LIB-NAME", "redmux"}).name, "CLIENT SETINFO");
  EXPECT_EQ(info({"CLUSTER", "MYSHARDID"}).name, "CLUSTER MYSHARDID");
}

TEST(CommandTable, FindCommand) {
  ASSERT_NE(find_command("get"), nullptr);
  EXPECT_EQ(find_command("get")->name, "GET");
  ASSERT_NE(find_command("client|kill"), nullptr);
  EXPECT_EQ(find_command("client|kill")->name, "CLIENT KILL");
  ASSERT_NE(find_command("CLIENT KILL"), nullptr);
  EXPECT_EQ(find_command("NOPE"), nullptr);
  EXPECT_EQ(find_command("CLIENT|NOPE"), nullptr);
  EXPECT_EQ(find_command(""), nullptr);
}

// The lookup hashes names into an open-addressing table: every built-in name, in either
// case, must land on its own entry, and a name one byte off on none.
TEST(CommandTable, EveryBuiltinNameFindsItsEntry) {
  ASSERT_GT(builtin_commands().size(), 200u);
  for (const CommandInfo& entry : builtin_commands()) {
    SCOPED_TRACE(std::string(entry.name));
    EXPECT_EQ(find_command(entry.name), &entry);
    std::string lower(entry.name);
    for (char& c : lower)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    EXPECT_EQ(&command_info(Args{Arg(lower)}), &entry);
    // A byte more or less: no entry, or the entry of exactly that name (LPUSH → LPUSHX,
    // SMOVE → MOVE).
    for (const std::string& near :
         {std::string(entry.name) + "X", std::string(entry.name.substr(1))}) {
      if (const CommandInfo* other = find_command(near)) {
        EXPECT_EQ(other->name, near);
      }
    }
  }
}

// Names are upper-cased eight bytes at a time: only a..z change, whatever their neighbours.
TEST(CommandTable, OnlyAsciiLettersFoldAndTheBytesPastEightCount) {
  EXPECT_NE(find_command("iNcR"), nullptr);
  // Every length reads its bytes: 1 to 3, 4 to 7, 8 and more take different loads.
  EXPECT_EQ(find_command("gEt")->name, "GET");
  EXPECT_EQ(find_command("Exec")->name, "EXEC");
  EXPECT_EQ(find_command("hincrbyfloat")->name, "HINCRBYFLOAT");
  for (const char* none : {"", "G", "GE", "GXT", "XET", "GEX", "EXEX", "HINCRBYFLOAX"})
    EXPECT_EQ(find_command(none), nullptr) << none;
  EXPECT_EQ(&command_info(Args{Arg("geoRadiusByMember_ro")}), find_command("GEORADIUSBYMEMBER_RO"));
  // The bytes next to the letters ('@' '[' '`' '{'), and letters with the high bit set
  // (0xC9, 0xE9: 'I' and 'i' plus 0x80), are not letters.
  for (const char* near : {"@NCR", "[NCR", "`NCR", "{NCR", "\xC9NCR", "\xE9NCR", "INC\xD2"}) {
    SCOPED_TRACE(near);
    EXPECT_EQ(find_command(near), nullptr);
  }
  // Same first eight bytes and length, another tail: a different name, or none.
  EXPECT_EQ(find_command("GEORADIUSBYMEMBER_RX"), nullptr);
  EXPECT_EQ(find_command("GEORADIUSBYMEMBER_ro")->name, "GEORADIUSBYMEMBER_RO");
}

TEST(CommandTable, UnknownCommands) {
  const CommandInfo& a = info({"MYMODULE.DOIT", "x"});
  EXPECT_TRUE(a.is(CommandFlag::Unknown));
  EXPECT_TRUE(a.is(CommandFlag::Write));
  EXPECT_EQ(a.rule, KeyRule::None);
  EXPECT_EQ(a.name, "MYMODULE.DOIT");
  EXPECT_EQ(&info({"mymodule.doit"}), &a);  // interned once, case-insensitively
  EXPECT_EQ(keys({"MYMODULE.DOIT", "x"}), V{});
  const CommandInfo& empty = command_info({});
  EXPECT_TRUE(empty.is(CommandFlag::Unknown));
}

TEST(CommandTable, LearnedUnknownCommand) {
  const CommandInfo& before = info({"LEARNT.GET", "k"});
  learn_command("learnt.get", CommandFlag::ReadOnly, KeyRule::Range, 1, 1, 1, 0);
  const CommandInfo& after = info({"LEARNT.GET", "k"});
  EXPECT_TRUE(after.is(CommandFlag::ReadOnly));
  EXPECT_TRUE(after.is(CommandFlag::Unknown));
  EXPECT_EQ(keys({"LEARNT.GET", "k"}), (V{1}));
  EXPECT_TRUE(before.is(CommandFlag::Write));  // earlier references unchanged
  learn_command("GET", CommandFlag::Write, KeyRule::None, 0, 0, 0, 0);  // built-in: ignored
  EXPECT_TRUE(info({"GET", "k"}).is(CommandFlag::ReadOnly));
}

TEST(CommandTable, AdminGate) {
  for (const Args& a : std::vector<Args>{{"KEYS", "*"},
                                         {"FLUSHALL"},
                                         {"FLUSHDB"},
                                         {"CONFIG", "SET", "x", "y"},
                                         {"CONFIG", "GET", "x"},
                                         {"CONFIG"},
                                         {"DEBUG", "SLEEP", "0"},
                                         {"SHUTDOWN"},
                                         {"MONITOR"},
                                         {"SAVE"},
                                         {"BGSAVE"},
                                         {"BGREWRITEAOF"},
                                         {"REPLICAOF", "NO", "ONE"},
                                         {"SLAVEOF", "NO", "ONE"},
                                         {"SWAPDB", "0", "1"},
                                         {"SLOWLOG", "RESET"},
                                         {"CLIENT", "KILL", "ID", "1"},
                                         {"CLIENT", "PAUSE", "10"},
                                         {"CLIENT", "UNPAUSE"},
                                         {"CLUSTER", "ADDSLOTS", "1"},
                                         {"CLUSTER", "FAILOVER"},
                                         {"CLUSTER", "FORGET", "x"},
                                         {"CLUSTER", "MEET", "h", "1"},
                                         {"CLUSTER", "RESET"},
                                         {"CLUSTER", "SETSLOT", "1"},
                                         {"CLUSTER", "SET-CONFIG-EPOCH", "1"},
                                         {"CLUSTER", "BUMPEPOCH"},
                                         {"SCRIPT", "FLUSH"},
                                         {"FUNCTION", "FLUSH"},
                                         {"MODULE", "LIST"},
                                         {"MODULE", "LOAD", "x"},
                                         {"ACL", "SETUSER", "u"},
                                         {"ACL", "DELUSER", "u"},
                                         {"FAILOVER"}})
    EXPECT_TRUE(command_info(a).is(CommandFlag::Admin))
        << a[0].bytes() << " " << (a.size() > 1 ? a[1].bytes() : "");
  for (const Args& a :
       std::vector<Args>{{"GET", "k"},
                         {"SCAN", "0"},
                         {"CLIENT", "LIST"},
                         {"CLIENT", "ID"},
                         {"INFO"},
                         {"SLOWLOG", "GET"},
                         {"CLUSTER", "SLOTS"},
                         {"CLUSTER", "NODES"},
                         {"SCRIPT", "LOAD", "x"},
                         {"FUNCTION", "LOAD", "x"},
                         {"SCRIPT", "KILL"},  // Blocking instead: its own connection
                         {"FUNCTION", "KILL"},
                         {"ACL", "WHOAMI"},
                         {"DBSIZE"},
                         {"SLOWLOG"}})
    EXPECT_FALSE(command_info(a).is(CommandFlag::Admin))
        << a[0].bytes() << " " << (a.size() > 1 ? a[1].bytes() : "");
}

TEST(CommandTable, ConnectionState) {
  for (const Args& a : std::vector<Args>{{"SELECT", "1"},
                                         {"MULTI"},
                                         {"EXEC"},
                                         {"DISCARD"},
                                         {"WATCH", "k"},
                                         {"UNWATCH"},
                                         {"SUBSCRIBE", "c"},
                                         {"PSUBSCRIBE", "c*"},
                                         {"SSUBSCRIBE", "c"},
                                         {"UNSUBSCRIBE"},
                                         {"PUNSUBSCRIBE"},
                                         {"SUNSUBSCRIBE"},
                                         {"MONITOR"},
                                         {"CLIENT", "REPLY", "OFF"},
                                         {"RESET"},
                                         {"QUIT"},
                                         {"HELLO", "3"},
                                         {"AUTH", "p"},
                                         {"READONLY"},
                                         {"READWRITE"},
                                         {"ASKING"},
                                         {"CLIENT", "TRACKING", "ON"},
                                         {"CLIENT", "SETNAME", "x"}}) {
    const CommandInfo& ci = command_info(a);
    EXPECT_TRUE(ci.is(CommandFlag::ConnectionState)) << ci.name;
    EXPECT_FALSE(connection_state_advice(ci).empty()) << ci.name;
  }
  EXPECT_NE(connection_state_advice(info({"SELECT", "1"})).find("database("), std::string::npos);
  EXPECT_NE(connection_state_advice(info({"MULTI"})).find("transaction()"), std::string::npos);
  // Without advice of its own, the refusal's reason is not said twice (the caller says it).
  EXPECT_EQ(connection_state_advice(info({"CLIENT", "NO-EVICT", "on"})), "redmux does not send it");
  EXPECT_NE(connection_state_advice(info({"SUBSCRIBE", "c"})).find("subscriber()"),
            std::string::npos);
  for (const Args& a : std::vector<Args>{{"GET", "k"},
                                         {"PUBLISH", "c", "m"},
                                         {"PING"},
                                         {"CLIENT", "ID"},
                                         {"CLIENT", "GETNAME"}}) {
    EXPECT_FALSE(command_info(a).is(CommandFlag::ConnectionState)) << command_info(a).name;
    EXPECT_TRUE(connection_state_advice(command_info(a)).empty());
  }
}

TEST(CommandTable, KnowsEveryCommandTheTypedApiSends) {
  // Binary search finds each (a mis-sorted table would lose some).
  for (const char* name :
       {"APPEND",      "COPY",       "GETEX",       "GETDEL",  "LPOS",       "LMPOP",
        "SMISMEMBER",  "SINTERCARD", "ZRANGESTORE", "ZMSCORE", "HRANDFIELD", "PFMERGE",
        "OBJECT",      "MEMORY",     "TIME",        "ECHO",    "EXPIRETIME", "FUNCTION",
        "ZUNIONSTORE", "XAUTOCLAIM", "ZINTERCARD"})
    EXPECT_NE(find_command(name), nullptr) << name;
}

}  // namespace
}  // namespace redmux::detail

namespace redmux::detail {
namespace {

NodeSpan parse_nodes(resp::Parser& parser, std::string_view bytes) {
  EXPECT_EQ(parser.parse(bytes), resp::ParseStatus::Complete);
  return parser.nodes();
}

TEST(CommandTableLearning, FromCommandInfoReply) {
  // What Redis answers to COMMAND INFO for a module command, RESP2 shape (trimmed after
  // step: the rest is ignored).
  resp::Parser parser;
  NodeSpan reply = parse_nodes(parser,
                               "*1\r\n*7\r\n$9\r\nmod.fetch\r\n:-2\r\n*2\r\n+readonly\r\n+fast\r\n"
                               ":1\r\n:1\r\n:1\r\n*0\r\n");
  ASSERT_TRUE(learn_command_from_reply("mod.fetch", reply));
  Args args{"MOD.FETCH", "key"};
  const CommandInfo& learned = command_info(args);
  EXPECT_TRUE(learned.is(CommandFlag::ReadOnly));
  EXPECT_TRUE(learned.is(CommandFlag::Fast));
  EXPECT_FALSE(learned.is(CommandFlag::Write));
  EXPECT_EQ(first_key_index(learned, args), 1u);

  // RESP3 flags arrive as a set; no readonly flag means routed as a write.
  resp::Parser parser3;
  reply = parse_nodes(parser3,
                      "*1\r\n*6\r\n$7\r\nmod.put\r\n:3\r\n~1\r\n+denyoom\r\n:0\r\n:0\r\n:0\r\n");
  ASSERT_TRUE(learn_command_from_reply("mod.put", reply));
  EXPECT_TRUE(info({"MOD.PUT", "a", "b"}).is(CommandFlag::Write));
  EXPECT_EQ(info({"MOD.PUT", "a", "b"}).rule, KeyRule::None);

  resp::Parser nil;
  EXPECT_FALSE(learn_command_from_reply("nope", parse_nodes(nil, "*1\r\n$-1\r\n")));
  resp::Parser junk;
  EXPECT_FALSE(learn_command_from_reply("nope", parse_nodes(junk, ":1\r\n")));
}

TEST(CommandTableBounds, UnknownNamesAreBounded) {
  // Fills the unknown-name table: keep this test last in the file, after every test that interns
  // names (ctest runs each test in its own process anyway).
  for (std::size_t i = 0; i < kMaxUnknownCommands + 10; ++i) {
    std::string name = "BOUNDED.CMD." + std::to_string(i);
    const Arg arg(name);
    (void)command_info(std::span<const Arg>(&arg, 1));
  }
  EXPECT_EQ(info({"BOUNDED.ONE.MORE"}).name, "UNKNOWN");
  EXPECT_TRUE(info({"BOUNDED.ONE.MORE"}).is(CommandFlag::Write));
  EXPECT_EQ(info({"GET", "k"}).name, "GET");  // built-ins unaffected
}

}  // namespace
}  // namespace redmux::detail

// Script (src/commands/script.cpp): SHA-1, named parameters rewritten to KEYS/ARGV, binding
// values by name; and what the scripting mixin sends through a sink that cannot retry.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "redmux/commands.hpp"
#include "redmux/error.hpp"
#include "unit/commands/recording_sink.hpp"

namespace redmux::testing {
namespace {

TEST(ScriptSha1, KnownVectors) {
  // FIPS 180 examples, and one that crosses a block boundary with its padding.
  EXPECT_EQ(script_sha1(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(script_sha1("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(script_sha1("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  EXPECT_EQ(script_sha1(std::string(1000000, 'a')), "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
  // What redis-server 7.0 answers to SCRIPT LOAD "return 1".
  EXPECT_EQ(script_sha1("return 1"), "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
  EXPECT_EQ(Script("return 1").sha1(), "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
}

TEST(ScriptParameters, RewrittenToKeysAndArgv) {
  auto script = Script::with_parameters(
      "redis.call('SET', @key, @value) return {@other_key, @value, @n}", {"key", "other_key"});
  EXPECT_EQ(script.text(),
            "redis.call('SET', KEYS[1], ARGV[1]) return {KEYS[2], ARGV[1], ARGV[2]}");
  EXPECT_EQ(script.key_names(), (std::vector<std::string>{"key", "other_key"}));
  EXPECT_EQ(script.arg_names(), (std::vector<std::string>{"value", "n"}));
  EXPECT_EQ(script.sha1(), script_sha1(script.text()));
}

TEST(ScriptParameters, StringsAndCommentsAreLeftAlone) {
  auto script = Script::with_parameters(
      "local a = 'mail@x' .. \"@y\\\"@z\" .. [[@long]] .. [==[ ]] @still ]==] -- @comment\n"
      "--[[ @block\n comment ]] return @real .. @x1_y",
      {});
  EXPECT_EQ(script.text(),
            "local a = 'mail@x' .. \"@y\\\"@z\" .. [[@long]] .. [==[ ]] @still ]==] -- @comment\n"
            "--[[ @block\n comment ]] return ARGV[1] .. ARGV[2]");
  EXPECT_EQ(script.arg_names(), (std::vector<std::string>{"real", "x1_y"}));
  // '@' not followed by a name is not a parameter.
  EXPECT_EQ(Script::with_parameters("return '@' .. @ 1", {}).text(), "return '@' .. @ 1");
}

TEST(ScriptParameters, KeyNameMustAppear) {
  EXPECT_THROW(Script::with_parameters("return @a", {"a", "missing"}), InvalidArgumentError);
  // Inside a string it does not count.
  EXPECT_THROW(Script::with_parameters("return '@k'", {"k"}), InvalidArgumentError);
}

TEST(ScriptBind, ByNameInKeysThenArgvOrder) {
  auto script = Script::with_parameters("return {@b, @k, @a}", {"k"});
  BoundScript call = script.bind({{"a", 10}, {"k", "key:1"}, {"b", 2.5}});
  EXPECT_EQ(call.key_count(), 1u);
  EXPECT_EQ(call.words(), (std::vector<std::string>{"key:1", "2.5", "10"}));
}

TEST(ScriptBind, MistakesAreInvalidArgumentErrors) {
  auto script = Script::with_parameters("return {@k, @a}", {"k"});
  try {
    script.bind({{"k", "x"}});
    FAIL() << "a missing value must throw";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("@a"), std::string::npos) << e.what();
  }
  try {
    script.bind({{"k", "x"}, {"a", 1}, {"zzz", 2}});
    FAIL() << "an unknown name must throw";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("@zzz"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("@k, @a"), std::string::npos) << e.what();
  }
  EXPECT_THROW(script.bind({{"k", "x"}, {"k", "y"}, {"a", 1}}), InvalidArgumentError);
}

// Every sink sends a script as EVAL with its text (a Database, a Batch, this recorder).
TEST(ScriptingCommands, EvalSendsTheText) {
  RecordingSink db;
  db.reply_with(":3\r\n");
  EXPECT_EQ(db.eval<long long>("return #KEYS + #ARGV", {"k1", "k2"}, {"a"}).get(), 3);
  EXPECT_EQ(db.last(), (Words{"EVAL", "return #KEYS + #ARGV", "2", "k1", "k2", "a"}));
  auto script = Script::with_parameters("return @k", {"k"});
  db.reply_with("$1\r\nv\r\n");
  EXPECT_EQ(db.eval_ro<std::string>(script.bind({{"k", "key"}})).get(), "v");
  EXPECT_EQ(db.last(), (Words{"EVAL_RO", "return KEYS[1]", "1", "key"}));
  db.reply_with("-ERR boom\r\n");
  EXPECT_THROW(db.eval("error()").get(), ServerError);
  EXPECT_EQ(db.last(), (Words{"EVAL", "error()", "0"}));
}

TEST(ScriptingCommands, OtherArguments) {
  RecordingSink db;
  db.reply_with(":1\r\n");
  (void)db.evalsha("abc", {"k"}, {1, "x"});
  EXPECT_EQ(db.last(), (Words{"EVALSHA", "abc", "1", "k", "1", "x"}));
  db.reply_with(":1\r\n");
  (void)db.evalsha_ro("abc");
  EXPECT_EQ(db.last(), (Words{"EVALSHA_RO", "abc", "0"}));
  db.reply_with("$3\r\nsha\r\n");
  EXPECT_EQ(db.script_load("return 1").get(), "sha");
  EXPECT_EQ(db.last(), (Words{"SCRIPT", "LOAD", "return 1"}));
  db.reply_with("*2\r\n:1\r\n:0\r\n");
  EXPECT_EQ(db.script_exists({"a", "b"}).get(), (std::vector<bool>{true, false}));
  EXPECT_EQ(db.last(), (Words{"SCRIPT", "EXISTS", "a", "b"}));
  (void)db.script_flush();
  EXPECT_EQ(db.last(), (Words{"SCRIPT", "FLUSH"}));
  db.reply_with("$3\r\nlib\r\n");
  EXPECT_EQ(db.function_load("#!lua name=lib\n...", true).get(), "lib");
  EXPECT_EQ(db.last(), (Words{"FUNCTION", "LOAD", "REPLACE", "#!lua name=lib\n..."}));
  (void)db.function_delete("lib");
  EXPECT_EQ(db.last(), (Words{"FUNCTION", "DELETE", "lib"}));
  (void)db.function_flush();
  EXPECT_EQ(db.last(), (Words{"FUNCTION", "FLUSH"}));
  db.reply_with(":1\r\n");
  (void)db.fcall("f", {"a", "b"}, {"x"});
  EXPECT_EQ(db.last(), (Words{"FCALL", "f", "2", "a", "b", "x"}));
  std::vector<std::string> keys{"k"}, args{"1", "2"};
  db.reply_with(":1\r\n");
  (void)db.fcall("f", keys, args);
  EXPECT_EQ(db.last(), (Words{"FCALL", "f", "1", "k", "1", "2"}));
  db.reply_with(":1\r\n");
  (void)db.fcall_ro("g");
  EXPECT_EQ(db.last(), (Words{"FCALL_RO", "g", "0"}));
}

}  // namespace
}  // namespace redmux::testing

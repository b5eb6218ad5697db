// Script: a Lua script prepared once — its text and SHA-1 (the name the server's script cache
// knows it by) — optionally written with named parameters. BoundScript: a script with the
// keys and arguments of one call. Used by the scripting commands (scripting.hpp).
//
// Named parameters. `Script::with_parameters(text, key_names)` reads `@name` tokens in the
// Lua text (outside string literals and comments) and rewrites them: the names listed in
// `key_names` become KEYS[1], KEYS[2] … in that order, every other name becomes ARGV[1],
// ARGV[2] … in order of first appearance. A call then binds values by name:
//
//   const auto transfer = redmux::Script::with_parameters(R"(
//       local balance = tonumber(redis.call('GET', @from) or '0')
//       if balance < tonumber(@amount) then return redis.error_reply('insufficient funds') end
//       redis.call('DECRBY', @from, @amount)
//       return redis.call('INCRBY', @to, @amount))", {"from", "to"});
//   long long to_balance =
//       db.eval<long long>(transfer.bind({{"from", "acct:1"}, {"to", "acct:2"}, {"amount", 10}}))
//           .get();
//
// Keys are declared as keys so that a cluster routes the call by them and the server knows
// which keys the script touches. A plain `Script(text)` is sent as written (KEYS/ARGV).
//
// Ownership and threads: a Script shares its immutable text with its copies (copying is a
// reference-count increment); Script and BoundScript are safe to read from any thread.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "redmux/arg.hpp"

namespace redmux {

/// The SHA-1 of `text` as 40 lower-case hex digits (what SCRIPT LOAD answers for it).
std::string script_sha1(std::string_view text);

/// One named value of a call to a script with parameters: `{"amount", 10}`.
struct ScriptParam {
  std::string_view name;  ///< without the '@'
  Arg value;
};

class BoundScript;

class Script {
 public:
  /// The text as written (using KEYS[i] and ARGV[i]); hashed once here.
  explicit Script(std::string text);

  /// A script with `@name` parameters; `key_names` (without '@') are the ones that are keys.
  /// Throws InvalidArgumentError when a key name does not appear in the text.
  static Script with_parameters(std::string_view text,
                                std::initializer_list<std::string_view> key_names);
  static Script with_parameters(std::string_view text, const std::vector<std::string>& key_names);

  /// The text sent to the server (parameters rewritten to KEYS/ARGV).
  const std::string& text() const noexcept { return data_->text; }
  /// SHA-1 of text(), hex.
  const std::string& sha1() const noexcept { return data_->sha1; }
  /// Parameter names that are keys, in KEYS order; empty for a plain script.
  const std::vector<std::string>& key_names() const noexcept { return data_->key_names; }
  /// The other parameter names, in ARGV order.
  const std::vector<std::string>& arg_names() const noexcept { return data_->arg_names; }

  /// This script with one call's values, by name. Every parameter needs exactly one value;
  /// a missing, unknown or repeated name throws InvalidArgumentError.
  BoundScript bind(std::initializer_list<ScriptParam> values) const;
  /// This script with positional keys and arguments (KEYS[1] … then ARGV[1] …).
  BoundScript bind_positional(std::vector<std::string> keys, std::vector<std::string> args) const;

  struct Data {
    std::string text;
    std::string sha1;
    std::vector<std::string> key_names;
    std::vector<std::string> arg_names;
  };

 private:
  explicit Script(std::shared_ptr<const Data> data) : data_(std::move(data)) {}
  std::shared_ptr<const Data> data_;
  friend class BoundScript;
};

/// A script with the keys and arguments of one call; owns copies of them (a BoundScript may
/// outlive the caller's strings).
class BoundScript {
 public:
  const Script& script() const noexcept { return script_; }
  /// Keys, then arguments.
  const std::vector<std::string>& words() const noexcept { return words_; }
  std::size_t key_count() const noexcept { return key_count_; }

 private:
  friend class Script;
  BoundScript(Script script, std::vector<std::string> words, std::size_t key_count)
      : script_(std::move(script)), words_(std::move(words)), key_count_(key_count) {}
  Script script_;
  std::vector<std::string> words_;
  std::size_t key_count_;
};

namespace detail {
/// Rewrites `@name` parameters of Lua `text` (see the top of this file) into `out`.
/// Throws InvalidArgumentError for a key name that does not appear. Exposed for tests.
void rewrite_parameters(std::string_view text, const std::vector<std::string>& key_names,
                        Script::Data& out);
}  // namespace detail

}  // namespace redmux

// Script: SHA-1 of the text, named-parameter rewriting, binding values by name.
#include "redmux/commands/script.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

#include "redmux/error.hpp"

namespace redmux {
namespace {

// SHA-1 as FIPS 180-4 specifies it: 512-bit blocks, 80 rounds, big-endian words.
class Sha1 {
 public:
  void update(std::string_view data) {
    for (char c : data) {
      block_[used_++] = static_cast<std::uint8_t>(c);
      if (used_ == 64) {
        compress();
        used_ = 0;
      }
    }
    length_ += data.size();
  }
  std::string hex() {
    const std::uint64_t bits = length_ * 8;
    std::uint8_t pad = 0x80;
    update_raw(pad);
    while (used_ != 56) update_raw(0);
    for (int i = 7; i >= 0; --i) update_raw(static_cast<std::uint8_t>(bits >> (8 * i)));
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(40);
    for (std::uint32_t word : h_) {
      for (int shift = 28; shift >= 0; shift -= 4) out += kHex[(word >> shift) & 15];
    }
    return out;
  }

 private:
  void update_raw(std::uint8_t byte) {
    block_[used_++] = byte;
    if (used_ == 64) {
      compress();
      used_ = 0;
    }
  }
  static std::uint32_t rotl(std::uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }
  void compress() {
    std::array<std::uint32_t, 80> w{};
    for (int i = 0; i < 16; ++i) {
      w[i] = (std::uint32_t{block_[4 * i]} << 24) | (std::uint32_t{block_[4 * i + 1]} << 16) |
             (std::uint32_t{block_[4 * i + 2]} << 8) | std::uint32_t{block_[4 * i + 3]};
    }
    for (int i = 16; i < 80; ++i) w[i] = rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    std::uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4];
    for (int i = 0; i < 80; ++i) {
      std::uint32_t f, k;
      if (i < 20) {
        f = (b & c) | (~b & d);
        k = 0x5A827999;
      } else if (i < 40) {
        f = b ^ c ^ d;
        k = 0x6ED9EBA1;
      } else if (i < 60) {
        f = (b & c) | (b & d) | (c & d);
        k = 0x8F1BBCDC;
      } else {
        f = b ^ c ^ d;
        k = 0xCA62C1D6;
      }
      const std::uint32_t t = rotl(a, 5) + f + e + k + w[i];
      e = d;
      d = c;
      c = rotl(b, 30);
      b = a;
      a = t;
    }
    h_[0] += a;
    h_[1] += b;
    h_[2] += c;
    h_[3] += d;
    h_[4] += e;
  }

  std::array<std::uint32_t, 5> h_{0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
  std::array<std::uint8_t, 64> block_{};
  std::size_t used_ = 0;
  std::uint64_t length_ = 0;
};

bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_name_char(char c) {
  return is_name_start(c) || (c >= '0' && c <= '9');
}

/// At text[at] == '[': the level of a Lua long bracket "[==[" (number of '='), or -1 when
/// this is not one.
int long_bracket_level(std::string_view text, std::size_t at) {
  std::size_t i = at + 1;
  int level = 0;
  while (i < text.size() && text[i] == '=') {
    ++level;
    ++i;
  }
  return (i < text.size() && text[i] == '[') ? level : -1;
}

/// The index one past the long bracket opened at `at` with `level` (or text.size()).
std::size_t skip_long_bracket(std::string_view text, std::size_t at, int level) {
  std::string close = "]" + std::string(static_cast<std::size_t>(level), '=') + "]";
  const std::size_t end = text.find(close, at + static_cast<std::size_t>(level) + 2);
  return end == std::string_view::npos ? text.size() : end + close.size();
}

/// The index one past the quoted string opened at `at` (backslash escapes honoured).
std::size_t skip_quoted(std::string_view text, std::size_t at) {
  const char quote = text[at];
  std::size_t i = at + 1;
  while (i < text.size() && text[i] != quote) i += text[i] == '\\' ? 2 : 1;
  return std::min(i + 1, text.size());
}

std::string quoted_name(std::string_view name) {
  return "@" + std::string(name);
}

}  // namespace

std::string script_sha1(std::string_view text) {
  Sha1 sha;
  sha.update(text);
  return sha.hex();
}

namespace detail {

void rewrite_parameters(std::string_view text, const std::vector<std::string>& key_names,
                        Script::Data& out) {
  out.text.clear();
  out.text.reserve(text.size() + 16);
  out.key_names = key_names;
  out.arg_names.clear();
  std::vector<bool> key_used(key_names.size(), false);
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    std::size_t next = i + 1;
    if (c == '\'' || c == '"') {
      next = skip_quoted(text, i);
    } else if (c == '[' && long_bracket_level(text, i) >= 0) {
      next = skip_long_bracket(text, i, long_bracket_level(text, i));
    } else if (c == '-' && i + 1 < text.size() && text[i + 1] == '-') {
      if (i + 2 < text.size() && text[i + 2] == '[' && long_bracket_level(text, i + 2) >= 0) {
        next = skip_long_bracket(text, i + 2, long_bracket_level(text, i + 2));
      } else {
        next = text.find('\n', i);
        if (next == std::string_view::npos) next = text.size();
      }
    } else if (c == '@' && i + 1 < text.size() && is_name_start(text[i + 1])) {
      std::size_t end = i + 2;
      while (end < text.size() && is_name_char(text[end])) ++end;
      const std::string_view name = text.substr(i + 1, end - i - 1);
      auto key = std::find(key_names.begin(), key_names.end(), name);
      if (key != key_names.end()) {
        const auto index = static_cast<std::size_t>(key - key_names.begin());
        key_used[index] = true;
        out.text += "KEYS[" + std::to_string(index + 1) + "]";
      } else {
        auto arg = std::find(out.arg_names.begin(), out.arg_names.end(), name);
        if (arg == out.arg_names.end()) arg = out.arg_names.insert(arg, std::string(name));
        out.text += "ARGV[" + std::to_string(arg - out.arg_names.begin() + 1) + "]";
      }
      i = end;
      continue;
    }
    out.text.append(text.substr(i, next - i));
    i = next;
  }
  for (std::size_t k = 0; k < key_names.size(); ++k) {
    if (!key_used[k]) {
      Error(errc::invalid_argument, "redmux: Script::with_parameters: key parameter " +
                                        quoted_name(key_names[k]) +
                                        " does not appear in the script's text (outside strings "
                                        "and comments)")
          .raise();
    }
  }
}

}  // namespace detail

Script::Script(std::string text) {
  auto data = std::make_shared<Data>();
  data->sha1 = script_sha1(text);
  data->text = std::move(text);
  data_ = std::move(data);
}

Script Script::with_parameters(std::string_view text,
                               std::initializer_list<std::string_view> key_names) {
  return with_parameters(text, std::vector<std::string>(key_names.begin(), key_names.end()));
}

Script Script::with_parameters(std::string_view text, const std::vector<std::string>& key_names) {
  auto data = std::make_shared<Data>();
  detail::rewrite_parameters(text, key_names, *data);
  data->sha1 = script_sha1(data->text);
  return Script(std::shared_ptr<const Data>(std::move(data)));
}

BoundScript Script::bind(std::initializer_list<ScriptParam> values) const {
  const auto& keys = data_->key_names;
  const auto& args = data_->arg_names;
  std::vector<std::string> words(keys.size() + args.size());
  std::vector<bool> given(words.size(), false);
  for (const ScriptParam& p : values) {
    std::size_t slot = words.size();
    if (auto k = std::find(keys.begin(), keys.end(), p.name); k != keys.end()) {
      slot = static_cast<std::size_t>(k - keys.begin());
    } else if (auto a = std::find(args.begin(), args.end(), p.name); a != args.end()) {
      slot = keys.size() + static_cast<std::size_t>(a - args.begin());
    }
    if (slot == words.size()) {
      std::string known;
      for (const auto& n : keys) known += (known.empty() ? "" : ", ") + quoted_name(n);
      for (const auto& n : args) known += (known.empty() ? "" : ", ") + quoted_name(n);
      Error(errc::invalid_argument, "redmux: Script::bind: the script has no parameter " +
                                        quoted_name(p.name) + "; its parameters are " +
                                        (known.empty() ? std::string("none") : known))
          .raise();
    }
    if (given[slot]) {
      Error(errc::invalid_argument,
            "redmux: Script::bind: parameter " + quoted_name(p.name) + " is given twice")
          .raise();
    }
    given[slot] = true;
    words[slot] = std::string(p.value.bytes());
  }
  for (std::size_t s = 0; s < words.size(); ++s) {
    if (!given[s]) {
      const std::string& name = s < keys.size() ? keys[s] : args[s - keys.size()];
      Error(errc::invalid_argument,
            "redmux: Script::bind: no value for parameter " + quoted_name(name))
          .raise();
    }
  }
  return BoundScript(*this, std::move(words), keys.size());
}

BoundScript Script::bind_positional(std::vector<std::string> keys,
                                    std::vector<std::string> args) const {
  const std::size_t key_count = keys.size();
  keys.insert(keys.end(), std::make_move_iterator(args.begin()),
              std::make_move_iterator(args.end()));
  return BoundScript(*this, std::move(keys), key_count);
}

}  // namespace redmux

// The RESP command encoder: a command is a RESP array of bulk strings,
// `*N\r\n$len\r\narg\r\n…`, appended straight into the caller's output buffer.
//
// No allocation besides growing `out` (at most once per call: the exact size is computed
// first) and no temporary string per argument. Pure functions; safe from any thread on
// distinct buffers.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "redmux/arg.hpp"

namespace redmux::resp {

/// Bytes encode_command(args) appends.
std::size_t encoded_size(std::span<const Arg> args) noexcept;

/// Appends the command `args` (name first) to `out`.
///   encode_command(out, {{"SET", "k", 42}}) → "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\n42\r\n"
void encode_command(std::string& out, std::span<const Arg> args);

inline void encode_command(std::string& out, std::initializer_list<Arg> args) {
  encode_command(out, std::span<const Arg>(args.begin(), args.size()));
}

/// Incremental form, for commands whose arguments come from ranges (MSET, HSET with pairs …)
/// without first building an array of Arg:
///   begin_command(out, 1 + 2 * pairs.size());
///   append_arg(out, "MSET");
///   for (auto& [k, v] : pairs) { append_arg(out, k); append_arg(out, v); }
/// REQUIRES: exactly `count` append_arg calls follow begin_command.
void begin_command(std::string& out, std::size_t count);
void append_arg(std::string& out, const Arg& arg);

}  // namespace redmux::resp

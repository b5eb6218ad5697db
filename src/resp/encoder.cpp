#include "resp/encoder.hpp"

#include <cstdint>
#include <cstring>

namespace redmux::resp {
namespace {

// From this many bytes in long arguments, resize()'s zero-fill (a pass over every byte) costs
// more than appending each argument on its own (a capacity check and a length per append):
// bench_resp's encode/redmux/SET_value breaks even between 4 and 8 KiB.
constexpr std::size_t kAppendFrom = 8192;
// ... provided the arguments are long on average: many short ones (an MSET of small values)
// cost more appended one by one than zero-filled.
constexpr std::size_t kAppendAverage = 1024;

std::size_t decimal_digits(std::size_t n) noexcept {
  if (n < 10) return 1;  // most arguments and argument counts
  if (n < 100) return 2;
  std::size_t digits = 1;
  while (n >= 10) {
    n /= 10;
    ++digits;
  }
  return digits;
}

/// Writes `marker`, n in decimal and CRLF at `at`; returns the end.
[[gnu::always_inline]] inline char* write_header(char* at, char marker, std::size_t n) noexcept {
  *at++ = marker;
  if (n < 10) {  // most argument counts and command names: no digit buffer, no copy
    at[0] = static_cast<char>('0' + n);
    at[1] = '\r';
    at[2] = '\n';
    return at + 3;
  }
  if (n < 100) {  // most keys and values of small commands
    at[0] = static_cast<char>('0' + n / 10);
    at[1] = static_cast<char>('0' + n % 10);
    at[2] = '\r';
    at[3] = '\n';
    return at + 4;
  }
  char digits[20];
  char* end = digits + sizeof digits;
  char* p = end;
  do {
    *--p = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n != 0);
  const auto length = static_cast<std::size_t>(end - p);
  std::memcpy(at, p, length);
  at += length;
  *at++ = '\r';
  *at++ = '\n';
  return at;
}

/// Copies n bytes of at most 16 without a call: overlapping loads and stores, as memcpy
/// does inside, for the short keys and values most commands carry.
[[gnu::always_inline]] inline void copy_short(char* to, const char* from, std::size_t n) noexcept {
  if (n >= 8) {
    std::uint64_t head, tail;
    std::memcpy(&head, from, 8);
    std::memcpy(&tail, from + n - 8, 8);
    std::memcpy(to, &head, 8);
    std::memcpy(to + n - 8, &tail, 8);
  } else if (n >= 4) {
    std::uint32_t head, tail;
    std::memcpy(&head, from, 4);
    std::memcpy(&tail, from + n - 4, 4);
    std::memcpy(to, &head, 4);
    std::memcpy(to + n - 4, &tail, 4);
  } else if (n > 0) {
    to[0] = from[0];
    to[n / 2] = from[n / 2];
    to[n - 1] = from[n - 1];
  }
}

/// One bulk string argument (detail::write_arg()), inlined into the encoding loops.
[[gnu::always_inline]] inline char* put_arg(char* at, std::string_view bytes) noexcept {
  at = write_header(at, '$', bytes.size());
  if (bytes.size() <= 16) {
    copy_short(at, bytes.data(), bytes.size());
  } else {
    std::memcpy(at, bytes.data(), bytes.size());
  }
  at += bytes.size();
  at[0] = '\r';
  at[1] = '\n';
  return at + 2;
}

// One bulk string appended as header, bytes and CRLF: each byte copied once, with no
// zero-fill first (resize()'s), at the price of a capacity check per piece.
void append_in_pieces(std::string& out, std::string_view bytes) {
  char header[24];
  out.append(header, static_cast<std::size_t>(write_header(header, '$', bytes.size()) - header));
  out.append(bytes);
  out.append("\r\n", 2);
}

std::size_t header_size(std::size_t n) noexcept {
  return 1 + decimal_digits(n) + 2;
}

}  // namespace

namespace detail {

char* write_array_header(char* at, std::size_t n) noexcept {
  return write_header(at, '*', n);
}

char* write_arg(char* at, std::string_view bytes) noexcept {
  return put_arg(at, bytes);
}

std::size_t array_header_size(std::size_t n) noexcept {
  return header_size(n);
}

}  // namespace detail

std::size_t encoded_size(std::span<const Arg> args) noexcept {
  std::size_t total = header_size(args.size());
  for (const Arg& arg : args) {
    const std::size_t length = arg.bytes().size();
    total += header_size(length) + length + 2;
  }
  return total;
}

void encode_command(std::string& out, std::span<const Arg> args) {
  // Most commands are small: written in one pass into a buffer on the stack, then appended
  // with one copy. That costs less than sizing first and resizing (which zero-fills).
  constexpr std::size_t kSmall = 256;
  constexpr std::size_t kArgOverhead = 1 + 20 + 2 + 2;  // '$', the longest length, 2 CRLFs
  if (args.size() < 10) {
    char buf[kSmall];
    char* at = write_header(buf, '*', args.size());
    bool fits = true;
    for (const Arg& arg : args) {
      const std::string_view bytes = arg.bytes();
      if (static_cast<std::size_t>(buf + kSmall - at) < bytes.size() + kArgOverhead) {
        fits = false;
        break;
      }
      at = put_arg(at, bytes);
    }
    if (fits) {
      out.append(buf, static_cast<std::size_t>(at - buf));
      return;
    }
  }
  const std::size_t start = out.size();
  const std::size_t size = encoded_size(args);
  if (size >= kAppendFrom && size / (args.size() + 1) >= kAppendAverage) {
    // Long arguments (a large SET): resize() would zero-fill every byte before it is
    // overwritten — a second pass over the value, under the submission queue's lock. Room
    // first, then every argument appended in pieces, which copies each byte once (the short
    // ones too: append_arg() would zero-fill an argument of 1–8 KiB).
    out.reserve(start + size);
    begin_command(out, args.size());
    for (const Arg& arg : args) append_in_pieces(out, arg.bytes());
    return;
  }
  // One resize to the exact size, then plain stores: no per-argument capacity checks.
  out.resize(start + size);
  char* at = out.data() + start;
  at = write_header(at, '*', args.size());
  for (const Arg& arg : args) at = put_arg(at, arg.bytes());
}

void begin_command(std::string& out, std::size_t count) {
  char header[24];
  out.append(header, static_cast<std::size_t>(write_header(header, '*', count) - header));
}

void append_arg(std::string& out, const Arg& arg) {
  const std::string_view bytes = arg.bytes();
  if (bytes.size() >= kAppendFrom) {
    append_in_pieces(out, bytes);  // rather than resized and overwritten: see encode_command()
    return;
  }
  char header[24];
  const auto header_length =
      static_cast<std::size_t>(write_header(header, '$', bytes.size()) - header);
  const std::size_t start = out.size();
  out.resize(start + header_length + bytes.size() + 2);
  char* at = out.data() + start;
  std::memcpy(at, header, header_length);
  at += header_length;
  if (!bytes.empty()) std::memcpy(at, bytes.data(), bytes.size());
  at += bytes.size();
  at[0] = '\r';
  at[1] = '\n';
}

}  // namespace redmux::resp

#include "resp/encoder.hpp"

#include <cstring>

namespace redmux::resp {
namespace {

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
char* write_header(char* at, char marker, std::size_t n) noexcept {
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

std::size_t header_size(std::size_t n) noexcept {
  return 1 + decimal_digits(n) + 2;
}

}  // namespace

namespace detail {

char* write_array_header(char* at, std::size_t n) noexcept {
  return write_header(at, '*', n);
}

char* write_arg(char* at, std::string_view bytes) noexcept {
  at = write_header(at, '$', bytes.size());
  if (!bytes.empty()) std::memcpy(at, bytes.data(), bytes.size());
  at += bytes.size();
  *at++ = '\r';
  *at++ = '\n';
  return at;
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
  const std::size_t start = out.size();
  // One resize to the exact size, then plain stores: no per-argument capacity checks.
  out.resize(start + encoded_size(args));
  char* at = out.data() + start;
  at = write_header(at, '*', args.size());
  for (const Arg& arg : args) at = detail::write_arg(at, arg.bytes());
}

void begin_command(std::string& out, std::size_t count) {
  char header[24];
  out.append(header, static_cast<std::size_t>(write_header(header, '*', count) - header));
}

void append_arg(std::string& out, const Arg& arg) {
  const std::string_view bytes = arg.bytes();
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

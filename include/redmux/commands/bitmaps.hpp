// Bitmap commands (SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD, BITFIELD_RO) as a mixin
// for any sink (see sink.hpp), with BitFieldOps, the builder of a BITFIELD operation list.
// A bitmap is a string: bit 0 is the most significant bit of the first byte. Keys are
// binary-safe std::string_views, viewed only for the duration of the call. Thread-safety:
// that of the sink's send().
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redmux/commands/sink.hpp"
#include "redmux/types.hpp"

namespace redmux {

/// Whether BITCOUNT / BITPOS ranges count bytes (the default) or bits (Redis 7.0+).
enum class BitUnit : unsigned char { Byte, Bit };

/// The operation of BITOP.
enum class BitOperation : unsigned char { And, Or, Xor, Not };

/// What BITFIELD does when SET or INCRBY goes past the field's range (OVERFLOW …).
enum class BitOverflow : unsigned char {
  Wrap,  ///< WRAP: modulo arithmetic (the default)
  Sat,   ///< SAT: saturate at the minimum or maximum
  Fail,  ///< FAIL: do nothing and answer nil for that operation
};

/// An integer field type of BITFIELD: signed up to 64 bits ("i8"), unsigned up to 63 ("u4").
class BitFieldType {
 public:
  static BitFieldType signed_bits(int bits) { return BitFieldType('i', bits); }
  static BitFieldType unsigned_bits(int bits) { return BitFieldType('u', bits); }
  std::string_view text() const noexcept { return text_; }

 private:
  BitFieldType(char sign, int bits) : text_(1, sign) { text_ += std::to_string(bits); }
  std::string text_;
};

/// A bit offset of BITFIELD: a plain bit number, or `BitFieldOffset::fields(n)` ("#n"):
/// n times the field's width (the n-th field of an array of equal fields).
class BitFieldOffset {
 public:
  BitFieldOffset(long long bit)  // NOLINT(google-explicit-constructor)
      : text_(std::to_string(bit)) {}
  static BitFieldOffset fields(long long index) {
    BitFieldOffset offset(0);
    offset.text_ = "#" + std::to_string(index);
    return offset;
  }
  std::string_view text() const noexcept { return text_; }

 private:
  std::string text_;
};

/// The operations of one BITFIELD call, in order. Each GET, SET and INCRBY gives one result;
/// overflow() applies to the SET/INCRBY operations after it.
///   BitFieldOps ops;
///   ops.set(BitFieldType::unsigned_bits(8), 0, 200)
///      .overflow(BitOverflow::Sat).incrby(BitFieldType::unsigned_bits(8), 0, 100)
///      .get(BitFieldType::signed_bits(4), BitFieldOffset::fields(1));
class BitFieldOps {
 public:
  /// GET type offset: the field's value.
  BitFieldOps& get(const BitFieldType& type, const BitFieldOffset& offset) {
    return add({"GET", std::string(type.text()), std::string(offset.text())});
  }
  /// SET type offset value: the field's previous value.
  BitFieldOps& set(const BitFieldType& type, const BitFieldOffset& offset, long long value) {
    return add(
        {"SET", std::string(type.text()), std::string(offset.text()), std::to_string(value)});
  }
  /// INCRBY type offset increment: the field's new value.
  BitFieldOps& incrby(const BitFieldType& type, const BitFieldOffset& offset, long long increment) {
    return add({"INCRBY", std::string(type.text()), std::string(offset.text()),
                std::to_string(increment)});
  }
  /// OVERFLOW WRAP|SAT|FAIL for the operations after it.
  BitFieldOps& overflow(BitOverflow behaviour) {
    const char* name = behaviour == BitOverflow::Sat    ? "SAT"
                       : behaviour == BitOverflow::Fail ? "FAIL"
                                                        : "WRAP";
    return add({"OVERFLOW", name});
  }
  /// The arguments after the key.
  const std::vector<std::string>& words() const noexcept { return words_; }

 private:
  BitFieldOps& add(std::initializer_list<std::string> words) {
    words_.insert(words_.end(), words.begin(), words.end());
    return *this;
  }
  std::vector<std::string> words_;
};

template <class Derived>
class BitmapCommands {
 public:
  /// Sets or clears the bit at `offset` (the string grows as needed); the bit's previous
  /// value. SETBIT. (The name is parenthesised because glibc's <sys/param.h> — included by
  /// cpp-httplib and others — defines a two-argument setbit(a, i) macro: this header compiles
  /// either way; where that macro is visible, call it as `(db.setbit)(key, offset, value)`.)
  Future<bool>(setbit)(std::string_view key, long long offset, bool value,
                       CallOptions options = {}) {
    return detail::send_command<bool>(*this, options, {"SETBIT", key, offset, value ? 1 : 0});
  }
  /// The bit at `offset`; false past the end or for a missing key. GETBIT.
  Future<bool> getbit(std::string_view key, long long offset, CallOptions options = {}) {
    return detail::send_command<bool>(*this, options, {"GETBIT", key, offset});
  }
  /// Number of set bits. BITCOUNT key.
  Future<long long> bitcount(std::string_view key, CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"BITCOUNT", key});
  }
  /// Number of set bits between `start` and `end` inclusive (negative: from the end),
  /// counted in bytes or bits. BITCOUNT key start end [BYTE|BIT].
  Future<long long> bitcount(std::string_view key, long long start, long long end,
                             BitUnit unit = BitUnit::Byte, CallOptions options = {}) {
    if (unit == BitUnit::Bit) {
      return detail::send_command<long long>(*this, options, {"BITCOUNT", key, start, end, "BIT"});
    }
    return detail::send_command<long long>(*this, options, {"BITCOUNT", key, start, end});
  }
  /// The position of the first bit equal to `bit`, searching from `start` (to `end`,
  /// inclusive, when given); -1 when there is none (see Redis's BITPOS for the clear-bit
  /// rule past the end). BITPOS key bit [start [end [BYTE|BIT]]]. `unit` applies when `start`
  /// is given; BitUnit::Bit without `end` searches to the last bit (end -1 is sent).
  Future<long long> bitpos(std::string_view key, bool bit, std::optional<long long> start = {},
                           std::optional<long long> end = {}, BitUnit unit = BitUnit::Byte,
                           CallOptions options = {}) {
    detail::ArgList args({"BITPOS", key, bit ? 1 : 0}, 3);
    if (start) {
      args.add(*start);
      // The server takes BIT only after an end: counting in bits from `start` with no end
      // sends -1 (the last bit), so a search for a clear bit then stops at the string's end.
      if (end || unit == BitUnit::Bit) args.add(end ? *end : -1);
      if (unit == BitUnit::Bit) args.add("BIT");
    }
    return detail::send_built<long long>(*this, options, args);
  }
  /// Combines `sources` bit by bit into `destination`; the destination's length in bytes.
  /// BITOP AND|OR|XOR|NOT dest key… (NOT takes exactly one source).
  Future<long long> bitop(BitOperation operation, std::string_view destination,
                          std::initializer_list<std::string_view> sources,
                          CallOptions options = {}) {
    return bitop<std::initializer_list<std::string_view>>(operation, destination, sources, options);
  }
  template <detail::StringRange Keys>
  Future<long long> bitop(BitOperation operation, std::string_view destination, const Keys& sources,
                          CallOptions options = {}) {
    const char* name = operation == BitOperation::And   ? "AND"
                       : operation == BitOperation::Or  ? "OR"
                       : operation == BitOperation::Xor ? "XOR"
                                                        : "NOT";
    detail::ArgList args({"BITOP", name, destination}, detail::size_hint(sources));
    args.add_all(sources);
    return detail::send_built<long long>(*this, options, args);
  }
  /// Runs `ops`; one result per GET/SET/INCRBY, in order: nullopt where OVERFLOW FAIL
  /// prevented a SET/INCRBY. BITFIELD key ops….
  Future<std::vector<std::optional<long long>>> bitfield(std::string_view key,
                                                         const BitFieldOps& ops,
                                                         CallOptions options = {}) {
    detail::ArgList args({"BITFIELD", key}, ops.words().size());
    args.add_all(ops.words());
    return detail::send_built<std::vector<std::optional<long long>>>(*this, options, args);
  }
  /// The read-only variant (may run on a replica): `ops` must hold only GETs (otherwise
  /// ServerError). BITFIELD_RO key GET ….
  Future<std::vector<long long>> bitfield_ro(std::string_view key, const BitFieldOps& ops,
                                             CallOptions options = {}) {
    detail::ArgList args({"BITFIELD_RO", key}, ops.words().size());
    args.add_all(ops.words());
    return detail::send_built<std::vector<long long>>(*this, options, args);
  }
};

}  // namespace redmux

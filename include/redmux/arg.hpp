// Arg: one command argument as the bytes Redis receives, without allocating. Strings are
// viewed (the caller keeps them alive until the send call returns); numbers are formatted
// into the Arg itself (integers in decimal, floating-point numbers in their shortest
// round-trip form, inf as "inf"/"-inf"). A plain value; not synchronised.
#pragma once

#include <charconv>
#include <concepts>
#include <cstring>
#include <string>
#include <string_view>

namespace redmux {

class Arg {
 public:
  Arg(std::string_view text) noexcept : view_(text) {}    // NOLINT(google-explicit-constructor)
  Arg(const char* text) noexcept : view_(text) {}         // NOLINT(google-explicit-constructor)
  Arg(const std::string& text) noexcept : view_(text) {}  // NOLINT(google-explicit-constructor)
  template <std::integral I>
  requires(!std::same_as<I, bool> && !std::same_as<I, char>) Arg(I number)
  noexcept {  // NOLINT(google-explicit-constructor)
    length_ =
        static_cast<unsigned char>(std::to_chars(buf_, buf_ + sizeof buf_, number).ptr - buf_);
  }
  /// In the shortest form that reads back as the same value of its own type: 0.1f is "0.1",
  /// not the "0.10000000149011612" of the double it widens to.
  template <std::floating_point F>
  Arg(F number) noexcept {  // NOLINT(google-explicit-constructor)
    length_ =
        static_cast<unsigned char>(std::to_chars(buf_, buf_ + sizeof buf_, number).ptr - buf_);
  }

  Arg(const Arg& other) noexcept { *this = other; }
  Arg& operator=(const Arg& other) noexcept {
    view_ = other.view_;
    length_ = other.length_;
    if (length_) std::memcpy(buf_, other.buf_, length_);
    return *this;
  }

  /// The argument's bytes; valid while this Arg (and a viewed string) lives.
  std::string_view bytes() const noexcept {
    return length_ ? std::string_view(buf_, length_) : view_;
  }

 private:
  std::string_view view_;
  unsigned char length_ = 0;  ///< non-zero: a number formatted in buf_
  char buf_[31] = {};
};

}  // namespace redmux

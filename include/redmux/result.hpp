// Result<T>: a value or an Error, the core's way of returning failure without throwing
// (C++20 has no std::expected). A plain value type: not synchronised, copy it freely.
//
// Every accessor is checked; none is undefined behaviour on the wrong side:
//   value(), *r, r->   on a failure throw the error's typed exception (ServerError,
//                      TimeoutError …), exactly as Future::get() would;
//   error()            on a success returns an empty Error: code() == errc::ok, message()
//                      "", `if (r.error())` false — the same as Result<void>::error().
#pragma once

#include <utility>
#include <variant>

#include "redmux/error.hpp"

namespace redmux {

namespace detail {
/// The empty Error that error() returns on a success.
inline const Error& no_error() noexcept {
  static const Error none;
  return none;
}
}  // namespace detail

template <class T>
class [[nodiscard]] Result {
 public:
  using value_type = T;

  Result(T value) : storage_(std::in_place_index<0>, std::move(value)) {}      // NOLINT
  Result(Error error) : storage_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool has_value() const noexcept { return storage_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  /// The value; throws the typed error (ServerError, TimeoutError …) when there is none.
  T& value() & {
    if (!has_value()) std::get<1>(storage_).raise();
    return std::get<0>(storage_);
  }
  const T& value() const& {
    if (!has_value()) std::get<1>(storage_).raise();
    return std::get<0>(storage_);
  }
  T&& value() && {
    if (!has_value()) std::get<1>(storage_).raise();
    return std::move(std::get<0>(storage_));
  }

  /// The value, like value(): throws the typed error when there is none.
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  /// The error; an empty Error (errc::ok, converts to false) when there is a value.
  const Error& error() const& noexcept {
    if (has_value()) return detail::no_error();
    return *std::get_if<1>(&storage_);
  }
  /// The error, moved out; an empty Error when there is a value.
  Error error() && noexcept {
    if (has_value()) return Error();
    return std::move(*std::get_if<1>(&storage_));
  }

 private:
  std::variant<T, Error> storage_;
};

/// A result with no value: success or an Error.
template <>
class [[nodiscard]] Result<void> {
 public:
  using value_type = void;
  Result() = default;
  Result(Error error) : error_(std::move(error)) {}  // NOLINT

  bool has_value() const noexcept { return !error_; }
  explicit operator bool() const noexcept { return has_value(); }
  void value() const {
    if (error_) error_.raise();
  }
  /// The error; an empty Error (errc::ok, converts to false) on success.
  const Error& error() const& noexcept { return error_; }
  Error error() && noexcept { return std::move(error_); }

 private:
  Error error_;
};

}  // namespace redmux

// Result<T>: a value or an Error, the core's way of returning failure without throwing
// (C++20 has no std::expected). `value()` throws the typed exception of the error; the
// other accessors never throw. A plain value type: not synchronised, copy it freely.
#pragma once

#include <utility>
#include <variant>

#include "redmux/error.hpp"

namespace redmux {

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

  /// REQUIRES: has_value().
  T& operator*() & noexcept { return *std::get_if<0>(&storage_); }
  const T& operator*() const& noexcept { return *std::get_if<0>(&storage_); }
  T* operator->() noexcept { return std::get_if<0>(&storage_); }
  const T* operator->() const noexcept { return std::get_if<0>(&storage_); }

  /// REQUIRES: !has_value().
  const Error& error() const& noexcept { return *std::get_if<1>(&storage_); }
  Error&& error() && noexcept { return std::move(*std::get_if<1>(&storage_)); }

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
  const Error& error() const& noexcept { return error_; }
  Error&& error() && noexcept { return std::move(error_); }

 private:
  Error error_;
};

}  // namespace redmux

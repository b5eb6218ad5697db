// HyperLogLog commands (PFADD, PFCOUNT, PFMERGE) as a mixin for any sink (see sink.hpp).
// Keys and elements are binary-safe std::string_views, viewed only for the duration of the
// call. Thread-safety: that of the sink's send().
#pragma once

#include <string_view>

#include "redmux/commands/sink.hpp"

namespace redmux {

template <class Derived>
class HyperLogLogCommands {
 public:
  /// Adds `elements`; true when the estimate changed (or the key was created). PFADD.
  template <detail::StringRange Elements>
  Future<bool> pfadd(std::string_view key, const Elements& elements, CallOptions options = {}) {
    detail::ArgList args({"PFADD", key}, detail::size_hint(elements));
    args.add_all(elements);
    return detail::send_built<bool>(*this, options, args);
  }
  Future<bool> pfadd(std::string_view key, std::initializer_list<std::string_view> elements,
                     CallOptions options = {}) {
    return pfadd<std::initializer_list<std::string_view>>(key, elements, options);
  }
  /// The approximate number of distinct elements (of the union, for several keys); 0 for
  /// missing keys. PFCOUNT.
  Future<long long> pfcount(std::string_view key, CallOptions options = {}) {
    return detail::send_command<long long>(*this, options, {"PFCOUNT", key});
  }
  template <detail::StringRange Keys>
  Future<long long> pfcount(const Keys& keys, CallOptions options = {}) {
    detail::ArgList args({"PFCOUNT"}, detail::size_hint(keys));
    args.add_all(keys);
    return detail::send_built<long long>(*this, options, args);
  }
  Future<long long> pfcount(std::initializer_list<std::string_view> keys,
                            CallOptions options = {}) {
    return pfcount<std::initializer_list<std::string_view>>(keys, options);
  }
  /// Merges `sources` (and `destination` itself) into `destination`. PFMERGE.
  template <detail::StringRange Keys>
  Future<void> pfmerge(std::string_view destination, const Keys& sources,
                       CallOptions options = {}) {
    detail::ArgList args({"PFMERGE", destination}, detail::size_hint(sources));
    args.add_all(sources);
    return detail::send_built<void>(*this, options, args);
  }
  Future<void> pfmerge(std::string_view destination,
                       std::initializer_list<std::string_view> sources, CallOptions options = {}) {
    return pfmerge<std::initializer_list<std::string_view>>(destination, sources, options);
  }
};

}  // namespace redmux

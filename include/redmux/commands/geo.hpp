// Geospatial commands (GEOADD, GEOSEARCH, GEODIST, GEOPOS …) as a mixin for any sink (see
// sink.hpp), with their argument and result types. A geo set is a sorted set whose scores
// are 52-bit geohashes, so the sorted-set commands work on it too. Longitude comes before
// latitude everywhere, as in Redis. Members are binary-safe std::string_views, viewed only
// for the duration of the call. Thread-safety: that of the sink's send().
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redmux/commands/reply_fields.hpp"
#include "redmux/commands/sink.hpp"
#include "redmux/commands/strings.hpp"  // SetCondition
#include "redmux/types.hpp"

namespace redmux {

/// Distance units of the geo commands.
enum class GeoUnit : unsigned char { Meters, Kilometers, Miles, Feet };

/// A point: longitude (-180..180) and latitude (about -85.05..85.05), in degrees.
struct GeoPosition {
  double longitude = 0;
  double latitude = 0;
  friend bool operator==(const GeoPosition&, const GeoPosition&) = default;
};

/// A member to add with its position (GEOADD): `{13.361389, 38.115556, "Palermo"}`.
struct GeoMember {
  double longitude = 0;
  double latitude = 0;
  std::string_view member{};
};

/// Options of GEOADD.
struct GeoAddOptions {
  SetCondition condition = SetCondition::Always;  ///< NX: only add; XX: only update
  bool changed = false;  ///< CH: count updated positions too, not only added members
};

/// One GEOSEARCH match: the member, and what the query asked for with with_distance(),
/// with_hash() and with_position().
struct GeoMatch {
  std::string member{};
  std::optional<double> distance{};  ///< in the query's unit
  std::optional<std::uint64_t> hash{};
  std::optional<GeoPosition> position{};
};

namespace detail {
/// The unit's word in GEO commands ("m", "km", "mi", "ft"), by the enumerator's value.
inline std::string_view unit_text(GeoUnit unit) noexcept {
  constexpr std::string_view kWords[] = {"m", "km", "mi", "ft"};
  const auto at = static_cast<std::size_t>(unit);
  return at < std::size(kWords) ? kWords[at] : kWords[0];
}
}  // namespace detail

/// A GEOSEARCH query: a centre (a member, or a position) and a shape (a circle or a box),
/// then optional order, limit and extra data.
///   GeoSearch::around_member("Palermo").radius(200, GeoUnit::Kilometers).ascending()
///   GeoSearch::around(15, 37).box(400, 400, GeoUnit::Kilometers).count(3).with_distance()
/// A query without a shape is refused by the server.
class GeoSearch {
 public:
  /// FROMMEMBER: centred on a member of the set.
  static GeoSearch around_member(std::string_view member) {
    GeoSearch query;
    query.member_ = std::string(member);
    return query;
  }
  /// FROMLONLAT: centred on a position.
  static GeoSearch around(double longitude, double latitude) {
    GeoSearch query;
    query.center_ = GeoPosition{longitude, latitude};
    return query;
  }
  /// BYRADIUS: within a circle.
  GeoSearch& radius(double radius, GeoUnit unit) & noexcept {
    width_ = radius;
    height_.reset();
    unit_ = unit;
    return *this;
  }
  GeoSearch&& radius(double r, GeoUnit unit) && noexcept { return std::move(radius(r, unit)); }
  /// BYBOX: within an axis-aligned box centred on the centre.
  GeoSearch& box(double width, double height, GeoUnit unit) & noexcept {
    width_ = width;
    height_ = height;
    unit_ = unit;
    return *this;
  }
  GeoSearch&& box(double w, double h, GeoUnit unit) && noexcept {
    return std::move(box(w, h, unit));
  }
  /// ASC: nearest first. (Without an order, the server's order is unspecified.)
  GeoSearch& ascending() & noexcept {
    order_ = 1;
    return *this;
  }
  GeoSearch&& ascending() && noexcept { return std::move(ascending()); }
  /// DESC: farthest first.
  GeoSearch& descending() & noexcept {
    order_ = -1;
    return *this;
  }
  GeoSearch&& descending() && noexcept { return std::move(descending()); }
  /// COUNT n: at most `n` matches (the nearest ones); with `any`, the first n found
  /// (faster, not the nearest).
  GeoSearch& count(long long n, bool any = false) & noexcept {
    count_ = n;
    any_ = any;
    return *this;
  }
  GeoSearch&& count(long long n, bool any = false) && noexcept { return std::move(count(n, any)); }
  /// WITHDIST: each match's distance from the centre, in the shape's unit.
  GeoSearch& with_distance() & noexcept {
    with_distance_ = true;
    return *this;
  }
  GeoSearch&& with_distance() && noexcept { return std::move(with_distance()); }
  /// WITHHASH: each match's raw 52-bit geohash.
  GeoSearch& with_hash() & noexcept {
    with_hash_ = true;
    return *this;
  }
  GeoSearch&& with_hash() && noexcept { return std::move(with_hash()); }
  /// WITHCOORD: each match's position.
  GeoSearch& with_position() & noexcept {
    with_position_ = true;
    return *this;
  }
  GeoSearch&& with_position() && noexcept { return std::move(with_position()); }

  /// Appends the query's arguments. They view this object: keep it alive until sent.
  /// `store` leaves out the WITH* options (GEOSEARCHSTORE accepts none).
  void append_to(detail::ArgList& args, bool store = false) const {
    if (member_) {
      args.add("FROMMEMBER");
      args.add(std::string_view(*member_));
    } else if (center_) {
      args.add("FROMLONLAT");
      args.add(center_->longitude);
      args.add(center_->latitude);
    }
    if (width_) {
      args.add(height_ ? "BYBOX" : "BYRADIUS");
      args.add(*width_);
      if (height_) args.add(*height_);
      args.add(detail::unit_text(unit_));
    }
    if (order_ > 0) args.add("ASC");
    if (order_ < 0) args.add("DESC");
    if (count_) {
      args.add("COUNT");
      args.add(*count_);
      if (any_) args.add("ANY");
    }
    if (store) return;
    if (with_position_) args.add("WITHCOORD");
    if (with_distance_) args.add("WITHDIST");
    if (with_hash_) args.add("WITHHASH");
  }

 private:
  GeoSearch() = default;
  std::optional<std::string> member_;
  std::optional<GeoPosition> center_;
  std::optional<double> width_;
  std::optional<double> height_;
  GeoUnit unit_ = GeoUnit::Meters;
  int order_ = 0;
  std::optional<long long> count_;
  bool any_ = false;
  bool with_distance_ = false;
  bool with_hash_ = false;
  bool with_position_ = false;
};

/// [longitude, latitude] (bulk strings in RESP2, doubles in RESP3).
template <>
struct ReplyTraits<GeoPosition> {
  static Result<GeoPosition> convert(NodeSpan reply) {
    auto pair = ReplyTraits<std::pair<double, double>>::convert(reply);
    if (!pair) return std::move(pair).error();
    return GeoPosition{pair->first, pair->second};
  }
};

/// A member name alone, or [member, distance?, hash?, [lon, lat]?] — which extras are present
/// is told by their types (distance: string or double, hash: integer, position: array), in
/// the order the server sends them.
template <>
struct ReplyTraits<GeoMatch> {
  static Result<GeoMatch> convert(NodeSpan reply) {
    if (reply.empty()) return detail::empty_reply();
    GeoMatch out;
    if (!detail::is_sequence(reply[0].type)) {
      if (Error e = detail::read_into(reply, out.member)) return e;
      return out;
    }
    if (reply[0].size < 1) return detail::mismatch(reply[0], "geo match [member, …]");
    Error error = detail::for_each_child(reply, [&](std::size_t i, NodeSpan child) -> Error {
      if (i == 0) return detail::in_element(detail::read_into(child, out.member), 0);
      switch (child[0].type) {
        case ReplyType::Integer:
          return detail::in_element(detail::read_into(child, out.hash), i);
        case ReplyType::Array:
          return detail::in_element(detail::read_into(child, out.position), i);
        default:
          return detail::in_element(detail::read_into(child, out.distance), i);
      }
    });
    if (error) return error;
    return out;
  }
};

template <class Derived>
class GeoCommands {
 public:
  /// Adds or moves members: `db.geoadd("cities", {{13.361389, 38.115556, "Palermo"}})`; how
  /// many were added (also changed, with `changed`). GEOADD key [NX|XX] [CH] lon lat m ….
  /// A position out of range: ServerError.
  Future<long long> geoadd(std::string_view key, std::initializer_list<GeoMember> members,
                           GeoAddOptions add = {}, CallOptions options = {}) {
    return geoadd<std::initializer_list<GeoMember>>(key, members, add, options);
  }
  /// The same from a range of GeoMember (or anything with .longitude, .latitude, .member).
  template <class Members>
  requires requires(std::ranges::range_reference_t<const Members> m) {
    { m.longitude } -> std::convertible_to<double>;
    { m.latitude } -> std::convertible_to<double>;
    { m.member } -> std::convertible_to<std::string_view>;
  }
  Future<long long> geoadd(std::string_view key, const Members& members, GeoAddOptions add = {},
                           CallOptions options = {}) {
    detail::ArgList args({"GEOADD", key}, 3 * detail::size_hint(members) + 2);
    if (add.condition == SetCondition::IfNotExists) args.add("NX");
    if (add.condition == SetCondition::IfExists) args.add("XX");
    if (add.changed) args.add("CH");
    for (auto&& m : members) {
      args.add(static_cast<double>(m.longitude));
      args.add(static_cast<double>(m.latitude));
      args.add(std::string_view(m.member));
    }
    return detail::send_built<long long>(*this, options, args);
  }

  /// The distance between two members; nullopt when either is missing. GEODIST.
  Future<std::optional<double>> geodist(std::string_view key, std::string_view member1,
                                        std::string_view member2, GeoUnit unit = GeoUnit::Meters,
                                        CallOptions options = {}) {
    return detail::send_command<std::optional<double>>(
        *this, options, {"GEODIST", key, member1, member2, detail::unit_text(unit)});
  }

  /// The positions of `members`, in order; nullopt for each missing one. GEOPOS.
  Future<std::vector<std::optional<GeoPosition>>> geopos(
      std::string_view key, std::initializer_list<std::string_view> members,
      CallOptions options = {}) {
    return geopos<std::initializer_list<std::string_view>>(key, members, options);
  }
  template <detail::StringRange Members>
  Future<std::vector<std::optional<GeoPosition>>> geopos(std::string_view key,
                                                         const Members& members,
                                                         CallOptions options = {}) {
    detail::ArgList args({"GEOPOS", key}, detail::size_hint(members));
    args.add_all(members);
    return detail::send_built<std::vector<std::optional<GeoPosition>>>(*this, options, args);
  }

  /// The members `query` selects, with the extras it asked for. GEOSEARCH key FROMMEMBER|
  /// FROMLONLAT … BYRADIUS|BYBOX … [ASC|DESC] [COUNT n [ANY]] [WITHCOORD] [WITHDIST]
  /// [WITHHASH]. A centre member that is missing: ServerError.
  Future<std::vector<GeoMatch>> geosearch(std::string_view key, const GeoSearch& query,
                                          CallOptions options = {}) {
    detail::ArgList args({"GEOSEARCH", key}, 14);
    query.append_to(args);
    return detail::send_built<std::vector<GeoMatch>>(*this, options, args);
  }
  /// Stores what `query` selects from `source` into `destination` (a geo set; with
  /// `store_distance`, a sorted set scored by distance); its size. GEOSEARCHSTORE. The
  /// query's WITH* options are not sent.
  Future<long long> geosearchstore(std::string_view destination, std::string_view source,
                                   const GeoSearch& query, bool store_distance = false,
                                   CallOptions options = {}) {
    detail::ArgList args({"GEOSEARCHSTORE", destination, source}, 12);
    query.append_to(args, true);
    if (store_distance) args.add("STOREDIST");
    return detail::send_built<long long>(*this, options, args);
  }
};

}  // namespace redmux

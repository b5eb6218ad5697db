// ScanRange: a lazy, resumable walk over a SCAN-family cursor, one page per server round
// trip, usable in a range-for from an ordinary thread:
//
//   for (const std::string& key : redmux::scan_keys(db, {.pattern = "user:*", .page_size = 500}))
//     …
//
// Never KEYS: each page is a bounded amount of server work. SCAN's guarantees apply: a key
// present for the whole walk is seen at least once; it may be seen more than once (dedupe
// yourself if that matters); keys added or removed meanwhile may or may not appear.
//
// Ownership and threads: a ScanRange owns its fetcher (a copy of the sink) and the current
// page; one range must be used by one thread at a time. Iterating blocks the thread on each
// page (Future::get()), so it must not run on one of redmux's I/O threads (DeadlockError).
// A failing page throws the typed error from the iterator's ++ (or begin()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "redmux/commands/keys.hpp"
#include "redmux/types.hpp"

namespace redmux {

/// Walks the pages `fetch(cursor)` returns (a Future<ScanPageOf<T>>) from `cursor` until
/// the server's cursor comes back 0. Generic over the SCAN-family command: SCAN today,
/// HSCAN/SSCAN/ZSCAN by passing another fetcher.
template <class Fetch>
class ScanRange {
 public:
  using Page = decltype(std::declval<Fetch&>()(std::uint64_t{}).get());
  using value_type = typename decltype(Page::items)::value_type;

  explicit ScanRange(Fetch fetch, std::uint64_t cursor = 0)
      : fetch_(std::move(fetch)), next_cursor_(cursor) {}

  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = ScanRange::value_type;
    using difference_type = std::ptrdiff_t;
    using pointer = const value_type*;
    using reference = const value_type&;

    iterator() = default;
    reference operator*() const { return range_->page_[range_->index_]; }
    pointer operator->() const { return &**this; }
    iterator& operator++() {
      range_->advance();
      return *this;
    }
    void operator++(int) { ++*this; }
    friend bool operator==(const iterator& it, std::default_sentinel_t) noexcept {
      return it.finished();
    }

   private:
    friend class ScanRange;
    explicit iterator(ScanRange* range) : range_(range) {}
    bool finished() const noexcept { return range_ == nullptr || range_->at_end(); }
    ScanRange* range_ = nullptr;
  };

  /// Fetches pages until one is non-empty (or the walk ends). Call once per range.
  iterator begin() {
    if (!started_) {
      started_ = true;
      fill();
    }
    return iterator(this);
  }
  std::default_sentinel_t end() const noexcept { return {}; }

  /// The cursor to pass to a new range to continue after the current page: 0 once the
  /// walk is complete. Items of the current page not yet reached are not revisited by it.
  std::uint64_t cursor() const noexcept { return next_cursor_; }
  /// True once every page has been fetched and consumed.
  bool done() const noexcept { return started_ && at_end(); }
  /// Server round trips so far.
  std::size_t pages_fetched() const noexcept { return pages_fetched_; }

 private:
  bool at_end() const noexcept { return index_ >= page_.size() && finished_; }
  void advance() {
    ++index_;
    if (index_ >= page_.size()) fill();
  }
  // Fetches until a page has items or the server's cursor is 0. A page may be empty while
  // the cursor is not (MATCH/TYPE filter after the server's COUNT work).
  void fill() {
    while (index_ >= page_.size() && !finished_) {
      Page page = fetch_(next_cursor_).get();
      ++pages_fetched_;
      next_cursor_ = page.cursor;
      finished_ = page.cursor == 0;
      page_ = std::move(page.items);
      index_ = 0;
    }
  }

  Fetch fetch_;
  std::vector<value_type> page_;
  std::size_t index_ = 0;
  std::uint64_t next_cursor_ = 0;
  std::size_t pages_fetched_ = 0;
  bool started_ = false;
  bool finished_ = false;
};

/// Every key matching `options` (SCAN … MATCH … COUNT … TYPE …), starting at `cursor`.
/// `sink` (a Database …) is copied when copyable, else referenced (it must then outlive
/// the range). `call` applies to every page's SCAN.
template <class Sink>
auto scan_keys(Sink& sink, ScanOptions options = {}, std::uint64_t cursor = 0,
               CallOptions call = {}) {
  // The pattern and type are copied: the range usually outlives the caller's arguments.
  struct Fetch {
    std::conditional_t<std::is_copy_constructible_v<Sink>, Sink, Sink*> sink;
    std::string pattern;
    std::string type;
    long long page_size;
    CallOptions call;
    Sink& target() {
      if constexpr (std::is_pointer_v<decltype(sink)>) {
        return *sink;
      } else {
        return sink;
      }
    }
    auto operator()(std::uint64_t at) {
      return target().scan(at, ScanOptions{pattern, page_size, type}, call);
    }
  };
  std::string pattern(options.pattern), type(options.type);
  if constexpr (std::is_copy_constructible_v<Sink>) {
    return ScanRange<Fetch>(
        Fetch{sink, std::move(pattern), std::move(type), options.page_size, call}, cursor);
  } else {
    return ScanRange<Fetch>(
        Fetch{&sink, std::move(pattern), std::move(type), options.page_size, call}, cursor);
  }
}

}  // namespace redmux

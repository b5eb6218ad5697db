#include "conn/reader.hpp"

#include <algorithm>
#include <cstring>
#include <new>

namespace redmux::detail {

Reader::Reader()
    : buffer_(std::make_unique_for_overwrite<char[]>(kReadChunk)), capacity_(kReadChunk) {}

void Reader::reset() {
  parser_.reset();
  begin_ = end_ = 0;
}

// Called when less than kMinFreeForRead is free at the end. The bytes from begin_ are the
// start of a reply the parser has not completed (it has been shown them, or they arrived
// since); they are copied once, either to the front of this buffer or into a larger one.
void Reader::make_room() {
  const std::size_t unparsed = end_ - begin_;
  // What the pending reply is known to need from its first byte (0: not known). Bytes
  // committed since the last next() may already hold all of it: then it is as if not known.
  std::size_t known = parser_.known_reply_size();
  if (known <= unparsed) known = 0;
  if (known > capacity_) {
    // Straight into a larger buffer (compacting first would copy these bytes twice). A
    // reply known or likely to be up to kGrowAtOnceUpTo gets all its room at once (the
    // likely size counts the aggregate's strings still to come, as long as this one: an
    // MGET of like-sized values grows the buffer once); beyond, the buffer doubles, never
    // past the known size. At least doubling bounds the growths of an aggregate whose
    // strings are not alike.
    std::size_t capacity = 2 * capacity_;
    if (known <= kGrowAtOnceUpTo) {
      const std::size_t likely = std::min(parser_.likely_reply_size(), kGrowAtOnceUpTo);
      capacity = std::max({capacity, known, likely});
    } else {
      capacity = std::min(capacity, known);
    }
    grow(capacity);
    return;
  }
  if (known == 0 && capacity_ - unparsed < kMinFreeForRead) {
    grow(2 * capacity_);  // a reply of unknown size (a long line, an aggregate's header)
    return;
  }
  // The reply fits once compacted (or the rest of its string does).
  if (begin_ > 0) {
    std::memmove(buffer_.get(), buffer_.get() + begin_, unparsed);
    bytes_moved_ += unparsed;
    begin_ = 0;
    end_ = unparsed;
  }
}

void Reader::grow(std::size_t capacity) {
  const std::size_t unparsed = end_ - begin_;
  std::unique_ptr<char[]> larger = std::make_unique_for_overwrite<char[]>(capacity);
  std::memcpy(larger.get(), buffer_.get() + begin_, unparsed);
  bytes_moved_ += unparsed;
  ++growths_;
  buffer_ = std::move(larger);
  capacity_ = capacity;
  begin_ = 0;
  end_ = unparsed;
}

// From settle(), with nothing buffered and no read in progress. Allocating the buffer at
// rest may fail: then the large one stays, which is still a valid buffer.
void Reader::give_back() noexcept {
  give_back_ = false;
  if (capacity_ <= kept_capacity(peak_since_tick_)) return;  // needed again since the tick
  std::unique_ptr<char[]> at_rest(new (std::nothrow) char[kReadChunk]);
  if (!at_rest) return;
  buffer_ = std::move(at_rest);
  capacity_ = kReadChunk;
}

}  // namespace redmux::detail

// Reader: the read side of one connection (sans-IO) — the read buffer, the RESP parser over
// it, and what each frame is: a reply (to the oldest command, or to the handshake), or a
// push (a RESP3 push; on a subscribed RESP2 connection, a pub/sub array).
//
// Replies are parsed in place: a frame's nodes view the read buffer until the next call of
// next() or free_space(). A reply larger than the buffer grows it; the grown buffer is kept
// while replies that large keep coming, and given back once a health tick finds that no
// reply since the previous one needed a quarter of it (on_tick(), settle()).
//
// Growth (make_room()): the buffer is raw memory, never zero-filled. When the parser knows
// the size of the string it waits for (Parser::known_reply_size()), the buffer grows once to
// hold the whole reply through that string — or, inside an aggregate, through as many more
// strings of that size as the aggregate has still to come (Parser::likely_reply_size()) — so
// a large value is copied once more at most, and only the part read before its length was
// known (at most the buffer at rest). Up to kGrowAtOnceUpTo the buffer takes that size
// before the bytes arrive; a longer string (up to the parser's max_bulk_length) grows the
// buffer by doubling as its bytes arrive, so that a length that no bytes follow costs no
// more than twice what was read. An aggregate of unlike strings may grow it more than once,
// by at least doubling each time.
//
// Threads: the connection's I/O thread only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <span>
#include <string_view>
#include <utility>

#include "conn/buffer_keep.hpp"
#include "redmux/error.hpp"
#include "redmux/reply.hpp"
#include "resp/classify.hpp"
#include "resp/parser.hpp"

namespace redmux::detail {

class Reader {
 public:
  enum class Frame {
    NeedMore,   ///< no whole frame buffered: read more
    Reply,      ///< frame() answers a command (or the handshake)
    Push,       ///< frame() is out of band: a message or a subscribe confirmation
    Malformed,  ///< not RESP: error() says why; the stream is unusable
  };

  Reader();

  /// A subscribed RESP2 connection: pub/sub arrays are pushes, not replies.
  void set_subscriber_mode(bool on) noexcept { subscriber_mode_ = on; }
  bool subscriber_mode() const noexcept { return subscriber_mode_; }
  /// A new connection: nothing buffered, the parser fresh.
  void reset();

  /// Room for the next read (compacts or grows the buffer first when little is left).
  std::span<char> free_space() {
    if (capacity_ - end_ < kMinFreeForRead) make_room();
    return std::span<char>(buffer_.get() + end_, capacity_ - end_);
  }
  /// `bytes` were read into free_space().
  void commit(std::size_t bytes) noexcept { end_ += bytes; }

  /// Parses the next frame of what was read.
  Frame next() {
    const resp::ParseStatus status =
        parser_.parse(std::string_view(buffer_.get() + begin_, end_ - begin_));
    if (status == resp::ParseStatus::NeedMore) return Frame::NeedMore;
    if (status == resp::ParseStatus::Failed) return Frame::Malformed;
    frame_bytes_ = parser_.consumed();
    begin_ += frame_bytes_;
    peak_since_tick_ = std::max(peak_since_tick_, frame_bytes_);
    const NodeSpan nodes = parser_.nodes();
    const bool push =
        nodes[0].type == ReplyType::Push || (subscriber_mode_ && resp::is_resp2_pubsub(nodes));
    return push ? Frame::Push : Frame::Reply;
  }
  /// The frame next() returned (Reply or Push).
  NodeSpan frame() const noexcept { return parser_.nodes(); }
  /// The RESP3 attributes that came with frame() (usually none).
  NodeSpan attributes() const noexcept { return parser_.attributes(); }
  /// Its size on the wire.
  std::size_t frame_bytes() const noexcept { return frame_bytes_; }
  /// After Malformed: why the stream is not valid RESP.
  const Error& error() const noexcept { return parser_.error(); }
  /// Bytes read and not yet parsed into a frame (a reply half read).
  std::size_t unparsed() const noexcept { return end_ - begin_; }

  /// After the frames of one read (no read is in progress then): rewinds an empty buffer,
  /// and gives back a grown one when the last health tick found it too large.
  void settle() noexcept {
    if (begin_ != end_) return;
    begin_ = end_ = 0;
    if (give_back_) [[unlikely]]
      give_back();
  }
  /// On each health tick: a buffer grown past kShrinkAbove that no reply since the previous
  /// tick needed a quarter of (buffer_keep.hpp) is to be given back, by the next settle() that
  /// finds it empty (an idle connection's heartbeat reply brings one). Nothing is freed here: the
  /// buffer is lent to the read in progress. A grown buffer is kept across a stream of large
  /// replies: given back after each one, the next could land in memory the allocator had to fault
  /// in again.
  void on_tick() noexcept {
    const std::size_t peak = std::exchange(peak_since_tick_, 0);
    give_back_ = capacity_ > kept_capacity(peak);
  }

  /// The read buffer's size now (kReadChunk at rest).
  std::size_t capacity() const noexcept { return capacity_; }
  /// Times the buffer was replaced by a larger one, since construction.
  std::size_t growths() const noexcept { return growths_; }
  /// Bytes copied inside the reader, since construction: unparsed bytes moved to the front
  /// of the buffer, or into a larger one. (Not the kernel's copy into the buffer.)
  std::size_t bytes_moved() const noexcept { return bytes_moved_; }

  static constexpr std::size_t kReadChunk = 64 * 1024;  ///< the buffer's size at rest
  /// A reply known (or likely) to be up to this long gets room for all of it at once; a
  /// longer one, by doubling as its bytes arrive.
  static constexpr std::size_t kGrowAtOnceUpTo = 16 * 1024 * 1024;

 private:
  static constexpr std::size_t kMinFreeForRead = 16 * 1024;  // below this, compact or grow

  void make_room();
  void grow(std::size_t capacity);
  void give_back() noexcept;

  resp::Parser parser_;
  std::unique_ptr<char[]> buffer_;  ///< capacity_ bytes, not zero-filled
  std::size_t capacity_ = 0;
  std::size_t begin_ = 0;  ///< first byte not parsed into a frame yet
  std::size_t frame_bytes_ = 0;
  std::size_t peak_since_tick_ = 0;  ///< the largest frame since the last on_tick()
  std::size_t end_ = 0;              ///< one past the last byte read
  bool subscriber_mode_ = false;
  bool give_back_ = false;  ///< on_tick() found the buffer too large
  std::size_t growths_ = 0;
  std::size_t bytes_moved_ = 0;
};

}  // namespace redmux::detail

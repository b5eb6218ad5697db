#include "conn/reader.hpp"

#include <cstring>

namespace redmux::detail {
namespace {

constexpr std::size_t kReadChunk = 64 * 1024;       // read buffer size at rest
constexpr std::size_t kMinFreeForRead = 16 * 1024;  // below this free space, compact or grow
constexpr std::size_t kShrinkAbove = 1024 * 1024;   // give back a buffer grown past this

}  // namespace

Reader::Reader() : buffer_(kReadChunk) {}

void Reader::reset() {
  parser_.reset();
  begin_ = end_ = 0;
}

std::span<char> Reader::free_space() {
  if (buffer_.size() - end_ < kMinFreeForRead) {
    const std::size_t unparsed = end_ - begin_;
    if (begin_ > 0) {
      std::memmove(buffer_.data(), buffer_.data() + begin_, unparsed);
      begin_ = 0;
      end_ = unparsed;
    }
    if (buffer_.size() - end_ < kMinFreeForRead) {
      buffer_.resize(buffer_.size() * 2);  // a reply larger than the buffer
    }
  }
  return std::span<char>(buffer_.data() + end_, buffer_.size() - end_);
}

void Reader::settle() {
  if (begin_ != end_) return;
  begin_ = end_ = 0;
  if (buffer_.size() > kShrinkAbove) {
    std::vector<char>(kReadChunk).swap(buffer_);  // give back what a big reply took
  }
}

}  // namespace redmux::detail

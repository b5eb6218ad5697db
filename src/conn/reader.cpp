#include "conn/reader.hpp"

#include <cstring>

namespace redmux::detail {
namespace {

constexpr std::size_t kReadChunk = 64 * 1024;  // read buffer size at rest

}  // namespace

Reader::Reader() : buffer_(kReadChunk) {}

void Reader::reset() {
  parser_.reset();
  begin_ = end_ = 0;
}

void Reader::make_room() {
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

void Reader::shrink() {
  std::vector<char>(kReadChunk).swap(buffer_);  // give back what a big reply took
}

}  // namespace redmux::detail

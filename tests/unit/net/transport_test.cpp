// Transport's writes on a plain socket (write_all()): every step offers the kernel all that
// is not yet written, so a large write leaves as few segments as the bytes need.
#include "net/transport.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <asio/buffer.hpp>
#include <asio/error.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace redmux::detail {
namespace {

// An AsyncWriteStream standing in for a socket whose send buffer takes at most `accepts`
// bytes per send(): it records what each step was offered and keeps what it took.
struct RecordingStream {
  using executor_type = asio::io_context::executor_type;

  RecordingStream(asio::io_context& context, std::size_t most, std::size_t failing_step = 0)
      : io(context), accepts(most), fail_at_step(failing_step) {}

  asio::io_context& io;
  std::size_t accepts;
  std::size_t fail_at_step;  ///< 1-based step that fails (0: none)
  std::vector<std::size_t> offered;
  std::string taken;

  executor_type get_executor() { return io.get_executor(); }

  template <class Buffers, class Handler>
  void async_write_some(const Buffers& buffers, Handler&& handler) {
    offered.push_back(asio::buffer_size(buffers));
    if (offered.size() == fail_at_step) {
      asio::post(io, [h = std::forward<Handler>(handler)]() mutable {
        h(asio::error::broken_pipe, std::size_t{0});
      });
      return;
    }
    std::size_t n = 0;
    for (auto it = asio::buffer_sequence_begin(buffers); it != asio::buffer_sequence_end(buffers);
         ++it) {
      const std::size_t step = std::min(it->size(), accepts - n);
      taken.append(static_cast<const char*>(it->data()), step);
      n += step;
      if (n == accepts) break;
    }
    asio::post(io, [h = std::forward<Handler>(handler), n]() mutable { h(asio::error_code(), n); });
  }
};

TEST(TransportWriteTest, EveryStepOffersAllThatIsNotYetWritten) {
  asio::io_context io;
  RecordingStream stream(io, 300'000);
  std::string bytes(1 << 20, 'x');
  for (std::size_t i = 0; i < bytes.size(); i += 4096) bytes[i] = static_cast<char>('a' + i % 26);
  asio::error_code result = asio::error::would_block;
  std::size_t written = 0;
  write_all(stream, asio::buffer(bytes), [&](const asio::error_code& ec, std::size_t n) {
    result = ec;
    written = n;
  });
  io.run();
  EXPECT_FALSE(result);
  EXPECT_EQ(written, bytes.size());
  EXPECT_EQ(stream.taken, bytes);
  // asio::transfer_all would offer 65,536 bytes per step, 16 steps for 1 MiB.
  const std::vector<std::size_t> expected = {1'048'576, 748'576, 448'576, 148'576};
  EXPECT_EQ(stream.offered, expected);
}

TEST(TransportWriteTest, AFailedStepEndsTheWriteWithWhatWasWrittenBeforeIt) {
  asio::io_context io;
  RecordingStream stream(io, 100'000, /*failing_step=*/2);
  const std::string bytes(250'000, 'y');
  asio::error_code result;
  std::size_t written = 0;
  write_all(stream, asio::buffer(bytes), [&](const asio::error_code& ec, std::size_t n) {
    result = ec;
    written = n;
  });
  io.run();
  EXPECT_EQ(result, asio::error::broken_pipe);
  EXPECT_EQ(written, 100'000u);
  const std::vector<std::size_t> expected = {250'000, 150'000};
  EXPECT_EQ(stream.offered, expected);
}

// The socket was closed (and may be open again for the next connection) after a step's
// completion was on its way: no further step, and the write ends aborted.
TEST(TransportWriteTest, AWriteWhoseSocketWasClosedMeanwhileTakesNoFurtherStep) {
  asio::io_context io;
  RecordingStream stream(io, 100'000);
  const std::string bytes(250'000, 'z');
  std::uint64_t epoch = 7;
  asio::error_code result;
  std::size_t written = 0;
  write_all(stream, asio::buffer(bytes), epoch, [&](const asio::error_code& ec, std::size_t n) {
    result = ec;
    written = n;
  });
  ++epoch;  // the break closes the socket while the first step's completion is queued
  io.run();
  EXPECT_EQ(result, asio::error::operation_aborted);
  EXPECT_EQ(written, 100'000u);
  EXPECT_EQ(stream.offered, std::vector<std::size_t>{250'000});
  // In the same epoch the write goes on to its end.
  RecordingStream whole(io, 100'000);
  write_all(whole, asio::buffer(bytes), epoch, [&](const asio::error_code& ec, std::size_t n) {
    result = ec;
    written = n;
  });
  io.restart();
  io.run();
  EXPECT_FALSE(result);
  EXPECT_EQ(written, bytes.size());
}

}  // namespace
}  // namespace redmux::detail

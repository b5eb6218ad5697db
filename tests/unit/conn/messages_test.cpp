// The timeout message's connection facts (conn/messages.cpp).
#include "conn/messages.hpp"

#include <gtest/gtest.h>

#include <string>

#include "conn/pending_command.hpp"

namespace redmux::detail {
namespace {

std::string message_with(bool ready) {
  PendingCommand command;
  command.name = "SET";
  command.timeout_ms = 100;
  TimeoutFacts facts;
  facts.endpoint = "127.0.0.1:6379";
  facts.state = ready ? "ready" : "reconnecting";
  facts.ready = ready;
  facts.queued_commands = 5;
  facts.queued_bytes = 500;
  facts.taken = 1000;   // a write took the stream up to 1,000 …
  facts.written = 100;  // … and the socket accepted 100 of it before the connection broke
  return timeout_error(command, Clock::now(), /*in_flight=*/false, facts).message();
}

TEST(TimeoutMessageTest, BytesToWriteCountsAWriteInProgressOnlyOnAReadyConnection) {
  // Ready: the write in progress is still going out.
  EXPECT_NE(message_with(true).find("bytes-to-write=1400,"), std::string::npos)
      << message_with(true);
  // After a break, what the failed write did not send is back in the queue (queued_bytes):
  // counted once, not again as the old stream's unwritten part.
  EXPECT_NE(message_with(false).find("bytes-to-write=500,"), std::string::npos)
      << message_with(false);
}

}  // namespace
}  // namespace redmux::detail

// A sink for the command mixins that records the arguments of each command and completes
// its future from canned RESP bytes, parsed by the real parser. No server, no connection.
#pragma once

#include <gtest/gtest.h>

#include <deque>
#include <span>
#include <string>
#include <vector>

#include "redmux/commands.hpp"
#include "redmux/future.hpp"
#include "resp/parser.hpp"

namespace redmux::testing {

class RecordingSink : public Commands<RecordingSink> {
 public:
  RecordingSink() = default;
  // Not copyable, so scan_keys() references it and the test sees what its pages sent.
  RecordingSink(const RecordingSink&) = delete;
  RecordingSink& operator=(const RecordingSink&) = delete;

  /// Queues the raw RESP reply for the next command; without one, replies "+OK".
  void reply_with(std::string resp) { replies_.push_back(std::move(resp)); }

  template <class T>
  Future<T> send(const CallOptions& options, std::span<const Arg> args) {
    std::vector<std::string> recorded;
    for (const Arg& a : args) recorded.emplace_back(a.bytes());
    sent.push_back(std::move(recorded));
    last_options = options;
    std::string resp = "+OK\r\n";
    if (!replies_.empty()) {
      resp = std::move(replies_.front());
      replies_.pop_front();
    }
    auto* state = new detail::FutureState<T>();
    state->command_name = "TEST";
    resp::Parser parser;
    if (parser.parse(resp) != resp::ParseStatus::Complete) {
      ADD_FAILURE() << "canned reply does not parse: " << resp;
      state->fail(Error(errc::protocol_error, "bad canned reply"));
    } else {
      state->deliver(parser.nodes());
    }
    return Future<T>(state);
  }

  /// The last command's arguments.
  const std::vector<std::string>& last() const { return sent.back(); }

  std::vector<std::vector<std::string>> sent;
  CallOptions last_options;

 private:
  std::deque<std::string> replies_;
};

using Words = std::vector<std::string>;

}  // namespace redmux::testing

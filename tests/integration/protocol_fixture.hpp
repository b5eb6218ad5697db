// The fixture of the command-group suites: one redis-server per suite, and per test a FLUSHALL
// and a fresh multiplexer speaking the protocol the test is instantiated with ("resp3",
// "resp2"). CRTP: each suite (`class GeoTest : public ProtocolTest<GeoTest>`) has its own server.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

#include "redmux/redmux.hpp"
#include "support/redis_server.hpp"

namespace redmux::test {

template <class Suite>
class ProtocolTest : public ::testing::TestWithParam<const char*> {
 protected:
  /// `client_name`: the multiplexer's name= (CLIENT SETNAME).
  explicit ProtocolTest(std::string client_name) : client_name_(std::move(client_name)) {}

  static void SetUpTestSuite() { server_ = new RedisServer(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    server_->cli({"FLUSHALL"});
    mux_ = Multiplexer::connect(server_->address() + ",name=" + client_name_ +
                                ",protocol=" + GetParam());
    db_ = mux_->database();
  }

  static inline RedisServer* server_ = nullptr;
  std::string client_name_;
  std::shared_ptr<Multiplexer> mux_;
  Database db_;
};

}  // namespace redmux::test

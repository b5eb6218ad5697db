// CallbackState: the state of one of redmux's own commands whose reply (or failure) goes to a
// callback, on the I/O thread that completes it. The callbacks must not throw: they run from
// noexcept completions.
#pragma once

#include <functional>
#include <utility>

#include "redmux/command_state.hpp"

namespace redmux::detail {

class CallbackState final : public CommandState {
 public:
  CallbackState(std::function<void(NodeSpan)> on_reply, std::function<void(const Error&)> on_error)
      : on_reply_(std::move(on_reply)), on_error_(std::move(on_error)) {}
  void deliver(NodeSpan reply) noexcept override {
    if (!claim()) return;
    if (on_reply_) on_reply_(reply);
    publish();
  }
  void fail(Error error) noexcept override {
    if (!claim()) return;
    if (on_error_) on_error_(error);
    publish();
  }

 private:
  std::function<void(NodeSpan)> on_reply_;
  std::function<void(const Error&)> on_error_;
};

}  // namespace redmux::detail

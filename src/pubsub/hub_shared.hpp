// The pieces of SubscriptionHub that its two source files share (hub.cpp: subscriptions;
// hub_messages.cpp: messages). Internal to src/pubsub.
#pragma once

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "pubsub/hub.hpp"
#include "resp/classify.hpp"

namespace redmux::detail::hub {

/// The subscription whose handler this thread is running (to let it unsubscribe itself).
inline thread_local const SubscriptionState* current_invocation = nullptr;

/// The (P|S)(UN)SUBSCRIBE command for one kind of name, and the push confirming each name.
struct PubSubVerb {
  std::string_view command;  ///< static storage
  resp::PushKind confirmed_by;
};

inline PubSubVerb subscribe_verb(SubscriptionKind kind) noexcept {
  switch (kind) {
    case SubscriptionKind::Channel:
      return {"SUBSCRIBE", resp::PushKind::Subscribe};
    case SubscriptionKind::Pattern:
      return {"PSUBSCRIBE", resp::PushKind::PatternSubscribe};
    case SubscriptionKind::ShardChannel:
      return {"SSUBSCRIBE", resp::PushKind::ShardSubscribe};
  }
  return {"SUBSCRIBE", resp::PushKind::Subscribe};
}

inline PubSubVerb unsubscribe_verb(SubscriptionKind kind) noexcept {
  switch (kind) {
    case SubscriptionKind::Channel:
      return {"UNSUBSCRIBE", resp::PushKind::Unsubscribe};
    case SubscriptionKind::Pattern:
      return {"PUNSUBSCRIBE", resp::PushKind::PatternUnsubscribe};
    case SubscriptionKind::ShardChannel:
      return {"SUNSUBSCRIBE", resp::PushKind::ShardUnsubscribe};
  }
  return {"UNSUBSCRIBE", resp::PushKind::Unsubscribe};
}

/// "1.3 s"
inline std::string seconds_text(std::chrono::steady_clock::duration duration) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", std::chrono::duration<double>(duration).count());
  return text;
}

inline std::string describe(SubscriptionKind kind, std::string_view name) {
  switch (kind) {
    case SubscriptionKind::Channel:
      return "channel \"" + std::string(name) + "\"";
    case SubscriptionKind::Pattern:
      return "pattern \"" + std::string(name) + "\"";
    case SubscriptionKind::ShardChannel:
      return "shard channel \"" + std::string(name) + "\"";
  }
  return std::string(name);
}

/// The server's refusal of one SUBSCRIBE-family command (an ACL channel rule …) fails the
/// confirmation its name awaits, and is reported to on_error first, naming the channel (the
/// pipeline leaves a PubSub command with a state to it); a cluster node's MOVED for an
/// SSUBSCRIBE ends the shard channel (SubscriptionHub::shard_redirected()), reported once,
/// as its end. When the
/// connection breaks first it is dropped: the names are subscribed again once a connection is
/// ready.
class SubscribeRefusal final : public CommandState {
 public:
  SubscribeRefusal(std::weak_ptr<SubscriptionHub> hub, SubscriptionKind kind, std::string name)
      : hub_(std::move(hub)), kind_(kind), name_(std::move(name)) {}
  void deliver(NodeSpan reply) noexcept override {
    if (!claim()) return;
    if (auto hub = hub_.lock(); hub && is_error_reply(reply)) {
      try {
        // "NOPERM … (reply to SUBSCRIBE "orders")": which of many names was refused.
        Error error = server_error_from(
            reply, std::string(subscribe_verb(kind_).command) + " \"" + name_ + "\"");
        if (reply[0].value.starts_with("NOPERM")) {
          error = Error(error.code(), error.message() + hub->acl_hint());
        }
        if (kind_ == SubscriptionKind::ShardChannel && reply[0].value.starts_with("MOVED ")) {
          hub->shard_redirected(name_, reply);  // reports the channel's end, with the MOVED
        } else {
          hub->refused(kind_, name_, error);
        }
      } catch (...) {  // out of memory building the message: the next subscribe asks again
      }
    }
    publish();
  }
  void fail(Error) noexcept override {
    if (claim()) publish();
  }

 private:
  std::weak_ptr<SubscriptionHub> hub_;
  SubscriptionKind kind_;
  std::string name_;
};

}  // namespace redmux::detail::hub

// Pub/sub against a real redis-server: handlers and queues on channels, patterns and shard
// channels; one SUBSCRIBE per channel however many listeners; unsubscribe; each overflow
// policy; per-channel order under a burst; throwing and slow handlers; RESP2; the shared
// subscription connection under RESP3; re-subscription after a server restart; binary data.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "redmux/redmux.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
using test::RedisServer;

std::shared_ptr<Multiplexer> connect_to(const RedisServer& server, std::string extra = "") {
  return Multiplexer::connect(server.address() + ",name=pubsub-test" + extra);
}

/// Messages a handler received, safe to read from the test thread.
struct Inbox {
  std::mutex mutex;
  std::vector<Message> messages;
  MessageHandler handler() {
    return [this](const Message& message) {
      std::lock_guard lock(mutex);
      messages.push_back(message);
    };
  }
  std::size_t size() {
    std::lock_guard lock(mutex);
    return messages.size();
  }
  std::vector<Message> copy() {
    std::lock_guard lock(mutex);
    return messages;
  }
};

/// Errors reported to Multiplexer::on_error.
struct ErrorLog {
  std::mutex mutex;
  std::vector<Error> errors;
  void attach(Multiplexer& mux) {
    mux.on_error([this](const Error& error) {
      std::lock_guard lock(mutex);
      errors.push_back(error);
    });
  }
  std::size_t count(errc code) {
    std::lock_guard lock(mutex);
    return static_cast<std::size_t>(std::count_if(
        errors.begin(), errors.end(), [&](const Error& e) { return e.code() == code; }));
  }
  std::string first_message(errc code) {
    std::lock_guard lock(mutex);
    for (const Error& e : errors) {
      if (e.code() == code) return e.message();
    }
    return {};
  }
};

long long numsub(const RedisServer& server, const std::string& channel) {
  // redis-cli prints "channel\ncount".
  const std::string out = server.cli({"PUBSUB", "NUMSUB", channel});
  return std::stoll(out.substr(out.rfind('\n') + 1));
}

int named_connections(const RedisServer& server, const std::string& name) {
  const std::string list = server.cli({"CLIENT", "LIST"});
  int count = 0;
  const std::string needle = "name=" + name + " ";
  for (std::size_t at = list.find(needle); at != std::string::npos;
       at = list.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

TEST(PubSubTest, SubscribeReceivesWhatOthersPublish) {
  RedisServer server;
  auto subscriber_mux = connect_to(server);
  auto publisher_mux = connect_to(server);
  Inbox inbox;
  Subscription sub = subscriber_mux->subscriber().subscribe("news", inbox.handler());
  sub.confirmed().get();
  EXPECT_TRUE(sub.active());
  EXPECT_EQ(sub.name(), "news");
  EXPECT_EQ(publisher_mux->database().publish("news", "from another multiplexer").get(), 1);
  server.cli({"PUBLISH", "news", "from redis-cli"});
  ASSERT_TRUE(test::wait_until([&] { return inbox.size() == 2; }));
  const auto messages = inbox.copy();
  EXPECT_EQ(messages[0].kind, SubscriptionKind::Channel);
  EXPECT_EQ(messages[0].channel, "news");
  EXPECT_EQ(messages[0].payload, "from another multiplexer");
  EXPECT_EQ(messages[1].payload, "from redis-cli");
  // A multiplexer can publish to its own subscriptions.
  EXPECT_EQ(subscriber_mux->database().publish("news", "to myself").get(), 1);
  ASSERT_TRUE(test::wait_until([&] { return inbox.size() == 3; }));
  // The subscription lives on its own connection: two named connections on this multiplexer.
  EXPECT_EQ(named_connections(server, "pubsub-test"), 3);
}

TEST(PubSubTest, HandlerRunsOffTheIoThreadAndMayBlockOnCommands) {
  RedisServer server;
  auto mux = connect_to(server);
  Database db = mux->database();
  std::atomic<long long> seen{-1};
  Subscription sub = mux->subscriber().subscribe("ask", [&](const Message& message) {
    // A blocking get() on an I/O thread would throw DeadlockError.
    seen = db.incrby(message.payload, 5).get();
  });
  sub.confirmed().get();
  db.publish("ask", "counter").get();
  ASSERT_TRUE(test::wait_until([&] { return seen.load() == 5; }));
}

TEST(PubSubTest, PatternSubscription) {
  RedisServer server;
  auto mux = connect_to(server);
  Inbox inbox;
  Subscription sub = mux->subscriber().psubscribe("news.*", inbox.handler());
  sub.confirmed().get();
  EXPECT_EQ(mux->database().pubsub_numpat().get(), 1);
  mux->database().publish("news.sport", "goal").get();
  mux->database().publish("weather", "rain").get();  // does not match
  mux->database().publish("news.art", "paint").get();
  ASSERT_TRUE(test::wait_until([&] { return inbox.size() == 2; }));
  const auto messages = inbox.copy();
  EXPECT_EQ(messages[0].kind, SubscriptionKind::Pattern);
  EXPECT_EQ(messages[0].pattern, "news.*");
  EXPECT_EQ(messages[0].channel, "news.sport");
  EXPECT_EQ(messages[0].payload, "goal");
  EXPECT_EQ(messages[1].channel, "news.art");
  std::this_thread::sleep_for(100ms);  // a stray "weather" message would have arrived by now
  EXPECT_EQ(inbox.size(), 2u);
}

TEST(PubSubTest, ShardedSubscribeOnStandaloneServer) {
  RedisServer server;
  auto mux = connect_to(server);
  Inbox inbox;
  Subscription sub = mux->subscriber().ssubscribe("orders{7}", inbox.handler());
  sub.confirmed().get();
  EXPECT_EQ(mux->database().spublish("orders{7}", "order 1").get(), 1);
  ASSERT_TRUE(test::wait_until([&] { return inbox.size() == 1; }));
  const auto messages = inbox.copy();
  EXPECT_EQ(messages[0].kind, SubscriptionKind::ShardChannel);
  EXPECT_EQ(messages[0].channel, "orders{7}");
  EXPECT_EQ(messages[0].payload, "order 1");
  const auto numsub = mux->database().pubsub_shardnumsub({"orders{7}"}).get();
  ASSERT_EQ(numsub.size(), 1u);
  EXPECT_EQ(numsub[0].second, 1);
  sub.unsubscribe();
  ASSERT_TRUE(test::wait_until(
      [&] { return mux->database().pubsub_shardnumsub({"orders{7}"}).get()[0].second == 0; }));
}

TEST(PubSubTest, SubscribingAsTheConnectionBecomesReadySendsOneSubscribe) {
  // A subscribe() that comes after the subscription connection is marked ready but before
  // the hub has re-sent its names (here: from the Connected event, which runs in that
  // window) goes out once, with the hub's batch, not a second time on its own.
  RedisServer server;
  auto mux = connect_to(server);
  Subscriber subscriber = mux->subscriber();
  Inbox inbox;
  std::mutex mutex;
  std::optional<Subscription> late;
  mux->on_connection_event([&](const ConnectionEvent& event) {
    if (event.kind != ConnectionEventKind::Connected) return;
    std::lock_guard lock(mutex);
    if (!late) late = subscriber.subscribe("late", inbox.handler());
  });
  Subscription first = subscriber.subscribe("first", inbox.handler());
  first.confirmed().get();
  ASSERT_TRUE(test::wait_until([&] {
    std::lock_guard lock(mutex);
    return late.has_value();
  }));
  {
    std::lock_guard lock(mutex);
    late->confirmed().get();
  }
  EXPECT_EQ(numsub(server, "late"), 1);
  EXPECT_EQ(server.command_calls("subscribe"), 2);  // "first" and "late", once each
  EXPECT_EQ(mux->database().publish("late", "hello").get(), 1);
  ASSERT_TRUE(test::wait_until([&] { return inbox.size() == 1; }));
}

TEST(PubSubTest, TwoHandlersOnOneChannelShareOneSubscribe) {
  RedisServer server;
  auto mux = connect_to(server);
  Subscriber subscriber = mux->subscriber();
  Inbox first;
  Inbox second;
  Subscription a = subscriber.subscribe("shared", first.handler());
  Subscription b = subscriber.subscribe("shared", second.handler());
  a.confirmed().get();
  b.confirmed().get();
  EXPECT_EQ(server.command_calls("subscribe"), 1);
  EXPECT_EQ(numsub(server, "shared"), 1);
  EXPECT_EQ(subscriber.status().channels, 1u);
  EXPECT_EQ(subscriber.status().subscriptions, 2u);
  EXPECT_EQ(mux->database().publish("shared", "both").get(), 1);  // one receiving connection
  ASSERT_TRUE(test::wait_until([&] { return first.size() == 1 && second.size() == 1; }));

  // The first one leaving does not unsubscribe the channel.
  a.unsubscribe();
  EXPECT_FALSE(a.active());
  mux->database().publish("shared", "second only").get();
  ASSERT_TRUE(test::wait_until([&] { return second.size() == 2; }));
  EXPECT_EQ(first.size(), 1u);
  EXPECT_EQ(server.command_calls("unsubscribe"), 0);
  EXPECT_EQ(numsub(server, "shared"), 1);

  // The last one does.
  b.unsubscribe();
  ASSERT_TRUE(test::wait_until([&] { return numsub(server, "shared") == 0; }));
  EXPECT_EQ(server.command_calls("unsubscribe"), 1);
  EXPECT_EQ(subscriber.status().channels, 0u);
}

TEST(PubSubTest, UnsubscribeStopsDelivery) {
  RedisServer server;
  auto mux = connect_to(server);
  Database db = mux->database();
  Inbox inbox;
  {
    Subscription sub = mux->subscriber().subscribe("short-lived", inbox.handler());
    sub.confirmed().get();
    db.publish("short-lived", "one").get();
    ASSERT_TRUE(test::wait_until([&] { return inbox.size() == 1; }));
  }  // RAII: unsubscribed here
  ASSERT_TRUE(test::wait_until([&] { return numsub(server, "short-lived") == 0; }));
  EXPECT_EQ(db.publish("short-lived", "two").get(), 0);
  // Subscriber::unsubscribe ends every listener of a channel.
  Subscriber subscriber = mux->subscriber();
  Subscription x = subscriber.subscribe("many", inbox.handler());
  MessageQueue q = subscriber.subscribe_queue({"many"});
  x.confirmed().get();
  EXPECT_EQ(subscriber.unsubscribe("many"), 2u);
  EXPECT_FALSE(x.active());
  EXPECT_THROW(q.pop(), ConnectionError);  // ended: errc::shut_down
  ASSERT_TRUE(test::wait_until([&] { return numsub(server, "many") == 0; }));
  EXPECT_EQ(inbox.size(), 1u);
}

TEST(PubSubTest, AQueueOnOneNameTakesTheNameAlone) {
  // subscribe_queue("jobs") as well as subscribe_queue({"jobs", "alerts"}); a braced list
  // still takes the list overloads (two names, not a string built from two pointers).
  RedisServer server;
  auto mux = connect_to(server);
  Database db = mux->database();
  Subscriber subscriber = mux->subscriber();
  const std::string pattern = "alone.*";
  MessageQueue one = subscriber.subscribe_queue("alone");
  MessageQueue matching = subscriber.psubscribe_queue(pattern, {.capacity = 10});
  MessageQueue two = subscriber.psubscribe_queue({"pair-a", "pair-b"});
  one.confirmed().get();
  matching.confirmed().get();
  two.confirmed().get();
  EXPECT_EQ(db.publish("alone", "1").get(), 1);
  EXPECT_EQ(db.publish("alone.x", "2").get(), 1);
  EXPECT_EQ(db.publish("pair-b", "3").get(), 1);
  EXPECT_EQ(one.pop().payload, "1");
  const Message matched = matching.pop();
  EXPECT_EQ(matched.pattern, "alone.*");
  EXPECT_EQ(matched.payload, "2");
  EXPECT_EQ(two.pop().payload, "3");
}

TEST(PubSubTest, MoveAssignmentEndsWhatTheTargetHeld) {
  RedisServer server;
  auto mux = connect_to(server);
  Subscriber subscriber = mux->subscriber();
  Inbox old_inbox;
  Inbox new_inbox;
  Subscription sub = subscriber.subscribe("assigned-old", old_inbox.handler());
  Subscription other = subscriber.subscribe("assigned-new", new_inbox.handler());
  MessageQueue queue = subscriber.subscribe_queue({"queued-old"});
  MessageQueue other_queue = subscriber.subscribe_queue({"queued-new"});
  sub.confirmed().get();
  other.confirmed().get();
  queue.confirmed().get();
  other_queue.confirmed().get();
  sub = std::move(other);
  queue = std::move(other_queue);
  EXPECT_FALSE(other.active());  // the moved-from handle is empty
  EXPECT_TRUE(sub.active());
  EXPECT_EQ(sub.name(), "assigned-new");
  ASSERT_TRUE(test::wait_until([&] { return numsub(server, "assigned-old") == 0; }));
  ASSERT_TRUE(test::wait_until([&] { return numsub(server, "queued-old") == 0; }));
  EXPECT_EQ(numsub(server, "assigned-new"), 1);
  EXPECT_EQ(numsub(server, "queued-new"), 1);
  mux->database().publish("queued-new", "q").get();
  auto popped = queue.pop_for(5s);
  ASSERT_TRUE(popped.has_value());
  EXPECT_EQ(popped->channel, "queued-new");
}

TEST(PubSubTest, UnsubscribeFromInsideTheHandler) {
  RedisServer server;
  auto mux = connect_to(server);
  std::atomic<int> calls{0};
  Subscription sub;
  sub = mux->subscriber().subscribe("once", [&](const Message&) {
    ++calls;
    sub.unsubscribe();  // returns at once: the handler does not wait for itself
  });
  sub.confirmed().get();
  mux->database().publish("once", "1").get();
  mux->database().publish("once", "2").get();
  ASSERT_TRUE(test::wait_until([&] { return numsub(server, "once") == 0; }));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(calls.load(), 1);
}

TEST(PubSubTest, TwoHandlersThatUnsubscribeEachOtherBothReturn) {
  // A "stop" message on two channels at once, each handler unsubscribing the other: each
  // would wait for the other's invocation to end, on both delivery threads, and pub/sub
  // delivery would stop for good (and the process could not exit).
  RedisServer server;
  auto mux = connect_to(server);
  Subscription a;
  Subscription b;
  std::atomic<int> arrived{0};
  std::atomic<int> returned{0};
  auto both_inside = [&] {
    ++arrived;
    while (arrived.load() < 2) std::this_thread::yield();
  };
  a = mux->subscriber().subscribe("stop-a", [&](const Message&) {
    both_inside();
    b.unsubscribe();
    ++returned;
  });
  b = mux->subscriber().subscribe("stop-b", [&](const Message&) {
    both_inside();
    a.unsubscribe();
    ++returned;
  });
  a.confirmed().get();
  b.confirmed().get();
  mux->database().publish("stop-a", "x").get();
  mux->database().publish("stop-b", "x").get();
  ASSERT_TRUE(test::wait_until([&] { return returned.load() == 2; }, 5s))
      << "the handlers wait for each other";
  // Delivery goes on.
  std::atomic<int> other{0};
  Subscription c = mux->subscriber().subscribe("other", [&](const Message&) { ++other; });
  c.confirmed().get();
  mux->database().publish("other", "y").get();
  EXPECT_TRUE(test::wait_until([&] { return other.load() == 1; }));
}

TEST(PubSubTest, ThreeHandlersThatUnsubscribeEachOtherInARingAllReturn) {
  // Two multiplexers (two delivery threads each), so that three handlers run at once: A
  // unsubscribes B, B unsubscribes C, C unsubscribes A. Each would wait for the next's
  // invocation to end, for ever.
  RedisServer server;
  auto first = connect_to(server);
  auto second = connect_to(server);
  Subscription a;
  Subscription b;
  Subscription c;
  std::atomic<int> arrived{0};
  std::atomic<int> returned{0};
  auto all_inside = [&] {
    ++arrived;
    while (arrived.load() < 3) std::this_thread::yield();
  };
  a = first->subscriber().subscribe("ring-a", [&](const Message&) {
    all_inside();
    b.unsubscribe();
    ++returned;
  });
  b = second->subscriber().subscribe("ring-b", [&](const Message&) {
    all_inside();
    c.unsubscribe();
    ++returned;
  });
  c = first->subscriber().subscribe("ring-c", [&](const Message&) {
    all_inside();
    a.unsubscribe();
    ++returned;
  });
  a.confirmed().get();
  b.confirmed().get();
  c.confirmed().get();
  for (const char* channel : {"ring-a", "ring-b", "ring-c"}) {
    first->database().publish(channel, "stop").get();
  }
  ASSERT_TRUE(test::wait_until([&] { return returned.load() == 3; }, 5s))
      << "the handlers wait for one another";
  // Delivery goes on on both.
  std::atomic<int> other{0};
  Subscription d = first->subscriber().subscribe("other", [&](const Message&) { ++other; });
  Subscription e = second->subscriber().subscribe("other", [&](const Message&) { ++other; });
  d.confirmed().get();
  e.confirmed().get();
  first->database().publish("other", "y").get();
  EXPECT_TRUE(test::wait_until([&] { return other.load() == 2; }));
}
TEST(PubSubTest, QueueFormDeliversInOrderAcrossChannels) {
  RedisServer server;
  auto mux = connect_to(server);
  Database db = mux->database();
  MessageQueue queue = mux->subscriber().subscribe_queue({"q1", "q2"});
  queue.confirmed().get();
  EXPECT_EQ(queue.try_pop(), std::nullopt);
  EXPECT_EQ(queue.pop_for(20ms), std::nullopt);
  db.publish("q1", "a").get();
  db.publish("q2", "b").get();
  db.publish("q1", "c").get();
  Message first = queue.pop();
  EXPECT_EQ(first.channel, "q1");
  EXPECT_EQ(first.payload, "a");
  auto second = queue.pop_for(5s);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->channel, "q2");
  EXPECT_EQ(second->payload, "b");
  ASSERT_TRUE(test::wait_until([&] { return queue.size() == 1; }));
  EXPECT_EQ(queue.try_pop()->payload, "c");
  EXPECT_FALSE(queue.error());
  queue.unsubscribe();
  EXPECT_THROW(queue.pop(), ConnectionError);
  ASSERT_TRUE(test::wait_until([&] { return numsub(server, "q1") == 0; }));
}

std::vector<std::string> drain(MessageQueue& queue) {
  std::vector<std::string> payloads;
  while (auto message = queue.try_pop()) payloads.push_back(message->payload);
  return payloads;
}

TEST(PubSubTest, QueueOverflowDropOldest) {
  RedisServer server;
  auto mux = connect_to(server);
  ErrorLog log;
  log.attach(*mux);
  MessageQueue queue = mux->subscriber().subscribe_queue(
      {"full"}, {.capacity = 3, .overflow = OverflowPolicy::DropOldest});
  queue.confirmed().get();
  for (int i = 1; i <= 5; ++i) mux->database().publish("full", std::to_string(i)).get();
  ASSERT_TRUE(test::wait_until([&] { return queue.dropped() == 2; }));
  EXPECT_EQ(drain(queue), (std::vector<std::string>{"3", "4", "5"}));
  EXPECT_EQ(mux->subscriber().status().dropped, 2u);
  EXPECT_EQ(log.count(errc::subscription_overflow), 1u);  // once per episode
  EXPECT_NE(log.first_message(errc::subscription_overflow).find("DropOldest"), std::string::npos);
}

TEST(PubSubTest, QueueOverflowDropNewest) {
  RedisServer server;
  auto mux = connect_to(server);
  MessageQueue queue = mux->subscriber().subscribe_queue(
      {"full"}, {.capacity = 3, .overflow = OverflowPolicy::DropNewest});
  queue.confirmed().get();
  for (int i = 1; i <= 5; ++i) mux->database().publish("full", std::to_string(i)).get();
  ASSERT_TRUE(test::wait_until([&] { return queue.dropped() == 2; }));
  EXPECT_EQ(drain(queue), (std::vector<std::string>{"1", "2", "3"}));
  // Room again: delivery resumes.
  mux->database().publish("full", "6").get();
  EXPECT_EQ(queue.pop_for(5s)->payload, "6");
}

TEST(PubSubTest, QueueOverflowDisconnectAndReport) {
  RedisServer server;
  auto mux = connect_to(server);
  ErrorLog log;
  log.attach(*mux);
  MessageQueue queue = mux->subscriber().subscribe_queue(
      {"full"}, {.capacity = 3, .overflow = OverflowPolicy::DisconnectAndReport});
  queue.confirmed().get();
  for (int i = 1; i <= 5; ++i) mux->database().publish("full", std::to_string(i)).get();
  ASSERT_TRUE(test::wait_until([&] { return log.count(errc::subscription_overflow) == 1; }));
  EXPECT_EQ(queue.error().code(), errc::subscription_overflow);
  EXPECT_NE(queue.error().message().find("1 message was dropped, the one arriving; the 3 it "
                                         "holds are still handed out by pop()"),
            std::string::npos)
      << queue.error().message();
  // What it held is still handed out, then the error.
  EXPECT_EQ(queue.pop().payload, "1");
  EXPECT_EQ(queue.pop().payload, "2");
  EXPECT_EQ(queue.pop().payload, "3");
  try {
    queue.pop();
    ADD_FAILURE() << "pop() after the overflow should throw";
  } catch (const RedmuxError& e) {
    EXPECT_EQ(e.code(), errc::subscription_overflow);
  }
  ASSERT_TRUE(test::wait_until([&] { return numsub(server, "full") == 0; }));
}

TEST(PubSubTest, OrderPerChannelUnderBurst) {
  RedisServer server;
  auto subscriber_mux = connect_to(server);
  auto publisher_mux = connect_to(server);
  constexpr int kMessages = 10000;
  std::mutex mutex;
  std::vector<int> first_seen;
  std::vector<int> second_seen;
  std::atomic<int> inside{0};
  std::atomic<bool> overlapped{false};
  auto recorder = [&](std::vector<int>& seen) {
    return [&](const Message& message) {
      if (inside.fetch_add(1) != 0) overlapped = true;  // handlers of one channel never overlap
      {
        std::lock_guard lock(mutex);
        seen.push_back(std::stoi(message.payload));
      }
      inside.fetch_sub(1);
    };
  };
  Subscription a = subscriber_mux->subscriber().subscribe("burst", recorder(first_seen));
  Subscription b = subscriber_mux->subscriber().subscribe("burst", recorder(second_seen));
  a.confirmed().get();
  Database db = publisher_mux->database();
  std::vector<Future<long long>> published;
  published.reserve(kMessages);
  for (int i = 0; i < kMessages; ++i) published.push_back(db.publish("burst", std::to_string(i)));
  for (auto& future : published) future.get();
  ASSERT_TRUE(test::wait_until(
      [&] {
        std::lock_guard lock(mutex);
        return first_seen.size() == kMessages && second_seen.size() == kMessages;
      },
      30s));
  EXPECT_FALSE(overlapped.load());
  std::lock_guard lock(mutex);
  for (int i = 0; i < kMessages; ++i) {
    ASSERT_EQ(first_seen[i], i) << "first handler out of order at " << i;
    ASSERT_EQ(second_seen[i], i) << "second handler out of order at " << i;
  }
  EXPECT_EQ(a.dropped(), 0u);
}

TEST(PubSubTest, ConcurrentDeliveryRunsOneHandlerOnSeveralThreads) {
  RedisServer server;
  auto mux = connect_to(server);
  std::mutex mutex;
  std::condition_variable released_cv;
  bool released = false;
  std::atomic<int> inside{0};
  Subscription sub = mux->subscriber().subscribe("parallel",
                                                 [&](const Message&) {
                                                   inside.fetch_add(1);
                                                   std::unique_lock lock(mutex);
                                                   released_cv.wait(lock, [&] { return released; });
                                                 },
                                                 {.delivery = Delivery::Concurrent});
  sub.confirmed().get();
  for (int i = 0; i < 4; ++i) mux->database().publish("parallel", "x").get();
  EXPECT_TRUE(test::wait_until([&] { return inside.load() == 2; }));  // both delivery threads
  {
    std::lock_guard lock(mutex);
    released = true;
  }
  released_cv.notify_all();
  ASSERT_TRUE(test::wait_until([&] { return inside.load() == 4; }));
}

TEST(PubSubTest, ThrowingHandlerIsReportedAndDeliveryGoesOn) {
  RedisServer server;
  auto mux = connect_to(server);
  ErrorLog log;
  log.attach(*mux);
  Inbox inbox;
  Subscription sub = mux->subscriber().subscribe("fragile", [&](const Message& message) {
    if (message.payload == "boom") throw std::runtime_error("handler exploded");
    inbox.handler()(message);
  });
  sub.confirmed().get();
  mux->database().publish("fragile", "boom").get();
  mux->database().publish("fragile", "fine").get();
  ASSERT_TRUE(test::wait_until([&] { return inbox.size() == 1; }));
  EXPECT_EQ(inbox.copy()[0].payload, "fine");
  ASSERT_EQ(log.count(errc::handler_failed), 1u);
  const std::string text = log.first_message(errc::handler_failed);
  EXPECT_NE(text.find("handler exploded"), std::string::npos) << text;
  EXPECT_NE(text.find("fragile"), std::string::npos) << text;
  EXPECT_EQ(mux->subscriber().status().handler_errors, 1u);
  EXPECT_TRUE(sub.active());
  EXPECT_EQ(mux->database().ping().get(), "PONG");  // the I/O thread is fine
}

// on_error for a handler that threw runs on that handler's delivery thread, which other
// channels wait for: a blocking wait there fails at once, as on an I/O thread.
TEST(PubSubTest, OnErrorOnADeliveryThreadRefusesToBlock) {
  RedisServer server;
  auto mux = connect_to(server);
  MessageQueue idle = mux->subscriber().subscribe_queue({"idle"});
  idle.confirmed().get();
  std::promise<std::string> outcome;
  std::atomic<bool> answered{false};
  mux->on_error([&](const Error& error) {
    if (error.code() != errc::handler_failed || answered.exchange(true)) return;
    try {
      (void)idle.pop();  // nothing will come: it would block this delivery thread for ever
      outcome.set_value("pop() returned");
    } catch (const DeadlockError& e) {
      outcome.set_value(std::string("DeadlockError: ") + e.what());
    } catch (const std::exception& e) {
      outcome.set_value(std::string("other: ") + e.what());
    }
  });
  Subscription sub = mux->subscriber().subscribe(
      "thrower", [](const Message&) { throw std::runtime_error("boom"); });
  sub.confirmed().get();
  mux->database().publish("thrower", "x").get();
  auto result = outcome.get_future();
  ASSERT_EQ(result.wait_for(10s), std::future_status::ready) << "on_error blocked in pop()";
  EXPECT_EQ(result.get().rfind("DeadlockError", 0), 0u);
}

// A handler held until release() (a slow handler on demand), on a server and multiplexer
// whose errors are logged: the overflow policies' tests.
class SlowHandlerTest : public ::testing::Test {
 protected:
  SlowHandlerTest() { log.attach(*mux); }
  ~SlowHandlerTest() override { release(); }  // a failed assertion must not leave it held

  /// Marks itself running, waits for release(), then counts the message handled.
  MessageHandler held_handler() {
    return [this](const Message&) {
      ++started;
      running = true;
      std::unique_lock lock(mutex_);
      released_cv_.wait(lock, [&] { return released_; });
      ++handled;
    };
  }
  void release() {
    {
      std::lock_guard lock(mutex_);
      released_ = true;
    }
    released_cv_.notify_all();
  }
  /// Declared after a test's subscriptions, releases the handler before they end (their
  /// unsubscribe waits for it to return), also when an assertion ends the test early.
  struct ReleaseOnExit {
    SlowHandlerTest& test;
    ~ReleaseOnExit() { test.release(); }
  };
  /// Keeps the log records at Info and above (logged_at()).
  void record_logs() {
    mux->on_log(LogLevel::Info, [this](const LogRecord& record) {
      std::lock_guard lock(mutex_);
      records_.emplace_back(record.level, std::string(record.message));
    });
  }
  /// The records kept at `level` that contain `text`.
  std::vector<std::string> logged_at(LogLevel level, std::string_view text) {
    std::lock_guard lock(mutex_);
    std::vector<std::string> found;
    for (const auto& [at, message] : records_) {
      if (at == level && message.find(text) != std::string::npos) found.push_back(message);
    }
    return found;
  }

  // What the handler, on_error and on_log touch first: it outlives the multiplexer, whose
  // threads may still run them until it is destroyed.
  std::mutex mutex_;
  std::condition_variable released_cv_;
  bool released_ = false;
  std::vector<std::pair<LogLevel, std::string>> records_;
  std::atomic<int> handled{0};
  std::atomic<int> started{0};
  std::atomic<bool> running{false};
  ErrorLog log;
  RedisServer server;
  std::shared_ptr<Multiplexer> mux = connect_to(server);
};

TEST_F(SlowHandlerTest, ItsBufferIsBoundedAndDropsAreCounted) {
  constexpr int kCapacity = 10;
  constexpr int kMessages = 200;
  Subscription sub = mux->subscriber().subscribe(
      "slow", held_handler(), {.capacity = kCapacity, .overflow = OverflowPolicy::DropOldest});
  sub.confirmed().get();
  for (int i = 0; i < kMessages; ++i) mux->database().publish("slow", std::to_string(i)).get();
  // The handler holds at most one message and the buffer kCapacity: the rest are dropped.
  ASSERT_TRUE(test::wait_until(
      [&] { return sub.dropped() >= static_cast<std::uint64_t>(kMessages - kCapacity - 1); }));
  EXPECT_EQ(log.count(errc::subscription_overflow), 1u);
  release();
  ASSERT_TRUE(test::wait_until(
      [&] { return handled.load() + static_cast<int>(sub.dropped()) == kMessages; }));
  EXPECT_LE(handled.load(), kCapacity + 1);
  EXPECT_EQ(mux->subscriber().status().dropped, sub.dropped());
}

// DisconnectAndReport on a handler: the messages its buffer held when it was ended are
// dropped with the arriving one, and counted: handled + dropped = published.
TEST_F(SlowHandlerTest, EndedByDisconnectAndReportItCountsWhatItsBufferHeldAsDropped) {
  constexpr int kCapacity = 10;
  Subscription sub = mux->subscriber().subscribe(
      "ended", held_handler(),
      {.capacity = kCapacity, .overflow = OverflowPolicy::DisconnectAndReport});
  sub.confirmed().get();
  mux->database().publish("ended", "0").get();
  ASSERT_TRUE(test::wait_until([&] { return running.load(); }));  // the handler holds "0"
  for (int i = 1; i <= kCapacity + 1; ++i) {
    mux->database().publish("ended", std::to_string(i)).get();
  }
  ASSERT_TRUE(test::wait_until([&] { return log.count(errc::subscription_overflow) == 1; }));
  EXPECT_FALSE(sub.active());
  EXPECT_EQ(sub.dropped(), static_cast<std::uint64_t>(kCapacity + 1));
  EXPECT_EQ(mux->subscriber().status().dropped, sub.dropped());
  EXPECT_NE(log.first_message(errc::subscription_overflow).find("11 messages were dropped"),
            std::string::npos)
      << log.first_message(errc::subscription_overflow);
  release();
  ASSERT_TRUE(test::wait_until([&] { return handled.load() == 1; }));
  EXPECT_EQ(handled.load() + static_cast<int>(sub.dropped()), kCapacity + 2);
}

// A handler call that has run a second is logged at Warning, once, when a message arrives
// meanwhile: its channel, how long, and what waits for it. status() shows it running, and
// counts it when it returns, which is logged at Info.
TEST_F(SlowHandlerTest, AHandlerRunningASecondIsLoggedOnceWhenAMessageWaitsAndCounted) {
  record_logs();
  Subscription sub = mux->subscriber().subscribe("stuck", held_handler());
  const ReleaseOnExit releases{*this};
  sub.confirmed().get();
  mux->database().publish("stuck", "0").get();
  ASSERT_TRUE(test::wait_until([&] { return running.load(); }));
  ASSERT_TRUE(
      test::wait_until([&] { return mux->subscriber().status().longest_running_handler >= 1s; }));
  EXPECT_TRUE(logged_at(LogLevel::Warning, "has been running").empty());  // nothing arrived
  mux->database().publish("stuck", "1").get();
  mux->database().publish("stuck", "2").get();
  ASSERT_TRUE(test::wait_until([&] { return !logged_at(LogLevel::Warning, "stuck").empty(); }));
  const std::vector<std::string> warnings = logged_at(LogLevel::Warning, "has been running");
  ASSERT_EQ(warnings.size(), 1u);  // once per call, not per message
  EXPECT_NE(warnings[0].find("pub/sub handler on channel \"stuck\" has been running for "),
            std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[0].find(" s (1 message waits for it); it holds one of the 2 delivery threads"),
            std::string::npos)
      << warnings[0];
  EXPECT_EQ(mux->subscriber().status().slow_handlers, 0u);  // still running
  release();
  ASSERT_TRUE(test::wait_until([&] { return handled.load() == 3; }));
  ASSERT_TRUE(test::wait_until([&] { return mux->subscriber().status().slow_handlers == 1; }));
  EXPECT_EQ(mux->subscriber().status().longest_running_handler, 0ms);
  EXPECT_EQ(
      logged_at(LogLevel::Info, "pub/sub handler on channel \"stuck\" returned after ").size(), 1u);
}

// With both delivery threads in handlers running a second or longer, a message for a third
// channel waits too, and the warning says that no channel's handler runs.
TEST_F(SlowHandlerTest, HandlersHoldingEveryDeliveryThreadAreLoggedAsStoppingDelivery) {
  record_logs();
  Subscription first = mux->subscriber().subscribe("held-1", held_handler());
  Subscription second = mux->subscriber().subscribe("held-2", held_handler());
  Inbox inbox;
  Subscription other = mux->subscriber().subscribe("other", inbox.handler());
  const ReleaseOnExit releases{*this};
  first.confirmed().get();
  second.confirmed().get();
  other.confirmed().get();
  mux->database().publish("held-1", "x").get();
  mux->database().publish("held-2", "x").get();
  ASSERT_TRUE(test::wait_until([&] { return started.load() == 2; }));
  ASSERT_TRUE(test::wait_until(
      [&] { return mux->subscriber().status().longest_running_handler >= 1100ms; }));
  mux->database().publish("other", "waits").get();
  ASSERT_TRUE(test::wait_until(
      [&] { return logged_at(LogLevel::Warning, "has been running").size() == 2; }));
  for (const std::string& warning : logged_at(LogLevel::Warning, "has been running")) {
    EXPECT_NE(warning.find("every delivery thread is in a handler running 1 s or longer, so no "
                           "channel's handler runs until one returns"),
              std::string::npos)
        << warning;
  }
  EXPECT_EQ(inbox.size(), 0u);
  release();
  ASSERT_TRUE(test::wait_until([&] { return inbox.size() == 1; }));
  EXPECT_EQ(inbox.copy().at(0).payload, "waits");
  ASSERT_TRUE(test::wait_until([&] { return mux->subscriber().status().slow_handlers == 2; }));
}

// A name given twice to a queue is one subscription: each message arrives once.
TEST(PubSubTest, AQueueGivenANameTwiceGetsEachMessageOnce) {
  RedisServer server;
  auto mux = connect_to(server);
  MessageQueue channels = mux->subscriber().subscribe_queue({"dup", "other", "dup"});
  MessageQueue patterns = mux->subscriber().psubscribe_queue({"d*", "d*"});
  channels.confirmed().get();
  patterns.confirmed().get();
  mux->database().publish("dup", "once").get();
  mux->database().publish("other", "last").get();
  EXPECT_EQ(channels.pop_for(5s)->payload, "once");
  EXPECT_EQ(channels.pop_for(5s)->payload, "last");  // not a second "once"
  EXPECT_EQ(patterns.pop_for(5s)->payload, "once");
  EXPECT_EQ(patterns.pop_for(200ms), std::nullopt);
  EXPECT_EQ(mux->subscriber().status().channels, 2u);
}

TEST(PubSubTest, WorksUnderResp2) {
  RedisServer server;
  auto mux = connect_to(server, ",protocol=resp2");
  ASSERT_EQ(mux->server_identity().protocol, 2);
  Inbox inbox;
  Inbox patterned;
  Subscription sub = mux->subscriber().subscribe("old-school", inbox.handler());
  Subscription pattern = mux->subscriber().psubscribe("old-*", patterned.handler());
  sub.confirmed().get();
  pattern.confirmed().get();
  Database db = mux->database();
  EXPECT_EQ(db.publish("old-school", "hello").get(), 2);  // the same connection, counted twice
  ASSERT_TRUE(test::wait_until([&] { return inbox.size() == 1 && patterned.size() == 1; }));
  EXPECT_EQ(inbox.copy()[0].payload, "hello");
  EXPECT_EQ(patterned.copy()[0].pattern, "old-*");
  sub.unsubscribe();
  ASSERT_TRUE(test::wait_until([&] { return numsub(server, "old-school") == 0; }));
  db.publish("old-school", "still patterned").get();
  ASSERT_TRUE(test::wait_until([&] { return patterned.size() == 2; }));
  EXPECT_EQ(inbox.size(), 1u);
}

TEST(PubSubTest, Resp2SubscriptionConnectionSurvivesHeartbeats) {
  RedisServer server;
  auto mux = connect_to(server, ",protocol=resp2,heartbeatInterval=100");
  Inbox inbox;
  Subscription sub = mux->subscriber().subscribe("beat", inbox.handler());
  sub.confirmed().get();
  // PINGs on a subscribed RESP2 connection are answered with ["pong", ""]: they must be
  // matched to the heartbeat, not taken for messages, and must not break the connection.
  std::this_thread::sleep_for(500ms);
  mux->database().publish("beat", "after pings").get();
  ASSERT_TRUE(test::wait_until([&] { return inbox.size() == 1; }));
  EXPECT_EQ(mux->status().reconnects, 0u);
}

TEST(PubSubTest, SharedSubscriptionConnectionUnderResp3) {
  RedisServer server;
  auto mux = connect_to(server, ",sharedSubscriptionConnection=true");
  ASSERT_EQ(mux->server_identity().protocol, 3);
  Inbox inbox;
  Subscription sub = mux->subscriber().subscribe("together", inbox.handler());
  sub.confirmed().get();
  EXPECT_TRUE(mux->subscriber().status().shared_connection);
  // No connection of its own: the interactive connection carries the subscription.
  EXPECT_EQ(named_connections(server, "pubsub-test"), 1);
  Database db = mux->database();
  // Replies and pushes interleave on one connection.
  std::vector<Future<long long>> futures;
  for (int i = 0; i < 500; ++i) {
    futures.push_back(db.incr("counter"));
    futures.push_back(db.publish("together", std::to_string(i)));
  }
  for (int i = 0; i < 500; ++i) {
    EXPECT_EQ(futures[2 * i].get(), i + 1);
    EXPECT_EQ(futures[2 * i + 1].get(), 1);
  }
  ASSERT_TRUE(test::wait_until([&] { return inbox.size() == 500; }));
  const auto messages = inbox.copy();
  for (int i = 0; i < 500; ++i) ASSERT_EQ(messages[i].payload, std::to_string(i));
  sub.unsubscribe();
  ASSERT_TRUE(test::wait_until([&] { return numsub(server, "together") == 0; }));
  EXPECT_EQ(db.incr("counter").get(), 501);
}

TEST(PubSubTest, SharedSubscriptionFallsBackWhenTheServerOnlySpeaksResp2) {
  test::ServerOptions options;
  options.args = {"--rename-command", "HELLO", ""};
  RedisServer server(options);
  auto mux = connect_to(server, ",sharedSubscriptionConnection=true");
  ASSERT_EQ(mux->server_identity().protocol, 2);
  Inbox inbox;
  Subscription sub = mux->subscriber().subscribe("fallback", inbox.handler());
  sub.confirmed().get();
  EXPECT_FALSE(mux->subscriber().status().shared_connection);
  EXPECT_EQ(named_connections(server, "pubsub-test"), 2);  // a connection of its own
  EXPECT_EQ(mux->database().publish("fallback", "over resp2").get(), 1);
  ASSERT_TRUE(test::wait_until([&] { return inbox.size() == 1; }));
  EXPECT_EQ(mux->database().incr("still-works").get(), 1);
}

TEST(PubSubTest, ResubscribesAfterServerRestart) {
  RedisServer server;
  auto mux = connect_to(server, ",connectTimeout=2000");
  Inbox channel_inbox;
  Inbox pattern_inbox;
  Inbox shard_inbox;
  Subscriber subscriber = mux->subscriber();
  Subscription channel = subscriber.subscribe("durable", channel_inbox.handler());
  Subscription pattern = subscriber.psubscribe("dur*", pattern_inbox.handler());
  Subscription shard = subscriber.ssubscribe("durable-shard", shard_inbox.handler());
  MessageQueue queue = subscriber.subscribe_queue({"durable-queue"});
  channel.confirmed().get();
  pattern.confirmed().get();
  shard.confirmed().get();
  queue.confirmed().get();
  EXPECT_EQ(subscriber.status().resubscribes, 0u);

  server.kill();
  server.restart();
  ASSERT_TRUE(test::wait_until([&] { return numsub(server, "durable") == 1; }, 20s));
  ASSERT_TRUE(test::wait_until(
      [&] {
        return numsub(server, "durable-queue") == 1 && server.cli({"PUBSUB", "NUMPAT"}) == "1" &&
               server.cli({"PUBSUB", "SHARDNUMSUB", "durable-shard"}).ends_with("1");
      },
      10s));
  EXPECT_EQ(subscriber.status().resubscribes, 1u);
  // Re-established once: the server saw one SUBSCRIBE-family command per name (one name per
  // command, so a refused name cannot take its neighbours down with it).
  EXPECT_EQ(server.command_calls("subscribe"), 2);  // "durable" and "durable-queue"
  EXPECT_EQ(server.command_calls("psubscribe"), 1);
  EXPECT_EQ(server.command_calls("ssubscribe"), 1);

  server.cli({"PUBLISH", "durable", "after restart"});
  server.cli({"SPUBLISH", "durable-shard", "shard after restart"});
  server.cli({"PUBLISH", "durable-queue", "queued after restart"});
  ASSERT_TRUE(test::wait_until([&] {
    return channel_inbox.size() == 1 && shard_inbox.size() == 1 && pattern_inbox.size() == 2;
  }));
  EXPECT_EQ(channel_inbox.copy()[0].payload, "after restart");
  EXPECT_EQ(shard_inbox.copy()[0].payload, "shard after restart");
  EXPECT_EQ(queue.pop_for(5s)->payload, "queued after restart");
}

// A subscription connection's break (a window in which published messages are lost) is told
// apart from the interactive connection's: its events carry its purpose, its log records
// name it.
TEST(PubSubTest, TheSubscriptionConnectionsEventsAndLogSayWhatItIsFor) {
  RedisServer server;
  auto mux = connect_to(server, ",allowAdmin=true");
  std::mutex mutex;
  std::vector<ConnectionEvent> events;
  std::vector<std::string> logged;
  mux->on_connection_event([&](const ConnectionEvent& event) {
    std::lock_guard lock(mutex);
    events.push_back(event);
  });
  mux->on_log(LogLevel::Info, [&](const LogRecord& record) {
    std::lock_guard lock(mutex);
    logged.push_back(std::string(record.message));
  });
  Inbox inbox;
  Subscription sub = mux->subscriber().subscribe("watched", inbox.handler());
  sub.confirmed().get();
  server.cli({"CLIENT", "KILL", "TYPE", "pubsub"});
  ASSERT_TRUE(test::wait_until([&] {
    std::lock_guard lock(mutex);
    return std::any_of(events.begin(), events.end(), [](const ConnectionEvent& e) {
      return e.kind == ConnectionEventKind::Restored;
    });
  }));
  std::lock_guard lock(mutex);
  for (const ConnectionEvent& event : events) {
    EXPECT_EQ(event.purpose, ConnectionPurpose::Subscription) << to_string(event.kind);
    // The server closed it: what does that to a subscriber is named.
    if (event.kind == ConnectionEventKind::Failed) {
      EXPECT_NE(event.error.message().find("client-output-buffer-limit pubsub"), std::string::npos)
          << event.error.message();
    }
  }
  const auto said = [&](std::string_view start) {
    return std::any_of(logged.begin(), logged.end(),
                       [&](const std::string& line) { return line.starts_with(start); });
  };
  EXPECT_TRUE(said("subscription connection failed")) << ::testing::PrintToString(logged);
  EXPECT_TRUE(said("subscription connection restored")) << ::testing::PrintToString(logged);
}

TEST(PubSubTest, SharedConnectionResubscribesAfterServerRestartAheadOfItsBacklog) {
  // One connection carries both: after the restart the SUBSCRIBE must go out before the
  // PUBLISH held in its backlog, or this client misses its own message.
  RedisServer server;
  auto mux = connect_to(server, ",sharedSubscriptionConnection=true,connectTimeout=2000");
  Inbox inbox;
  Subscription sub = mux->subscriber().subscribe("durable", inbox.handler());
  sub.confirmed().get();
  server.kill();
  ASSERT_TRUE(test::wait_until([&] { return mux->status().connected == 0; }, 10s));
  Future<long long> queued = mux->database().publish("durable", "while down");
  server.restart();
  EXPECT_EQ(queued.get(), 1);
  ASSERT_TRUE(test::wait_until([&] { return numsub(server, "durable") == 1; }, 20s));
  EXPECT_EQ(mux->database().publish("durable", "back").get(), 1);
  ASSERT_TRUE(test::wait_until([&] { return inbox.size() == 2; }));
  EXPECT_EQ(inbox.copy()[0].payload, "while down");
  EXPECT_EQ(inbox.copy()[1].payload, "back");
}

TEST(PubSubTest, ConfirmedWaitsForTheNewSessionAfterTheConnectionIsLost) {
  RedisServer server;
  auto mux = connect_to(server, ",connectTimeout=2000");
  Inbox inbox;
  Subscription sub = mux->subscriber().subscribe("durable", inbox.handler());
  sub.confirmed().get();
  server.kill();
  ASSERT_TRUE(test::wait_until(
      [&] {
        for (const ConnectionStatus& one : mux->status().per_connection) {
          if (one.purpose == ConnectionStatus::Purpose::Subscription) {
            return one.state != ConnectionStatus::State::Ready;
          }
        }
        return false;
      },
      10s));
  // Down: the old session's confirmation no longer holds.
  Future<void> again = sub.confirmed();
  EXPECT_FALSE(again.wait_for(std::chrono::milliseconds(200)));
  server.restart();
  again.get();
  // Confirmed on the new session: a message published now arrives.
  EXPECT_EQ(server.cli({"PUBLISH", "durable", "after confirmed"}), "1");
  ASSERT_TRUE(test::wait_until([&] { return inbox.size() == 1; }));
}

TEST(PubSubTest, BinaryChannelsAndPayloads) {
  RedisServer server;
  auto mux = connect_to(server);
  const std::string channel("bin\0\r\nary\xff", 11);
  const std::string payload("\0\x01\r\n$5\r\n*\xfe\xff end", 17);
  Inbox inbox;
  Subscription sub = mux->subscriber().subscribe(channel, inbox.handler());
  MessageQueue queue = mux->subscriber().subscribe_queue(std::vector<std::string>{channel});
  sub.confirmed().get();
  queue.confirmed().get();
  EXPECT_EQ(mux->database().publish(channel, payload).get(), 1);
  ASSERT_TRUE(test::wait_until([&] { return inbox.size() == 1; }));
  EXPECT_EQ(inbox.copy()[0].channel, channel);
  EXPECT_EQ(inbox.copy()[0].payload, payload);
  Message queued = queue.pop();
  EXPECT_EQ(queued.channel, channel);
  EXPECT_EQ(queued.payload, payload);
}

TEST(PubSubTest, GenericSendPathStillRefusesSubscribe) {
  RedisServer server;
  auto mux = connect_to(server);
  try {
    mux->database().execute({"SUBSCRIBE", "x"}).get();
    ADD_FAILURE() << "SUBSCRIBE on the shared connection should be refused";
  } catch (const NotAllowedError& e) {
    EXPECT_NE(std::string(e.what()).find("Multiplexer::subscriber()"), std::string::npos)
        << e.what();
  }
}

TEST(PubSubTest, CloseEndsSubscriptions) {
  RedisServer server;
  auto mux = connect_to(server);
  Inbox inbox;
  Subscription sub = mux->subscriber().subscribe("closing", inbox.handler());
  MessageQueue queue = mux->subscriber().subscribe_queue({"closing"});
  sub.confirmed().get();
  mux->close();
  EXPECT_FALSE(sub.active());
  EXPECT_THROW(queue.pop(), ConnectionError);
  EXPECT_THROW(mux->subscriber().subscribe("late", inbox.handler()), ConnectionError);
  ASSERT_TRUE(test::wait_until([&] { return numsub(server, "closing") == 0; }));
}

}  // namespace
}  // namespace redmux

namespace redmux {
namespace {

// A subscribe the server refuses (ACL channel rules) must fail its confirmation, not leave it
// pending forever; the connection stays usable for the channels that are allowed.
TEST(PubSubTest, RefusedSubscribeFailsItsConfirmationInsteadOfHanging) {
  for (const char* shared : {"false", "true"}) {
    test::ServerOptions options;
    options.acl_file_contents =
        "user default on nopass ~* &* +@all\n"
        "user limited on >pw ~* &allowed:* +@all\n";
    RedisServer server(options);
    auto mux = Multiplexer::connect(server.address() + ",user=limited,password=pw," +
                                    "sharedSubscriptionConnection=" + shared);
    std::mutex mutex;
    std::vector<std::string> errors;
    mux->on_error([&](const Error& error) {
      std::lock_guard lock(mutex);
      errors.push_back(error.message());
    });
    Subscription refused = mux->subscriber().subscribe("secret", [](const Message&) {});
    Future<void> confirmation = refused.confirmed();
    Result<void> outcome = confirmation.wait_for(10s)
                               ? confirmation.result()
                               : Result<void>(Error(errc::timeout, "still pending"));
    ASSERT_FALSE(outcome.has_value()) << shared;
    EXPECT_EQ(outcome.error().code(), errc::server_error) << outcome.error().message();
    EXPECT_NE(outcome.error().message().find("NOPERM"), std::string::npos)
        << outcome.error().message();
    // Which of the names was refused: the reply names none, redmux sent one per command.
    EXPECT_NE(outcome.error().message().find("(reply to SUBSCRIBE \"secret\")"), std::string::npos)
        << outcome.error().message();
    // Where, as whom, and what to check.
    EXPECT_NE(outcome.error().message().find(" (on " + server.address() +
                                             " as user \"limited\": its ACL channel rules do "
                                             "not allow it; ACL GETUSER limited shows them)"),
              std::string::npos)
        << outcome.error().message();
    EXPECT_EQ(outcome.error().message().find("pw"), std::string::npos);
    {
      std::lock_guard lock(mutex);
      ASSERT_EQ(errors.size(), 1u) << shared;
      EXPECT_EQ(errors.front(), outcome.error().message());
    }
    EXPECT_EQ(mux->subscriber().status().refused, 1u);
    EXPECT_EQ(mux->subscriber().status().channels, 1u);
    // Asked again after the refusal: fails at once too (no new waiter left pending).
    Future<void> again = refused.confirmed();
    ASSERT_TRUE(again.wait_for(1s)) << shared;
    EXPECT_FALSE(again.result().has_value());
    std::atomic<int> got{0};
    Subscription allowed =
        mux->subscriber().subscribe("allowed:news", [&](const Message&) { ++got; });
    allowed.confirmed().get();
    server.cli({"PUBLISH", "allowed:news", "hello"});
    ASSERT_TRUE(test::wait_until([&] { return got.load() == 1; })) << shared;
    EXPECT_EQ(mux->database().incr("n").get(), 1);  // the interactive side is fine too
  }
}

// A refused SUBSCRIBE is answered by an ordinary error reply, an accepted one by pushes. The
// refusal must be matched to its own SUBSCRIBE in the reply stream: not taken as the reply of
// a caller's command in flight on the same connection (shared mode), and not failing the
// confirmation of a neighbouring subscribe the server accepted.
TEST(PubSubTest, RefusalsAreMatchedToTheirSubscribeAmongOtherReplies) {
  for (const char* shared : {"true", "false"}) {
    test::ServerOptions options;
    options.acl_file_contents =
        "user default on nopass ~* &* +@all\n"
        "user limited on >pw ~* &allowed:* +@all\n";
    RedisServer server(options);
    auto mux = Multiplexer::connect(server.address() + ",user=limited,password=pw," +
                                    "heartbeatInterval=50,sharedSubscriptionConnection=" + shared);
    Database db = mux->database();
    constexpr int kRounds = 20;
    constexpr int kIncrsPerRound = 50;
    std::vector<Future<long long>> incrs;
    std::vector<Subscription> accepted;
    std::vector<Subscription> refused;
    for (int round = 0; round < kRounds; ++round) {
      // Callers' commands before, between and after the subscribes, all in flight together.
      for (int i = 0; i < kIncrsPerRound / 2; ++i) incrs.push_back(db.incr("n"));
      accepted.push_back(
          mux->subscriber().subscribe("allowed:" + std::to_string(round), [](const Message&) {}));
      refused.push_back(
          mux->subscriber().subscribe("secret:" + std::to_string(round), [](const Message&) {}));
      for (int i = 0; i < kIncrsPerRound / 2; ++i) incrs.push_back(db.incr("n"));
    }
    // Every INCR got its own reply: the values are exactly 1..N, each once.
    std::vector<long long> values;
    for (auto& incr : incrs) values.push_back(incr.get());
    std::sort(values.begin(), values.end());
    for (std::size_t i = 0; i < values.size(); ++i) {
      ASSERT_EQ(values[i], static_cast<long long>(i + 1)) << shared;
    }
    for (int round = 0; round < kRounds; ++round) {
      Future<void> ok = accepted[round].confirmed();
      ASSERT_TRUE(ok.wait_for(10s)) << shared << " round " << round;
      Result<void> confirmed = ok.result();
      EXPECT_TRUE(confirmed.has_value())
          << shared << " round " << round << ": " << confirmed.error().message();
      Future<void> no = refused[round].confirmed();
      ASSERT_TRUE(no.wait_for(10s)) << shared << " round " << round;
      Result<void> refusal = no.result();
      ASSERT_FALSE(refusal.has_value()) << shared << " round " << round;
      EXPECT_NE(refusal.error().message().find("NOPERM"), std::string::npos)
          << refusal.error().message();
    }
    // Nothing was out of step: no connection was reset.
    EXPECT_EQ(mux->status().connection_failures, 0u) << shared;
    EXPECT_EQ(mux->status().reconnects, 0u) << shared;
    // And the accepted subscriptions deliver.
    std::atomic<int> got{0};
    Subscription last = mux->subscriber().subscribe("allowed:last", [&](const Message&) { ++got; });
    last.confirmed().get();
    server.cli({"PUBLISH", "allowed:last", "x"});
    EXPECT_TRUE(test::wait_until([&] { return got.load() == 1; })) << shared;
  }
}

}  // namespace
}  // namespace redmux

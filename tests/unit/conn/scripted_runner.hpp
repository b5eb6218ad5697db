// ScriptedRunner: plays the part of net/connection.cpp for a ConnectionMachine, without a
// socket or a clock. It performs each action into plain data — the bytes a write sends are
// kept until the test completes (or fails) that write, a Read only marks that one is
// pending, an armed timer only remembers when it would fire — and the test then scripts
// what happens next: bytes arrive, a write completes or fails after so many bytes, time
// passes (due timers fire in time order), the server goes away.
//
// Like the runner, it drops actions and timer firings of a generation that has passed, and
// what the real runner posts to the I/O thread (a wake-up, an inline write's hand-over) it
// runs after the current event, never inside it.
#pragma once

#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "conn/connection_machine.hpp"
#include "redmux/convert.hpp"
#include "support/resp_text.hpp"

namespace redmux::detail::testing {

using namespace std::chrono_literals;

using test::bulk;

/// The server's answers to round one of the handshake (RESP3, see conn/handshake.hpp);
/// `role` is HELLO's ("master" or "replica").
inline std::string handshake_replies([[maybe_unused]] const Config& config, bool loading = false,
                                     std::string_view role = "master") {
  std::string out = "%3\r\n" + bulk("server") + bulk("redis") + bulk("version") + bulk("7.0.0") +
                    bulk("role") + bulk(role);
  out += "+OK\r\n";         // SELECT defaultDatabase (0 too)
  out += "+OK\r\n+OK\r\n";  // CLIENT SETINFO ×2
  out += bulk("# Server\r\nredis_version:7.0.0\r\nredis_mode:standalone\r\n");
  out += "%1\r\n" + bulk("databases") + bulk("16");          // CONFIG GET databases
  out += bulk(loading ? "loading:1\r\n" : "loading:0\r\n");  // INFO persistence
  return out;
}

/// A caller's command: its future (the test's reference) and the entry the queue gets.
struct Call {
  FutureState<std::string>* state = nullptr;
  PendingCommand command;
};

/// The error `call` completed with; a test failure (and an ok Error) when it has not.
inline Error error_of(const Call& call) {
  if (!call.state->ready()) {
    ADD_FAILURE() << "the call has not completed";
    return Error();
  }
  Result<std::string>& result = call.state->result();
  if (result.has_value()) {
    ADD_FAILURE() << "the call succeeded with \"" << result.value() << "\"";
    return Error();
  }
  return result.error();
}

/// The value `call` completed with; a test failure (and "") when it has not, or failed.
inline std::string value_of(const Call& call) {
  if (!call.state->ready()) {
    ADD_FAILURE() << "the call has not completed";
    return {};
  }
  Result<std::string>& result = call.state->result();
  if (!result.has_value()) {
    ADD_FAILURE() << "the call failed: " << result.error().message();
    return {};
  }
  return result.value();
}

class ScriptedRunner {
 public:
  explicit ScriptedRunner(Config config = Config(),
                          Endpoint endpoint = Endpoint{"10.0.0.1", 6379, {}}, bool tls = false)
      : shared(std::make_shared<SharedContext>(std::move(config))),
        machine(shared, std::move(endpoint), tls) {
    shared->set_event_handler([this](const ConnectionEvent& event) { events.push_back(event); });
  }
  ~ScriptedRunner() {
    for (Call& call : calls) call.state->release();
  }

  // --- what happened, as the runner saw it ---
  std::shared_ptr<SharedContext> shared;
  ConnectionMachine machine;
  Clock::time_point now = Clock::time_point() + 1000s;
  std::vector<Endpoint> connects;          ///< every Connect, in order
  int closes = 0;                          ///< CloseSocket actions performed
  int stale_dropped = 0;                   ///< actions dropped as stale
  std::string handshake_sent;              ///< every WriteHandshake's bytes
  std::string wire;                        ///< callers' stream bytes the socket accepted
  std::optional<std::string> writing;      ///< the Write in progress
  bool reading = false;                    ///< a Read is pending
  std::size_t inline_capacity = SIZE_MAX;  ///< bytes an inline send takes (then "full")
  int inline_errno = 0;
  std::vector<ConnectionEvent> events;
  std::deque<Call> calls;
  struct Armed {
    Clock::time_point at;
    std::uint64_t generation;
  };
  std::map<IoTimer, Armed> timers;

  Counters& counters() { return shared->counters(); }

  /// Does what the machine asked (the runner's perform()), then what it would have posted.
  void perform(ConnectionMachine::Actions actions) {
    const bool outermost = !in_event_;
    in_event_ = true;
    const std::uint64_t generation = machine.generation();
    for (const IoAction& action : actions) {
      if (action.bound_to_generation() && action.generation != generation) {
        ++stale_dropped;
        continue;
      }
      switch (action.kind) {
        case IoAction::Kind::CloseSocket:
          ++closes;
          reading = false;
          writing.reset();
          break;
        case IoAction::Kind::Connect:
          connects.push_back(machine.target());
          break;
        case IoAction::Kind::StartTls:
          break;
        case IoAction::Kind::WriteHandshake:
          handshake_sent += machine.take_handshake_bytes();
          break;
        case IoAction::Kind::Read:
          reading = true;
          break;
        case IoAction::Kind::Write:
          EXPECT_FALSE(writing.has_value()) << "two writes at once";
          writing = std::string(machine.write_buffer());
          break;
        case IoAction::Kind::ArmTimer:
          timers[action.timer] = {action.at, action.generation};
          break;
        case IoAction::Kind::CancelTimer:
          timers.erase(action.timer);
          break;
        case IoAction::Kind::Submit: {
          const OwnCommand& own = machine.to_submit(action.own);
          submit_entry(-1, own.args, own.command);
          break;
        }
      }
    }
    if (!outermost) return;
    while (!posted_.empty() && !defer_posts) {
      auto next = std::move(posted_.front());
      posted_.pop_front();
      next();
    }
    in_event_ = false;
  }

  // --- the script ---
  void start() {
    perform(machine.start([this](const Error& e) { first_result = e; }, now));
  }
  void connected() { perform(machine.on_connected(now)); }
  /// start(), connected, the whole handshake answered: Ready (a replica's connection then
  /// asks INFO replication before start()'s first result under replicaHealthCheck).
  void ready(bool loading = false, std::string_view role = "master") {
    start();
    connected();
    feed(handshake_replies(shared->config(), loading, role));
  }
  /// Bytes arrive from the server (the pending Read completes with them).
  void feed(std::string_view bytes) {
    ASSERT_TRUE(reading) << "no read pending";
    std::span<char> space = machine.read_space();
    ASSERT_LE(bytes.size(), space.size());
    std::copy(bytes.begin(), bytes.end(), space.begin());
    reading = false;
    perform(machine.on_read(bytes.size(), now));
  }
  /// The server closed the connection.
  void server_closes() {
    reading = false;
    perform(machine.on_read_failed(true, "End of file", "", now));
  }
  /// The pending Write completes: the socket took all of it.
  void complete_write() {
    ASSERT_TRUE(writing.has_value()) << "no write pending";
    const std::string bytes = *std::exchange(writing, std::nullopt);
    wire += bytes;
    perform(machine.on_written(bytes.size(), now));
  }
  /// The pending Write fails after the socket took `accepted` bytes of it.
  void fail_write(std::size_t accepted) {
    ASSERT_TRUE(writing.has_value()) << "no write pending";
    const std::string bytes = *std::exchange(writing, std::nullopt);
    wire += bytes.substr(0, accepted);
    perform(machine.on_write_failed(accepted, "Broken pipe", now));
  }
  /// Time passes: every timer due by `to` fires, earliest first.
  void advance(Clock::duration by) {
    const Clock::time_point to = now + by;
    for (;;) {
      auto due = timers.end();
      for (auto it = timers.begin(); it != timers.end(); ++it) {
        if (it->second.at <= to && (due == timers.end() || it->second.at < due->second.at))
          due = it;
      }
      if (due == timers.end()) break;
      const IoTimer timer = due->first;
      const Armed armed = due->second;
      timers.erase(due);
      now = std::max(now, armed.at);
      if (timer != IoTimer::Deadline && armed.generation != machine.generation()) continue;
      perform(machine.on_timer(timer, now, facts));
    }
    now = to;
  }

  /// A caller's GET, sent the way Connection::submit() sends it; `use` and `keep_bytes`
  /// as MuxCore sets them for a read among replicas (PendingCommand::keep_for_redirect).
  Call& get(std::string_view key, std::chrono::milliseconds timeout = 5000ms, int db = -1,
            ReplicaUse use = ReplicaUse::None, bool keep_bytes = false) {
    Call call;
    call.command.replica_use = use;
    call.command.keep_for_redirect = keep_bytes;
    call.state = new FutureState<std::string>();  // the test's reference
    call.state->add_ref();                        // the connection's
    call.state->command_name = "GET";
    call.command.state = call.state;
    call.command.name = "GET";
    call.command.deadline = now + timeout;
    call.command.timeout_ms = static_cast<std::uint32_t>(timeout.count());
    call.command.counted = count_slots;
    if (count_slots) {
      EXPECT_TRUE(shared->acquire_slot(Clock::now())) << "maxQueuedCommands";
    }
    calls.push_back(call);
    keys_.push_back(std::string(key));
    const Arg args[] = {Arg("GET"), Arg(keys_.back())};
    submit_entry(db, args, call.command);
    return calls.back();
  }

  /// The error of the last Failed event (a test failure and an ok Error when there is none).
  Error last_failure() const {
    for (auto it = events.rbegin(); it != events.rend(); ++it) {
      if (it->kind == ConnectionEventKind::Failed) return it->error;
    }
    ADD_FAILURE() << "no Failed event";
    return Error();
  }

  /// The callers' stream bytes the socket accepted since the last call.
  std::string take_wire() { return std::exchange(wire, std::string()); }

  /// Runs what was posted meanwhile (when `defer_posts` kept it back).
  void run_posted() {
    defer_posts = false;
    perform({});
  }

  std::optional<Error> first_result;
  SocketFacts facts;
  /// get() takes a maxQueuedCommands slot for each command (shared->outstanding()), as
  /// MuxCore does; off: its commands hold none.
  bool count_slots = false;
  /// Keep what the runner would post to the I/O thread until run_posted(): the moment
  /// between a caller's inline write and the I/O thread taking over.
  bool defer_posts = false;

 private:
  void submit_entry(int db, std::span<const Arg> args, const PendingCommand& command) {
    switch (machine.submit(db, args, command)) {
      case SubmissionQueue::Pushed::WriteInline:
        write_inline();
        break;
      case SubmissionQueue::Pushed::QueuedWake:
        post([this] { perform(machine.on_wake(now)); });
        break;
      case SubmissionQueue::Pushed::QueuedRearm: {
        const Clock::time_point deadline = command.deadline;
        post([this, deadline] { perform(machine.on_rearm(deadline, now)); });
        break;
      }
      case SubmissionQueue::Pushed::Forward:  // only a cluster router reroutes a queue
        ADD_FAILURE() << "a command was forwarded";
        break;
      case SubmissionQueue::Pushed::Queued:
      case SubmissionQueue::Pushed::Closed:
        break;
    }
  }
  void write_inline() {
    Writer::Inline result = machine.write_inline(
        [this](std::string_view bytes) {
          Writer::SendResult sent;
          sent.sent = std::min(bytes.size(), inline_capacity);
          sent.error = inline_errno;
          if (inline_errno != 0) sent.sent = 0;
          wire.append(bytes.substr(0, sent.sent));
          return sent;
        },
        now);
    using Then = Writer::Inline::Then;
    if (result.then == Then::Wake) post([this] { perform(machine.on_wake(now)); });
    if (result.then == Then::Absorb) post([this] { perform(machine.on_absorb(now)); });
    if (result.then == Then::HandOver) {
      const std::uint64_t generation = result.generation;  // as Connection::write_inline()
      auto shared_result = std::make_shared<Writer::Inline>(std::move(result));
      post([this, shared_result, generation] {
        perform(machine.on_inline_handover(std::move(*shared_result), generation, now));
      });
    }
  }
  void post(std::function<void()> work) {
    posted_.push_back(std::move(work));
    if (!in_event_) perform({});
  }

  std::deque<std::function<void()>> posted_;
  std::deque<std::string> keys_;  // stable storage for the args' views
  bool in_event_ = false;
};

}  // namespace redmux::detail::testing

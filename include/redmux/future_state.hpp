// FutureState<T>: the reply adapter. A CommandState whose completion converts the reply to
// T (with the conversions of convert.hpp, on the I/O thread that read it), names the command
// in conversion and server errors, and runs the one continuation a Future may install:
// a then() callback or a coroutine waiting in co_await.
//
// Threads: as CommandState. A then() callback runs on the completing thread, inside an
// IoThreadScope (it must not block).
#pragma once

#include <coroutine>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "redmux/command_state.hpp"
#include "redmux/convert.hpp"
#include "redmux/result.hpp"
#include "redmux/wait_policy.hpp"

namespace redmux {
template <class T>
class Future;
}  // namespace redmux

namespace redmux::detail {

/// The message of a server error reply to command `name`: its text and the command.
Error server_error_from(NodeSpan reply, std::string_view command_name);

/// A conversion's error, naming the command it answered: "reply to GET: expected integer, got
/// …"; an error reply inside the reply keeps the server's text first, as prefix() reads it:
/// "NOPERM denied (element 1) (reply to EVAL)".
Error in_reply_to(Error error, std::string_view command_name);

/// True when the reply's root is an error (simple or bulk).
inline bool is_error_reply(NodeSpan reply) noexcept {
  return !reply.empty() &&
         (reply[0].type == ReplyType::SimpleError || reply[0].type == ReplyType::BulkError);
}

/// The commands a when_all() of futures from several Batches or Transactions waits for, one
/// reference each: its state continues the group (continue_buffered()), and
/// buffered_command() looks through it. Never completed itself.
class BufferedGroup final : public CommandState {
 public:
  explicit BufferedGroup(std::vector<CommandState*> commands) noexcept
      : commands_(std::move(commands)) {
    for (CommandState* command : commands_) command->add_ref();
  }
  ~BufferedGroup() override {
    for (CommandState* command : commands_) command->release();
  }
  void deliver(NodeSpan) noexcept override {}
  void fail(Error) noexcept override {}
  CommandState* first_buffered() const noexcept override {
    for (CommandState* command : commands_) {
      if (command->buffered()) return command;
      if (CommandState* inner = command->first_buffered()) return inner;  // a group in it
    }
    return nullptr;
  }

 private:
  std::vector<CommandState*> commands_;
};

template <class T>
class FutureState final : public CommandState {
 public:
  FutureState() noexcept = default;
  ~FutureState() override {
    if (continues_ != nullptr) continues_->release();
  }

  /// This state completes only after `command`'s does (then(), when_all()), and `command`
  /// waits in a Batch or Transaction not executed yet. Keeps a reference to it, so that
  /// buffered_command() sees it while it waits.
  /// REQUIRES: called at most once, before this state is shared with another thread.
  void continue_buffered(CommandState* command) noexcept {
    command->add_ref();
    continues_ = command;
  }
  /// What a state made from this one (then(), when_all()) continues while any of it waits
  /// for execute(): this state, or what it continues (a command, or a BufferedGroup); null
  /// when none does.
  CommandState* buffered_source() noexcept {
    if (buffered()) return this;
    if (continues_ != nullptr &&
        (continues_->buffered() || continues_->first_buffered() != nullptr)) {
      return continues_;
    }
    return nullptr;
  }
  /// The command that keeps this state from completing by waiting in a Batch or Transaction
  /// not executed yet: this state's own, or one it continues; null when there is none.
  CommandState* buffered_command() noexcept {
    if (buffered()) return this;
    if (continues_ == nullptr) return nullptr;
    return continues_->buffered() ? continues_ : continues_->first_buffered();
  }

  void deliver(NodeSpan reply) noexcept override {
    if (!claim()) return;
    if (is_error_reply(reply)) {
      result_.emplace(server_error_from(reply, command_name));
    } else {
      try {
        if constexpr (requires { ReplyTraits<T>::convert(reply); }) {
          Result<T> converted = [&] {
            if constexpr (requires { ReplyTraits<T>::convert(reply, reply); }) {
              return ReplyTraits<T>::convert(reply, WithAttributes::current());  // Reply
            } else {
              return from_nodes<T>(reply);
            }
          }();
          if (!converted.has_value() && !command_name.empty()) {
            converted = in_reply_to(std::move(converted).error(), command_name);
          }
          result_.emplace(std::move(converted));
        } else {  // a type only ever completed by set() (when_all's vector of results)
          result_.emplace(Error(errc::unexpected_reply, "redmux: no reply conversion for type"));
        }
      } catch (const std::exception& e) {  // conversion ran out of memory …
        result_.emplace(Error(errc::unexpected_reply, e.what()));
      }
    }
    publish();
  }
  void fail(Error error) noexcept override {
    if (!claim()) return;
    result_.emplace(std::move(error));
    publish();
  }
  /// Completes with a value computed without a reply (when_all, ready futures).
  void set(Result<T> result) noexcept {
    if (!claim()) return;
    result_.emplace(std::move(result));
    publish();
  }

  /// REQUIRES: ready().
  Result<T>& result() noexcept { return *result_; }

  /// Installs `callback`; the caller hands over one reference, released after the callback
  /// ran (so the callback may drop every other reference).
  template <class F>
  void then(F&& callback) {
    callback_ = std::make_unique<CallbackOf<std::decay_t<F>>>(std::forward<F>(callback));
    set_continuation(+[](CommandState* self) { static_cast<FutureState*>(self)->run_callback(); });
  }
  void resume_on_ready(std::coroutine_handle<> handle) {
    coroutine_ = handle;
    set_continuation(
        +[](CommandState* self) { static_cast<FutureState*>(self)->coroutine_.resume(); });
  }

 private:
  void run_callback() noexcept {
    {
      IoThreadScope scope;  // a callback must not block, even when run on the caller's thread
      std::unique_ptr<Callback> callback = std::move(callback_);
      try {
        callback->run(std::move(*result_));
      } catch (...) {
        // A throwing callback must not take the I/O thread down; the exception is dropped.
      }
    }
    release();  // the reference then() was given; may free this state
  }

  std::optional<Result<T>> result_;
  // The then() callback, type-erased and move-only (a continuation may own a Future).
  struct Callback {
    virtual ~Callback() = default;
    virtual void run(Result<T> result) = 0;
  };
  template <class F>
  struct CallbackOf final : Callback {
    explicit CallbackOf(F&& f) : callable(std::move(f)) {}
    explicit CallbackOf(const F& f) : callable(f) {}
    void run(Result<T> result) override { callable(std::move(result)); }
    F callable;
  };
  std::unique_ptr<Callback> callback_;
  std::coroutine_handle<> coroutine_;
  CommandState* continues_ = nullptr;  ///< continue_buffered()'s, one reference
};

/// What then(f) gives for a continuation returning R: Future<U> for R = U, Result<U> or
/// Future<U> (the last two unwrapped, so a continuation may fail or start another command).
template <class R>
struct ChainValue {
  using type = R;
};
template <class U>
struct ChainValue<Result<U>> {
  using type = U;
};
template <class U>
struct ChainValue<Future<U>> {
  using type = U;
};

}  // namespace redmux::detail

#include "redmux/batch.hpp"
#include "redmux/database.hpp"

#include "mux/core.hpp"
#include "resp/encoder.hpp"

namespace redmux {
namespace detail {

// A batch's commands, encoded into one buffer on the calling thread; handed to the
// connection in one push so they are written contiguously.
struct BatchBuffer {
  std::shared_ptr<MuxCore> core;
  int db = 0;
  std::string bytes;
  std::vector<PendingCommand> commands;
  Connection* connection = nullptr;  ///< chosen by the first keyed command
  bool keyed = false;

  void fail_all(const Error& error) {
    std::size_t slots = 0;
    for (PendingCommand& command : commands) {
      if (command.state) {
        command.state->fail(error);
        command.state->release();
      }
      slots += command.counted ? 1 : 0;
    }
    core->shared().release_slots(slots);
    commands.clear();
    bytes.clear();
    connection = nullptr;
    keyed = false;
  }
};

void batch_add(BatchBuffer& buffer, const CallOptions& options, std::span<const Arg> args,
               CommandState* state) {
  MuxCore& core = *buffer.core;
  const CommandInfo& info = command_info(args);
  if (Error error = core.check_allowed(info, args)) {
    if (state) state->fail(error);
    return;
  }
  if (state) state->command_name = info.name;
  auto [deadline, timeout_ms] = core.deadline_for(options);
  if (!core.shared().acquire_slot(deadline)) {
    core.shared().counters().queue_full.fetch_add(1, std::memory_order_relaxed);
    if (state) {
      state->fail(Error(errc::queue_full, std::string(info.name) + " refused: maxQueuedCommands=" +
                                              std::to_string(core.config().max_queued_commands) +
                                              " reached"));
    }
    return;
  }
  const bool has_key = first_key_index(info, args).has_value();
  if (!buffer.connection || (has_key && !buffer.keyed)) {
    Result<Connection*> connection = core.route(info, args, options.flags);
    if (!connection) {
      core.shared().release_slots(1);
      if (state) state->fail(std::move(connection).error());
      return;
    }
    buffer.connection = *connection;
    buffer.keyed = has_key;
  }
  if (Error error = core.check_database(buffer.db, *buffer.connection, info)) {
    core.shared().release_slots(1);
    if (state) state->fail(std::move(error));
    return;
  }
  PendingCommand command;
  command.name = info.name;
  command.deadline = deadline;
  command.timeout_ms = timeout_ms;
  command.bytes_begin = buffer.bytes.size();
  resp::encode_command(buffer.bytes, args);
  command.bytes_end = buffer.bytes.size();
  if (state) {
    state->add_ref();
    command.state = state;
  } else {
    command.kind = PendingKind::FireAndForget;
    command.deadline = Clock::time_point::max();
  }
  buffer.commands.push_back(command);
}

}  // namespace detail

Batch::Batch(std::shared_ptr<detail::MuxCore> core, int db)
    : buffer_(std::make_unique<detail::BatchBuffer>()) {
  buffer_->core = std::move(core);
  buffer_->db = db;
}

Batch::Batch(Batch&&) noexcept = default;
Batch& Batch::operator=(Batch&&) noexcept = default;

Batch::~Batch() {
  if (buffer_ && !buffer_->commands.empty()) {
    buffer_->fail_all(Error(errc::not_sent, "the batch was destroyed before execute()"));
  }
}

std::size_t Batch::size() const noexcept {
  return buffer_ ? buffer_->commands.size() : 0;
}

void Batch::execute() {
  if (!buffer_ || buffer_->commands.empty()) return;
  detail::BatchBuffer& b = *buffer_;
  b.core->shared().counters().commands.fetch_add(b.commands.size(), std::memory_order_relaxed);
  b.connection->submit_batch(b.db, b.bytes, b.commands);
  b.commands.clear();
  b.bytes.clear();
  b.connection = nullptr;
  b.keyed = false;
}

Batch Database::batch() const {
  return Batch(core_, db_);
}

}  // namespace redmux

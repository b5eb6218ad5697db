// The command hook's event of a caller's command refused at the call, before any connection
// queued it (docs/observability.md): one event on the caller's thread, with no server.
#include "redmux/database.hpp"

#include "commands/command_table.hpp"
#include "mux/core.hpp"
#include "observe/unanswered.hpp"

namespace redmux::detail {

void report_refusal(MuxCore& core, int db, std::span<const Arg> args, const CommandState* state,
                    const Error& error) noexcept {
  Observer& observer = core.shared().observer();
  if (state == nullptr || !observer.wants_events()) return;
  CommandEvent event;
  event.operation_name = command_info(args).name;
  event.db_namespace = db < 0 ? core.shared().config().default_database : db;
  const Unanswered how = unanswered(error);
  event.outcome = how.outcome;
  event.error_type = how.error_type;
  event.error_message = error.message();
  event.phases.created = observer.now();
  event.phases.delivered = event.phases.created;
  observer.command_done(event);
}

}  // namespace redmux::detail

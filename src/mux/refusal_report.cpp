#include "mux/refusal_report.hpp"

#include "commands/command_table.hpp"
#include "mux/core.hpp"
#include "observe/unanswered.hpp"

namespace redmux::detail {

Error reported_refusal(MuxCore& core, int db, std::span<const Arg> args, const CommandState* state,
                       Error error) noexcept {
  Observer& observer = core.shared().observer();
  if (state == nullptr || !observer.wants_events()) return error;
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
  return error;
}

}  // namespace redmux::detail

// The link between the deadlock guard (future.cpp, no Asio) and the io_contexts users hand
// to IoPool::wrap() (io_pool.cpp): a thread inside such a context's run() is an I/O thread
// for redmux as much as one of its own, because the connections living there can only be
// served by the threads running it.
#pragma once

namespace redmux::detail {

/// Installed once by the first IoPool::wrap(); true when the calling thread is running an
/// io_context of a live wrapped pool.
using UserContextCheck = bool (*)() noexcept;
void install_user_context_check(UserContextCheck check) noexcept;

}  // namespace redmux::detail

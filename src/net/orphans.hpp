// The I/O threads of pools that died on one of their own threads ("orphans", io_pool.cpp) are
// joined at exit by a handler registered when the first one is orphaned. OpenSSL frees at
// exit what a TLS handshake on such a thread may have used, with a handler of its own that it
// registers when it is first initialised; exit handlers run last registered first.
//
// Threads: any.
#pragma once

namespace redmux::detail {

/// Registers the orphans' join at exit once more, now, after OpenSSL's own exit handler (call
/// it once OpenSSL is initialised, on the thread making a TLS context), so that it runs before
/// OpenSSL's cleanup even when the first orphan came before any TLS. Idempotent.
void join_orphans_before_tls_cleanup();

}  // namespace redmux::detail

// ResolverThreadName: while alive, an I/O thread named "redmux-io-N" is named
// "redmux-dns-N", so that a thread it starts meanwhile inherits that name. Asio runs
// getaddrinfo on a thread of its own per io_context, started by the first resolve and named
// after the thread that starts it: this tells them apart in a thread list.
#pragma once

#include <pthread.h>

#include <cstring>
#include <string>
#include <string_view>

namespace redmux::detail {

class ResolverThreadName {
 public:
  ResolverThreadName() noexcept {
    char name[16] = {};
    if (::pthread_getname_np(::pthread_self(), name, sizeof name) != 0) return;
    const std::string_view current(name);
    if (!current.starts_with("redmux-io-")) return;  // a user's thread (IoPool::wrap)
    std::memcpy(saved_, name, sizeof saved_);
    // "redmux-dns-" and the I/O thread's number: at most 15 characters, as thread names are.
    const std::string renamed = ("redmux-dns-" + std::string(current.substr(10))).substr(0, 15);
    renamed_ = ::pthread_setname_np(::pthread_self(), renamed.c_str()) == 0;
  }
  ~ResolverThreadName() {
    if (renamed_) ::pthread_setname_np(::pthread_self(), saved_);
  }
  ResolverThreadName(const ResolverThreadName&) = delete;
  ResolverThreadName& operator=(const ResolverThreadName&) = delete;

 private:
  char saved_[16] = {};
  bool renamed_ = false;
};

}  // namespace redmux::detail

// TlsContext: the TLS settings of one multiplexer — one asio::ssl::context built from the
// Config's ssl… options and shared by all of its connections. Each connection attempt makes
// a fresh SSL session from it (prepare_session()); an SSL session is never reused after its
// socket closed.
//
// What is verified (unless sslVerify=false): the server's chain against sslCaFile and/or
// sslCaPath (else the system's default verify paths), and the server's name — sslHost, else
// the endpoint's host — against the certificate's subjectAltName (DNS names; IP addresses
// for an IP literal). SNI carries the same name, except for IP literals (RFC 6066 allows
// only host names in SNI). TLS 1.2 is the oldest version offered.
//
// Threads: immutable after create(); OpenSSL lets any number of threads make sessions from
// one SSL_CTX at once. Compiled only with REDMUX_WITH_TLS.
#pragma once

#include <openssl/ssl.h>

#include <asio/error_code.hpp>
#include <asio/ssl/context.hpp>
#include <memory>
#include <string>

#include "redmux/config.hpp"
#include "redmux/result.hpp"

namespace redmux::detail {

class TlsContext {
 public:
  /// Builds the context from `config` (REQUIRES: config.ssl). Fails with
  /// errc::invalid_config naming the option and its path when a CA, certificate or key file
  /// cannot be read or holds nothing usable, or when sslKey does not match sslCert. Reads
  /// the files now (on the calling thread), never from an I/O thread.
  static Result<std::shared_ptr<TlsContext>> create(const Config& config);

  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  asio::ssl::context& native() noexcept { return context_; }
  bool verifies() const noexcept { return verify_; }

  /// Sets up a new session for a server called `server_name` (empty: no name to check, as
  /// for a Unix socket without sslHost): SNI, and the name check when verifying.
  void prepare_session(SSL* ssl, const std::string& server_name) const;

  /// The error text of a failed TLS handshake with `endpoint_text`: what failed, OpenSSL's
  /// reason and its certificate verification result, and what to check.
  std::string handshake_error(SSL* ssl, const asio::error_code& ec,
                              const std::string& endpoint_text,
                              const std::string& server_name) const;

  /// A hint for an error that ends a TLS session after its handshake: a TLS alert such as
  /// "certificate required" (a server that wants a client certificate says so on the first
  /// read under TLS 1.3), or — `during_handshake`, while the Redis handshake runs — the
  /// server closing the connection. Empty when there is nothing to add.
  std::string io_error_hint(const asio::error_code& ec, bool during_handshake) const;

 private:
  TlsContext();

  asio::ssl::context context_;
  bool verify_ = true;
  bool has_client_certificate_ = false;
};

}  // namespace redmux::detail

#include "net/tls_context.hpp"

#include <openssl/err.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509err.h>

#include <asio/error.hpp>
#include <asio/ip/address.hpp>
#include <asio/ssl/error.hpp>
#include <filesystem>
#include <fstream>

#include "net/orphans.hpp"
#include "redmux/error.hpp"

namespace redmux::detail {
namespace {

Error config_error(std::string_view option, const std::string& path, const std::string& problem) {
  return Error(errc::invalid_config,
               "TLS option " + std::string(option) + "=" + path + ": " + problem);
}

/// Empty when `path` names a readable regular file (or a directory, when `directory`).
std::string unreadable(const std::string& path, bool directory) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec) return "cannot read it (" + ec.message() + ")";
  if (directory) {
    if (!std::filesystem::is_directory(status)) return "not a directory";
    return {};
  }
  if (std::filesystem::is_directory(status)) return "is a directory, not a file";
  if (!std::ifstream(path).good()) return "cannot read it (permission denied?)";
  return {};
}

/// OpenSSL's reason for `ec` without the library name: "wrong version number".
int ssl_reason(const asio::error_code& ec) {
  if (ec.category() != asio::error::get_ssl_category()) return 0;
  return ERR_GET_REASON(static_cast<unsigned long>(ec.value()));
}

bool is_ip_literal(const std::string& name) {
  asio::error_code ec;
  (void)asio::ip::make_address(name, ec);
  return !ec;
}

}  // namespace

TlsContext::TlsContext() : context_(asio::ssl::context::tls_client) {}

Result<std::shared_ptr<TlsContext>> TlsContext::create(const Config& config) {
  std::shared_ptr<TlsContext> tls(new TlsContext());  // OpenSSL is initialised from here on
  join_orphans_before_tls_cleanup();
  SSL_CTX* native = tls->context_.native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  tls->context_.set_options(asio::ssl::context::default_workarounds |
                            asio::ssl::context::no_compression);

  // Never prompt on a terminal for the passphrase of an encrypted key (OpenSSL's default):
  // such a key fails to load, with an error naming sslKey.
  tls->context_.set_password_callback(
      [](std::size_t, asio::ssl::context::password_purpose) { return std::string(); });

  asio::error_code ec;
  if (!config.ssl_ca_file.empty()) {
    if (std::string problem = unreadable(config.ssl_ca_file, false); !problem.empty()) {
      return config_error("sslCaFile", config.ssl_ca_file, problem);
    }
    tls->context_.load_verify_file(config.ssl_ca_file, ec);
    if (ec) {
      return config_error(
          "sslCaFile", config.ssl_ca_file,
          "no usable CA certificate in it (" + ec.message() + "); it must hold PEM certificates");
    }
  }
  if (!config.ssl_ca_path.empty()) {
    if (std::string problem = unreadable(config.ssl_ca_path, true); !problem.empty()) {
      return config_error("sslCaPath", config.ssl_ca_path, problem);
    }
    tls->context_.add_verify_path(config.ssl_ca_path, ec);
    if (ec) return config_error("sslCaPath", config.ssl_ca_path, ec.message());
  }
  if (config.ssl_ca_file.empty() && config.ssl_ca_path.empty()) {
    tls->context_.set_default_verify_paths(ec);
    if (ec) {
      return Error(errc::invalid_config,
                   "TLS: the system's trusted CA certificates could not be loaded (" +
                       ec.message() + "); set sslCaFile or sslCaPath");
    }
  }

  if (!config.ssl_cert.empty()) {
    if (std::string problem = unreadable(config.ssl_cert, false); !problem.empty()) {
      return config_error("sslCert", config.ssl_cert, problem);
    }
    if (std::string problem = unreadable(config.ssl_key, false); !problem.empty()) {
      return config_error("sslKey", config.ssl_key, problem);
    }
    tls->context_.use_certificate_chain_file(config.ssl_cert, ec);
    if (ec) {
      return config_error("sslCert", config.ssl_cert,
                          "no usable certificate in it (" + ec.message() +
                              "); it must hold a PEM certificate (chain)");
    }
    // The key's own text never reaches a message: only OpenSSL's reason and the path.
    tls->context_.use_private_key_file(config.ssl_key, asio::ssl::context::pem, ec);
    if (ec && ec.category() == asio::error::get_ssl_category() &&
        ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH) {
      return config_error(
          "sslKey", config.ssl_key,
          "this key does not belong to the certificate in sslCert=" + config.ssl_cert);
    }
    if (ec) {
      return config_error("sslKey", config.ssl_key,
                          "no usable private key in it (" + ec.message() +
                              "); it must hold an unencrypted PEM private key");
    }
    if (SSL_CTX_check_private_key(native) != 1) {
      ERR_clear_error();
      return config_error(
          "sslKey", config.ssl_key,
          "this key does not belong to the certificate in sslCert=" + config.ssl_cert);
    }
    tls->has_client_certificate_ = true;
  }

  tls->verify_ = config.ssl_verify;
  tls->context_.set_verify_mode(tls->verify_ ? asio::ssl::verify_peer : asio::ssl::verify_none);
  return tls;
}

void TlsContext::prepare_session(SSL* ssl, const std::string& server_name) const {
  if (server_name.empty()) return;
  const bool ip_literal = is_ip_literal(server_name);
  if (!ip_literal) SSL_set_tlsext_host_name(ssl, server_name.c_str());
  if (!verify_) return;
  if (ip_literal) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), server_name.c_str());
  } else {
    SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    SSL_set1_host(ssl, server_name.c_str());
  }
}

std::string TlsContext::handshake_error(SSL* ssl, const asio::error_code& ec,
                                        const std::string& endpoint_text,
                                        const std::string& server_name) const {
  std::string message = "TLS handshake with " + endpoint_text + " failed: ";
  const int reason = ssl_reason(ec);
  const long verify_result = ssl != nullptr ? SSL_get_verify_result(ssl) : X509_V_OK;
  if (verify_ && verify_result != X509_V_OK) {
    message += "certificate verify failed (";
    message += X509_verify_cert_error_string(verify_result);
    message += ")";
    switch (verify_result) {
      case X509_V_ERR_HOSTNAME_MISMATCH:
      case X509_V_ERR_IP_ADDRESS_MISMATCH:
        message += ": the server's certificate does not name \"" + server_name +
                   "\"; set sslHost to a name its certificate holds (subjectAltName)";
        break;
      case X509_V_ERR_CERT_HAS_EXPIRED:
      case X509_V_ERR_CERT_NOT_YET_VALID:
        message += "; check the server certificate's dates and this machine's clock";
        break;
      default:
        message +=
            "; the server's certificate is not signed by a CA redmux trusts: set sslCaFile "
            "(or sslCaPath) to the CA that signed it";
        break;
    }
    message += " (sslVerify=false skips verification: insecure, for testing only)";
    return message;
  }
  message += ec.message();
  if (reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_PACKET_LENGTH_TOO_LONG) {
    message += "; the server did not answer in TLS: is this its TLS port (tls-port)?";
  } else if (ec == asio::ssl::error::stream_truncated || ec == asio::error::eof ||
             ec == asio::error::connection_reset) {
    message += "; the server closed the connection: is this its TLS port (tls-port)?";
    if (!has_client_certificate_) {
      message += " If it requires client certificates (tls-auth-clients), set sslCert and sslKey";
    }
  } else if (reason == SSL_R_TLSV1_ALERT_PROTOCOL_VERSION || reason == SSL_R_UNSUPPORTED_PROTOCOL) {
    message +=
        "; the server and redmux share no TLS version: redmux offers TLS 1.2 and 1.3, so the "
        "server's tls-protocols must include one of them";
  } else if (std::string hint = io_error_hint(ec, /*during_handshake=*/true); !hint.empty()) {
    message += hint;
  } else {
    message += "; check sslCaFile/sslCaPath, sslHost and sslVerify";
  }
  return message;
}

std::string TlsContext::io_error_hint(const asio::error_code& ec, bool during_handshake) const {
  const bool ended = ec == asio::ssl::error::stream_truncated || ec == asio::error::eof ||
                     ec == asio::error::connection_reset || ec == asio::error::broken_pipe;
  if (during_handshake && ended) {
    // Under TLS 1.3 a server that refuses the client's certificate (or its absence) does so
    // after the client's handshake completed: the first write or read then finds the
    // connection reset, or the alert below.
    return has_client_certificate_
               ? "; the server ended the TLS session before answering: does it trust the CA "
                 "that signed the client certificate in sslCert (tls-ca-cert-file)?"
               : "; the server ended the TLS session before answering: if it requires a "
                 "client certificate (tls-auth-clients), set sslCert and sslKey";
  }
  switch (ssl_reason(ec)) {
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
    case SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE:
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
      return has_client_certificate_
                 ? "; the server refused the client certificate in sslCert: is it signed by a "
                   "CA the server trusts (tls-ca-cert-file)?"
                 : "; the server requires a client certificate (tls-auth-clients): set "
                   "sslCert and sslKey";
    default:
      return {};
  }
}

}  // namespace redmux::detail

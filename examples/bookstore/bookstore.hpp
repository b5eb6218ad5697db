// The Bookstore's view counter over one shared multiplexer: the HTTP handlers call
// BookViews, which turns each request into one Redis command and an HTTP status and JSON
// body. Keys are made in one place (views_key).
//
// Threads: a BookViews is shared by every request handler thread; its members are const and
// the multiplexer is safe from any thread. Handlers block on get() on their own threads
// (never a redmux I/O thread).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "redmux/redmux.hpp"

namespace bookstore {

/// "bookstore:book:42:views": the one place a book's view counter key is made.
std::string views_key(long long book_id);

/// A book id from its URL segment: digits only, fits a long long; nullopt otherwise.
std::optional<long long> parse_book_id(std::string_view text);

/// What a handler answers.
struct HttpAnswer {
  int status = 200;
  std::string body;  ///< JSON
};

class BookViews {
 public:
  explicit BookViews(std::shared_ptr<redmux::Multiplexer> mux) : mux_(std::move(mux)) {}

  /// POST /books/{id}/views: INCR; {"bookId":42,"views":1}.
  HttpAnswer record_view(long long book_id) const;
  /// GET /books/{id}/views: GET; 0 when the key is absent.
  HttpAnswer views(long long book_id) const;

 private:
  /// 503 while no connection is ready: fail fast instead of queueing behind a dead socket.
  std::optional<HttpAnswer> unavailable() const;
  HttpAnswer failure(const redmux::Error& error) const;

  std::shared_ptr<redmux::Multiplexer> mux_;
};

/// {"error":"…","detail":"…"} with JSON escaping.
std::string error_body(std::string_view error, std::string_view detail);

}  // namespace bookstore

#include "bookstore.hpp"

#include <nlohmann/json.hpp>

#include <charconv>

namespace bookstore {
namespace {

using Json = nlohmann::ordered_json;

std::string views_body(long long book_id, long long views) {
  return Json{{"bookId", book_id}, {"views", views}}.dump();
}

bool is_connection_trouble(redmux::errc code) {
  using redmux::errc;
  return code == errc::not_sent || code == errc::outcome_unknown ||
         code == errc::connection_failed || code == errc::disconnected || code == errc::shut_down ||
         code == errc::timeout || code == errc::queue_full || code == errc::authentication_failed;
}

}  // namespace

std::string views_key(long long book_id) {
  return "bookstore:book:" + std::to_string(book_id) + ":views";
}

std::optional<long long> parse_book_id(std::string_view text) {
  long long id = 0;
  if (text.empty() || text.front() == '-' || text.front() == '+') return std::nullopt;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return id;
}

std::string error_body(std::string_view error, std::string_view detail) {
  // Redis error texts are ASCII; anything else is replaced rather than refused (U+FFFD).
  return Json{{"error", error}, {"detail", detail}}.dump(-1, ' ', false,
                                                         Json::error_handler_t::replace);
}

std::optional<HttpAnswer> BookViews::unavailable() const {
  if (mux_->is_connected()) return std::nullopt;
  std::string endpoints;
  for (const auto& endpoint : mux_->config().endpoints) {
    if (!endpoints.empty()) endpoints += ", ";
    endpoints += endpoint.to_string();
  }
  return HttpAnswer{503, error_body("redis unavailable",
                                    "no connection to " + endpoints +
                                        " is ready; redmux keeps reconnecting in the background")};
}

HttpAnswer BookViews::failure(const redmux::Error& error) const {
  if (is_connection_trouble(error.code())) {
    return HttpAnswer{503, error_body("redis unavailable", error.message())};
  }
  return HttpAnswer{500, error_body("redis error", error.message())};
}

HttpAnswer BookViews::record_view(long long book_id) const {
  if (auto answer = unavailable()) return *answer;
  auto views = mux_->database().incr(views_key(book_id)).result();
  if (!views) return failure(views.error());
  return HttpAnswer{200, views_body(book_id, *views)};
}

HttpAnswer BookViews::views(long long book_id) const {
  if (auto answer = unavailable()) return *answer;
  auto value = mux_->database().get(views_key(book_id)).result();
  if (!value) return failure(value.error());
  long long views = 0;
  if (*value) {
    const std::string& text = **value;
    if (std::from_chars(text.data(), text.data() + text.size(), views).ec != std::errc()) {
      return HttpAnswer{
          500, error_body("redis error", "the views counter of book " + std::to_string(book_id) +
                                             " is not a number")};
    }
  }
  return HttpAnswer{200, views_body(book_id, views)};
}

}  // namespace bookstore

// Uses the installed redmux headers and library: prints "redmux <version>: <message>".
#include <iostream>

#include <redmux/error.hpp>
#include <redmux/version.hpp>

int main() {
  const std::string message = redmux::make_error_code(redmux::errc::timeout).message();
  std::cout << "redmux " << redmux::kVersion << ": " << message << "\n";
  return message.empty() ? 1 : 0;
}

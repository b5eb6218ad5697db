#include "measure.hpp"

#include <fstream>

namespace redmux_bench {

std::string load_text() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  if (!(in >> one >> five >> fifteen)) return "load unknown";
  return "load " + one + " / " + five + " / " + fifteen + " (1, 5, 15 min)";
}

}  // namespace redmux_bench

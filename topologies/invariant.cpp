#include "topologies/invariant.hpp"

#include <cmath>
#include <cstdio>

namespace clustersim {

void invariant_broken(const std::string& name, const std::string& detail) {
  throw InvariantViolation("invariant `" + name + "` broken: " + detail);
}

Seconds non_negative_time(Seconds value_s, Seconds scale_s, const char* what) {
  if (value_s >= 0 && std::isfinite(value_s)) return value_s;
  if (value_s < 0 && value_s >= -kRoundingRelative * std::fabs(scale_s)) return 0;
  char detail[160];
  std::snprintf(detail, sizeof detail, "%s is %.17g s (times up to %.17g s)", what, value_s, scale_s);
  invariant_broken("no negative durations or timestamps", detail);
}

}  // namespace clustersim

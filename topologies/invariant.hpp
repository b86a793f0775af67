#pragma once
// Internal invariants: what our own code guarantees whatever the input, checked where the quantity
// is produced. A violation is our bug, never the user's: it throws InvariantViolation, which the CLI
// prints as one `internal error` line with exit status 1, so a broken invariant never becomes a
// silently wrong figure. The checks are cheap (a pass over what was just computed), so every build
// keeps them, Release included.
#include <stdexcept>
#include <string>

#include "topologies/units.hpp"

namespace clustersim {

class InvariantViolation : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// Throws InvariantViolation("invariant `name` broken: detail").
[[noreturn]] void invariant_broken(const std::string& name, const std::string& detail);

/// How far below zero a difference of times may fall from rounding alone, relative to the times it
/// was computed from: a few ulps of a double (2.2e-16 each) after at most a few thousand additions.
inline constexpr double kRoundingRelative = 1e-12;

/// A duration or timestamp computed as a difference of times of magnitude up to `scale_s`: rounding
/// below zero (at most kRoundingRelative x scale_s) is clamped to 0; further below, or not finite, is
/// a broken invariant named by `what`.
Seconds non_negative_time(Seconds value_s, Seconds scale_s, const char* what);

}  // namespace clustersim

#pragma once
// The invariants of an iteration's result, checked as `account` produces it: no duration or
// timestamp below zero (rounding clamped to 0, anything further a broken invariant), every span
// inside the iteration, and each pipeline rank's breakdown - the columns of `clustersim run`'s
// table - adding up to the iteration time within kBreakdownRelative.
#include "simulator/iteration.hpp"

namespace clustersim {

/// How closely a rank's breakdown must add up to the iteration: its parts are sums and
/// differences of a few thousand step times, each exact to a few ulps (2.2e-16 relative).
inline constexpr double kBreakdownRelative = 1e-9;

/// Every column of a rank's breakdown, added up.
Seconds breakdown_total(const RankBreakdown& b);

/// Clamps rounding below zero to 0 in every duration and timestamp of `result`; throws
/// InvariantViolation, naming the rank and column, if one is further below zero, if a span ends
/// before it starts or after the iteration, or if a rank's breakdown does not add up.
void check_breakdown(IterationResult& result);

}  // namespace clustersim

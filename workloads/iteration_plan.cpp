#include "workloads/iteration_plan.hpp"

namespace clustersim {

const char* to_string(SegmentKind kind) {
  switch (kind) {
    case SegmentKind::compute: return "compute";
    case SegmentKind::recompute: return "recompute";
    case SegmentKind::tp_comm: return "tp";
    case SegmentKind::ep_comm: return "ep";
    case SegmentKind::imbalance: return "imbalance";
    case SegmentKind::cp_comm: return "cp";
    case SegmentKind::dp_comm: return "dp";
  }
  return "?";
}

const char* to_string(TpPlacement placement) {
  switch (placement) {
    case TpPlacement::automatic: return "auto";
    case TpPlacement::alone: return "alone";
    case TpPlacement::in_place: return "in-place";
  }
  return "?";
}

const char* to_string(FoldMode mode) {
  switch (mode) {
    case FoldMode::exact: return "exact";
    case FoldMode::none: return "none";
    case FoldMode::all: return "all";
    case FoldMode::assume: return "assume";
  }
  return "?";
}

}  // namespace clustersim

#pragma once
// The named choices of a serving file (router, scheduler priority and preemption, arrival process,
// KV dtype, speculative method, expert dispatch): one table that the reader checks values against
// and `clustersim list` prints, so the two cannot drift apart.
#include <string>
#include <vector>

namespace clustersim {

struct ServingChoice {
  std::string key;  // the field, under serving: ("router", "parallel.dispatch")
  std::string name;
  std::string description;
};

/// Every choice, grouped by key in the order the reader takes them.
const std::vector<ServingChoice>& serving_choices();

/// The names `key` accepts, in the table's order.
std::vector<std::string> serving_choice_names(const std::string& key);

}  // namespace clustersim

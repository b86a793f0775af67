#pragma once
// `collective --report FILE.html`: the sweep as a page - bus and algorithm bandwidth against
// message size (log scale, as nccl-tests' plots are read), the table with the algorithm and
// protocol chosen per size, and how busy each link tier was during the largest size.
#include <string>
#include <utility>
#include <vector>

#include "simulator/collective_sweep.hpp"
#include "simulator/link_tiers.hpp"

namespace clustersim {

struct CollectiveReport {
  std::string title;
  std::vector<std::pair<std::string, std::string>> facts;
  std::vector<SweepRow> rows;
  std::vector<LinkTierLoad> largest_link_tiers;  // the largest size, its chosen algorithm and protocol
  std::string link_note;
};

/// "8 B", "64 KiB", "8 GiB": nccl-tests' binary sizes.
std::string size_text(Bytes bytes);

std::string collective_report_html(const CollectiveReport& report);

}  // namespace clustersim

#include "workloads/layout.hpp"

#include <algorithm>
#include <sstream>

namespace clustersim {

ParallelLayout::Coord ParallelLayout::coord(int rank) const {
  Coord c;
  for (Dim d : order) {
    const int index = rank % size(d);
    rank /= size(d);
    c.at(d) = index;
  }
  return c;
}

int ParallelLayout::rank(const Coord& c) const {
  int r = 0;
  for (auto d = order.rbegin(); d != order.rend(); ++d) r = r * size(*d) + c.get(*d);
  return r;
}

std::vector<int> ParallelLayout::group(int r, Dim d) const {
  Coord c = coord(r);
  std::vector<int> members;
  for (int i = 0; i < size(d); ++i) {
    c.at(d) = i;
    members.push_back(rank(c));
  }
  return members;
}

std::string to_string(Dim d) { return d == Dim::tp ? "tp" : d == Dim::cp ? "cp" : d == Dim::dp ? "dp" : "pp"; }

std::vector<Dim> parse_order(const std::string& text) {
  std::vector<Dim> dims;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, '-');) {
    if (part == "tp") dims.push_back(Dim::tp);
    else if (part == "cp") dims.push_back(Dim::cp);
    else if (part == "dp") dims.push_back(Dim::dp);
    else if (part == "pp") dims.push_back(Dim::pp);
    else return {};
  }
  std::vector<Dim> sorted = dims;
  std::sort(sorted.begin(), sorted.end());
  if (sorted == std::vector<Dim>{Dim::tp, Dim::cp, Dim::dp, Dim::pp}) return dims;
  if (sorted != std::vector<Dim>{Dim::tp, Dim::dp, Dim::pp}) return {};
  dims.insert(std::find(dims.begin(), dims.end(), Dim::tp) + 1, Dim::cp);
  return dims;
}

}  // namespace clustersim

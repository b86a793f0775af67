#pragma once
// Where each parallel dimension lands: a rank's coordinates (tp, dp, pp) and its groups follow from
// one order of dimensions, fastest-varying first. Megatron's default "tp-dp-pp" keeps a TP group on
// consecutive GPUs (inside a node) and spreads pipeline stages farthest apart.
#include <array>
#include <string>
#include <vector>

namespace clustersim {

enum class Dim { tp, dp, pp };

struct ParallelLayout {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  std::array<Dim, 3> order{Dim::tp, Dim::dp, Dim::pp};  // fastest-varying first

  int world() const { return tp * pp * dp; }
  int size(Dim d) const { return d == Dim::tp ? tp : d == Dim::dp ? dp : pp; }

  struct Coord {
    int tp = 0, dp = 0, pp = 0;
    int get(Dim d) const { return d == Dim::tp ? tp : d == Dim::dp ? dp : pp; }
  };
  Coord coord(int rank) const;
  int rank(const Coord& c) const;
  /// The ranks that share every coordinate with `rank` except `d`, in order of their `d` index.
  std::vector<int> group(int rank, Dim d) const;
};

/// Parses an order like "tp-dp-pp"; empty result when the text is not a permutation of tp, dp, pp.
std::vector<Dim> parse_order(const std::string& text);
std::string to_string(Dim d);

}  // namespace clustersim

#pragma once
// Where each parallel dimension lands: a rank's coordinates (tp, cp, dp, pp) and its groups follow
// from one order of dimensions, fastest-varying first. Megatron's default "tp-cp-dp-pp" keeps a TP
// group on consecutive GPUs (inside a node), context-parallel ranks next, and spreads pipeline
// stages farthest apart.
#include <array>
#include <string>
#include <vector>

namespace clustersim {

enum class Dim { tp, cp, dp, pp };

struct ParallelLayout {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int cp = 1;  // context parallelism: each sequence split over cp ranks
  std::array<Dim, 4> order{Dim::tp, Dim::cp, Dim::dp, Dim::pp};  // fastest-varying first

  int world() const { return tp * cp * pp * dp; }
  int size(Dim d) const { return d == Dim::tp ? tp : d == Dim::cp ? cp : d == Dim::dp ? dp : pp; }

  struct Coord {
    int tp = 0, dp = 0, pp = 0, cp = 0;
    int get(Dim d) const { return d == Dim::tp ? tp : d == Dim::cp ? cp : d == Dim::dp ? dp : pp; }
    int& at(Dim d) { return d == Dim::tp ? tp : d == Dim::cp ? cp : d == Dim::dp ? dp : pp; }
  };
  Coord coord(int rank) const;
  int rank(const Coord& c) const;
  /// The ranks that share every coordinate with `rank` except `d`, in order of their `d` index.
  std::vector<int> group(int rank, Dim d) const;
};

/// Parses an order like "tp-cp-dp-pp" into four dimensions; a permutation of tp, dp and pp alone
/// puts cp right after tp. Empty when the text is neither.
std::vector<Dim> parse_order(const std::string& text);
std::string to_string(Dim d);

}  // namespace clustersim

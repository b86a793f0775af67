// Rank placement: Megatron's default order puts tensor-parallel peers on consecutive ranks (one
// node), data-parallel peers next, pipeline stages farthest apart; any order is a bijection.
#include <catch2/catch.hpp>

#include <set>

#include "workloads/layout.hpp"

using namespace clustersim;

TEST_CASE("Megatron's tp-dp-pp order numbers ranks tp fastest then dp then pp") {
  ParallelLayout l{8, 4, 2};  // tp 8, pp 4, dp 2: 64 GPUs
  // rank = tp + 8 * (dp + 2 * pp)
  CHECK(l.rank({3, 1, 2}) == 3 + 8 * (1 + 2 * 2));
  CHECK(l.group(0, Dim::tp) == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(l.group(0, Dim::dp) == std::vector<int>{0, 8});
  CHECK(l.group(0, Dim::pp) == std::vector<int>{0, 16, 32, 48});
  CHECK(l.group(21, Dim::pp) == std::vector<int>{5, 21, 37, 53});
}

TEST_CASE("every order maps ranks to coordinates one to one") {
  for (const char* text : {"tp-dp-pp", "tp-pp-dp", "dp-tp-pp", "pp-dp-tp"}) {
    ParallelLayout l{4, 3, 2};
    const auto dims = parse_order(text);
    REQUIRE(dims.size() == 4);  // cp is placed right after tp
    std::copy(dims.begin(), dims.end(), l.order.begin());
    std::set<int> seen;
    for (int r = 0; r < l.world(); ++r) {
      CHECK(l.rank(l.coord(r)) == r);
      seen.insert(l.coord(r).tp * 100 + l.coord(r).dp * 10 + l.coord(r).pp);
      for (Dim d : {Dim::tp, Dim::dp, Dim::pp}) CHECK(static_cast<int>(l.group(r, d).size()) == l.size(d));
    }
    CHECK(static_cast<int>(seen.size()) == l.world());
  }
}

TEST_CASE("context parallel ranks sit between tp and dp in megatron's order") {
  ParallelLayout l{8, 2, 2, 4};  // tp 8, pp 2, dp 2, cp 4: 128 GPUs
  REQUIRE(parse_order("tp-dp-pp") == std::vector<Dim>{Dim::tp, Dim::cp, Dim::dp, Dim::pp});
  CHECK(l.world() == 128);
  CHECK(l.group(0, Dim::cp) == std::vector<int>{0, 8, 16, 24});
  CHECK(l.group(0, Dim::dp) == std::vector<int>{0, 32});
  CHECK(l.group(0, Dim::pp) == std::vector<int>{0, 64});
}

TEST_CASE("an order that is not a permutation of tp dp and pp is rejected") {
  CHECK(parse_order("tp-dp").empty());
  CHECK(parse_order("tp-tp-pp").empty());
  CHECK(parse_order("tp-ep-pp").empty());
}

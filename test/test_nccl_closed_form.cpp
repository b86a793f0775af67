// collectives/nccl_closed_form.hpp, the collective time search's screen and serve's iterations
// share: NCCL's tuner's prediction for its pick, else its ring with Simple.
#include <catch2/catch.hpp>

#include "collectives/nccl_closed_form.hpp"
#include "collectives/tuner_nccl.hpp"
#include "support.hpp"

using namespace clustersim;

TEST_CASE("the shared closed form: the tuner's pick when tuned, ring with Simple when not, 0 when nothing moves", "[nccl]") {
  const Cluster c = test::cluster_from_yaml(test::kUniformSwitchYaml);
  const std::vector<int> group{0, 1, 2, 3, 4, 5, 6, 7};
  const Bytes bytes = 64 << 20;
  CHECK(nccl_closed_form_s(c, Op::all_reduce, group, 0, 2, true) == 0);
  CHECK(nccl_closed_form_s(c, Op::all_reduce, {3}, bytes, 2, true) == 0);
  const auto pick = nccl_choose(c, CollectiveRequest{Op::all_reduce, group, bytes, 2, Protocol{}, 0}, std::nullopt, false);
  REQUIRE(pick);
  REQUIRE(pick->predicted_s);
  CHECK(nccl_closed_form_s(c, Op::all_reduce, group, bytes, 2, true) == *pick->predicted_s);
  const double ring = *nccl_predicted_time(nccl_topology(c, group, 2), Op::all_reduce, "ring", "Simple", bytes);
  CHECK(nccl_closed_form_s(c, Op::all_reduce, group, bytes, 2, false) == ring);
  // NCCL's ring all-reduce moves 2 (n - 1) / n of the bytes over each GPU's 100 GB/s link: at 64 MiB
  // its bandwidth term dominates the latencies.
  CHECK(ring > 2.0 * 7 / 8 * double(bytes) / 100e9);
}

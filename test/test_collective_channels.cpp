// NCCL's channel count for small collectives (src/enqueue.cc, NCCL 2.2x): from the most channels
// down, one fewer while size < channels x threads x threshold (threads: 512 for LL and Simple, 640
// for LL128; threshold: 64 bytes a thread for Simple, 8 for LL128, 8 x ranks for ring LL).
#include <catch2/catch.hpp>

#include "collectives/collective.hpp"
#include "support.hpp"

using namespace clustersim;

TEST_CASE("ring and tree run on fewer channels below channels x threads x threshold bytes") {
  const Algorithm& ring = *find_algorithm("ring");
  const Algorithm& tree = *find_algorithm("tree");
  const Protocol simple = *find_protocol("Simple"), ll = *find_protocol("LL"), ll128 = *find_protocol("LL128");
  // Simple: 16 channels need 16 x 512 x 64 = 512 KiB; one byte less drops to 15.
  CHECK(nccl_channels_for_size(ring, simple, 16 * 512 * 64, 8, 16) == 16);
  CHECK(nccl_channels_for_size(ring, simple, 16 * 512 * 64 - 1, 8, 16) == 15);
  // 100 KB: the largest c with c x 32768 <= 100000 is 3.
  CHECK(nccl_channels_for_size(tree, simple, 100000, 64, 16) == 3);
  // Ring LL on 8 ranks: 64 bytes a thread, so 8 KiB gets 8192 / (512 x 64) -> one channel.
  CHECK(nccl_channels_for_size(ring, ll, 8192, 8, 16) == 1);
  CHECK(nccl_channels_for_size(ring, ll, 4 * 512 * 64, 8, 16) == 4);
  // Tree LL's threshold does not grow with the ranks: 8 x 512 = 4 KiB a channel.
  CHECK(nccl_channels_for_size(tree, ll, 4 * 4096, 64, 16) == 4);
  CHECK(nccl_channels_for_size(ring, ll128, 10 * 640 * 8, 8, 16) == 10);
  // Never below one, never above the most; other algorithms and the ideal protocol keep them all.
  CHECK(nccl_channels_for_size(ring, simple, 8, 8, 16) == 1);
  CHECK(nccl_channels_for_size(ring, simple, Bytes{1} << 30, 8, 16) == 16);
  CHECK(nccl_channels_for_size(*find_algorithm("nvls"), simple, 8, 8, 16) == 16);
  CHECK(nccl_channels_for_size(ring, ideal_protocol(), 8, 8, 16) == 16);
}

TEST_CASE("collective reports the channels each size ran on, fewer for small sizes unless --channels pins them") {
  const std::string cluster = test::source_path("scenarios/clusters/dgx-h100-superpod.yaml");
  const auto tuned = test::cli_json("collective --cluster " + cluster + " --gpus 16 --algo ring --proto Simple -b 64K -e 1M -f 16");
  REQUIRE(tuned["rows"].size() == 2);
  CHECK(tuned["rows"][0]["channels"] == 2);   // 64 KiB / (512 x 64 B) = 2
  CHECK(tuned["rows"][1]["channels"] == 16);  // 1 MiB: all of them
  const auto pinned = test::cli_json("collective --cluster " + cluster + " --gpus 16 --algo ring --proto Simple -b 64K -e 64K --channels 16");
  CHECK(pinned["rows"][0]["channels"] == 16);
}

// The table the fluid solver finds a bundle of links by (the two sums over the flows it carries):
// whatever order keys come and go in, it answers as a plain map would. Its deletion shifts probe
// chains back instead of leaving tombstones, which is where an open-addressing table goes wrong:
// keys here share their home slot, and chains wrap past the table's end.
#include <catch2/catch.hpp>

#include <map>
#include <random>

#include "simulator/fluid_bundles.hpp"

using clustersim::fluid::SignatureTable;

TEST_CASE("the bundle table answers as a map does under inserts and erases that collide and wrap") {
  std::mt19937_64 rng(7);
  SignatureTable table;
  std::map<std::pair<std::uint64_t, std::uint64_t>, int> want;
  // Eight home slots, the last eight of a table of any size: every chain starts at its end and wraps.
  auto key = [&]() {
    const std::uint64_t home = 0xfffffff8u + rng() % 8, high = rng() % 20;
    return std::make_pair((high << 32) | home, rng() % 3);
  };
  int next = 0;
  for (int step = 0; step < 20000; ++step) {
    const auto k = key();
    const auto it = want.find(k);
    if (it == want.end() && rng() % 3 != 0) {
      table.insert(k.first, k.second, next);
      want[k] = next++;
    } else if (it != want.end()) {
      table.erase(k.first, k.second, it->second + 1);  // the wrong value: nothing is removed
      REQUIRE(table.find(k.first, k.second) == it->second);
      table.insert(k.first, k.second, 1 << 30);  // present already: kept as it was
      table.erase(k.first, k.second, it->second);
      want.erase(it);
    }
    if (step % 97 == 0)
      for (const auto& [k2, v] : want) REQUIRE(table.find(k2.first, k2.second) == v);
    REQUIRE(table.find(k.first, k.second) == (want.count(k) ? want[k] : -1));
  }
  for (const auto& [k2, v] : want) CHECK(table.find(k2.first, k2.second) == v);
  table.clear();
  for (const auto& [k2, v] : want) CHECK(table.find(k2.first, k2.second) == -1);
}

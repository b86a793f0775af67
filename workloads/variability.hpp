#pragma once
// A scenario's `variability:` section: how fast each GPU computes and which links do not run as
// built. Every GPU's speed is a pure function of (seed, GPU id), drawn with our own generator
// (splitmix64, Box-Muller), so a seed gives the same speeds on any compiler and library, and a GPU
// keeps its speed whatever the job's size.
#include <cstdint>
#include <map>
#include <vector>

#include "topologies/cluster_spec.hpp"
#include "topologies/link_faults.hpp"
#include "topologies/yaml_reader.hpp"

namespace clustersim {

enum class SpeedDistribution { none, normal, lognormal, empirical };

/// Per-GPU compute speed, relative to the GPU catalog's (1: as calibrated).
struct SpeedDraw {
  SpeedDistribution distribution = SpeedDistribution::none;
  double mean = 1;    // normal
  double stddev = 0;  // normal
  double median = 1;  // lognormal: exp(ln median + sigma z)
  double sigma = 0;   // lognormal
  std::vector<double> values;  // empirical: each GPU takes one, uniformly
};

/// A link that goes down for `down_s` of every `period_s` (a flapping port or cable) and comes back.
/// Each iteration meets it either up or down (simulator/flapping.hpp draws which).
struct FlappingLink {
  LinkChange link;  // failed = true: what a down window does to it
  Seconds down_s = 0;
  Seconds period_s = 0;
};

struct VariabilitySpec {
  bool declared = false;
  std::uint64_t seed = 0;
  SpeedDraw gpu_speed;
  std::map<int, double> gpus;   // GPU id -> speed in (0, 1]: a named slow GPU
  std::map<int, double> nodes;  // node -> speed in (0, 1] of each of its GPUs
  std::vector<LinkChange> links;  // degraded and failed
  std::vector<FlappingLink> flapping;  // down for a while every period

  /// Whether some GPU may run at another speed than the catalog's.
  bool varies_speed() const {
    return gpu_speed.distribution != SpeedDistribution::none || !gpus.empty() || !nodes.empty();
  }
  /// Whether replicas may differ at all: speeds, or links that do not run as built.
  bool varies() const { return varies_speed() || !links.empty() || !flapping.empty(); }
};

/// Reads `variability:` against the scenario's cluster (GPU and node ids must be its). Every
/// number has its range: named speeds (0, 1], drawn parameters such that no draw within 5 sigma
/// is 0 or less, empirical values (0, 2].
VariabilitySpec parse_variability(const YamlField& field, const ClusterSpec& cluster);

/// Each of `gpus` GPUs' speed: a named GPU's own, else its node's, else its draw, else 1. Empty
/// when no GPU varies (the engine's fast path: every GPU as calibrated).
std::vector<double> gpu_speeds(const VariabilitySpec& v, int gpus, int gpus_per_node);

/// A uniform variate in (0, 1] for flapping link `index` under `seed`: the link is down in this
/// draw's iteration when it falls below the chance that the iteration meets a down window.
double flap_variate(std::uint64_t seed, int index);

/// The standard normal variate our generator gives GPU `gpu` under `seed`, clamped to +-5 (tests
/// and the draws share it).
double standard_normal(std::uint64_t seed, int gpu);

}  // namespace clustersim

#pragma once
// A scenario's `reliability:` section: how often each kind of component interrupts the job, how
// long an interruption takes to notice and to relaunch, and how often the job checkpoints. Pure
// data plus the job's failure rate; what it costs in training time is goodput.hpp's.
//
// Failures are a Poisson process: each component of a kind fails at 1 / mtbf_hours, independently,
// and any failure interrupts the whole synchronous job (one GPU lost stops every rank). The job's
// rate is the sum over kinds of count x rate, the counts taken from the job's share of the cluster.
#include <array>
#include <string>

#include "topologies/cluster_spec.hpp"
#include "topologies/units.hpp"
#include "topologies/yaml_reader.hpp"

namespace clustersim {

/// The kinds of component a failure is attributed to. `software` is one per job (a bug, a hang, a
/// dependency): its rate does not grow with the hardware.
enum class Component { gpu, node, nic, fabric_switch, link, software };
inline constexpr int kComponentKinds = 6;
/// The YAML name of each kind: gpu, node, nic, switch, link, software.
const char* component_name(Component c);

struct ComponentReliability {
  bool declared = false;
  double mtbf_hours = 0;  // mean time between failures of one such component
  std::string source;
};

struct ReliabilitySpec {
  bool declared = false;
  int line = 0;  // where `reliability:` is written
  std::array<ComponentReliability, kComponentKinds> components;
  Seconds detection_s = 0;  // from the failure until the job is known to be down (a collective timeout)
  Seconds relaunch_s = 0;   // scheduling, process start and NCCL set-up, before the checkpoint is read
  bool checkpoints = false;
  Seconds checkpoint_interval_s = 0;  // training time between the ends of two checkpoints' writes
  int checkpoint_line = 0;
};

/// Reads `reliability:`. MTBFs carry their unit in their name (`mtbf_hours`); a bare `mtbf`, zero,
/// a negative or an absurd value, and a checkpoint interval of zero or less are errors at their line.
ReliabilitySpec parse_reliability(const YamlField& field);

/// How many of each kind the job stands on: its GPUs, its nodes, their NICs, and the fabric's
/// switches and NIC/switch links in the job's share of the nodes (the whole fabric for a job on
/// every node; a leaf or a spine anywhere can take the job down). Software: 1.
struct ComponentCounts {
  std::array<double, kComponentKinds> count{};
  double of(Component c) const { return count[static_cast<std::size_t>(c)]; }
};
ComponentCounts job_components(const ClusterSpec& cluster, int job_gpus);

/// Interruptions per second of the job: sum over declared kinds of count / (mtbf_hours x 3600).
double failure_rate_per_s(const ReliabilitySpec& r, const ComponentCounts& counts);

}  // namespace clustersim

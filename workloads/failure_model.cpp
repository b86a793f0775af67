#include "workloads/failure_model.hpp"

#include "topologies/cluster.hpp"
#include "topologies/report.hpp"

namespace clustersim {

namespace {

// Ranges wide enough for any published figure and narrow enough that no rate overflows: 36 s (a
// per-job software rate can be high; a part failing faster is broken, not unreliable) to 1e11 h.
constexpr double kMinMtbf_h = 1e-2, kMaxMtbf_h = 1e11;
constexpr double kMaxDuration_s = 1e7;  // about 116 days: longer than any detection, relaunch or interval
constexpr double kMinInterval_s = 1e-3;

ComponentReliability read_component(const YamlField& f) {
  if (!f.is_map()) f.fail("expected {mtbf_hours: H, source: \"...\"}");
  if (auto bare = f.find("mtbf"))
    bare->fail("expected mtbf_hours: the unit is part of the name (hours between failures of one component)");
  f.expect_keys({"mtbf_hours", "source"});
  ComponentReliability c;
  c.declared = true;
  c.mtbf_hours = f.child("mtbf_hours").as_number_in(kMinMtbf_h, kMaxMtbf_h, "hours");
  const YamlField source = f.child("source");
  c.source = source.as_string();
  if (c.source.empty()) source.fail("expected where the MTBF comes from (paper and table, with its date)");
  return c;
}

}  // namespace

const char* component_name(Component c) {
  switch (c) {
    case Component::gpu: return "gpu";
    case Component::node: return "node";
    case Component::nic: return "nic";
    case Component::fabric_switch: return "switch";
    case Component::link: return "link";
    case Component::software: return "software";
  }
  return "?";
}

ReliabilitySpec parse_reliability(const YamlField& f) {
  f.expect_keys({"components", "detection_s", "relaunch_s", "checkpoint"});
  ReliabilitySpec r;
  r.declared = true;
  r.line = f.line();
  const YamlField components = f.child("components");
  if (!components.is_map() || components.node().size() == 0)
    components.fail("expected a mapping of component kinds (gpu, node, nic, switch, link, software) to {mtbf_hours, source}");
  components.expect_keys({"gpu", "node", "nic", "switch", "link", "software"});
  for (int k = 0; k < kComponentKinds; ++k)
    if (auto c = components.find(component_name(static_cast<Component>(k)))) r.components[static_cast<std::size_t>(k)] = read_component(*c);
  r.detection_s = f.child("detection_s").as_number_in(0, kMaxDuration_s, "s");
  r.relaunch_s = f.child("relaunch_s").as_number_in(0, kMaxDuration_s, "s");
  if (auto c = f.find("checkpoint")) {
    c->expect_keys({"interval_s"});
    r.checkpoints = true;
    r.checkpoint_line = c->line();
    const YamlField interval = c->child("interval_s");
    const double x = interval.as_number();
    if (!(x > 0)) interval.fail("expected a checkpoint interval above 0 s (training time between checkpoints)");
    r.checkpoint_interval_s = interval.as_number_in(kMinInterval_s, kMaxDuration_s, "s");
  }
  return r;
}

ComponentCounts job_components(const ClusterSpec& cluster, int job_gpus) {
  ComponentCounts out;
  auto set = [&](Component c, double n) { out.count[static_cast<std::size_t>(c)] = n; };
  const int nodes = (job_gpus + cluster.node.gpus - 1) / cluster.node.gpus;
  set(Component::gpu, job_gpus);
  set(Component::node, nodes);
  set(Component::nic, double(nodes) * cluster.node.nics);
  const TopologyReport t = count_topology(build_cluster(cluster));
  int fabric_links = 0;
  for (const auto& [type, n] : t.links_per_type)
    if (type == cluster.node.nic_link.type || type == cluster.fabric.switch_link.type) fabric_links += n;
  const double share = double(nodes) / cluster.fabric.nodes;
  set(Component::fabric_switch, share * t.switch_count());
  set(Component::link, share * fabric_links);
  set(Component::software, 1);
  return out;
}

double failure_rate_per_s(const ReliabilitySpec& r, const ComponentCounts& counts) {
  double rate = 0;
  for (int k = 0; k < kComponentKinds; ++k) {
    const ComponentReliability& c = r.components[static_cast<std::size_t>(k)];
    if (c.declared) rate += counts.count[static_cast<std::size_t>(k)] / (c.mtbf_hours * 3600);
  }
  return rate;
}

}  // namespace clustersim

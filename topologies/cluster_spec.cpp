#include "topologies/cluster_spec.hpp"

#include <limits>

#include "topologies/fabric.hpp"
#include "topologies/node_groups.hpp"

namespace clustersim {

const char* to_string(Sharing sharing) { return sharing == Sharing::equal ? "equal" : "latency"; }

const char* to_string(Routing routing) {
  switch (routing) {
    case Routing::ecmp: return "ecmp";
    case Routing::adaptive: return "adaptive";
    case Routing::spray: return "spray";
    case Routing::valiant: return "valiant";
  }
  return "?";
}

namespace {

// Ranges of the physical fields, wide enough for any real cluster and narrow enough that no finite
// value overflows to inf downstream or makes the graph allocate without bound.
constexpr double kMinBandwidth = 1e-3, kMaxBandwidth = 1e6;   // GB/s or Gb/s: 1 MB/s to 1 PB/s
constexpr double kMaxLatency_us = 1e5;                        // 100 ms: a hop across continents
constexpr double kMinEfficiency = 1e-3;
constexpr long kMaxGpusPerNode = 16384;      // NVL576 is the largest scale-up domain built
constexpr long kMaxFullMeshGpus = 64;        // a full mesh has n(n-1)/2 links: 8 GPUs in real ones
constexpr long kMaxRadix = 4096;                              // today's largest switch ASICs: 512 ports
constexpr double kMaxOversubscription = 1000;
constexpr long kMaxNicPorts = 8;                              // a NIC splits into at most a few planes
constexpr long kMaxPlanes = 8;
constexpr long kMaxQpsPerConnection = 64;                     // as many as a 128-port leaf's uplinks
constexpr long kMaxTorusSide = 65536;                         // three sides multiply well inside a long
// A bound far above any real cluster that keeps GPU and link ids well inside an int.
constexpr long kMaxGpus = 1L << 22;

/// A fabric field that only fabrics of type `owner` read is an error on others, not ignored.
void only_for(const YamlField& fabric, const std::string& type, const char* key, const char* owner) {
  if (type != owner && fabric.find(key))
    fabric.child(key).fail(std::string("expected no ") + key + ": only " + owner + " fabrics have it");
}

/// A count from 1 to max that fits the int the spec keeps it in.
int read_count(const YamlField& f, long max, const char* unit) { return static_cast<int>(f.as_integer_in(1, max, unit)); }

LinkSpec read_link(const YamlField& f, const ClusterSpec& spec, const char* bandwidth_key) {
  LinkSpec link;
  YamlField type = f.child("link_type");
  link.type = type.as_string();
  if (!spec.link_types.count(link.type)) type.fail("expected a link type declared under link_types");
  const bool gbit = std::string(bandwidth_key) == "bandwidth_Gbps";
  const double bw = f.child(bandwidth_key).as_number_in(kMinBandwidth, kMaxBandwidth, gbit ? "Gb/s" : "GB/s");
  link.bandwidth_Bps = gbit ? gbit_per_s(bw) : gbyte_per_s(bw);
  link.latency_s = microseconds(f.child("latency_us").as_number_in(0, kMaxLatency_us, "us"));
  return link;
}

NodeSpec read_node(const YamlField& f, const ClusterSpec& spec) {
  f.expect_keys({"gpus", "scale_up", "nics", "pcie"});
  NodeSpec node;
  node.gpus = read_count(f.child("gpus"), kMaxGpusPerNode, "GPUs");

  YamlField up = f.child("scale_up");
  up.expect_keys({"topology", "link_type", "bandwidth_GBps", "latency_us", "nvls", "second_level"});
  node.scale_up = up.child("topology").as_choice({"nvswitch", "full_mesh"}) == "nvswitch" ? ScaleUp::nvswitch
                                                                                           : ScaleUp::full_mesh;
  node.scale_up_link = read_link(up, spec, "bandwidth_GBps");
  // NVLink SHARP is a property of the switch (third-generation NVSwitch: HGX H100/H200, B200), so it
  // is declared, not guessed from the GPU's name; a full mesh has no switch to reduce in.
  if (auto nvls = up.find("nvls")) {
    node.nvls = nvls->as_bool();
    if (node.nvls && node.scale_up != ScaleUp::nvswitch)
      nvls->fail("expected false or no nvls on a full_mesh scale-up (NVLink SHARP reduces inside an NVSwitch)");
  }
  // A scale-up domain of several NVSwitch domains (NVL576-style): GPUs on first-level switches,
  // those on one second-level switch per node.
  if (auto second = up.find("second_level")) {
    second->expect_keys({"domain_gpus", "oversubscription"});
    if (node.scale_up != ScaleUp::nvswitch)
      second->fail("expected no second_level on a full_mesh scale-up (it joins NVSwitch domains)");
    const YamlField domain = second->child("domain_gpus");
    node.scale_up_domain_gpus = static_cast<int>(domain.as_integer_in(2, kMaxGpusPerNode, "GPUs"));
    if (node.scale_up_domain_gpus >= node.gpus || node.gpus % node.scale_up_domain_gpus != 0)
      domain.fail("expected a number of GPUs that divides node.gpus (" + std::to_string(node.gpus) +
                  ") into two or more first-level domains, got " + std::to_string(node.scale_up_domain_gpus));
    if (auto o = second->find("oversubscription")) node.scale_up_oversubscription = o->as_number_in(1, 1000, "down:up");
  }
  if (node.scale_up == ScaleUp::full_mesh && node.gpus > kMaxFullMeshGpus)
    f.child("gpus").fail("expected at most " + std::to_string(kMaxFullMeshGpus) + " GPUs in a full_mesh node (one link per pair), got " +
                         std::to_string(node.gpus));

  YamlField nics = f.child("nics");
  nics.expect_keys({"count", "ports", "link_type", "bandwidth_Gbps", "latency_us", "gpus"});
  node.nics = read_count(nics.child("count"), 2L * node.gpus, "NICs (2 per GPU)");
  if (auto ports = nics.find("ports")) node.nic_ports = read_count(*ports, kMaxNicPorts, "ports");
  node.nic_link = read_link(nics, spec, "bandwidth_Gbps");
  YamlField next_to = nics.child("gpus");
  if (next_to.size() != static_cast<std::size_t>(node.nics))
    next_to.fail("expected one GPU index per NIC (" + std::to_string(node.nics) + ")");
  for (std::size_t i = 0; i < next_to.size(); ++i) {
    long g = next_to.element(i).as_integer();
    if (g < 0 || g >= node.gpus) next_to.element(i).fail("expected a GPU index in [0, " + std::to_string(node.gpus) + ")");
    node.nic_gpu.push_back(static_cast<int>(g));
  }
  YamlField pcie = f.child("pcie");
  pcie.expect_keys({"link_type", "bandwidth_GBps", "latency_us"});
  node.pcie_link = read_link(pcie, spec, "bandwidth_GBps");
  return node;
}

FabricSpec read_fabric(const YamlField& f, const ClusterSpec& spec) {
  f.expect_keys({"type", "nodes", "nodes_per_unit", "planes", "dims", "groups", "routers_per_group", "global_links",
                 "routing", "qps_per_connection", "sharing", "link_type", "bandwidth_Gbps", "latency_us", "tiers", "sharp"});
  FabricSpec fabric;
  YamlField type = f.child("type");
  fabric.type = type.as_string();
  const FabricBuilder* builder = find_fabric(fabric.type);
  if (!builder) type.fail("expected a fabric type, one of: " + fabric_names());
  fabric.nodes = read_count(f.child("nodes"), kMaxGpus, "nodes");
  if (auto u = f.find("nodes_per_unit")) fabric.nodes_per_unit = read_count(*u, kMaxGpus, "nodes");
  if (auto p = f.find("planes")) fabric.planes = read_count(*p, kMaxPlanes, "planes");
  only_for(f, fabric.type, "planes", "multi_plane");
  for (const char* key : {"groups", "routers_per_group", "global_links"}) only_for(f, fabric.type, key, "dragonfly");
  if (auto g = f.find("groups")) fabric.groups = read_count(*g, kMaxGpus, "groups");
  if (auto r = f.find("routers_per_group")) fabric.routers_per_group = read_count(*r, kMaxRadix, "routers");
  if (auto h = f.find("global_links")) fabric.global_links = read_count(*h, kMaxRadix, "links");
  only_for(f, fabric.type, "dims", "torus");
  if (auto d = f.find("dims"))
    for (std::size_t i = 0; i < d->size(); ++i) fabric.dims.push_back(read_count(d->element(i), kMaxTorusSide, "routers"));
  if (auto r = f.find("routing")) {
    const std::string routing = r->as_choice({"ecmp", "adaptive", "spray", "valiant"});
    fabric.routing = routing == "ecmp"       ? Routing::ecmp
                     : routing == "adaptive" ? Routing::adaptive
                     : routing == "spray"    ? Routing::spray
                                             : Routing::valiant;
    // Valiant's detour is through another group: only a dragonfly has groups.
    if (fabric.routing == Routing::valiant && fabric.type != "dragonfly")
      r->fail("expected ecmp, adaptive or spray on a " + fabric.type + " fabric: valiant routes through an intermediate group of a dragonfly");
  }
  if (auto q = f.find("qps_per_connection")) {
    fabric.qps_per_connection = read_count(*q, kMaxQpsPerConnection, "queue pairs");
    // Spraying already spreads every flow over every path; adaptive picks one path a flow.
    if (fabric.qps_per_connection > 1 && fabric.routing != Routing::ecmp)
      q->fail(std::string("expected 1 under routing: ") + to_string(fabric.routing) +
              ": queue pairs are hashed onto paths only under routing: ecmp");
  }
  if (auto s = f.find("sharing")) fabric.sharing = s->as_choice({"latency", "equal"}) == "equal" ? Sharing::equal : Sharing::latency;
  if (auto s = f.find("sharp")) fabric.sharp = s->as_bool();
  fabric.switch_link = read_link(f, spec, "bandwidth_Gbps");
  if (auto tiers = f.find("tiers")) {
    for (std::size_t i = 0; i < tiers->size(); ++i) {
      YamlField t = tiers->element(i);
      t.expect_keys({"radix", "oversubscription", "switches"});
      TierSpec tier;
      tier.radix = read_count(t.child("radix"), kMaxRadix, "ports");
      if (auto o = t.find("oversubscription")) tier.oversubscription = o->as_number_in(1 / kMaxOversubscription, kMaxOversubscription, "(down:up ports)");
      // The leaves' count follows from the NICs; the tiers above are counted per pod or plane.
      if (auto n = t.find("switches")) {
        if (i == 0) n->fail("expected switches only on a tier above the leaves (the leaves are as many as the NICs need)");
        tier.switches = read_count(*n, kMaxGpus, "switches");
      }
      fabric.tiers.push_back(tier);
    }
  }
  if (static_cast<long>(fabric.nodes) * spec.node.gpus > kMaxGpus)
    f.child("nodes").fail("expected at most " + std::to_string(kMaxGpus) + " GPUs in all (nodes x node.gpus)");
  if (!builder->wires_planes()) {
    if (spec.node.nic_ports > 1)
      f.child("type").fail("expected multi_plane for NICs of " + std::to_string(spec.node.nic_ports) +
                           " ports (node.nics.ports); " + fabric.type + " wires one port per NIC");
  }
  builder->validate(fabric, spec.node, f);
  return fabric;
}

StorageSpec read_storage(const YamlField& f) {
  f.expect_keys({"description", "write_GBps", "read_GBps", "per_node_GBps", "source"});
  if (auto d = f.find("description")) d->as_string();
  StorageSpec s;
  s.declared = true;
  s.line = f.line();
  s.write_Bps = gbyte_per_s(f.child("write_GBps").as_number_in(kMinBandwidth, kMaxBandwidth, "GB/s"));
  s.read_Bps = f.find("read_GBps") ? gbyte_per_s(f.child("read_GBps").as_number_in(kMinBandwidth, kMaxBandwidth, "GB/s"))
                                   : s.write_Bps;
  s.per_node_Bps = gbyte_per_s(f.child("per_node_GBps").as_number_in(kMinBandwidth, kMaxBandwidth, "GB/s"));
  const YamlField source = f.child("source");
  if (source.as_string().empty()) source.fail("expected where the storage figures come from");
  return s;
}

}  // namespace

ClusterSpec parse_cluster_spec(const YamlField& root) {
  root.expect_keys({"name", "description", "gpu", "node_groups", "link_types", "node", "fabric", "storage"});
  ClusterSpec spec;
  spec.file = root.file();
  spec.name = root.child("name").as_string();
  if (auto d = root.find("description")) d->as_string();  // free text, but text
  spec.gpu = root.child("gpu").as_string();
  YamlField types = root.child("link_types");
  if (!types.is_map()) types.fail("expected a mapping of link type names");
  for (const auto& kv : types.node()) {
    if (!kv.first.IsScalar()) types.fail("expected link type names as keys");
    const std::string name = kv.first.Scalar();
    YamlField t = types.child(name);
    t.expect_keys({"bandwidth_efficiency", "note"});
    if (auto note = t.find("note")) note->as_string();
    LinkType lt{name, t.child("bandwidth_efficiency").as_number_in(kMinEfficiency, 1.0, "(a fraction of line rate)")};
    spec.link_types[name] = lt;
  }
  spec.node = read_node(root.child("node"), spec);
  spec.fabric = read_fabric(root.child("fabric"), spec);
  if (auto st = root.find("storage")) spec.storage = read_storage(*st);
  // Checked with the rest of the file; the scenario, which knows the GPU catalog, keeps them.
  if (auto g = root.find("node_groups")) read_node_groups(*g, spec.gpu, spec.fabric.nodes);
  return spec;
}

ClusterSpec load_cluster_spec(const std::string& path, const std::string& named_by) {
  return parse_cluster_spec(YamlField::load_file(path, named_by));
}

}  // namespace clustersim

#include "topologies/cluster.hpp"

#include <cassert>

#include "topologies/fabric.hpp"

namespace clustersim {

const char* to_string(VertexKind kind) {
  switch (kind) {
    case VertexKind::gpu: return "gpu";
    case VertexKind::nvswitch: return "nvswitch";
    case VertexKind::nic: return "nic";
    case VertexKind::fabric_switch: return "switch";
  }
  return "?";
}

int Cluster::nic_of_gpu(int gpu) const {
  const int node = node_of_gpu(gpu), local = local_of_gpu(gpu);
  for (int i = 0; i < nics_per_node(); ++i)
    if (spec.node.nic_gpu[i] == local) return node * nics_per_node() + i;
  return node * nics_per_node() + local % nics_per_node();
}

int Cluster::gpu_of_nic(int nic) const {
  const int node = nic / nics_per_node();
  return node * gpus_per_node() + spec.node.nic_gpu[rail_of_nic(nic)];
}

std::string Cluster::direction_name(LinkDir d) const {
  const Link& l = links[static_cast<std::size_t>(link_of(d))];
  const bool fwd = d == forward(link_of(d));
  return graph[static_cast<std::size_t>(fwd ? l.a : l.b)].name + " -> " + graph[static_cast<std::size_t>(fwd ? l.b : l.a)].name;
}

BytesPerSecond Cluster::effective_bandwidth_Bps(LinkId l) const {
  return links[l].bandwidth_Bps * spec.efficiency(links[l].type);
}

int Cluster::add_vertex(VertexKind kind, int tier, int node, std::string name) {
  int v = static_cast<int>(boost::add_vertex(VertexInfo{kind, tier, node, std::move(name)}, graph));
  switch_of_vertex.push_back(-1);
  return v;
}

LinkId Cluster::add_link(int a, int b, const LinkSpec& s) {
  LinkId id = static_cast<LinkId>(links.size());
  links.push_back(Link{a, b, s.type, s.bandwidth_Bps, s.latency_s});
  boost::add_edge(a, b, EdgeInfo{id}, graph);
  return id;
}

int Cluster::add_switch(int tier, std::string name) {
  int v = add_vertex(VertexKind::fabric_switch, tier, -1, std::move(name));
  int s = static_cast<int>(switches.size());
  switches.push_back(Switch{v, tier, {}});
  switch_of_vertex[v] = s;
  return s;
}

LinkId Cluster::connect_switches(int lower, int upper) {
  LinkId l = add_link(switches[lower].vertex, switches[upper].vertex, spec.fabric.switch_link);
  switches[lower].ports.push_back({upper, l});
  switches[upper].ports.push_back({lower, l});
  return l;
}

void Cluster::attach_nic_port(int port, int switch_index) {
  const int nic = port % nic_count();
  nic_port_link[port] = add_link(nic_vertex[nic], switches[switch_index].vertex, spec.node.nic_link);
  nic_switch[port] = switch_index;
}

namespace {

void build_node(Cluster& c, int node) {
  const NodeSpec& n = c.spec.node;
  const std::string prefix = "n" + std::to_string(node) + ".";
  // One NVSwitch per node, or (second_level) one per first-level domain and one above them, whose
  // links to each domain carry the domain's GPUs' bandwidth over the oversubscription.
  std::vector<int> nvswitch;
  if (n.scale_up == ScaleUp::nvswitch && n.scale_up_domain_gpus == 0)
    nvswitch.push_back(c.add_vertex(VertexKind::nvswitch, 0, node, prefix + "nvswitch"));
  if (n.scale_up == ScaleUp::nvswitch && n.scale_up_domain_gpus > 0) {
    const int top = c.add_vertex(VertexKind::nvswitch, 0, node, prefix + "nvswitch-l2");
    LinkSpec uplink = n.scale_up_link;
    uplink.bandwidth_Bps *= n.scale_up_domain_gpus / n.scale_up_oversubscription;
    for (int d = 0; d < n.gpus / n.scale_up_domain_gpus; ++d) {
      nvswitch.push_back(c.add_vertex(VertexKind::nvswitch, 0, node, prefix + "nvswitch" + std::to_string(d)));
      c.scale_up_uplink.push_back(c.add_link(nvswitch.back(), top, uplink));
    }
  }
  const int first_gpu = static_cast<int>(c.gpu_vertex.size());
  for (int g = 0; g < n.gpus; ++g) {
    int v = c.add_vertex(VertexKind::gpu, 0, node, prefix + "gpu" + std::to_string(g));
    c.gpu_vertex.push_back(v);
    const int domain = n.scale_up_domain_gpus > 0 ? g / n.scale_up_domain_gpus : 0;
    if (!nvswitch.empty()) c.gpu_switch_link.push_back(c.add_link(v, nvswitch[static_cast<std::size_t>(domain)], n.scale_up_link));
  }
  if (n.scale_up == ScaleUp::full_mesh) {
    // One link per unordered pair; both (i, j) and (j, i) index it.
    const std::size_t base = c.mesh_link.size();
    c.mesh_link.resize(base + static_cast<std::size_t>(n.gpus) * n.gpus, -1);
    for (int i = 0; i < n.gpus; ++i)
      for (int j = i + 1; j < n.gpus; ++j) {
        LinkId l = c.add_link(c.gpu_vertex[first_gpu + i], c.gpu_vertex[first_gpu + j], n.scale_up_link);
        c.mesh_link[base + i * n.gpus + j] = l;
        c.mesh_link[base + j * n.gpus + i] = l;
      }
  }
  for (int i = 0; i < n.nics; ++i) {
    int v = c.add_vertex(VertexKind::nic, 0, node, prefix + "nic" + std::to_string(i));
    c.nic_vertex.push_back(v);
    c.nic_pcie_link.push_back(c.add_link(c.gpu_vertex[first_gpu + n.nic_gpu[i]], v, n.pcie_link));
  }
}

}  // namespace

Cluster build_cluster(const ClusterSpec& spec) {
  Cluster c;
  c.spec = spec;
  for (int node = 0; node < spec.fabric.nodes; ++node) build_node(c, node);
  const std::size_t ports = c.nic_vertex.size() * static_cast<std::size_t>(spec.node.nic_ports);
  c.nic_port_link.assign(ports, -1);
  c.nic_switch.assign(ports, -1);
  find_fabric(spec.fabric.type)->build(c);
  for (std::size_t port = 0; port < c.nic_switch.size(); ++port)
    assert(c.nic_switch[port] >= 0 && "every NIC port is wired to a switch");
  return c;
}

Cluster load_cluster(const std::string& path, const std::string& named_by) {
  return build_cluster(load_cluster_spec(path, named_by));
}

}  // namespace clustersim

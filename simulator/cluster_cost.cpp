#include "simulator/cluster_cost.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "topologies/user_error.hpp"

namespace clustersim {
namespace {

double gbps(BytesPerSecond Bps) { return Bps * 8 / 1e9; }

/// The entry of `list` with the smallest speed at least `Gbps` (rounding below a part in a
/// thousand tolerated), or nullptr.
template <typename T, typename Speed>
const T* fastest_enough(const std::vector<T>& list, double Gbps, Speed speed) {
  const T* best = nullptr;
  for (const T& e : list)
    if (speed(e) >= Gbps * 0.999 && (!best || speed(e) < speed(*best))) best = &e;
  return best;
}

[[noreturn]] void missing(const PriceCatalog& c, const std::string& list, const std::string& what) {
  throw UserError(c.file, 0, list, "expected an entry for " + what + " (the cluster needs one to be priced)");
}

}  // namespace

ClusterCost price_cluster(const BillOfMaterials& bom, const ClusterSpec& spec, const PriceCatalog& catalog,
                          const std::vector<NodeGroup>& groups) {
  ClusterCost cost;
  const int gpn = spec.node.gpus;
  // Nodes per GPU model, the cluster's own first.
  std::vector<std::pair<std::string, long>> models = {{spec.gpu, 0}};
  for (long n = 0; n < bom.nodes; ++n) {
    const std::string& gpu = gpu_of_node(groups, spec.gpu, int(n));
    auto it = std::find_if(models.begin(), models.end(), [&](const auto& m) { return m.first == gpu; });
    if (it == models.end()) it = models.insert(models.end(), {gpu, 0});
    ++it->second;
  }
  for (const auto& [gpu, nodes] : models) {
    if (nodes == 0) continue;
    // Servers: the catalog's server of this GPU, the one with this many GPUs if there is one.
    const ServerPrice* server = nullptr;
    for (const ServerPrice& s : catalog.servers)
      if (s.gpu == gpu && (!server || (s.gpus == gpn && server->gpus != gpn))) server = &s;
    if (!server) missing(catalog, "servers", "GPU '" + gpu + "'");
    const double per_node = static_cast<double>(gpn) / server->gpus;
    cost.lines.push_back({"servers", server->name, gpu, nodes, server->price_usd * per_node, server->power_W * per_node});
    // NICs beyond those the server ships with (scaled as the server is).
    const long shipped = std::lround(server->nics * per_node);
    if (spec.node.nics > shipped) {
      const double Gbps = gbps(spec.node.nic_link.bandwidth_Bps) * spec.node.nic_ports;
      const NicPrice* nic = fastest_enough(catalog.nics, Gbps, [](const NicPrice& n) { return n.bandwidth_Gbps; });
      if (!nic) missing(catalog, "nics", fmt::format("a NIC of {:g} Gb/s", Gbps));
      cost.lines.push_back({"extra NICs", nic->name, gpu, nodes * (spec.node.nics - shipped), nic->price_usd, nic->power_W});
    }
  }
  for (const auto& [tier, bill] : bom.tiers) {
    const double Gbps = gbps(bill.port_Bps);
    if (bill.switches > 0) {
      const SwitchPrice* best = nullptr;
      long best_units = 0;
      for (const SwitchPrice& s : catalog.switches) {
        // A port of k times the speed splits into k (NDR's 400G into two NDR200 200G ports).
        const long split = std::lround(s.port_Gbps / Gbps);
        if (split < 1 || std::abs(split * Gbps - s.port_Gbps) > Gbps * 1e-3) continue;
        const long units = switch_units(bill, static_cast<int>(s.ports * split));
        if (!best || units * s.price_usd < best_units * best->price_usd) best = &s, best_units = units;
      }
      if (!best) missing(catalog, "switches", fmt::format("a switch of {:g} Gb/s ports (tier {})", Gbps, tier));
      cost.lines.push_back({fmt::format("switches tier {}", tier), best->name, "", best_units, best->price_usd,
                            best->power_W});
    }
    if (bill.cables == 0) continue;
    const PortPrice* optic = fastest_enough(catalog.optics, Gbps, [](const PortPrice& p) { return p.port_Gbps; });
    if (!optic) missing(catalog, "optics", fmt::format("an optic of {:g} Gb/s", Gbps));
    const PortPrice* cable = fastest_enough(catalog.cables, Gbps, [](const PortPrice& p) { return p.port_Gbps; });
    if (!cable) missing(catalog, "cables", fmt::format("a cable of {:g} Gb/s", Gbps));
    cost.lines.push_back({fmt::format("optics tier {}", tier), optic->name, "", 2L * bill.cables, optic->price_usd, optic->power_W});
    cost.lines.push_back({fmt::format("cables tier {}", tier), cable->name, "", bill.cables, cable->price_usd, 0});
  }
  for (const CostLine& l : cost.lines) {
    cost.capital_usd += l.price_usd();
    cost.power_W += l.power_W();
  }
  return cost;
}

ClusterCost fleet_share(const ClusterCost& cluster, const std::vector<std::pair<std::string, int>>& fleet_gpus, int gpus_per_node) {
  double cluster_gpus = 0, gpus = 0;
  for (const CostLine& l : cluster.lines)
    if (l.item == "servers") cluster_gpus += double(l.count) * gpus_per_node;
  for (const auto& [gpu, n] : fleet_gpus) gpus += n;
  ClusterCost out;
  for (CostLine l : cluster.lines) {
    double share = gpus / cluster_gpus;
    if (!l.gpu.empty()) {  // a model's servers (and their NICs): the fleet's GPUs of that model
      double of_model = 0;
      for (const auto& [gpu, n] : fleet_gpus) of_model += gpu == l.gpu ? n : 0;
      long nodes = 0;
      for (const CostLine& s : cluster.lines) nodes += s.item == "servers" && s.gpu == l.gpu ? s.count : 0;
      share = of_model / (double(nodes) * gpus_per_node);
    }
    l.unit_price_usd *= share;
    l.unit_power_W *= share;
    out.capital_usd += l.price_usd();
    out.power_W += l.power_W();
    out.lines.push_back(std::move(l));
  }
  return out;
}

double usd_per_year(const ClusterCost& cost, const Economics& e) {
  const double energy_kWh = cost.power_W / 1000 * kSecondsPerYear / 3600;
  return cost.capital_usd / e.amortisation_years + energy_kWh * e.usd_per_kWh;
}

double tokens_per_usd(double tokens_per_s, const ClusterCost& cost, const Economics& e) {
  const double usd = usd_per_year(cost, e);
  return usd > 0 ? tokens_per_s * kSecondsPerYear / usd : 0;
}

double tokens_per_MWh(double tokens_per_s, const ClusterCost& cost) {
  return cost.power_W > 0 ? tokens_per_s * 3600 / (cost.power_W / 1e6) : 0;
}

}  // namespace clustersim

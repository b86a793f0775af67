#pragma once
// The price and power catalog (scenarios/prices.yaml): list prices and power draw of GPU servers,
// NICs, switches, optics and cables, each with its source and date. Units are in the keys
// (price_usd, power_W, port_Gbps); a key without its unit, or an entry without a source or date, is
// a UserError at its line, so every figure that reaches a cost can be traced to where it came from.
#include <string>
#include <vector>

#include "topologies/units.hpp"

namespace clustersim {

/// What every entry carries besides its figures.
struct PricedItem {
  std::string name;
  double price_usd = 0;
  double power_W = 0;
  std::string source;
  std::string date;
  int line = 0;  // where the entry is written, for messages
};

/// A GPU server, or a rack that is one scale-up domain (GB200 NVL72), priced whole: GPUs, CPUs,
/// NVSwitches, and the compute-fabric NICs it ships with.
struct ServerPrice : PricedItem {
  std::string gpu;  // the catalog GPU (scenarios/gpus.yaml) it holds
  int gpus = 0;
  int nics = 0;     // compute-fabric NICs included in the price
};

struct NicPrice : PricedItem {
  double bandwidth_Gbps = 0;
};

struct SwitchPrice : PricedItem {
  int ports = 0;
  double port_Gbps = 0;
};

/// Optics are priced per port end (a twin-port 800G transceiver serving two 400G ports: half of it
/// per port); cables per cable.
struct PortPrice : PricedItem {
  double port_Gbps = 0;
};

struct PriceCatalog {
  std::string file;
  std::vector<ServerPrice> servers;
  std::vector<NicPrice> nics;
  std::vector<SwitchPrice> switches;
  std::vector<PortPrice> optics;
  std::vector<PortPrice> cables;
};

PriceCatalog load_price_catalog(const std::string& path, const std::string& named_by = "");

}  // namespace clustersim

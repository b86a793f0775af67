#include "simulator/price_catalog.hpp"

#include <initializer_list>

#include "topologies/user_error.hpp"
#include "topologies/yaml_reader.hpp"

namespace clustersim {
namespace {

// A list price above a billion dollars or a draw above a megawatt for one item is a typo.
constexpr double kMaxPriceUsd = 1e9;
constexpr double kMaxPowerW = 1e6;

/// A key that is an allowed key less its unit ("price" for "price_usd") names the unit it lacks;
/// any other unknown key is expect_keys' error.
void expect_keys_with_units(const YamlField& entry, std::initializer_list<const char*> allowed) {
  if (!entry.is_map()) entry.fail("expected a mapping with name, figures, source and date");
  for (const auto& kv : entry.node()) {
    const std::string key = kv.first.Scalar();
    bool known = false;
    for (const char* a : allowed) known = known || key == a;
    if (known) continue;
    for (const char* a : allowed) {
      const std::string with_unit = a;
      if (with_unit.size() > key.size() + 1 && with_unit.compare(0, key.size() + 1, key + "_") == 0)
        entry.child(key).fail("expected the unit in the key: " + with_unit);
    }
  }
  entry.expect_keys(allowed);
}

void read_common(const YamlField& e, PricedItem& item, bool has_power) {
  item.name = e.child("name").as_string();
  item.line = e.line();
  item.price_usd = e.child("price_usd").as_number_in(0, kMaxPriceUsd, "USD");
  if (has_power) item.power_W = e.child("power_W").as_number_in(0, kMaxPowerW, "W");
  item.source = e.child("source").as_string();
  if (item.source.empty()) e.child("source").fail("expected where the figures come from (a URL or a document)");
  item.date = e.child("date").as_string();
  if (item.date.empty()) e.child("date").fail("expected when the figures were published (YYYY-MM)");
}

template <typename Read>
void read_list(const YamlField& root, const char* key, Read read) {
  const auto list = root.find(key);
  if (!list) return;
  if (!list->is_sequence()) list->fail("expected a list of entries");
  for (std::size_t i = 0; i < list->size(); ++i) read(list->element(i));
}

}  // namespace

PriceCatalog load_price_catalog(const std::string& path, const std::string& named_by) {
  const YamlField root = YamlField::load_file(path, named_by);
  root.expect_keys({"servers", "nics", "switches", "optics", "cables"});
  PriceCatalog c;
  c.file = path;
  read_list(root, "servers", [&](const YamlField& e) {
    expect_keys_with_units(e, {"name", "gpu", "gpus", "nics", "price_usd", "power_W", "source", "date", "note"});
    ServerPrice s;
    read_common(e, s, true);
    s.gpu = e.child("gpu").as_string();
    s.gpus = static_cast<int>(e.child("gpus").as_integer_in(1, 1024, "GPUs"));
    s.nics = static_cast<int>(e.child("nics").as_integer_in(0, 2048, "NICs"));
    c.servers.push_back(s);
  });
  read_list(root, "nics", [&](const YamlField& e) {
    expect_keys_with_units(e, {"name", "bandwidth_Gbps", "price_usd", "power_W", "source", "date", "note"});
    NicPrice n;
    read_common(e, n, true);
    n.bandwidth_Gbps = e.child("bandwidth_Gbps").as_number_in(1, 1e5, "Gb/s");
    c.nics.push_back(n);
  });
  read_list(root, "switches", [&](const YamlField& e) {
    expect_keys_with_units(e, {"name", "ports", "port_Gbps", "price_usd", "power_W", "source", "date", "note"});
    SwitchPrice s;
    read_common(e, s, true);
    s.ports = static_cast<int>(e.child("ports").as_integer_in(1, 4096, "ports"));
    s.port_Gbps = e.child("port_Gbps").as_number_in(1, 1e5, "Gb/s");
    c.switches.push_back(s);
  });
  read_list(root, "optics", [&](const YamlField& e) {
    expect_keys_with_units(e, {"name", "port_Gbps", "price_usd", "power_W", "source", "date", "note"});
    PortPrice o;
    read_common(e, o, true);
    o.port_Gbps = e.child("port_Gbps").as_number_in(1, 1e5, "Gb/s");
    c.optics.push_back(o);
  });
  read_list(root, "cables", [&](const YamlField& e) {
    expect_keys_with_units(e, {"name", "port_Gbps", "price_usd", "source", "date", "note"});
    PortPrice p;
    read_common(e, p, false);
    p.port_Gbps = e.child("port_Gbps").as_number_in(1, 1e5, "Gb/s");
    c.cables.push_back(p);
  });
  return c;
}

}  // namespace clustersim

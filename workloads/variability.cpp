#include "workloads/variability.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>

namespace clustersim {

namespace {

constexpr double kClampSigmas = 5;
// The least speed or bandwidth fraction taken: below it a step or a transfer lasts a thousand
// times its calibrated time, which is a failure, not a straggler (and 1e-300 would overflow).
constexpr double kLeastFraction = 1e-3;

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

/// A uniform variate in (0, 1] from 53 random bits.
double unit(std::uint64_t bits) { return static_cast<double>((bits >> 11) + 1) * 0x1.0p-53; }

std::uint64_t gpu_bits(std::uint64_t seed, int gpu) {
  return splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(gpu) + 0x632BE59BD9B4E019ULL));
}

/// A number in (0, 1] (0.001 at least): a speed or a bandwidth as a fraction of the catalog's or
/// the link's.
double fraction(const YamlField& f, const std::string& what) {
  const double x = f.as_number();
  if (!(x >= kLeastFraction && x <= 1)) {
    std::ostringstream got;
    got << x;
    f.fail("expected " + what + " above 0 and at most 1 (0.001 at least), got " + got.str());
  }
  return x;
}

/// Keys of a mapping as integer ids in [0, count), each with its speed in (0, 1].
std::map<int, double> named_speeds(const YamlField& f, int count, const std::string& what) {
  if (!f.is_map() || f.node().size() == 0) f.fail("expected a mapping of " + what + " ids to speeds, such as {12: 0.8}");
  std::map<int, double> out;
  for (const auto& kv : f.node()) {
    const std::string key = kv.first.Scalar();
    const YamlField speed = f.child(key);
    const bool digits = !key.empty() && key.size() <= 9 && std::all_of(key.begin(), key.end(), ::isdigit);
    if (!digits || std::stol(key) >= count)
      speed.fail("expected a " + what + " id of the cluster, 0 to " + std::to_string(count - 1) + ", got '" + key + "'");
    out[static_cast<int>(std::stol(key))] = fraction(speed, "a speed (a fraction of the catalog's)");
  }
  return out;
}

SpeedDraw read_draw(const YamlField& f) {
  SpeedDraw d;
  const std::string kind = f.child("distribution").as_choice({"normal", "lognormal", "empirical"});
  if (kind == "normal") {
    f.expect_keys({"distribution", "mean", "stddev", "source"});
    d.distribution = SpeedDistribution::normal;
    if (auto m = f.find("mean")) d.mean = m->as_number_in(kLeastFraction, 2, "(speed)");
    YamlField sd = f.child("stddev");
    d.stddev = sd.as_number_in(0, 1, "(speed)");
    if (d.mean - kClampSigmas * d.stddev < kLeastFraction)
      sd.fail("expected a stddev below mean / 5, so that no draw within 5 sigma is a speed of 0 or less");
  } else if (kind == "lognormal") {
    f.expect_keys({"distribution", "median", "sigma", "source"});
    d.distribution = SpeedDistribution::lognormal;
    if (auto m = f.find("median")) d.median = m->as_number_in(kLeastFraction, 2, "(speed)");
    d.sigma = f.child("sigma").as_number_in(0, 1, "(log of speed)");
  } else {
    f.expect_keys({"distribution", "values", "source"});
    d.distribution = SpeedDistribution::empirical;
    const YamlField values = f.child("values");
    if (!values.is_sequence() || values.size() == 0) values.fail("expected a list of measured speeds, such as [1, 0.97, 0.92]");
    for (std::size_t i = 0; i < values.size(); ++i) {
      const YamlField v = values.element(i);
      d.values.push_back(v.as_number_in(kLeastFraction, 2, "(speed)"));
    }
  }
  if (auto s = f.find("source")) s->as_string();
  return d;
}

std::vector<LinkChange> read_links(const YamlField& f, bool failed) {
  std::vector<LinkChange> out;
  auto change = [&](const YamlField& at, const std::string& name) {
    LinkChange c;
    c.name = name;
    c.failed = failed;
    c.file = at.file();
    c.line = at.line();
    c.field = at.path();
    return c;
  };
  if (failed) {
    if (!f.is_sequence() || f.size() == 0) f.fail("expected a list of link names, such as [leaf0-spine1]");
    for (std::size_t i = 0; i < f.size(); ++i) out.push_back(change(f.element(i), f.element(i).as_string()));
    return out;
  }
  if (!f.is_map() || f.node().size() == 0) f.fail("expected a mapping of link names to bandwidth fractions, such as {leaf0-spine1: 0.5}");
  for (const auto& kv : f.node()) {
    const YamlField at_fraction = f.child(kv.first.Scalar());
    LinkChange c = change(at_fraction, kv.first.Scalar());
    c.bandwidth_fraction = fraction(at_fraction, "a fraction of the link's bandwidth (a link that carries nothing: failed_links)");
    out.push_back(std::move(c));
  }
  return out;
}

/// `flapping_links:` entries: {link, down_s, period_s}. A period must leave the link up some of
/// the time (a link down for good is a failed link) and be long enough to mean a flap.
std::vector<FlappingLink> read_flapping(const YamlField& f) {
  if (!f.is_sequence() || f.size() == 0)
    f.fail("expected a list of flapping links, such as [{link: leaf0-spine1, down_s: 30, period_s: 600}]");
  std::vector<FlappingLink> out;
  for (std::size_t i = 0; i < f.size(); ++i) {
    const YamlField e = f.element(i);
    e.expect_keys({"link", "down_s", "period_s", "note"});
    if (auto n = e.find("note")) n->as_string();
    FlappingLink fl;
    const YamlField name = e.child("link");
    fl.link.name = name.as_string();
    fl.link.failed = true;
    fl.link.file = name.file();
    fl.link.line = name.line();
    fl.link.field = name.path();
    fl.down_s = e.child("down_s").as_number_in(1e-6, 1e7, "s (how long each time it is down)");
    const YamlField period = e.child("period_s");
    fl.period_s = period.as_number_in(1e-6, 1e9, "s (time from one going down to the next)");
    if (!(fl.period_s > fl.down_s)) {
      std::ostringstream got;
      got << "got period_s " << fl.period_s << " with down_s " << fl.down_s;
      period.fail("expected a period longer than down_s, so the link comes back up (a link that stays down is a failed_links entry); " + got.str());
    }
    out.push_back(std::move(fl));
  }
  return out;
}

}  // namespace

double flap_variate(std::uint64_t seed, int index) {
  return unit(splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(index) + 0xF1A9F1A9F1A9F1A9ULL)));
}

double standard_normal(std::uint64_t seed, int gpu) {
  const std::uint64_t a = gpu_bits(seed, gpu), b = splitmix64(a);
  const double z = std::sqrt(-2 * std::log(unit(a))) * std::cos(2 * std::numbers::pi * unit(b));
  return std::clamp(z, -kClampSigmas, kClampSigmas);
}

VariabilitySpec parse_variability(const YamlField& f, const ClusterSpec& cluster) {
  f.expect_keys({"seed", "gpu_speed", "gpus", "nodes", "links", "failed_links", "flapping_links"});
  VariabilitySpec v;
  v.declared = true;
  if (auto s = f.find("seed")) v.seed = static_cast<std::uint64_t>(s->as_integer_in(0, 1L << 62));
  if (auto d = f.find("gpu_speed")) v.gpu_speed = read_draw(*d);
  if (auto g = f.find("gpus")) v.gpus = named_speeds(*g, cluster.gpu_count(), "GPU");
  if (auto n = f.find("nodes")) v.nodes = named_speeds(*n, cluster.fabric.nodes, "node");
  if (auto l = f.find("links")) v.links = read_links(*l, false);
  if (auto l = f.find("failed_links")) {
    auto failed = read_links(*l, true);
    v.links.insert(v.links.end(), failed.begin(), failed.end());
  }
  if (auto l = f.find("flapping_links")) v.flapping = read_flapping(*l);
  return v;
}

std::vector<double> gpu_speeds(const VariabilitySpec& v, int gpus, int gpus_per_node) {
  if (!v.varies_speed()) return {};
  std::vector<double> out(static_cast<std::size_t>(gpus), 1.0);
  for (int g = 0; g < gpus; ++g) {
    double& s = out[static_cast<std::size_t>(g)];
    const SpeedDraw& d = v.gpu_speed;
    switch (d.distribution) {
      case SpeedDistribution::normal: s = d.mean + d.stddev * standard_normal(v.seed, g); break;
      case SpeedDistribution::lognormal: s = d.median * std::exp(d.sigma * standard_normal(v.seed, g)); break;
      case SpeedDistribution::empirical: s = d.values[gpu_bits(v.seed, g) % d.values.size()]; break;
      case SpeedDistribution::none: break;
    }
    if (auto n = v.nodes.find(g / gpus_per_node); n != v.nodes.end()) s = n->second;
    if (auto named = v.gpus.find(g); named != v.gpus.end()) s = named->second;
  }
  return out;
}

}  // namespace clustersim

#include "workloads/jobs.hpp"

#include <filesystem>
#include <set>
#include <sstream>

#include "topologies/user_error.hpp"
#include "workloads/field_override.hpp"
#include "workloads/scenario_node.hpp"

namespace clustersim {

namespace {

/// "0-63" or 12: one node or an inclusive range.
void read_nodes(const YamlField& list, std::vector<int>& out) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YamlField e = list.element(i);
    const std::string text = e.as_string();
    const std::size_t dash = text.find('-');
    if (dash == std::string::npos) {
      out.push_back(static_cast<int>(e.as_integer_in(0, 1 << 20)));
      continue;
    }
    const auto number = [&](const std::string& t) {
      if (t.empty() || t.size() > 7 || t.find_first_not_of("0123456789") != std::string::npos)
        e.fail("expected a node or a range of nodes like 0-63, got '" + text + "'");
      return std::stoi(t);
    };
    const int lo = number(text.substr(0, dash)), hi = number(text.substr(dash + 1));
    if (hi < lo) e.fail("expected a range from low to high, got '" + text + "'");
    for (int v = lo; v <= hi; ++v) out.push_back(v);
  }
}

JobPlacement read_placement(const std::optional<YamlField>& f, const YamlField& job) {
  JobPlacement p;
  p.file = job.file();
  p.line = f ? f->line() : job.line();
  p.field = f ? f->path() : job.path() + ".placement";
  if (!f) return p;
  if (f->is_map()) {
    f->expect_keys({"nodes"});
    p.policy = PlacementPolicy::nodes;
    read_nodes(f->child("nodes"), p.nodes);
    return p;
  }
  const std::string policy = f->as_choice({"contiguous", "scattered", "rail-aligned"});
  p.policy = policy == "contiguous" ? PlacementPolicy::contiguous
             : policy == "scattered" ? PlacementPolicy::scattered
                                     : PlacementPolicy::rail_aligned;
  return p;
}

/// A job's `set:` entry or the command line's, applied as load_scenario applies --set; an error in
/// a `set:` entry names its line, not the command line.
ScenarioSpec load_job(const YamlField& job, const std::string& file, const std::vector<std::string>& overrides,
                      const std::optional<YamlField>& set) {
  try {
    if (auto s = job.find("scenario")) {
      const std::filesystem::path dir = std::filesystem::path(file).parent_path();
      std::filesystem::path p = s->as_string();
      if (p.is_relative()) p = dir / p;
      if (!std::filesystem::is_regular_file(p)) s->fail("expected a scenario file, got '" + p.lexically_normal().string() + "'");
      return load_scenario(p.lexically_normal().string(), overrides);
    }
    return load_scenario_node(job, file, overrides);
  } catch (const UserError& e) {
    if (!set || e.file() != "command line") throw;
    // The entry whose field the message quotes; else it came from the command line.
    for (std::size_t i = 0; i < set->size(); ++i) {
      const std::string text = set->element(i).as_string();
      if (e.expected().find("'" + text.substr(0, text.find('='))) != std::string::npos) set->element(i).fail(e.expected());
    }
    throw;
  }
}

/// `--set JOB.placement=VALUE`: a policy name, or nodes:LIST (as `{nodes: [...]}` lists them,
/// comma-separated: nodes:0-7,16). Errors are the command line's.
JobPlacement placement_override(const std::string& value) {
  JobPlacement p;
  p.file = "command line";
  p.line = 0;
  p.field = "--set";
  const std::string expected =
      "expected JOB.placement=contiguous, scattered, rail-aligned or nodes:LIST (such as nodes:0-7,16), got '" + value + "'";
  if (value == "contiguous" || value == "scattered" || value == "rail-aligned") {
    p.policy = value == "contiguous" ? PlacementPolicy::contiguous
               : value == "scattered" ? PlacementPolicy::scattered
                                      : PlacementPolicy::rail_aligned;
    return p;
  }
  if (value.rfind("nodes:", 0) != 0 || value.size() == 6 || value.back() == ',') throw UserError("command line", 0, "--set", expected);
  p.policy = PlacementPolicy::nodes;
  std::stringstream in(value.substr(6));
  for (std::string part; std::getline(in, part, ',');) {
    const std::size_t dash = part.find('-');
    const auto number = [&](const std::string& t) {
      if (t.empty() || t.size() > 7 || t.find_first_not_of("0123456789") != std::string::npos)
        throw UserError("command line", 0, "--set", expected);
      return std::stoi(t);
    };
    const int lo = number(part.substr(0, dash)), hi = dash == std::string::npos ? lo : number(part.substr(dash + 1));
    if (hi < lo) throw UserError("command line", 0, "--set", "expected a range from low to high, got '" + part + "' in '" + value + "'");
    for (int v = lo; v <= hi; ++v) p.nodes.push_back(v);
  }
  return p;
}

}  // namespace

bool is_jobs_scenario(const std::string& path) {
  try {
    const YamlField root = YamlField::load_file(path);
    return root.is_map() && root.find("jobs").has_value();
  } catch (const UserError&) {
    return false;  // load_scenario reports it
  }
}

JobsScenario load_jobs_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  const YamlField root = YamlField::load_file(path);
  for (const std::string& o : overrides)
    if (o.rfind("iterations=", 0) == 0) apply_field_override(root, o, {"iterations"}, "jobs scenario");
  root.expect_keys({"name", "description", "cluster", "jobs", "background", "iterations"});
  if (auto d = root.find("description")) d->as_string();
  JobsScenario js;
  js.file = path;
  js.name = root.child("name").as_string();
  if (auto it = root.find("iterations")) js.iterations = static_cast<int>(it->as_integer_in(1, 100));
  const YamlField cluster = root.child("cluster");
  std::filesystem::path cluster_path = cluster.as_string();
  if (cluster_path.is_relative()) cluster_path = std::filesystem::path(path).parent_path() / cluster_path;
  js.cluster_file = std::filesystem::absolute(cluster_path).lexically_normal().string();
  if (!std::filesystem::is_regular_file(js.cluster_file))
    cluster.fail("cannot open '" + cluster_path.lexically_normal().string() + "' (paths are relative to the scenario file)");

  const YamlField jobs = root.child("jobs");
  if (jobs.size() < 1) jobs.fail("expected a list of one or more jobs");
  std::set<std::string> names;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const YamlField job = jobs.element(i);
    if (!job.is_map()) job.fail("expected a job: {name, scenario: FILE, set: [...], placement} or a scenario's fields inline");
    const YamlField name = job.child("name");
    JobSpec spec;
    spec.name = name.as_string();
    if (spec.name.empty() || spec.name == "cluster" || spec.name.find_first_not_of(
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != std::string::npos)
      name.fail("expected a job name of letters, digits, _ and - (not 'cluster'), got '" + spec.name + "'");
    if (!names.insert(spec.name).second) name.fail("expected a name no other job has, got '" + spec.name + "' twice");
    if (auto c = job.find("cluster")) c->fail("expected no cluster of the job's own: every job runs on the scenario's cluster");
    const std::optional<YamlField> placement = job.find("placement"), set = job.find("set");
    spec.placement = read_placement(placement, job);
    std::vector<std::string> job_overrides{"cluster=" + js.cluster_file};
    if (job.find("scenario")) {
      job.expect_keys({"name", "scenario", "set", "placement"});
      if (set)
        for (std::size_t k = 0; k < set->size(); ++k) {
          const YamlField entry = set->element(k);
          if (entry.as_string().rfind("cluster", 0) == 0)
            entry.fail("expected a field of the job's scenario: the jobs share the cluster (--set cluster.PATH=VALUE sets it)");
          job_overrides.push_back(entry.as_string());
        }
    } else {
      if (set) set->fail("expected set: only beside scenario: FILE (write the fields inline instead)");
      YAML::Node(job.node()).remove("placement");  // the scenario's own fields remain
    }
    for (const std::string& o : overrides) {
      if (o.rfind("cluster.", 0) == 0) job_overrides.push_back(o);
      else if (o.rfind(spec.name + ".placement=", 0) == 0) spec.placement = placement_override(o.substr(spec.name.size() + 11));
      else if (o.rfind(spec.name + ".", 0) == 0) job_overrides.push_back(o.substr(spec.name.size() + 1));
    }
    spec.scenario = load_job(job, path, job_overrides, set);
    // Each job is placed by its placement, and draws its state once for the iteration: a
    // scenario's own stage_gpus placement and flapping links (whose up or down state is drawn per
    // iteration of one job) have no meaning here.
    if (!spec.scenario.stage_gpus.empty())
      job.fail("expected no parallel.stage_gpus in a job: its placement chooses its nodes (a node list puts ranks on the GPU models you want)");
    if (!spec.scenario.variability.flapping.empty())
      job.fail("expected no variability.flapping_links in a job: flapping is drawn per iteration of a single-job run");
    // One fabric: a job's calibration may set its GPU's compute, not the links the jobs share.
    for (const auto& [type, link] : spec.scenario.cluster.link_types)
      if (!js.jobs.empty() && js.jobs.front().scenario.cluster.efficiency(type) != link.bandwidth_efficiency)
        job.fail("expected the links calibrated as for job " + js.jobs.front().name + " (the jobs share them); link type " +
                 type + " has efficiency " + std::to_string(link.bandwidth_efficiency) + " here, " +
                 std::to_string(js.jobs.front().scenario.cluster.efficiency(type)) + " there");
    const int per_node = spec.scenario.cluster.node.gpus;
    spec.placement.nodes_needed = (spec.scenario.gpus() + per_node - 1) / per_node;
    js.jobs.push_back(std::move(spec));
  }
  for (const std::string& o : overrides) {
    const std::string job = o.substr(0, o.find('.'));
    if (o.rfind("iterations=", 0) == 0) continue;
    if (o.find('.') == std::string::npos || (job != "cluster" && !names.count(job)))
      throw UserError("command line", 0, "--set",
                      "expected cluster.FIELD=VALUE, JOB.FIELD=VALUE with JOB a job of the scenario, or iterations=K, got '" + o + "'");
  }
  if (auto bg = root.find("background"))
    for (std::size_t i = 0; i < bg->size(); ++i) {
      const YamlField b = bg->element(i);
      b.expect_keys({"link", "rate_GBps", "note"});
      if (auto n = b.find("note")) n->as_string();
      BackgroundTraffic t;
      const YamlField link = b.child("link"), rate = b.child("rate_GBps");
      t.link.name = link.as_string();
      t.link.file = path;
      t.link.line = link.line();
      t.link.field = link.path();
      const double gbps = rate.as_number_in(0, 1e6, "GB/s");
      if (gbps <= 0) rate.fail("expected a rate above 0 GB/s, got " + rate.as_string());
      t.rate_Bps = gbps * 1e9;
      t.rate_field = rate.path();
      t.rate_line = rate.line();
      js.background.push_back(std::move(t));
    }
  // Placements and background need the built cluster: checked now, before any simulation.
  const Cluster built = shared_cluster(js);
  std::vector<JobPlacement> placements;
  for (const JobSpec& j : js.jobs) placements.push_back(j.placement);
  const auto nodes = place_jobs(built, placements, path, jobs.line(), jobs.path());
  for (std::size_t j = 0; j < js.jobs.size(); ++j) {
    js.jobs[j].nodes = nodes[j];
    js.jobs[j].scenario.nodes = nodes[j];  // where its GPUs are, for their models (heterogeneous clusters)
  }
  return js;
}

Cluster shared_cluster(const JobsScenario& js) {
  Cluster cluster = build_cluster(js.jobs.front().scenario.cluster);
  for (const JobSpec& j : js.jobs) apply_link_changes(cluster, j.scenario.variability.links);
  apply_background(cluster, js.background);
  return cluster;
}

}  // namespace clustersim

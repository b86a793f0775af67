#include "support.hpp"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace clustersim::test {

CollectiveRequest request(Op op, int n, Bytes size, int channels, const char* protocol) {
  CollectiveRequest req;
  req.op = op;
  for (int g = 0; g < n; ++g) req.ranks.push_back(g);
  req.size_bytes = size;
  req.channels = channels;
  req.protocol = *find_protocol(protocol);
  return req;
}

const char* const kUniformSwitchYaml = R"(
name: uniform-switch
gpu: H100-SXM
link_types:
  ideal: {bandwidth_efficiency: 1.0}
node:
  gpus: 8
  scale_up: {topology: nvswitch, link_type: ideal, bandwidth_GBps: 100, latency_us: 1}
  nics: {count: 1, link_type: ideal, bandwidth_Gbps: 400, latency_us: 1, gpus: [0]}
  pcie: {link_type: ideal, bandwidth_GBps: 64, latency_us: 0.5}
fabric: {type: single_switch, nodes: 1, link_type: ideal, bandwidth_Gbps: 400, latency_us: 1}
)";

const char* const kSmallFatTreeYaml = R"(
name: small-fat-tree
gpu: H100-SXM
link_types:
  nvlink: {bandwidth_efficiency: 1.0}
  net: {bandwidth_efficiency: 0.5}
  pcie: {bandwidth_efficiency: 1.0}
node:
  gpus: 1
  scale_up: {topology: nvswitch, link_type: nvlink, bandwidth_GBps: 400, latency_us: 0.1}
  nics: {count: 1, link_type: net, bandwidth_Gbps: 400, latency_us: 0.7, gpus: [0]}
  pcie: {link_type: pcie, bandwidth_GBps: 30, latency_us: 0.4}
fabric:
  type: fat_tree
  nodes: 4
  link_type: net
  bandwidth_Gbps: 400
  latency_us: 0.3
  tiers:
    - {radix: 4, oversubscription: 1}
    - {radix: 2}
)";

Flow flow_on(const Route& r, int src_gpu, int dst_gpu, Bytes size) {
  Flow f;
  f.src_gpu = src_gpu;
  f.dst_gpu = dst_gpu;
  f.links = r.links;
  f.size_bytes = size;
  f.latency_s = r.latency_s;
  return f;
}

std::string source_path(const std::string& relative) { return std::string(CLUSTERSIM_SOURCE_DIR) + "/" + relative; }

std::string binary_path() { return CLUSTERSIM_BINARY; }

const Cluster& shipped_cluster(const std::string& relative) {
  static std::map<std::string, Cluster> loaded;
  auto it = loaded.find(relative);
  if (it == loaded.end()) it = loaded.emplace(relative, load_cluster(source_path(relative))).first;
  return it->second;
}

const GpuCatalog& shipped_catalog() {
  static const GpuCatalog catalog = load_gpu_catalog(source_path("scenarios/gpus.yaml"));
  return catalog;
}

const GpuModel& shipped_gpu(const std::string& name) {
  const GpuModel* gpu = shipped_catalog().find(name);
  if (!gpu) throw std::runtime_error("no " + name + " in the shipped catalog");
  return *gpu;
}

ModelSpec shipped_model(const std::string& name) {
  return load_model_spec(source_path("scenarios/models/" + name + ".yaml"));
}

double relative_error(double got, double want) { return std::abs(got - want) / want; }

Cluster cluster_from_yaml(const std::string& yaml, const std::string& name) {
  return build_cluster(parse_cluster_spec(YamlField::load_string(yaml, name)));
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> switches_on(const Cluster& c, const Route& r) {
  std::vector<std::string> out;
  for (LinkDir d : r.links) {
    const Link& l = c.links[link_of(d)];
    const int v = d == forward(link_of(d)) ? l.b : l.a;
    if (c.graph[v].kind == VertexKind::fabric_switch) out.push_back(c.graph[v].name);
  }
  return out;
}

std::string small_megatron_scenario(const std::string& tag, const std::string& cluster_yaml, const std::string& parallel,
                                    const std::string& extra) {
  std::string pattern = "/tmp/clustersim-" + tag + "-XXXXXX";
  REQUIRE(mkdtemp(pattern.data()) != nullptr);
  const std::string dir = pattern;
  REQUIRE(std::system(("mkdir -p " + dir + "/clusters").c_str()) == 0);
  std::ofstream(dir + "/gpus.yaml") << read_file(source_path("scenarios/gpus.yaml"));
  std::ofstream(dir + "/clusters/cluster.yaml") << cluster_yaml;
  std::ofstream(dir + "/scenario.yaml")
      << "name: " << tag << "\ncluster: clusters/cluster.yaml\nmodel: " << source_path("scenarios/models/megatron-1.7b.yaml")
      << "\ngpus: 32\nparallel: " << parallel << "\nschedule: 1f1b\nglobal_batch: 16\nmicrobatch: 1\nprecision: bf16\n"
         "recompute: selective\n"
      << extra;
  return dir + "/scenario.yaml";
}

std::string replaced_all(std::string text, const std::string& from, const std::string& to, const std::string& what) {
  std::size_t at = text.find(from);
  if (at == std::string::npos) throw std::runtime_error("'" + from + "' not in " + what);
  for (; at != std::string::npos; at = text.find(from, at + to.size())) text.replace(at, from.size(), to);
  return text;
}

nlohmann::json cli_json(const std::string& args) {
  const std::string json = temp_file("", ".json");
  const CliResult r = run_cli(args + " --json " + json);
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(read_file(json));
}

std::string shipped_with(const std::string& relative, const std::string& from, const std::string& to) {
  const std::string text = read_file(source_path(relative));
  return from.empty() ? text : replaced_all(text, from, to, relative);
}

std::string temp_file(const std::string& text, const std::string& suffix) {
  std::string pattern = "/tmp/clustersim-test-XXXXXX" + suffix;
  int fd = mkstemps(pattern.data(), static_cast<int>(suffix.size()));
  if (fd < 0) throw std::runtime_error("mkstemps failed");
  close(fd);
  std::ofstream(pattern) << text;
  return pattern;
}

UserError error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e;
  }
  throw std::runtime_error("expected a UserError");
}

int line_of(const std::string& text, const std::string& needle) {
  const std::size_t at = text.find(needle);
  INFO("looking for '" << needle << "'");
  REQUIRE(at != std::string::npos);
  REQUIRE(text.find(needle, at + 1) == std::string::npos);  // the line would be ambiguous
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
}

CliResult run_cli(const std::string& args) { return run_cli_bounded(args, 0); }

CliResult run_cli_bounded(const std::string& args, int timeout_s) {
  const std::string out = temp_file("", ".out"), err = temp_file("", ".err");
  const std::string bound = timeout_s > 0 ? "timeout " + std::to_string(timeout_s) + " " : "";
  const std::string cmd = bound + binary_path() + " " + args + " >" + out + " 2>" + err;
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.stdout_text = read_file(out);
  r.stderr_text = read_file(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}

}  // namespace clustersim::test

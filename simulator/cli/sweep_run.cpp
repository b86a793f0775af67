#include "simulator/cli/sweep_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "simulator/cli/commands.hpp"
#include "simulator/cli/slurm_verify.hpp"
#include "simulator/progress.hpp"
#include "simulator/slurm_array.hpp"
#include "topologies/cluster.hpp"

namespace clustersim::cli {

namespace {

/// Where the point files go: --keep-clusters DIR, else a folder removed when the sweep ends.
class PointFolder {
 public:
  explicit PointFolder(const std::string& keep) : keep_(!keep.empty()) {
    if (keep_) {
      std::error_code ec;
      std::filesystem::create_directories(keep, ec);
      if (ec || !std::filesystem::is_directory(keep))
        throw UserError("command line", 0, "--keep-clusters", "expected a folder that can be created, got '" + keep + "'");
      path_ = std::filesystem::absolute(keep).string();
      return;
    }
    std::string pattern = (std::filesystem::temp_directory_path() / "clustersim-sweep-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("cannot create a temporary folder for the sweep's cluster files");
    path_ = pattern;
  }
  ~PointFolder() {
    std::error_code ec;
    if (!keep_) std::filesystem::remove_all(path_, ec);
  }
  std::string file(std::size_t index) const { return path_ + fmt::format("/point-{}.yaml", index); }
  /// The GPU catalog beside the point files, where a cluster file's catalog is looked for, so a kept
  /// point reruns alone (`search SCENARIO --set cluster=DIR/point-0.yaml`).
  void hold_catalog(const std::string& catalog) const {
    std::error_code ec;
    std::filesystem::copy_file(catalog, path_ + "/gpus.yaml", std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) throw UserError("command line", 0, "--keep-clusters", "expected a folder the GPU catalog can be copied into: " + path_);
  }

 private:
  bool keep_;
  std::string path_;
};

/// A point's scenario: the user's, on the point's cluster file, with the user's GPU catalog. A
/// point the loader rejects is one line naming the point and what the loader expected.
ScenarioSpec load_point(const SweepRequest& o, const ScenarioSpec& base, const ClusterPoint& p, const std::string& file,
                        std::vector<std::string>& overrides) {
  overrides = o.overrides;
  overrides.push_back("cluster=" + file);
  overrides.push_back("catalog=" + std::filesystem::absolute(base.catalog_file).lexically_normal().string());
  try {
    return load_scenario(o.scenario, overrides);
  } catch (const UserError& e) {
    throw UserError("command line", 0, "--vary-cluster",
                    fmt::format("point {} cannot be built: {}{}{}", p.text(), e.field_path(), e.field_path().empty() ? "" : ": ",
                                e.expected()));
  }
}

/// With --slurm, the point's cluster file where every node reads it: DIR/cluster-<hash>.yaml, named
/// by its content so the manifest's --set lines name the cluster by content too.
std::string shared_point_file(const std::string& dir, const std::string& yaml) {
  const std::string folder = std::filesystem::absolute(dir).lexically_normal().string();
  const std::string file = folder + "/cluster-" + text_fingerprint(yaml) + ".yaml";
  write_file(file, yaml, "--slurm");
  return file;
}

/// Every point's best, verified: one point at a time, -j processes at once, or every point in one
/// Slurm job array.
void verify_points(const SweepRequest& o, const std::vector<std::vector<std::string>>& overrides,
                   const std::vector<std::vector<ScreenPrediction>>& best, std::vector<SweepRow>& rows) {
  if (o.slurm.empty()) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      Progress verifying(fmt::format("point {}/{} verifying", i + 1, rows.size()), o.progress);
      rows[i].verified = verify(o.scenario, overrides[i], best[i], o.jobs, verifying);
      verifying.finish();
    }
    return;
  }
  std::vector<std::vector<std::string>> tasks;
  std::vector<ScreenPrediction> screens;
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (const ScreenPrediction& p : best[i]) {
      tasks.push_back(configuration_overrides(overrides[i], p.config));
      screens.push_back(p);
    }
  Progress verifying(fmt::format("{} points verifying on Slurm", rows.size()), o.progress);
  const std::vector<Verified> all = verify_on_slurm({o.slurm, o.scenario, "sweep", o.sbatch, o.quiet}, tasks, screens, verifying);
  verifying.finish();
  std::size_t next = 0;
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t k = 0; k < best[i].size(); ++k) rows[i].verified.push_back(all[next++]);
}

}  // namespace

std::vector<SweepRow> run_sweep(const SweepRequest& o, const ScenarioSpec& base, const PriceCatalog& catalog) {
  const std::vector<ClusterPoint> points = sweep_points(o.dimensions);
  PointFolder folder(o.keep_clusters);
  folder.hold_catalog(base.catalog_file);
  // First every point is built, priced and screened (seconds at most each), so a point that
  // cannot be built, priced or run fails the sweep before any engine time is spent.
  std::vector<SweepRow> rows;
  std::vector<std::vector<std::string>> overrides(points.size());
  std::vector<std::vector<ScreenPrediction>> best(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    const ClusterPoint& p = points[i];
    const std::string yaml = point_cluster_yaml(base.cluster_file, p, base.gpus());
    write_file(folder.file(i), yaml, "--keep-clusters");
    const std::string file = o.slurm.empty() ? folder.file(i) : shared_point_file(o.slurm, yaml);
    const ScenarioSpec s = load_point(o, base, p, file, overrides[i]);
    SweepRow row;
    row.point = p;
    row.cluster_name = s.cluster.name;
    row.gpus = s.cluster.gpu_count();
    row.bom = bill_of_materials(build_cluster(s.cluster));
    row.cost = price_cluster(row.bom, s.cluster, catalog, s.node_groups);
    Progress bar(fmt::format("point {}/{} screening", i + 1, points.size()), o.progress);
    const ScreenResult result = Screen(s).run(search_space(s, o.vary), [&](long done, long total) { bar.update(done, total); });
    bar.finish();
    if (result.valid.empty())
      throw UserError("command line", 0, "--vary-cluster", "point " + p.text() + ": " + no_configuration(result));
    row.candidates = result.candidates;
    row.valid = static_cast<long>(result.valid.size());
    best[i].assign(result.valid.begin(), result.valid.begin() + std::min<long>(o.top, static_cast<long>(result.valid.size())));
    rows.push_back(std::move(row));
  }
  verify_points(o, overrides, best, rows);
  for (SweepRow& row : rows) {
    std::vector<Verified>& v = row.verified;
    std::stable_sort(v.begin(), v.end(), [](const Verified& a, const Verified& b) {
      if (a.ok != b.ok) return a.ok;
      return a.ok ? a.tokens_per_s > b.tokens_per_s : false;
    });
  }
  mark_pareto_front(rows);
  return rows;
}

}  // namespace clustersim::cli

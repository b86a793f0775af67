// Screen::run: the space level by level, outermost first, each level's rules removing whole blocks
// of what lies under it (tp x cp x pp: the GPUs and the layout; ep; microbatch: the batch and
// sequence parallelism; recompute x ZeRO: ZeRO's rules, then the point's costs are resolved once);
// every (virtual stages, schedule) candidate under a resolved point is judged by evaluate
// (search_screen_candidate.cpp). A candidate counts once however early a rule removes it.
#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "simulator/search_screen_state.hpp"
#include "topologies/user_error.hpp"

namespace clustersim {

namespace {

/// The rules in checking order: ScreenResult::removed and a Rejection's index follow it.
const char* const kRules[] = {"gpus", "layout", "expert parallelism", "batch", "sequence parallelism", "zero", "schedule", "memory"};

/// Counts what was screened and what each rule removed, and tells the progress callback now and then.
class Tally {
 public:
  Tally(ScreenResult& result, long total, const std::function<void(long, long)>& progress)
      : result_(result), total_(total), progress_(progress) {
    result_.candidates = total;
    result_.removed.resize(std::size(kRules));
    for (std::size_t i = 0; i < std::size(kRules); ++i) result_.removed[i].rule = kRules[i];
  }
  /// `count` candidates removed by `rule`; `why` is asked only for the rule's first removal.
  void remove(int rule, long count, const std::function<std::string()>& why) {
    ScreenRemoval& r = result_.removed[static_cast<std::size_t>(rule)];
    if (r.count == 0) r.example = why();
    r.count += count;
    done_ += count;
  }
  /// One (virtual stages, schedule) candidate judged: valid, or removed by the rule it names.
  template <typename Evaluate>
  void judge(Evaluate&& evaluate) {
    ++done_;
    if (progress_ && done_ - last_report_ >= 4096) {
      progress_(done_, total_);
      last_report_ = done_;
    }
    auto outcome = evaluate();
    if (auto* r = std::get_if<Rejection>(&outcome)) {
      --done_;
      remove(r->rule, 1, [&] { return r->why; });
      return;
    }
    result_.valid.push_back(std::get<ScreenPrediction>(std::move(outcome)));
  }
  const std::vector<ScreenRemoval>& removed() const { return result_.removed; }

 private:
  ScreenResult& result_;
  long total_, done_ = 0, last_report_ = 0;
  const std::function<void(long, long)>& progress_;
};

}  // namespace

Screen::Screen(const ScenarioSpec& base) : state_(std::make_unique<State>(base)) {
  if (base.model.encoder)
    throw UserError(base.file, 0, "model", "expected a model without an encoder: search does not screen multimodal models yet");
}
Screen::~Screen() = default;

ScreenResult Screen::run(const SearchSpace& space, const std::function<void(long, long)>& progress) {
  State& st = *state_;
  const ScenarioSpec& base = st.base;
  const ModelSpec& model = base.model;
  const int gpus = st.gpus;
  ScreenResult result;
  const long total = static_cast<long>(space.tp.size() * space.cp.size() * space.pp.size() * space.ep.size() *
                                       space.microbatch.size() * space.recompute.size() * space.zero_stage.size() *
                                       space.virtual_stages.size() * space.schedules.size());
  Tally tally(result, total, progress);
  const long per_zero = static_cast<long>(space.virtual_stages.size() * space.schedules.size());
  const long per_mb = per_zero * static_cast<long>(space.recompute.size() * space.zero_stage.size());
  const long per_ep_block = per_mb * static_cast<long>(space.microbatch.size());
  ScenarioSpec probe = base;

  for (int tp : space.tp)
    for (int cp : space.cp)
      for (int pp : space.pp) {
        // tp x cp x pp: the GPUs, then the loader's layout rules.
        const long block = per_ep_block * static_cast<long>(space.ep.size());
        ModelSpec local = model;  // what one context-parallel rank holds of each sequence
        local.seq_len = model.seq_len / cp;
        LayoutPoint point;
        point.local = &local;
        Configuration& c = point.config;
        c.tp = tp, c.cp = cp, c.pp = pp;
        if (gpus % (tp * cp * pp) != 0) {
          tally.remove(0, block, [&] { return fmt::format("tp {} x cp {} x pp {} does not divide the {} GPUs", tp, cp, pp, gpus); });
          continue;
        }
        c.dp = gpus / (tp * cp * pp);
        probe.layout.tp = tp, probe.layout.cp = cp, probe.layout.pp = pp, probe.layout.dp = c.dp;
        if (auto p = layout_problem(probe, gpus, false)) {
          tally.remove(1, block, [&] { return fmt::format("tp {} cp {} pp {}: parallel{}: {}", tp, cp, pp, p->field.empty() ? "" : "." + p->field, p->expected); });
          continue;
        }
        for (int ep : space.ep) {
          // ep: it divides dp and the routed experts.
          c.ep = ep;
          if (model.moe ? (c.dp % ep != 0 || model.moe->routed_experts % ep != 0) : ep != 1) {
            tally.remove(2, per_ep_block, [&] {
              return model.moe ? fmt::format("ep {} must divide dp {} and the {} routed experts", ep, c.dp, model.moe->routed_experts)
                               : fmt::format("ep {}: {} has no MoE layers", ep, model.name);
            });
            continue;
          }
          for (int mb : space.microbatch) {
            // microbatch: the global batch in whole steps; sequence parallelism's split of the tokens.
            c.microbatch = mb;
            const long per_step = static_cast<long>(mb) * c.dp;
            if (base.global_batch % per_step != 0) {
              tally.remove(3, per_mb, [&] {
                return fmt::format("global_batch {} is not a multiple of microbatch x dp ({} x {})", base.global_batch, mb, c.dp);
              });
              continue;
            }
            point.microbatches = static_cast<int>(base.global_batch / per_step);
            if (base.sequence_parallel && (long(mb) * model.seq_len / cp) % tp != 0) {
              tally.remove(4, per_mb, [&] { return fmt::format("tp {} does not divide the {} tokens of a microbatch on a GPU", tp, long(mb) * model.seq_len / cp); });
              continue;
            }
            for (Recompute rc : space.recompute)
              for (int zero : space.zero_stage) {
                // recompute x ZeRO: ZeRO's rule, then the point's costs, once for all beneath it.
                c.recompute = rc, c.zero_stage = zero;
                if (zero >= 2 && !base.overlap_grad_reduce) {  // as load_scenario: ZeRO-2/3 reduce during the backward
                  tally.remove(5, per_zero, [&] {
                    return fmt::format("zero {} needs parallel.overlap_grad_reduce: true (ZeRO-2 and 3 reduce-scatter each layer's gradients during the backward)", zero);
                  });
                  continue;
                }
                st.resolve(point);
                for (int v : space.virtual_stages)
                  for (const Schedule* sched : space.schedules) {
                    c.virtual_stages = v, c.schedule = sched;
                    tally.judge([&] { return st.evaluate(point, tally.removed()); });
                  }
              }
          }
        }
      }
  std::stable_sort(result.valid.begin(), result.valid.end(),
                   [](const ScreenPrediction& a, const ScreenPrediction& b) { return a.iteration_s < b.iteration_s; });
  if (progress) progress(total, total);
  return result;
}

}  // namespace clustersim

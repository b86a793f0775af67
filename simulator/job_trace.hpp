#pragma once
// One job's view of a trace that several jobs on one cluster write together (multi_job.hpp): its
// GPUs' processes are named after the job, and its pipeline arrows get ids no other job's can take.
// Each job numbers its arrows from the transfer's index and its own GPU count, so two jobs' ids
// would collide; job k of n keeps id * n + k, which is one-to-one over all jobs.
#include <cstdint>
#include <string>
#include <utility>

#include "simulator/trace_writer.hpp"

namespace clustersim {

class JobTrace final : public TraceSink {
 public:
  JobTrace(TraceWriter& all, std::string job, int index, int jobs)
      : all_(all), job_(std::move(job)), index_(static_cast<std::uint64_t>(index)), jobs_(static_cast<std::uint64_t>(jobs)) {}

  bool wants(int gpu, bool representative) const override { return all_.wants(gpu, representative); }
  void event(int gpu, int folded_from, const TraceRecord& record) override {
    if (record.flow_out == 0 && record.flow_in == 0) return all_.event(gpu, folded_from, record);
    TraceRecord r = record;
    if (r.flow_out != 0) r.flow_out = r.flow_out * jobs_ + index_;
    if (r.flow_in != 0) r.flow_in = r.flow_in * jobs_ + index_;
    all_.event(gpu, folded_from, r);
  }
  void place(int gpu, int rank, int replica) override {
    all_.place(gpu, rank, replica);
    all_.name_job(gpu, job_);
  }

 private:
  TraceWriter& all_;
  std::string job_;
  std::uint64_t index_, jobs_;
};

}  // namespace clustersim

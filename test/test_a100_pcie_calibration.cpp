// The A100-PCIe-80GB GEMM curve (scenarios/gpus.yaml) against the kernel timing it was fitted to:
// Sarathi-Serve's Table 2 (microsoft/sarathi-serve osdi-experiments/table-2/results.csv), the
// linear layers of a 1,024-token Yi-34B prefill at tensor parallel 2 on A100 80GB PCIe: 160.93 ms.
#include <catch2/catch.hpp>

#include "support.hpp"
#include "workloads/compute_model.hpp"

using namespace clustersim;

TEST_CASE("A100-PCIe-80GB: a 1,024-token Yi-34B prefill's GEMMs at TP 2 take Sarathi-Serve's 160.93 ms", "[catalog]") {
  ModelSpec batch = test::shipped_model("yi-34b");
  batch.seq_len = 1024;
  const GpuModel& pcie = test::shipped_gpu("A100-PCIe-80GB");
  Seconds gemms = 0;
  int count = 0;
  for (const ComputeOp& op : layer_forward_ops(batch, 1, 2, false))
    if (op.kind == ComputeKind::gemm) {
      gemms += op_time(pcie, "bf16", op);
      ++count;
    }
  CHECK(count == 5);  // QKV, output, gate, up, down
  CHECK(test::relative_error(60 * gemms, 0.16093) < 0.005);
  // The same GEMMs on the SXM card, whose curve this one shares in shape: 0.779 / 0.832 of its speed.
  Seconds sxm = 0;
  for (const ComputeOp& op : layer_forward_ops(batch, 1, 2, false))
    if (op.kind == ComputeKind::gemm) sxm += op_time(test::shipped_gpu("A100-SXM-80GB"), "bf16", op);
  CHECK(test::relative_error(gemms / sxm, 0.832 / 0.779) < 1e-3);
}

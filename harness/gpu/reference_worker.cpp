#include "gpu/reference_worker.h"

#include <string>

#include "gpu/fp8_inputs.h"
#include "gpu/reference_launch.h"
#include "store/atomic_file.h"

namespace evo::worker_device {

void run_reference_cases(const WorkerJob& job, const Support& support, CUstream stream) {
  for (const auto& c : job.cases) {
    emit(phase_event("reference", c.id));
    Problem p(job.task);
    p.allocate(c.shape, c.layout);
    p.fill(support, c, stream);
    const Shape& s = c.shape;
    const size_t n = size_t(s.elements(s.heads_q, s.seq_q));
    CUdeviceptr out = 0;
    check(cu().cuMemAlloc(&out, n * sizeof(float)), "cuMemAlloc(reference)", "runtime");
    const float descale[3] = {p.descale[0], p.descale[1], p.descale[2]};
    launch_reference(support, p.dq, p.dk, p.dv, out, p.scale, job.task.causal, descale, stream);
    check(cu().cuStreamSynchronize(stream), "reference kernel", "runtime");
    std::string host(n * sizeof(float), '\0');
    check(cu().cuMemcpyDtoH(host.data(), out, host.size()), "reference readback", "runtime");
    cu().cuMemFree(out);
    write_file_atomic(c.out_path, host);
    if (job.dump_inputs) dump_inputs(p, c.out_path);
    emit(case_done_event(c.id, c.out_path));
  }
}

}  // namespace evo::worker_device

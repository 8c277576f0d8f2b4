#include "gpu/reference_worker.h"

#include <string>

#include "gpu/fp8_inputs.h"
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
    float scale = p.scale;
    int causal = job.task.causal ? 1 : 0;
    TensorDesc dq = p.dq, dk = p.dk, dv = p.dv;
    void* args[] = {&dq, &dk, &dv, &out, &scale, &causal, &p.descale[0], &p.descale[1], &p.descale[2]};
    const long long rows = (long long)s.batch * s.heads_q * s.seq_q;
    const unsigned blocks = unsigned((rows * 32 + 255) / 256);
    check(cu().cuLaunchKernel(support.reference, blocks, 1, 1, 256, 1, 1, 0, stream, args, nullptr), "reference launch",
          "runtime");
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

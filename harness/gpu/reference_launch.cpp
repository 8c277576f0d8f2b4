#include "gpu/reference_launch.h"

namespace evo::worker_device {

void launch_reference(const Support& s, TensorDesc q, TensorDesc k, TensorDesc v, CUdeviceptr out, float scale,
                      bool causal, const float (&descale)[3], CUstream stream) {
  int mask = causal ? 1 : 0;
  float dq = descale[0], dk = descale[1], dv = descale[2];
  void* args[] = {&q, &k, &v, &out, &scale, &mask, &dq, &dk, &dv};
  const long long rows = (long long)q.batch * q.heads * q.seq;
  // Rowwise: a warp per query row, 8 a block. Tiled: 128 threads per 16 rows of one (batch, KV
  // head), its query heads' rows one after another.
  const long long group_rows = (long long)(q.heads / k.heads) * q.seq;
  const long long blocks =
      s.reference_tiled ? (long long)q.batch * k.heads * ((group_rows + 15) / 16) : (rows * 32 + 255) / 256;
  const unsigned threads = s.reference_tiled ? 128 : 256;
  check(cu().cuLaunchKernel(s.reference, unsigned(blocks), 1, 1, threads, 1, 1, 0, stream, args, nullptr),
        "reference launch", "runtime");
}

}  // namespace evo::worker_device

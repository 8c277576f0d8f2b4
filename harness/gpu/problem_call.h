// A worker's problem as a call of the ABI floor (evo_host_launch.h): its tensors, the inputs a
// two-stream case's second problem shares with the first, and the call the candidate gets.
#pragma once
#include <string>
#include <utility>

#include "common/evo_host_launch.h"
#include "gpu/worker_device.h"

namespace evo::worker_device {

inline EvoTensor evo_tensor(const TensorDesc& d) {
  return EvoTensor{d.data, {d.batch, d.heads, d.seq, d.dim}, {d.stride[0], d.stride[1], d.stride[2]}};
}

// A two-stream case's second problem reading the first's memory (CaseSpec::streams_share): its Q
// the first's view cut to its own rows (the first Sq/2), or its K and V the first's. Its own
// buffers stay allocated, unused, and hashed as before; the first's hashes see any change left.
inline void share_inputs(const Problem& first, Problem& second, const std::string& share) {
  if (share == "q") {
    const int rows = second.dq.seq;
    second.dq = first.dq;
    second.dq.seq = rows;
    second.descale[0] = first.descale[0];
  } else if (share == "kv") {
    second.dk = first.dk;
    second.dv = first.dv;
    second.descale[1] = first.descale[1];
    second.descale[2] = first.descale[2];
  }
}

// A problem as a call of the ABI floor (evo_host_launch.h), which gives its EvoAttnParams, its
// shape for the grid and split rules, and its tensors for the TMA maps as the exported runtime
// gives them for the same call.
// Non-zero `lengths` (Sq, Skv: a split case's primer of another shape) call the first Sq query and
// Skv key rows of each view instead: another shape through the same buffers.
inline EvoCall evo_call(const Problem& p, bool causal, std::pair<int, int> lengths = {0, 0}) {
  // The case's scale (1/sqrt(D) unless it says otherwise), as the reference; descales 1 unless fp8.
  EvoCall call{{evo_tensor(p.dq), evo_tensor(p.dk), evo_tensor(p.dv), evo_tensor(p.dout)},
               causal ? 1 : 0,
               p.scale,
               {p.descale[0], p.descale[1], p.descale[2]}};
  if (lengths.first > 0) {
    call.tensor[0].size[2] = call.tensor[3].size[2] = lengths.first;
    call.tensor[1].size[2] = call.tensor[2].size[2] = lengths.second;
  }
  return call;
}

}  // namespace evo::worker_device

// What the worker fills over Q's, K's and V's own draws in views of a few columns or one row
// (gpu/input_fill.h): the massive channels (hacker rounds 20 to 22: two bands of D/4; round 28's
// "massive_1", "massive_2", "massive_4" value cases: as many scattered channels), round 28's
// "k_offset" channels of K with a mean and "small_sink" row 0 of V. Declared on incomplete types
// so gpu/worker_device.h can include it; defined in channel_views.cpp.
#pragma once
#include <cuda.h>

namespace evo {
struct CaseSpec;
struct TensorFills;
namespace worker_device {

struct Support;
struct Problem;

// The views of `c` over `p`'s filled tensors (16-bit inputs only: an fp8 tensor is quantized
// whole), each on `stream` with its own lane of counters past `nonce` (ChannelFill::counter).
// Nothing in a shared view or a two-stream case.
void fill_channel_views(const Support& sup, const Problem& p, const CaseSpec& c, const TensorFills& f, CUstream stream,
                        unsigned long long nonce);

}  // namespace worker_device
}  // namespace evo

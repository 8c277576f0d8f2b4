#include "gpu/channel_views.h"

#include "gpu/input_fill.h"
#include "gpu/worker_device.h"

namespace evo::worker_device {

namespace {

// evo_fill of one view, its counter moved by `counter` past `nonce`.
void fill_view(const Support& sup, TensorDesc d, unsigned seed, unsigned tensor, FillParams fp, CUstream stream,
               unsigned long long nonce, uint64_t counter) {
  unsigned long long at = nonce + counter;
  void* args[] = {&d, &seed, &tensor, &fp, &at};
  check(cu().cuLaunchKernel(sup.fill, 1024, 1, 1, 256, 1, 1, 0, stream, args, nullptr), "input fill", "runtime");
}

}  // namespace

void fill_channel_views(const Support& sup, const Problem& p, const CaseSpec& c, const TensorFills& f, CUstream stream,
                        unsigned long long nonce) {
  if (sup.amax || !p.shared.empty() || c.two_streams) return;
  auto columns = [&](TensorDesc d, const ColumnBand& band) {  // the view of the band's columns
    d.data += CUdeviceptr(band.begin) * CUdeviceptr(p.in_elem);
    d.dim = band.end - band.begin;
    return d;
  };
  if (massive_channels(c))  // Q large where K is divided, and the reverse
    fill_massive_channels(c, f, p.bf16_inputs,
                          [&](unsigned t, const ColumnBand& band, const FillParams& fp, uint64_t counter) {
                            fill_view(sup, columns(t == 0 ? p.dq : p.dk, band), c.seed, t, fp, stream, nonce, counter);
                          });
  for (const ChannelFill& ch : k_offset_channels(c)) {  // K channels with a mean
    FillParams fk = f.k;
    fk.mean = ch.band.mean;
    fill_view(sup, columns(p.dk, ch.band), c.seed, 1, fk, stream, nonce, ch.counter);
  }
  if (small_sink_row(c)) {  // V's row 0 a view of one row, drawn small
    TensorDesc row0 = p.dv;
    row0.seq = 1;
    FillParams fv = f.v;
    fv.stddev *= kSmallSinkScale;
    fill_view(sup, row0, c.seed, 2, fv, stream, nonce, lane_counter(kSmallSinkLane));
  }
}

}  // namespace evo::worker_device

// The worker's device side: guarded buffers, the four tensors of a shape, the support
// kernels, and the helpers that turn a CUDA error into a failure with its outcome. Used only by
// gpu/worker.cpp (the worker process); split out to keep the worker's phases readable.
#pragma once
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/evo_host_launch.h"
#include "core/sha256.h"
#include "gpu/case_layout.h"
#include "gpu/channel_views.h"
#include "gpu/cuda_driver.h"
#include "gpu/fp8_inputs.h"
#include "gpu/input_fill.h"
#include "gpu/launch_draws.h"
#include "gpu/worker_clock.h"  // timed(): the worker reports where its time went
#include "gpu/worker_events.h"
#include "gpu/worker_protocol.h"

namespace evo::worker_device {

using nlohmann::json;

// A CUDA failure with the outcome it implies for the candidate.
struct CudaFailure {
  std::string outcome;  // "load", "runtime", "crash"
  std::string reason;
};

// One event to the parent, one line, through the protocol's one encoder (gpu/worker_events.h).
inline void emit(const WorkerEvent& e) { std::cout << encode_worker_event(e) << "\n" << std::flush; }

inline void check(CUresult r, const char* what, const char* outcome = "crash") {
  if (r != CUDA_SUCCESS) throw CudaFailure{outcome, fmt::format("{}: {}", what, cuda_error_text(r))};
}

// The same driver calls under one short name.
inline const CudaDriver& cu() { return cuda_driver(); }

// A device allocation with guard bands on both sides, filled with `guard_byte` (the case's junk
// kind: junk_bytes()). Under compute-sanitizer the bands are left out (guard = 0): memcheck
// sees allocation bounds, and a read that strays into a band would be in bounds to it.
struct GuardedBuffer {
  CUdeviceptr base = 0;
  size_t bytes = 0;  // usable bytes
  size_t guard = kGuardBytes;
  unsigned char guard_byte = kGuardByte;
  bool owned = true;  // false: a region of a case's pool (Problem::pool), freed with it
  CUdeviceptr data() const { return base + guard; }
  void allocate(size_t n, size_t guard_bytes, unsigned char band = kGuardByte) {
    CUdeviceptr at = 0;
    check(cu().cuMemAlloc(&at, n + 2 * guard_bytes), "cuMemAlloc", "runtime");
    place(at, n, guard_bytes, band, true);
  }
  // The same buffer at `at` (n + 2 guard bytes; `own`: freed by this buffer, else by whoever
  // allocated them), its bands filled.
  void place(CUdeviceptr at, size_t n, size_t guard_bytes, unsigned char band = kGuardByte, bool own = false) {
    base = at;
    owned = own;
    bytes = n;
    guard = guard_bytes;
    guard_byte = band;
    if (guard == 0) return;
    check(cu().cuMemsetD8(base, guard_byte, guard), "guard fill");
    check(cu().cuMemsetD8(base + guard + n, guard_byte, guard), "guard fill");
    // cuMemsetD8 runs on the legacy stream, which the worker's non-blocking stream does not wait for.
    check(cu().cuCtxSynchronize(), "guard fill");
  }
  bool guards_intact() const {
    std::vector<unsigned char> g(guard);
    if (guard == 0 || base == 0) return true;
    for (CUdeviceptr p : {base, base + guard + bytes}) {
      check(cu().cuMemcpyDtoH(g.data(), p, guard), "guard readback");
      for (unsigned char c : g)
        if (c != guard_byte) return false;
    }
    return true;
  }
  std::string read() const {
    std::string h(bytes, '\0');
    check(cu().cuMemcpyDtoH(h.data(), data(), bytes), "cuMemcpyDtoH");
    return h;
  }
  void release() {
    if (base && owned) cu().cuMemFree(base);
    base = 0;
    bytes = 0;
  }
  ~GuardedBuffer() { release(); }
};

// Mirrors EvoTensorDesc in support_kernels.cu.
struct TensorDesc {
  CUdeviceptr data;
  long long stride[3];
  int batch, heads, seq, dim;
};

struct Support {
  CUmodule module = nullptr;
  CUfunction fill = nullptr, reference = nullptr;
  bool reference_tiled = false;     // `reference` is evo_reference_tiled_* (gpu/reference_launch.h)
  CUfunction fill_out = nullptr;    // evo_fill of O's type: the pre-fill before every launch
  CUfunction fill_bits = nullptr;   // evo_fill_bits16: O's stale-bits pre-fill (random 16-bit patterns)
  CUfunction fill_words = nullptr;  // evo_fill_bf16: a split workspace's varied stale partials
  CUfunction hold = nullptr;        // evo_hold: a two-stream case's launches wait for it together
  CUfunction amax = nullptr;        // fp8 tasks (gpu/fp8_inputs.h)
  CUdeviceptr amax_bits = 0;
};

// The four tensors of one shape, laid out as the shape says.
struct Problem {
  explicit Problem(const Task& task)
      : in_elem(task.input_bytes()), elem(task.output_bytes()), bf16_inputs(task.dtype == DType::bf16) {}
  Shape shape;
  int in_elem = 2;           // bytes per element of Q, K, V (fp8 tasks: 1)
  int elem = 2;              // bytes per element of O
  bool bf16_inputs = false;  // Q, K, V in bf16 (massive_channel_scale)
  GuardedBuffer pool;        // a gate case's one allocation for the four (buffer_pool); first, so freed last
  GuardedBuffer q, k, v, o;
  GuardedBuffer workspace;        // split-KV kernels: kept for every launch of this problem
  size_t workspace_counters = 0;  // its leading bytes that stay 0 (the tile counters, evo_launch.h)
  // How many of the workspace's leading bytes are zero, kept as the package's launcher keeps it
  // (evo_host_launch.h): a launch over more query tiles than the last finds partials where its
  // counters go, and the package clears them first; so does the gate (hacker round 14's primer of
  // a smaller shape at the case's split count left partials there, and the honest split kernel
  // read them as counters).
  EvoWorkspaceUse workspace_use{0, std::numeric_limits<long long>::max(), 0, 0};
  TensorDesc dq{}, dk{}, dv{}, dout{};
  std::vector<int64_t> offsets;  // q, k, v, o: elements from the buffer start (packed layouts)
  bool padded = false;
  std::string shared;  // "qk": K is Q's view, "kv": V is K's, "qv", "qkv", the prefixes (gpu/case_layout.h)
  JunkBytes junk;      // what padding and guard bands hold (CaseSpec::junk)
  size_t guard_bytes = kGuardBytes;  // 0 under compute-sanitizer, for the workspace too
  float scale = 0;                   // the case's softmax scale
  float descale[3] = {1, 1, 1};      // Q, K, V: fp8 tasks' per-tensor descales (gpu/fp8_inputs.h)

  // `draw` (the case's seed): the classes of K, V and O in an "@A" view (case_layout).
  void allocate(const Shape& s, const std::string& layout = "", size_t guard = kGuardBytes,
                const std::string& junk_kind = "", uint32_t draw = 0) {
    shape = s;
    guard_bytes = guard;
    padded = !layout.empty();
    junk = junk_bytes(junk_kind, in_elem);
    const CaseLayout lay = case_layout(s, layout, in_elem, elem, draw);  // "@A" views are placed in bytes
    // A gate case's four buffers in one allocation, in a drawn order at drawn distances (hacker
    // round 8); otherwise each in its own.
    const BufferPool at = buffer_pool(lay, in_elem, elem, int64_t(guard), draw);
    if (at.pooled) pool.allocate(size_t(at.bytes), 0);
    int tensor = 0;
    auto place = [&](GuardedBuffer& b, const TensorPlacement& t, int heads, int seq, int bytes) {
      const size_t n = size_t(t.buffer_elements) * bytes;
      if (at.pooled)
        b.place(pool.data() + CUdeviceptr(at.start[tensor]), n, guard, junk.guard);
      else
        b.allocate(n, guard, junk.guard);
      ++tensor;
      TensorDesc d{b.data() + CUdeviceptr(t.offset * bytes),
                   {t.stride[0], t.stride[1], t.stride[2]},
                   s.batch,
                   heads,
                   seq,
                   s.head_dim};
      offsets.push_back(t.offset);
      return d;
    };
    dq = place(q, lay.q, s.heads_q, s.seq_q, in_elem);
    dk = place(k, lay.k, s.heads_kv, s.seq_kv, in_elem);
    dv = place(v, lay.v, s.heads_kv, s.seq_kv, in_elem);
    dout = place(o, lay.o, s.heads_q, s.seq_q, elem);
    // One tensor passed twice: the second view is the first's pointer (its own buffer stays
    // allocated, unused, so every buffer's guards and hashes work as before).
    shared = layout_shared(layout);
    if (k_at_q(shared)) dk.data = dq.data;  // "qk_prefix": Q's view holds K's rows, Q the first Sq
    if (v_at_q(shared)) dv.data = dq.data;
    if (shared == "kv") dv.data = dk.data;
    if (shared == kFusedQkv) {  // K and V at their head offsets in Q's buffer: one fused projection
      dk.data = dq.data + CUdeviceptr((lay.k.offset - lay.q.offset) * in_elem);
      dv.data = dq.data + CUdeviceptr((lay.v.offset - lay.q.offset) * in_elem);
    }
  }

  // Inputs from the case's distribution (gpu/input_fill.h); its softmax scale travels with them.
  // fp8 tasks: quantized per tensor, their descales kept beside them (gpu/fp8_inputs.h). A
  // non-zero `nonce` moves the generator's counter: content no launch has seen (the timing loop).
  void fill(const Support& sup, const CaseSpec& c, CUstream stream, unsigned long long nonce = 0) {
    scale = c.scale > 0 ? float(c.scale) : 1.0f / std::sqrt(float(shape.head_dim));
    // O's bytes outside its elements (an offset view's lead, stride gaps) hold the same junk;
    // its elements get a pre-fill before every launch (prefill_async).
    if (padded)
      for (GuardedBuffer* b : {&q, &k, &v, &o}) {
        check(cu().cuMemsetD8(b->data(), junk.padding, b->bytes), "padding fill");
        if (junk.padding_word) check(cu().cuMemsetD32(b->data(), junk.padding_word, b->bytes / 4), "padding fill");
      }
    if (padded) check(cu().cuCtxSynchronize(), "padding fill");  // legacy-stream memsets done before the fill
    if (padded && (junk.varied || junk.infinities)) vary_padding(sup, c.seed, stream);
    const TensorFills f = tensor_fills(c);
    auto run = [&](TensorDesc d, unsigned tensor, const FillParams& fp) {
      if (sup.amax) return fill_e4m3(sup, d, c.seed, tensor, fp, stream, nonce);
      void* args[] = {&d, const_cast<unsigned*>(&c.seed), &tensor, const_cast<FillParams*>(&fp), &nonce};
      check(cu().cuLaunchKernel(sup.fill, 1024, 1, 1, 256, 1, 1, 0, stream, args, nullptr), "input fill", "runtime");
      return 1.0f;
    };
    descale[0] = run(dq, 0, f.q);
    descale[1] = run(dk, 1, f.k);
    auto columns = [&](TensorDesc d, const ColumnBand& band) {  // the view of the band's columns
      d.data += CUdeviceptr(band.begin) * CUdeviceptr(in_elem);
      d.dim = band.end - band.begin;
      return d;
    };
    // A V offset sits on two drawn bands of columns, one of each sign, the rest zero-mean
    // (v_offset_bands, hacker round 5); an fp8 V's parts share one amax (hacker round 12: with
    // the offset on every column, column 0 told an overflow guard when fp16 sums could overflow).
    std::vector<std::pair<TensorDesc, FillParams>> v_parts{{dv, f.v}};
    if (f.v.mean != 0) {
      v_parts[0].second.mean = 0;
      for (const ColumnBand& band : v_offset_bands(c.seed, shape.head_dim, f.v.mean)) {
        FillParams fb = f.v;
        fb.mean = band.mean;
        fb.mean_every = kVOffsetDropEvery;  // not in every (b, head) sequence (hacker round 21)
        v_parts.emplace_back(columns(dv, band), fb);
      }
    }
    if (sup.amax) {
      descale[2] = fill_e4m3_parts(sup, v_parts, c.seed, 2, stream, nonce);
    } else {
      for (const auto& [d, fp] : v_parts) run(d, 2, fp);
      descale[2] = 1.0f;
    }
    fill_channel_views(sup, *this, c, f, stream, nonce);  // massive channels and the like (gpu/channel_views.h)
    // A shared view holds what was filled last (K's values for "qk" and "qk_prefix", whose K fill
    // covers Q's rows too; V's for the others: V is filled after Q and K), with its descale.
    if (shared == "qk" || shared == kQPrefixOfK) descale[0] = descale[1];
    if (shared == "kv" || (k_at_q(shared) && v_at_q(shared))) descale[1] = descale[2];
    if (v_at_q(shared)) descale[0] = descale[2];
    check(cu().cuStreamSynchronize(stream), "input fill");
  }

  // "finite" junk: every buffer's bytes (padding included; the tensors' own elements are filled
  // after) get evo_fill's values of another tensor index (finite_junk_fill: normal, some 16-byte
  // rows scaled to thousands), read as rows of 16 bytes; a tail under 16 bytes keeps the
  // constant byte. "nonfinite" junk: the same rows of NaN and +-Inf (nonfinite_junk_fill) in
  // fp16 and bf16 buffers; e4m3 keeps its two NaN codes (JunkBytes::padding_word). Ordered on
  // `stream` before the inputs' fill.
  void vary_padding(const Support& sup, unsigned seed, CUstream stream) {
    const GuardedBuffer* buffers[] = {&q, &k, &v, &o};
    for (unsigned i = 0; i < 4; ++i) {
      const int bytes = i == 3 ? elem : in_elem;
      const int row = 16 / bytes;
      TensorDesc d{buffers[i]->data(), {0, 0, row}, 1, 1, int(buffers[i]->bytes / 16), row};
      if (d.seq == 0 || (junk.infinities && bytes == 1)) continue;
      FillParams fp = junk.infinities ? nonfinite_junk_fill() : finite_junk_fill();
      unsigned tensor = 4 + i;
      unsigned long long nonce = 0;
      if (i < 3 && sup.amax) {  // fp8 inputs: quantized as the tensors are
        fill_e4m3(sup, d, seed, tensor, fp, stream);
        continue;
      }
      void* args[] = {&d, &seed, &tensor, &fp, &nonce};
      check(cu().cuLaunchKernel(i == 3 ? sup.fill_out : sup.fill, 1024, 1, 1, 256, 1, 1, 0, stream, args, nullptr),
            "padding fill", "runtime");
    }
  }

  // What a launch finds (gpu/launch_draws.h): in O's elements evo_fill's values with the drawn
  // seed, counter and spread, or nothing (the previous output stays); in a split workspace past
  // its tile counters stale partials (stale_partial_bits), as a package's workspace, reused
  // across calls of every shape, holds them, or (keep_partials: a gate case's second launch) what
  // the last launch left there. Ordered on `stream`, no wait.
  void prefill_async(const Support& sup, const Prefill& f, CUstream stream) {
    if (workspace.bytes > workspace_counters && workspace_counters > 0 && !f.keep_partials)
      stale_partials_async(sup, f, stream);
    if (f.keep_previous) return;
    TensorDesc d = dout;
    unsigned seed = f.seed, tensor = 3;
    if (f.stale_bits) {  // random 16-bit patterns, element by element
      unsigned long long bits_nonce = f.nonce;
      void* bits_args[] = {&d, &seed, &bits_nonce};
      check(cu().cuLaunchKernel(sup.fill_bits, 1024, 1, 1, 256, 1, 1, 0, stream, bits_args, nullptr),
            "output pre-fill (stale bits)", "runtime");
      return;
    }
    FillParams fp;
    fp.stddev = f.stddev;
    unsigned long long nonce = f.nonce;
    void* args[] = {&d, &seed, &tensor, &fp, &nonce};
    check(cu().cuLaunchKernel(sup.fill_out, 1024, 1, 1, 256, 1, 1, 0, stream, args, nullptr), "output pre-fill",
          "runtime");
  }

  // The partials past the tile counters: stale_partial_bits's pattern, and unless it is NaN,
  // finite values varied word by word over it (stale_partial_fill: evo_fill's bf16 values read as
  // 32-bit words, in rows of 16 bytes; a tail under 16 bytes keeps the pattern). Hacker round 5: a
  // combine that took a slot of two equal words as unwritten was exact on one pattern.
  void stale_partials_async(const Support& sup, const Prefill& f, CUstream stream) {
    const CUdeviceptr at = workspace.data() + workspace_counters;
    const size_t bytes = workspace.bytes - workspace_counters;
    const uint32_t pattern = stale_partial_bits(f);
    check(cu().cuMemsetD32Async(at, pattern, bytes / 4, stream), "stale workspace", "runtime");
    workspace_use.zero_prefix = std::min(workspace_use.zero_prefix, (long long)workspace_counters);
    if (pattern == 0xFFFFFFFFu || bytes < 16) return;
    TensorDesc d{at, {0, 0, 8}, 1, 1, int(bytes / 16), 8};
    unsigned seed = f.seed, tensor = kStalePartialTensor;
    FillParams fp = stale_partial_fill(f);
    unsigned long long nonce = f.nonce;
    void* args[] = {&d, &seed, &tensor, &fp, &nonce};
    check(cu().cuLaunchKernel(sup.fill_words, 1024, 1, 1, 256, 1, 1, 0, stream, args, nullptr), "stale workspace",
          "runtime");
  }

  // At least `n` bytes of split workspace (evo_launch.h) whose first `counters` bytes (the tile
  // counters, up to the partials' ml_offset) are 0: allocated on the first launch that needs it;
  // the kernel leaves its counters at 0, so later launches reuse it as it is. The partials hold
  // stale content from the start (NaN here, drawn values before every later launch:
  // prefill_async): the contract promises zero counters only, and a package's workspace holds
  // earlier calls' partials (hacker round 3: split_skips_empty_partial.cu read a fresh zero as
  // an empty split's partial).
  CUdeviceptr workspace_for(size_t n, size_t counters) {
    if (n == 0) return 0;
    if (workspace.bytes < n) {
      workspace.release();
      workspace.allocate(n, guard_bytes);
      check(cu().cuMemsetD8(workspace.data(), 0, counters), "workspace zeroing", "runtime");
      check(cu().cuMemsetD8(workspace.data() + counters, 0xFF, n - counters), "stale workspace", "runtime");
      check(cu().cuCtxSynchronize(), "workspace zeroing", "runtime");
      workspace_use.zero_prefix = (long long)counters;
    }
    workspace_counters = counters;
    return workspace.data();
  }

  // Before a split launch over `tiles` query tiles: the leading bytes the package would clear
  // (evo_workspace_clear_bytes, eager), zeroed on `stream` ahead of the launch.
  void clear_workspace_async(long long tiles, int splits, int rows, int head_dim, CUstream stream) {
    const long long bytes = evo_workspace_clear_bytes(workspace_use, tiles, splits, rows, head_dim, 0);
    if (bytes > 0)
      check(cu().cuMemsetD8Async(workspace.data(), 0, size_t(bytes), stream), "workspace clear", "runtime");
  }

  bool guards_intact() const {
    return q.guards_intact() && k.guards_intact() && v.guards_intact() && o.guards_intact() &&
           workspace.guards_intact();
  }

  // Whether O's buffer holds bytes outside O's elements (an offset view's lead, stride gaps, a
  // row's slack): in a model they belong to someone else (O a slice of a bigger buffer), so a
  // launch must leave them as they were (DeviceChecker::outside_elements, hacker round 4).
  bool o_has_gaps() const { return o.bytes > size_t(shape.elements(shape.heads_q, shape.seq_q)) * size_t(elem); }

  // Host copy of one tensor's elements in logical BHSD order (the layout-independent form both
  // sides use): its view's offset and strides applied, so neither a view's lead nor padding
  // between rows ever reaches a check. One entry point per tensor, so no caller can forget the
  // offset (a sanitized deep case once read O from its buffer's start).
  enum class Tensor { q, k, v, o };
  std::string logical(Tensor t) const {
    switch (t) {
      case Tensor::q: return logical_copy(q.read(), dq, in_elem, offsets[0]);
      case Tensor::k: return logical_copy(k.read(), dk, in_elem, offsets[1]);
      case Tensor::v: return logical_copy(v.read(), dv, in_elem, offsets[2]);
      case Tensor::o: break;
    }
    return logical_copy(o.read(), dout, elem, offsets[3]);
  }

  static std::string logical_copy(const std::string& raw, const TensorDesc& d, int elem_size, int64_t offset) {
    std::string out(size_t(d.batch) * d.heads * d.seq * d.dim * elem_size, '\0');
    size_t row = size_t(d.dim) * elem_size, pos = 0;
    for (int b = 0; b < d.batch; ++b)
      for (int h = 0; h < d.heads; ++h)
        for (int s = 0; s < d.seq; ++s, pos += row)
          std::memcpy(out.data() + pos,
                      raw.data() + (offset + b * d.stride[0] + h * d.stride[1] + s * d.stride[2]) * elem_size, row);
    return out;
  }

  std::string input_hash() const { return Sha256().update(q.read()).update(k.read()).update(v.read()).hex(); }
};

inline double ms_between(CUevent a, CUevent b) {
  float ms = 0;
  check(cu().cuEventElapsedTime(&ms, a, b), "cuEventElapsedTime");
  return ms;
}

// EvoAttnParams of evo_launch.h, the header the kernels compile.
using Params = EvoAttnParams;

inline const void* device_ptr(CUdeviceptr p) { return reinterpret_cast<const void*>(static_cast<uintptr_t>(p)); }

}  // namespace evo::worker_device

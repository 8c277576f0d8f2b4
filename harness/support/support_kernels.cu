// evo's own GPU kernels, compiled by NVRTC at run time (trusted code, never a candidate):
//  - evo_fill_*: deterministic inputs from (seed, tensor, logical index), independent of the
//    memory layout, so BHSD and BSHD runs see the same logical tensors; a non-zero `nonce`
//    shifts the counter, so the timing loop gives every timed sample inputs no launch has seen
//    (nonce 0: the fixed cases' values, unchanged);
//  - evo_amax + evo_fill_fp8: the same values, quantized to e4m3 with a per-tensor scale
//    448 / amax (amax over the whole logical tensor; the worker passes 1 / scale to the kernel
//    as the tensor's descale, harness/gpu/fp8_inputs.cpp);
//  - evo_reference_*: plain attention from the same low-precision inputs (fp8: the
//    dequantized values, float(e4m3) * descale), two passes (row max, then exp-sum and P·V)
//    so no online rescaling error enters the reference; scores and weights in FP32, their
//    sums over the row in double.
//  - evo_hash_bytes, evo_compare_*, evo_check_rows_*: checks on the GPU (gpu/device_checker.h);
//  - evo_fill_fp16/bf16 also pre-fill O before every launch (tensor 3: gpu/launch_draws.h), and
//    evo_hold holds two streams so a two-stream case's launches start together.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

struct EvoTensorDesc {
  void* data;
  long long stride[3];  // batch, head, seq (elements); head dim contiguous
  int batch, heads, seq, dim;
};

__device__ __forceinline__ unsigned long long evo_mix64(unsigned long long x) {
  // splitmix64 finalizer: a bijective avalanche mix of a counter.
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Standard normal from two 24-bit uniforms (Box-Muller), times stddev.
__device__ __forceinline__ float evo_normal(unsigned long long index, unsigned seed, unsigned tensor, float stddev) {
  unsigned long long h = evo_mix64(index ^ (static_cast<unsigned long long>(seed) << 40) ^
                                   (static_cast<unsigned long long>(tensor) << 62) ^ 0x5bd1e995ull * (tensor + 1));
  float u1 = (static_cast<float>(h >> 40) + 1.0f) * (1.0f / 16777216.0f);   // (0, 1]
  float u2 = static_cast<float>((h >> 16) & 0xFFFFFF) * (1.0f / 16777216.0f);  // [0, 1)
  return stddev * sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
}

template <typename T>
__device__ __forceinline__ T evo_cast(float x);
template <>
__device__ __forceinline__ __half evo_cast<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 evo_cast<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
__device__ __forceinline__ float evo_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float evo_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float evo_float(__nv_fp8_e4m3 x) { return static_cast<float>(x); }

// Mirrors FillParams in gpu/input_fill.h.
struct EvoFill {
  float stddev, mean, outlier_scale, sink;
  unsigned outlier_every;  // 0: none; else rows whose hash is 0 mod this are scaled (outliers)
  unsigned mean_every;     // 0: `mean` everywhere; else only in the (b, h) sequences kept (below)
  unsigned prefix_rows;    // 0: none; else odd batches repeat the batch before's first rows (below)
  unsigned pair_every;     // 0: none; else a row whose pair hash hits repeats the row before's draw (below)
  float grid_scale;        // 0: none; else each value rounded to e4m3 times this power of two (below)
  unsigned prefix_group;   // the shared prefix's group of batches (below): 0 is 2, pairs
};

// x rounded to the nearest e4m3 value times `scale` (a power of two), ties to even, saturated to
// +-448 x scale (hacker round 28's "e4m3_kv" and "e4m3_qkv" value cases). gpu/input_fill.h
// e4m3_grid is the host's mirror, the same operations: exact division by a power of two, integer
// rounding of the bits, rint, a product by a power of two.
__device__ __forceinline__ float evo_e4m3_grid(float x, float scale) {
  const float a = fabsf(x / scale);
  float r;
  if (a >= 0.015625f) {
    unsigned u = __float_as_uint(a);
    u = (u + 0x7FFFFu + ((u >> 20) & 1u)) & ~0xFFFFFu;
    r = fminf(__uint_as_float(u), 448.f);
  } else {
    r = rintf(a * 512.f) / 512.f;
  }
  return copysignf(r, x) * scale;
}

// Element i of the logical BHSD tensor: its value before any rounding, and where it lives.
__device__ __forceinline__ float fill_value(const EvoTensorDesc& t, unsigned long long i, unsigned seed, unsigned tensor,
                                            const EvoFill& f, unsigned long long nonce, long long* offset) {
  unsigned long long r = i;
  const int d = static_cast<int>(r % t.dim); r /= t.dim;
  const int s = static_cast<int>(r % t.seq); r /= t.seq;
  const int h = static_cast<int>(r % t.heads); r /= t.heads;
  int b = static_cast<int>(r);
  *offset = b * t.stride[0] + h * t.stride[1] + s * t.stride[2] + d;
  // A shared prefix (hacker round 22; gpu/input_fill.h shared_prefix_row is the host's mirror): in
  // an odd batch the first prefix_rows rows are drawn as the batch before's, bit for bit, whatever
  // else the fill does to them below.
  // Hacker round 31's close: with prefix_group n, every batch of a group of n takes the group's first
  // (repeat_interleave(n) of one prompt); 0 is round 22's pairs (an odd batch takes the one before).
  const int group = f.prefix_group ? static_cast<int>(f.prefix_group) : 2;
  if (f.prefix_rows && (b % group) && s < static_cast<int>(f.prefix_rows)) {
    i -= static_cast<unsigned long long>(b % group) * t.seq * t.heads * t.dim;
    b -= b % group;
  }
  // Padding rows (outlier_scale 0): a sequence whose first token is padding ends with it too, its
  // last row drawn as a copy of row 0 (bitwise, in Q, K and V alike; gpu/input_fill.h
  // fill_source_row is the host's mirror). Hacker round 18: V's two ends agreed bitwise in about
  // 1 in 1 152 sequences, so a kernel that took V as constant when they did was admitted. Hacker
  // round 19: 1 in outlier_every / 4 sequences (by a salted hash of (b, h)) whose row 0 is not padding
  // repeat row 0 at every position that is not padding (a repeated token between its padding
  // tokens), so any fixed set of probe rows agrees bitwise while the padding rows differ. The
  // sequence hash's salt 0x7E9EA7 is input_fill.h's kRepeatedSequenceSalt.
  const unsigned long long salt = static_cast<unsigned long long>(seed) << 32;
  auto row_hash_of = [&](unsigned long long row) { return evo_mix64(row ^ salt); };
  if (f.outlier_every && f.outlier_scale == 0.f && s > 0) {
    const unsigned long long first = i - static_cast<unsigned long long>(s) * t.dim, first_row = first / t.dim;
    const bool first_padding = row_hash_of(first_row) % f.outlier_every == 0;
    if ((s == t.seq - 1 && first_padding) ||
        (!first_padding && row_hash_of((first_row / t.seq) ^ 0x7E9EA7ull) % max(f.outlier_every / 4u, 1u) == 0 &&
         row_hash_of(i / t.dim) % f.outlier_every != 0))
      i = first;
  }
  // V's repeated rows (hacker round 28's "v_repeat"; gpu/input_fill.h fill_pair_source is the host's
  // mirror, kPairRowSalt its salt): a row that is not its sequence's first takes the row before's
  // draw where its hash is 0 mod pair_every and the row before's is not (pairs, never chains).
  if (f.pair_every) {
    const unsigned long long row = i / t.dim;
    auto pair_row = [&](unsigned long long q) { return evo_mix64(q ^ 0x9A1E5ull ^ salt) % f.pair_every == 0; };
    if (row % t.seq != 0 && pair_row(row) && !pair_row(row - 1)) i -= t.dim;
  }
  // A V offset band's mean is in every (b, h) sequence but one in mean_every, and always in the
  // one drawn from the seed (hacker round 21: a guard decided by head 0's V was exact while every
  // sequence had the same bands). The salts are input_fill.h's kVOffsetSequenceSalt and its
  // v_offset_sequence's 0x5E9, the host's mirror.
  float mean = f.mean;
  if (f.mean_every) {
    const unsigned long long vsalt = salt ^ 0x0FF5E7ull, sequence = static_cast<unsigned long long>(b) * t.heads + h;
    if (evo_mix64(vsalt) % (static_cast<unsigned long long>(t.batch) * t.heads) != sequence &&
        evo_mix64(sequence ^ vsalt ^ 0x5E9ull) % f.mean_every == 0)
      mean = 0.f;
  }
  float x = mean + evo_normal(i + nonce, seed, tensor, f.stddev);
  const unsigned long long row_hash = row_hash_of(i / t.dim);
  if (f.outlier_every && row_hash % f.outlier_every == 0) {
    // An outlier row: every element of this (b, h, s) row scaled. A padding row (scale 0) is +0.0
    // in every element in a third of the rows (as a matmul of a zero hidden state or a memset
    // leaves it), -0.0 in a third, and the normal values times 0 (signs mixed) in the rest, by the
    // row's hash, alike in Q, K and V (hacker round 15: every zero row mixed both signs, so a
    // kernel that tested a row's raw bits for zero never saw one).
    const unsigned long long kind = row_hash / f.outlier_every % 3;
    x = f.outlier_scale != 0.f || kind == 2 ? x * f.outlier_scale : kind == 0 ? 0.f : -0.f;
  }
  if (f.sink != 0.f && s == 0) x = f.sink;  // the sink key: position 0 of every (b, h)
  if (f.grid_scale != 0.f) x = evo_e4m3_grid(x, f.grid_scale);  // on e4m3's grid (a dequantized fp8 cache)
  return x;
}

template <typename T>
__device__ void fill(EvoTensorDesc t, unsigned seed, unsigned tensor, EvoFill f, unsigned long long nonce) {
  const unsigned long long total = static_cast<unsigned long long>(t.batch) * t.heads * t.seq * t.dim;
  for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<unsigned long long>(gridDim.x) * blockDim.x) {
    long long off;
    const float x = fill_value(t, i, seed, tensor, f, nonce, &off);
    static_cast<T*>(t.data)[off] = evo_cast<T>(x);
  }
}

extern "C" __global__ void evo_fill_fp16(EvoTensorDesc t, unsigned seed, unsigned tensor, EvoFill f,
                                         unsigned long long nonce) {
  fill<__half>(t, seed, tensor, f, nonce);
}
extern "C" __global__ void evo_fill_bf16(EvoTensorDesc t, unsigned seed, unsigned tensor, EvoFill f,
                                         unsigned long long nonce) {
  fill<__nv_bfloat16>(t, seed, tensor, f, nonce);
}

// Random 16-bit patterns in every element of a 16-bit tensor (O's stale-bits pre-fill,
// gpu/launch_draws.h prefill_bits): NaN of any payload and sign, +-Inf, subnormals and finite
// values of every size, mixed within each row, as torch.empty's stale memory holds them. Only
// the elements are written.
extern "C" __global__ void evo_fill_bits16(EvoTensorDesc t, unsigned seed, unsigned long long nonce) {
  const unsigned long long total = static_cast<unsigned long long>(t.batch) * t.heads * t.seq * t.dim;
  for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<unsigned long long>(gridDim.x) * blockDim.x) {
    unsigned long long r = i;
    const long long d = static_cast<long long>(r % t.dim); r /= t.dim;
    const long long s = static_cast<long long>(r % t.seq); r /= t.seq;
    const long long h = static_cast<long long>(r % t.heads); r /= t.heads;
    const long long off = static_cast<long long>(r) * t.stride[0] + h * t.stride[1] + s * t.stride[2] + d;
    const unsigned long long x = evo_mix64((i + nonce) ^ (static_cast<unsigned long long>(seed) << 40) ^ 0xB175ull);
    static_cast<unsigned short*>(t.data)[off] = static_cast<unsigned short>(x >> 48);
  }
}

// The largest |value| fill_value gives the tensor, as float bits (non-negative floats order as
// their bits, so atomicMax on the bits is the max, and the result does not depend on timing).
extern "C" __global__ void evo_amax(EvoTensorDesc t, unsigned seed, unsigned tensor, EvoFill f, unsigned long long nonce,
                                    unsigned* amax_bits) {
  const unsigned long long total = static_cast<unsigned long long>(t.batch) * t.heads * t.seq * t.dim;
  float m = 0.f;
  for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<unsigned long long>(gridDim.x) * blockDim.x) {
    long long off;
    m = fmaxf(m, fabsf(fill_value(t, i, seed, tensor, f, nonce, &off)));
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if ((threadIdx.x & 31) == 0) atomicMax(amax_bits, __float_as_uint(m));
}

// e4m3 of value * scale, saturated to ±448 (the amax element lands on 448 up to rounding).
extern "C" __global__ void evo_fill_fp8(EvoTensorDesc t, unsigned seed, unsigned tensor, EvoFill f, float scale,
                                        unsigned long long nonce) {
  const unsigned long long total = static_cast<unsigned long long>(t.batch) * t.heads * t.seq * t.dim;
  for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<unsigned long long>(gridDim.x) * blockDim.x) {
    long long off;
    const float x = fill_value(t, i, seed, tensor, f, nonce, &off);
    static_cast<__nv_fp8_storage_t*>(t.data)[off] = __nv_cvt_float_to_fp8(x * scale, __NV_SATFINITE, __NV_E4M3);
  }
}

// A weight of the reference: exp(score - m), the difference rounded on its own (both reference
// kernels, bitwise).
__device__ __forceinline__ double evo_ref_weight(float score, float m) { return double(expf(__fsub_rn(score, m))); }

// One warp per query row; lane owns head-dim columns lane, lane+32, ...
// out: FP32, logical BHSD, contiguous. Each input element is float(x) * its tensor's descale
// (1 for fp16 and bf16, where the product is exact).
template <typename T, int D>
__device__ void reference(EvoTensorDesc q, EvoTensorDesc k, EvoTensorDesc v, float* out, float scale, int causal, float dq,
                          float dk, float dv) {
  constexpr int kPer = D / 32;
  const int lane = threadIdx.x & 31;
  const long long row = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const long long rows = static_cast<long long>(q.batch) * q.heads * q.seq;
  if (row >= rows) return;
  const int i = static_cast<int>(row % q.seq);
  const int h = static_cast<int>((row / q.seq) % q.heads);
  const int b = static_cast<int>(row / (static_cast<long long>(q.seq) * q.heads));
  const int hk = h / (q.heads / k.heads);
  const T* qp = static_cast<const T*>(q.data) + b * q.stride[0] + h * q.stride[1] + i * q.stride[2];
  const T* kp = static_cast<const T*>(k.data) + b * k.stride[0] + hk * k.stride[1];
  const T* vp = static_cast<const T*>(v.data) + b * v.stride[0] + hk * v.stride[1];
  float qr[kPer];
#pragma unroll
  for (int c = 0; c < kPer; ++c) qr[c] = evo_float(qp[lane + 32 * c]) * dq;
  const int n = causal ? min(i + 1, k.seq) : k.seq;
  auto score = [&](int j) {
    const T* kr = kp + j * k.stride[2];
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < kPer; ++c) s = fmaf(qr[c], evo_float(kr[lane + 32 * c]) * dk, s);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s = __fadd_rn(s, __shfl_xor_sync(0xffffffffu, s, o));
    return __fmul_rn(s, scale);  // rounded here, never fused with the weight's subtraction
  };
  float m = -__int_as_float(0x7f800000);  // -inf; NVRTC has no <math.h>
  for (int j = 0; j < n; ++j) m = fmaxf(m, score(j));
  // The sums run over every key of the row in order, so they are held in double: in FP32 each
  // addend is rounded to the running sum's ulp, and where the weights are alike that rounding
  // goes one way. At 33 088 keys of weights 1 - 6e-4 (scale 1.2e-5) every addend past 16 384 lost
  // its 6e-4: the sum came out 2.5e-4 high and O as much low, so an exact kernel read as biased
  // away from zero and failed the bias bound (H200, 2026-12-01; lab/notes/reference-sums.md).
  double l = 0, acc[kPer];
#pragma unroll
  for (int c = 0; c < kPer; ++c) acc[c] = 0;
  for (int j = 0; j < n; ++j) {
    const double p = evo_ref_weight(score(j), m);
    l += p;
    const T* vr = vp + j * v.stride[2];
#pragma unroll
    for (int c = 0; c < kPer; ++c) acc[c] = fma(p, double(evo_float(vr[lane + 32 * c]) * dv), acc[c]);
  }
  float* o = out + row * D;
#pragma unroll
  for (int c = 0; c < kPer; ++c) o[lane + 32 * c] = float(acc[c] / l);
}

// ---- evo_reference_tiled_*: evo_reference_*'s output, bitwise, in 57 % of its deep-tier time ----
// evo_reference_* walks every key of a row twice in one warp: a case of a few hundred rows over 8k
// keys is a chain of 16k dependent steps (15 ms for 2x8x2x16x8192 on the H200, 2026-12-03), and
// every key row is read again from L2 by every query row (2.4 s for the deep tier's
// 1x16x16x32768x32768). Here 128 threads share 16 query rows of one (batch, KV head) and tiles of
// 32 keys in shared memory, and every number is made by evo_reference_*'s operations in its order:
// - a score is a warp's sum: 32 lane partials (fmaf chains over columns L, L + 32, ...) added as
//   __shfl_xor_sync adds them, pairs 16 apart, then 8, 4, 2, 1 (evo_ref_scores);
// - the row max is order-free (fmaxf);
// - the weights' sum and each output column's sum run in double over the keys in order, one thread
//   per (row, column) sum.
constexpr int kRefRows = 16, kRefKeys = 32, kRefThreads = 128;

// Leaf i of the butterfly's tree: lane bitreverse5(i). Taken in this order, the adds of
// __shfl_xor_sync's butterfly (16 apart first) are those of a binary counter: leaf i closes one
// level per trailing one bit of i.
__device__ __forceinline__ constexpr int evo_ref_leaf(int i) {
  return ((i & 1) << 4) | ((i & 2) << 2) | (i & 4) | ((i & 8) >> 2) | ((i & 16) >> 4);
}

// Shared memory of a 16-row block. Q and K keep column L + 32c at L * kPer + c, so a leaf's
// columns are one vector load; rows are padded by 4 floats so the 8 keys a warp reads at once fall
// in different banks.
template <int D>
struct EvoRefTile {
  static constexpr int kPitch = D + 4;
  float q[kRefRows][kPitch];
  float k[kRefKeys][kPitch];
  float v[kRefKeys][D];
  double p[kRefKeys][kRefRows];  // weights, key-major: a thread's rows are one vector load
  float m[kRefRows];
  double l[kRefRows];
  int n[kRefRows];           // keys row r sees; 0 past the last row
  long long row[kRefRows];   // row r's logical BHSD row of the output
};

template <int D>
__device__ __forceinline__ void evo_ref_load_vec(const float* src, float (&dst)[D / 32]) {
  if constexpr (D == 128) {
    const float4 x = *reinterpret_cast<const float4*>(src);
    dst[0] = x.x, dst[1] = x.y, dst[2] = x.z, dst[3] = x.w;
  } else {
    const float2 x = *reinterpret_cast<const float2*>(src);
    dst[0] = x.x, dst[1] = x.y;
  }
}

// The scores of row r against keys jset, jset + 8, jset + 16, jset + 24 of the tile, as
// evo_reference_*'s warp makes each: lane L's fmaf chain over its columns from 0, then the
// butterfly's adds, then the scale.
template <int D>
__device__ __forceinline__ void evo_ref_scores(const EvoRefTile<D>& t, int r, int jset, float scale, float (&out)[4]) {
  constexpr int kPer = D / 32;
  float open[4][5];  // per key, the partial sum waiting at each level of the tree
#pragma unroll
  for (int i = 0; i < 32; ++i) {
    const int lane = evo_ref_leaf(i);
    float qv[kPer];
    evo_ref_load_vec<D>(&t.q[r][lane * kPer], qv);
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      float kv[kPer];
      evo_ref_load_vec<D>(&t.k[jset + 8 * u][lane * kPer], kv);
      float a = 0.f;
#pragma unroll
      for (int c = 0; c < kPer; ++c) a = fmaf(qv[c], kv[c], a);
#pragma unroll
      for (int level = 0; level < 5; ++level) {
        if (!((i >> level) & 1)) {
          open[u][level] = a;
          break;
        }
        a = __fadd_rn(open[u][level], a);
      }
      if (i == 31) out[u] = __fmul_rn(a, scale);
    }
  }
}

// Rows [i0, i0 + 16) of head h of batch b; keys [j0, j0 + 32) into the tile (0 past `keys`).
template <typename T, int D>
__device__ __forceinline__ void evo_ref_load_keys(EvoRefTile<D>& t, const T* kp, const T* vp, long long k_row,
                                                  long long v_row, int j0, int keys, float dk, float dv, bool with_v) {
  constexpr int kPer = D / 32;
  for (int e = threadIdx.x; e < kRefKeys * D; e += kRefThreads) {
    const int jj = e / D, col = e % D, j = j0 + jj;
    t.k[jj][(col % 32) * kPer + col / 32] = j < keys ? evo_float(kp[j * k_row + col]) * dk : 0.f;
    if (with_v) t.v[jj][col] = j < keys ? evo_float(vp[j * v_row + col]) * dv : 0.f;
  }
}

template <typename T, int D>
__device__ void reference_tiled(EvoTensorDesc q, EvoTensorDesc k, EvoTensorDesc v, float* out, float scale, int causal,
                                float dq, float dk, float dv) {
  constexpr int kPer = D / 32;
  constexpr int kColGroups = D / 4, kRowGroups = kRefThreads / kColGroups, kMyRows = kRefRows / kRowGroups;
  __shared__ __align__(16) EvoRefTile<D> t;
  // The rows of one (batch, KV head): its g query heads' rows, head by head (a decode step's g
  // heads of one row each share a block and its K and V tiles).
  const int g = q.heads / k.heads;
  const long long group_rows = static_cast<long long>(g) * q.seq, tiles = (group_rows + kRefRows - 1) / kRefRows;
  const long long bid = blockIdx.x, rho0 = (bid % tiles) * kRefRows;
  const int hk = static_cast<int>((bid / tiles) % k.heads);
  const int b = static_cast<int>(bid / (tiles * k.heads));
  const T* kp = static_cast<const T*>(k.data) + b * k.stride[0] + hk * k.stride[1];
  const T* vp = static_cast<const T*>(v.data) + b * v.stride[0] + hk * v.stride[1];
  const int tid = threadIdx.x;
  for (int e = tid; e < kRefRows * D; e += kRefThreads) {
    const int r = e / D, col = e % D;
    const long long rho = rho0 + r;
    float x = 0.f;
    if (rho < group_rows) {
      const int h = hk * g + static_cast<int>(rho / q.seq), i = static_cast<int>(rho % q.seq);
      x = evo_float(static_cast<const T*>(q.data)[b * q.stride[0] + h * q.stride[1] + i * q.stride[2] + col]) * dq;
    }
    t.q[r][(col % 32) * kPer + col / 32] = x;
  }
  if (tid < kRefRows) {
    const long long rho = rho0 + tid;
    const int h = hk * g + static_cast<int>(rho / q.seq), i = static_cast<int>(rho % q.seq);
    t.n[tid] = rho >= group_rows ? 0 : causal ? min(i + 1, k.seq) : k.seq;
    t.row[tid] = (static_cast<long long>(b) * q.heads + h) * q.seq + i;
  }
  __syncthreads();
  int keys = 0;  // the most any row of the block sees
  for (int r = 0; r < kRefRows; ++r) keys = max(keys, t.n[r]);

  // Pass 1: each row's max score.
  const int r = tid >> 3, jset = tid & 7;
  const int n_r = t.n[r];
  float m = -__int_as_float(0x7f800000);
  for (int j0 = 0; j0 < keys; j0 += kRefKeys) {
    __syncthreads();  // the tile before is read
    evo_ref_load_keys<T, D>(t, kp, vp, k.stride[2], v.stride[2], j0, keys, dk, dv, false);
    __syncthreads();
    float s[4];
    evo_ref_scores<D>(t, r, jset, scale, s);
#pragma unroll
    for (int u = 0; u < 4; ++u)
      if (j0 + jset + 8 * u < n_r) m = fmaxf(m, s[u]);
  }
#pragma unroll
  for (int o = 4; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));  // the row's 8 threads
  if (jset == 0) t.m[r] = m;

  // Pass 2: the weights (in order, one thread per row) and P.V (one thread per row and column).
  const int cg = tid % kColGroups, rg = tid / kColGroups;
  int my_n[kMyRows];
  double acc[kMyRows][4];
#pragma unroll
  for (int a = 0; a < kMyRows; ++a) {
    my_n[a] = t.n[rg * kMyRows + a];
#pragma unroll
    for (int c = 0; c < 4; ++c) acc[a][c] = 0;
  }
  double l = 0;  // threads 0..15: row tid's sum of weights
  for (int j0 = 0; j0 < keys; j0 += kRefKeys) {
    __syncthreads();  // pass 1's max is written; the tile before is read
    evo_ref_load_keys<T, D>(t, kp, vp, k.stride[2], v.stride[2], j0, keys, dk, dv, true);
    __syncthreads();
    float s[4];
    evo_ref_scores<D>(t, r, jset, scale, s);
    const float mr = t.m[r];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int jj = jset + 8 * u;
      t.p[jj][r] = j0 + jj < n_r ? evo_ref_weight(s[u], mr) : 0.0;
    }
    __syncthreads();
    if (tid < kRefRows)
      for (int jj = 0; jj < kRefKeys && j0 + jj < t.n[tid]; ++jj) l += t.p[jj][tid];
    for (int jj = 0; jj < kRefKeys && j0 + jj < keys; ++jj) {
      const float4 vv = *reinterpret_cast<const float4*>(&t.v[jj][4 * cg]);
      const double vd[4] = {double(vv.x), double(vv.y), double(vv.z), double(vv.w)};
#pragma unroll
      for (int a = 0; a < kMyRows; ++a) {
        if (j0 + jj >= my_n[a]) continue;
        const double p = t.p[jj][rg * kMyRows + a];
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[a][c] = fma(p, vd[c], acc[a][c]);
      }
    }
  }
  if (tid < kRefRows) t.l[tid] = l;
  __syncthreads();
#pragma unroll
  for (int a = 0; a < kMyRows; ++a) {
    const int rr = rg * kMyRows + a;
    if (rho0 + rr >= group_rows) continue;  // past the group's last row
    float* o = out + t.row[rr] * D + 4 * cg;
#pragma unroll
    for (int c = 0; c < 4; ++c) o[c] = float(acc[a][c] / t.l[rr]);
  }
}

// Both references of each dtype and head dim, with the same parameters (gpu/reference_launch.cpp).
#define EVO_REFERENCES(DT, T, D)                                                                                  \
  extern "C" __global__ void evo_reference_##DT##_d##D(EvoTensorDesc q, EvoTensorDesc k, EvoTensorDesc v, float* out, \
                                                       float scale, int causal, float dq, float dk, float dv) {       \
    reference<T, D>(q, k, v, out, scale, causal, dq, dk, dv);                                                        \
  }                                                                                                                  \
  extern "C" __global__ void __launch_bounds__(kRefThreads)                                                          \
      evo_reference_tiled_##DT##_d##D(EvoTensorDesc q, EvoTensorDesc k, EvoTensorDesc v, float* out, float scale,    \
                                      int causal, float dq, float dk, float dv) {                                    \
    reference_tiled<T, D>(q, k, v, out, scale, causal, dq, dk, dv);                                                  \
  }
EVO_REFERENCES(fp16, __half, 64)
EVO_REFERENCES(fp16, __half, 128)
EVO_REFERENCES(bf16, __nv_bfloat16, 64)
EVO_REFERENCES(bf16, __nv_bfloat16, 128)
EVO_REFERENCES(fp8, __nv_fp8_e4m3, 64)
EVO_REFERENCES(fp8, __nv_fp8_e4m3, 128)

// Spins for `ns` nanoseconds of the global timer: a two-stream gate case's streams both wait
// for it, so the candidate's two launches, enqueued meanwhile, start together (gpu/worker.cpp).
extern "C" __global__ void evo_hold(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

// ---- Checks on the GPU (gpu/device_check.cpp): for cases too large to copy to the host. ----

// Keyed hash of a buffer: the sum (mod 2^64) over 8-byte words w_i of mix(w_i ^ mix(i + key)),
// plus the trailing bytes as one last word. Order-free (a sum), so any grid gives the same value;
// with a key drawn at run time a candidate cannot aim a change at a collision (each changed
// word moves the sum by an unpredictable 64-bit amount).
extern "C" __global__ void evo_hash_bytes(const unsigned char* data, unsigned long long bytes, unsigned long long key,
                                          unsigned long long* sum) {
  const unsigned long long words = bytes / 8;
  const unsigned long long* w = reinterpret_cast<const unsigned long long*>(data);
  unsigned long long acc = 0;
  for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<unsigned long long>(gridDim.x) * blockDim.x)
    acc += evo_mix64(w[i] ^ evo_mix64(i + key));
  if (blockIdx.x == 0 && threadIdx.x == 0 && bytes % 8 != 0) {
    unsigned long long tail = 0;
    for (unsigned long long b = words * 8; b < bytes; ++b) tail = tail << 8 | data[b];
    acc += evo_mix64(tail ^ evo_mix64(words + key));
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(sum, acc);
}

// Mirrors DeviceCompareSums in gpu/device_check.cpp.
struct EvoCompareSums {
  unsigned long long unwritten, nonfinite, bad, first_fail;  // first_fail: logical index, ~0 if none
  double err2, ref2;
  unsigned max_abs_bits;  // float bits of the largest |out - ref| over finite written elements
  double signed_err, abs_ref;  // sums of (out - ref)·sign(ref) and |ref|: the error's bias
};

__device__ __forceinline__ float evo_bits_to_float(unsigned short bits, __half) { return __half2float(__ushort_as_half(bits)); }
__device__ __forceinline__ float evo_bits_to_float(unsigned short bits, __nv_bfloat16) {
  return __bfloat162float(__ushort_as_bfloat16(bits));
}

// One thread's share of a comparison of the candidate's output with the FP32 reference, with the
// arithmetic of gates/correctness.cpp: poison = unwritten, NaN/Inf = non-finite, |d| > atol +
// rtol·|ref| = bad; sums of squares for the relative L2 error. The parent decides.
struct EvoCompareAcc {
  unsigned long long unwritten = 0, nonfinite = 0, bad = 0, first = ~0ull;
  double err2 = 0, ref2 = 0;
  float max_abs = 0.f;
  double signed_err = 0, abs_ref = 0;
};

// Element `index` (logical BHSD) of the output holds `bits`; the reference says `want`.
template <typename T>
__device__ __forceinline__ void evo_compare_one(EvoCompareAcc& a, unsigned short bits, float want, float atol,
                                                float rtol, unsigned long long index) {
  bool fail = false;
  if (bits == 0xFFFFu) {
    ++a.unwritten;
    fail = true;
  } else {
    const float v = evo_bits_to_float(bits, T());
    if ((__float_as_uint(v) & 0x7f800000u) == 0x7f800000u) {  // NaN or Inf (no <math.h> in NVRTC)
      ++a.nonfinite;
      fail = true;
    } else {
      const float diff = fabsf(v - want);
      a.max_abs = fmaxf(a.max_abs, diff);
      if (diff > atol + rtol * fabsf(want)) {
        ++a.bad;
        fail = true;
      }
      a.err2 += static_cast<double>(diff) * diff;
      a.ref2 += static_cast<double>(want) * want;
      // Toward |ref| positive, toward zero negative: rounding to nearest averages out, a
      // truncation does not (hacker round 19: o_round_toward_zero.cu).
      if (want != 0.f) a.signed_err += static_cast<double>(want > 0.f ? v - want : want - v);
      a.abs_ref += fabsf(want);
    }
  }
  if (fail && index < a.first) a.first = index;
}

// The warp's shares into `out` (all 32 lanes call it).
__device__ __forceinline__ void evo_compare_flush(EvoCompareAcc a, EvoCompareSums* out) {
#pragma unroll
  for (int k = 16; k > 0; k >>= 1) {
    a.unwritten += __shfl_xor_sync(0xffffffffu, a.unwritten, k);
    a.nonfinite += __shfl_xor_sync(0xffffffffu, a.nonfinite, k);
    a.bad += __shfl_xor_sync(0xffffffffu, a.bad, k);
    a.first = min(a.first, __shfl_xor_sync(0xffffffffu, a.first, k));
    a.err2 += __shfl_xor_sync(0xffffffffu, a.err2, k);
    a.ref2 += __shfl_xor_sync(0xffffffffu, a.ref2, k);
    a.max_abs = fmaxf(a.max_abs, __shfl_xor_sync(0xffffffffu, a.max_abs, k));
    a.signed_err += __shfl_xor_sync(0xffffffffu, a.signed_err, k);
    a.abs_ref += __shfl_xor_sync(0xffffffffu, a.abs_ref, k);
  }
  if ((threadIdx.x & 31) != 0) return;
  if (a.unwritten) atomicAdd(&out->unwritten, a.unwritten);
  if (a.nonfinite) atomicAdd(&out->nonfinite, a.nonfinite);
  if (a.bad) atomicAdd(&out->bad, a.bad);
  if (a.first != ~0ull) atomicMin(&out->first_fail, a.first);
  atomicAdd(&out->err2, a.err2);
  atomicAdd(&out->ref2, a.ref2);
  atomicMax(&out->max_abs_bits, __float_as_uint(a.max_abs));  // non-negative floats order as their bits
  atomicAdd(&out->signed_err, a.signed_err);
  atomicAdd(&out->abs_ref, a.abs_ref);
}

// The candidate's output (in its layout) against the FP32 reference (logical BHSD).
template <typename T>
__device__ void compare(EvoTensorDesc o, const float* ref, float atol, float rtol, EvoCompareSums* out) {
  const unsigned long long total = static_cast<unsigned long long>(o.batch) * o.heads * o.seq * o.dim;
  EvoCompareAcc a;
  for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<unsigned long long>(gridDim.x) * blockDim.x) {
    unsigned long long r = i;
    const int d = static_cast<int>(r % o.dim); r /= o.dim;
    const int s = static_cast<int>(r % o.seq); r /= o.seq;
    const int h = static_cast<int>(r % o.heads); r /= o.heads;
    const int b = static_cast<int>(r);
    const unsigned short bits =
        static_cast<const unsigned short*>(o.data)[b * o.stride[0] + h * o.stride[1] + s * o.stride[2] + d];
    evo_compare_one<T>(a, bits, ref[i], atol, rtol, i);
  }
  evo_compare_flush(a, out);
}

extern "C" __global__ void evo_compare_fp16(EvoTensorDesc o, const float* ref, float atol, float rtol, EvoCompareSums* out) {
  compare<__half>(o, ref, atol, rtol, out);
}
extern "C" __global__ void evo_compare_bf16(EvoTensorDesc o, const float* ref, float atol, float rtol, EvoCompareSums* out) {
  compare<__nv_bfloat16>(o, ref, atol, rtol, out);
}

// Query rows of the candidate's output, each recomputed in FP32 and compared with compare()'s
// arithmetic, for the timing loop's checks of timed samples (gpu/device_checker.h). Row r of the
// draw is mix(key + r) mod rows: the worker draws the key after the candidate's launch, so no
// kernel can know which rows are checked; key 0 checks row r = blockIdx.x (every row, one CTA
// each: the full check, one pass, no FP32 copy of the output). One CTA of 1024
// threads per row: its 32 warps split the visible keys, each keeps an online softmax over its
// share (FP32: the rescaling error, ~1e-6 relative, is far below any tolerance), the shares merge
// in shared memory, and warp 0 compares the row.
template <typename T, typename OT, int D>
__device__ void check_rows(EvoTensorDesc q, EvoTensorDesc k, EvoTensorDesc v, EvoTensorDesc o, float scale, int causal,
                           float dq, float dk, float dv, float atol, float rtol, unsigned long long key,
                           EvoCompareSums* out) {
  constexpr int kPer = D / 32, kWarps = 32;
  __shared__ float s_q[D], s_m[kWarps], s_l[kWarps];
  __shared__ float s_acc[kWarps][D];
  const float neg_inf = -__int_as_float(0x7f800000);
  const unsigned long long rows = static_cast<unsigned long long>(q.batch) * q.heads * q.seq;
  const unsigned long long row = key ? evo_mix64(key + blockIdx.x) % rows : blockIdx.x;
  const int i = static_cast<int>(row % q.seq);
  const int h = static_cast<int>((row / q.seq) % q.heads);
  const int b = static_cast<int>(row / (static_cast<unsigned long long>(q.seq) * q.heads));
  const int hk = h / (q.heads / k.heads);
  const T* qp = static_cast<const T*>(q.data) + b * q.stride[0] + h * q.stride[1] + i * q.stride[2];
  const T* kp = static_cast<const T*>(k.data) + b * k.stride[0] + hk * k.stride[1];
  const T* vp = static_cast<const T*>(v.data) + b * v.stride[0] + hk * v.stride[1];
  if (threadIdx.x < D) s_q[threadIdx.x] = evo_float(qp[threadIdx.x]) * dq;
  __syncthreads();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  float qr[kPer], acc[kPer];
#pragma unroll
  for (int c = 0; c < kPer; ++c) {
    qr[c] = s_q[lane + 32 * c];
    acc[c] = 0.f;
  }
  const int n = causal ? min(i + 1, k.seq) : k.seq;
  float m = neg_inf, l = 0.f;
  for (int j = warp; j < n; j += kWarps) {
    const T* kr = kp + j * k.stride[2];
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < kPer; ++c) s = fmaf(qr[c], evo_float(kr[lane + 32 * c]) * dk, s);
#pragma unroll
    for (int o2 = 16; o2 > 0; o2 >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o2);
    s *= scale;
    const float m_new = fmaxf(m, s);
    const float alpha = expf(m - m_new);  // 0 on the warp's first key (m = -inf)
    const float p = expf(s - m_new);
    l = l * alpha + p;
    const T* vr = vp + j * v.stride[2];
#pragma unroll
    for (int c = 0; c < kPer; ++c) acc[c] = fmaf(p, evo_float(vr[lane + 32 * c]) * dv, acc[c] * alpha);
    m = m_new;
  }
  if (lane == 0) {
    s_m[warp] = m;
    s_l[warp] = l;
  }
#pragma unroll
  for (int c = 0; c < kPer; ++c) s_acc[warp][lane + 32 * c] = acc[c];
  __syncthreads();
  if (warp != 0) return;
  float mx = neg_inf;
  for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, s_m[w]);
  float sum = 0.f, res[kPer];
#pragma unroll
  for (int c = 0; c < kPer; ++c) res[c] = 0.f;
  for (int w = 0; w < kWarps; ++w) {
    if (s_m[w] == neg_inf) continue;  // a warp with no visible key
    const float f = expf(s_m[w] - mx);
    sum += s_l[w] * f;
#pragma unroll
    for (int c = 0; c < kPer; ++c) res[c] = fmaf(s_acc[w][lane + 32 * c], f, res[c]);
  }
  const unsigned short* ob =
      static_cast<const unsigned short*>(o.data) + b * o.stride[0] + h * o.stride[1] + i * o.stride[2];
  EvoCompareAcc a;
#pragma unroll
  for (int c = 0; c < kPer; ++c)
    evo_compare_one<OT>(a, ob[lane + 32 * c], res[c] / sum, atol, rtol, row * D + lane + 32 * c);
  evo_compare_flush(a, out);
}

#define EVO_CHECK_ROWS(NAME, T, OT, D)                                                                           \
  extern "C" __global__ void __launch_bounds__(1024)                                                           \
      NAME(EvoTensorDesc q, EvoTensorDesc k, EvoTensorDesc v, EvoTensorDesc o, float scale, int causal, float dq, \
           float dk, float dv, float atol, float rtol, unsigned long long key, EvoCompareSums* out) {             \
    check_rows<T, OT, D>(q, k, v, o, scale, causal, dq, dk, dv, atol, rtol, key, out);                         \
  }
EVO_CHECK_ROWS(evo_check_rows_fp16_d64, __half, __half, 64)
EVO_CHECK_ROWS(evo_check_rows_fp16_d128, __half, __half, 128)
EVO_CHECK_ROWS(evo_check_rows_bf16_d64, __nv_bfloat16, __nv_bfloat16, 64)
EVO_CHECK_ROWS(evo_check_rows_bf16_d128, __nv_bfloat16, __nv_bfloat16, 128)
EVO_CHECK_ROWS(evo_check_rows_fp8_d64, __nv_fp8_e4m3, __nv_bfloat16, 64)
EVO_CHECK_ROWS(evo_check_rows_fp8_d128, __nv_fp8_e4m3, __nv_bfloat16, 128)

/*evo
{
  "summary": "Stage 3's mma.sync kernel with one producer warp doing all K/V cp.async into an mbarrier ring; consumer warps only do math",
  "parent": "3-wmma-pv/mma_pv",
  "params": {
    "BLOCK_M": [64, 128],
    "BLOCK_N": [64],
    "NWARPS": [4, 8],
    "PRODUCER_WARPS": [1],
    "STAGES": [2, 3]
  },
  "dtypes": ["fp16", "bf16"],
  "head_dims": [64, 128],
  "min_sm": 80,
  "notes": "NWARPS consumer warps (16 query rows each; the stage-3 mma.sync math: ldmatrix, m16n8k16 Q·Kᵀ and P·V, register online softmax, P kept in registers) + PRODUCER_WARPS=1 producer warp (the last warp) that issues every global->shared copy: the Q tile once, then the K/V tiles into a STAGES-deep smem ring, 16-byte cp.async.cg with zero-fill tails. Per stage three mbarriers: fullK and fullV (count 32), completed by cp.async.mbarrier.arrive.noinc from the producer lanes (the hardware arrives when that lane's copies land, so the producer never waits on its own copies), and empty (count NWARPS*32), which every consumer thread arrives on after its last ldmatrix of the stage; the producer waits on it before refilling. Consumers wait only on the producer, never on each other (no __syncthreads in the loop), so they can drift apart by up to STAGES-1 tiles; with separate K and V barriers Q·Kᵀ and softmax can start before V has landed. Waits use mbarrier.try_wait.parity on sm_90 and a test_wait.parity spin on sm_80. Register cost of the extra warp: registers are split per SM sub-partition, so 10 warps/SM (2 CTAs of 4+1) or 9 (1 CTA of 8+1) cap them at 168 (stage 3 used 252 at D=128), and 15 warps (3 CTAs of 4+1 at D=64) at 128. At D=128 only half of Q's A-fragments stay in registers and the other half are re-read by ldmatrix each tile (+4 ldmatrix.x4 on 64 per tile); all of Q stays resident at D=64. No setmaxnreg: a 4+1-warp CTA has no whole producer warpgroup. Configs: 64x64x4 STAGES=2 (default), 64x64x4 STAGES=3 (D=64 only: at D=128 three stages take 119 KiB of smem and halve residency), 128x64x8 STAGES=2. 128x32x4 (32 rows per warp) was measured 18% slower than 64x64x4 at D=64 and dropped (BLOCK_N=32 left the domain)."
}
*/
#include "evo_attn.cuh"

#ifndef BLOCK_M
#define BLOCK_M 64
#endif
#ifndef BLOCK_N
#define BLOCK_N 64
#endif
#ifndef NWARPS
#define NWARPS 4  // consumer warps
#endif
#ifndef PRODUCER_WARPS
#define PRODUCER_WARPS 1
#endif
#ifndef STAGES
#define STAGES 2
#endif

#define HD EVO_HEAD_DIM
#define NCONS (NWARPS * 32)                       // consumer threads
#define NTHREADS ((NWARPS + PRODUCER_WARPS) * 32)  // launch threads
#define WROWS (BLOCK_M / NWARPS)                  // query rows per consumer warp
#define MT (WROWS / 16)                           // m16 tiles per warp
#define LDS (HD + 8)                              // padded smem row (elements): 16-byte rows land on distinct banks

EVO_CONSTRAINT(BLOCK_M % (16 * NWARPS) == 0, "BLOCK_M must be a multiple of 16*NWARPS");
EVO_CONSTRAINT(MT == 1 || MT == 2, "each warp owns 16 or 32 query rows");
EVO_CONSTRAINT(BLOCK_N % 16 == 0 && BLOCK_N >= 16 && BLOCK_N <= 128, "BLOCK_N must be 16..128, multiple of 16");
EVO_CONSTRAINT(MT == 1 || (HD == 64 && BLOCK_N <= 32), "32 rows/warp only at D=64 with BLOCK_N <= 32 (registers)");
EVO_CONSTRAINT(MT == 2 || BLOCK_N >= 64, "at 16 rows/warp BLOCK_N=32 halves the work per barrier (measured 5-10% slower): pruned");
EVO_CONSTRAINT(PRODUCER_WARPS == 1, "one producer warp");
EVO_CONSTRAINT(STAGES == 2 || STAGES == 3, "STAGES must be 2 or 3");
EVO_CONSTRAINT(STAGES == 2 || (HD == 64 && BLOCK_M == 64),
               "3 stages only for 64x64 at D=64 (D=128: 119 KiB smem halves residency; keeps the domain small)");

// Q A-fragments: the first Q_REG_KC k16 steps stay in registers for the whole KV loop (stage 3 kept all
// HD/16), the rest are re-read from smem with ldmatrix every tile. The extra producer warp puts 3 warps on
// some SM sub-partition at stage 3's residency, which caps registers at 168 (16384 / (3*32)); at D=128 the
// O + Q + S fragments alone need 128 and ptxas spilled at that cap with all of Q resident. D=128 keeps
// half of Q (4 of 8 steps: +4 ldmatrix.x4 per 64 per tile; measured 916 us vs 912 us for 7 of 8 and
// 953 us for 6 of 8 on 8x16x16x2048x2048x128, i.e. schedule noise, so the one with most headroom).
// Not a tunable: derived from the config (#ifndef only for experiments).
#ifndef Q_REG_KC
#if MT == 1
#define Q_REG_KC 4  // D=64: all of Q; D=128: half
#else
#define Q_REG_KC 0
#endif
#endif
EVO_CONSTRAINT(Q_REG_KC >= 0 && Q_REG_KC <= HD / 16, "Q_REG_KC: 0..HD/16");

#define Q_ELEMS (BLOCK_M * LDS)
#define KV_ELEMS (BLOCK_N * LDS)
#define BAR_OFF ((Q_ELEMS + 2 * STAGES * KV_ELEMS) * 2)  // bytes; 3 mbarriers (8 B) per stage follow the tiles
#define SMEM_BYTES (BAR_OFF + 3 * STAGES * 8)

EVO_EXPORT_LAUNCH(NTHREADS, SMEM_BYTES, BLOCK_M, 1, 0);

// Residency. The producer warp gets the consumers' register allocation, and the register file is split
// per SM sub-partition (16384 regs each, warps dealt round-robin), so R regs/thread allow
// floor(16384 / (32 R)) warps per sub-partition. The min-CTA hints keep stage 3's consumer-warp residency:
// 64x64x4 D=128 -> 2 CTAs = 10 warps (3 on some sub-partition: <= 168 regs; stage 3 used 252),
// D=64 -> 3 CTAs = 15 warps (<= 128 regs; stage 3: 12 warps at 162); 128x64x8 -> 1 CTA of 9 warps
// (168; stage 3: 227). (MT=2 needs BLOCK_N=32, outside the param domain: kept compilable, 2 CTAs.)
#ifndef EVO_MIN_CTAS  // (overridable for experiments only; not a tunable)
#if BLOCK_M == 64 && NWARPS == 4
#if HD == 128
#define EVO_MIN_CTAS 2
#else
#define EVO_MIN_CTAS 3
#endif
#elif MT == 2
#define EVO_MIN_CTAS 2
#else
#define EVO_MIN_CTAS 1
#endif
#endif

namespace {

#define NEG_INF (-__int_as_float(0x7f800000))  // NVRTC has no <math.h> INFINITY

__device__ __forceinline__ unsigned smem_u32(const void* ptr) {
  return static_cast<unsigned>(__cvta_generic_to_shared(ptr));
}

__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}

// ---- mbarrier (sm_80+) ----
__device__ __forceinline__ void mbar_init(unsigned addr, unsigned count) {
  asm volatile("mbarrier.init.shared.b64 [%0], %1;\n" ::"r"(addr), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned addr) {
  asm volatile(
      "{\n\t.reg .b64 st;\n\t"
      "mbarrier.arrive.shared.b64 st, [%0];\n\t}\n" ::"r"(addr)
      : "memory");
}
// Arrive on the barrier once all prior cp.async of this thread have landed (counts as one of the
// expected arrivals: .noinc).
__device__ __forceinline__ void cp_async_mbar_arrive(unsigned addr) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];\n" ::"r"(addr) : "memory");
}
__device__ __forceinline__ bool mbar_test(unsigned addr, unsigned parity) {
  unsigned done;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !defined(WS_FORCE_TEST_WAIT)  // (test hook: sm_80 path on sm_90)
  // try_wait may suspend the warp for a hardware-chosen time until the phase completes
  asm volatile(
      "{\n\t.reg .pred P;\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 P, [%1], %2;\n\t"
      "selp.u32 %0, 1, 0, P;\n\t}\n"
      : "=r"(done)
      : "r"(addr), "r"(parity)
      : "memory");
#else
  asm volatile(
      "{\n\t.reg .pred P;\n\t"
      "mbarrier.test_wait.parity.shared.b64 P, [%1], %2;\n\t"
      "selp.u32 %0, 1, 0, P;\n\t}\n"
      : "=r"(done)
      : "r"(addr), "r"(parity)
      : "memory");
#endif
  return done != 0;
}
// Wait until the barrier phase with parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(unsigned addr, unsigned parity) {
  while (!mbar_test(addr, parity)) {
  }
  __syncwarp();  // reconverge before the .aligned ldmatrix / mma that follow
}

__device__ __forceinline__ void ldsm_x4(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_t(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

// D += A(16x16, row) * B(16x8, col), f32 accumulate.
__device__ __forceinline__ void mma16816(float* d, const unsigned* a, unsigned b0, unsigned b1) {
#if EVO_DTYPE == EVO_DTYPE_FP16
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float fast_rcp(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ unsigned pack2(float lo, float hi) {
  evo_t2 v = evo2_from_float2(lo, hi);
  return *reinterpret_cast<unsigned*>(&v);
}

// ROWS x HD tile from global (row stride gstride elements) into padded smem at s_base by one warp
// (lane 0..31); rows >= valid are zero-filled (src-size 0, nothing read).
template <int ROWS>
__device__ __forceinline__ void load_tile_warp(unsigned s_base, const evo_t* g, long long gstride, int valid, int lane) {
  constexpr int CPR = HD / 8;  // 16-byte chunks per row
  constexpr int RPI = 32 / CPR;  // rows per warp-instruction (2 at D=128, 4 at D=64)
  static_assert(ROWS % RPI == 0, "tile rows must be a multiple of rows per warp instruction");
  const int r0 = lane / CPR;
  const int col = (lane % CPR) * 8;
  const evo_t* src = g + r0 * gstride + col;
  unsigned dst = s_base + (r0 * LDS + col) * 2;
#pragma unroll
  for (int i = 0; i < ROWS / RPI; ++i) {
    const bool ok = r0 + i * RPI < valid;
    cp_async16(dst, ok ? src : g, ok ? 16 : 0);
    src += RPI * gstride;
    dst += RPI * LDS * 2;
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(NTHREADS, EVO_MIN_CTAS) evo_attn_fwd(const __grid_constant__ EvoAttnParams p) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  evo_t* sQ = reinterpret_cast<evo_t*>(smem_raw);
  const unsigned sQ_u = smem_u32(smem_raw);
  const unsigned sK_u = sQ_u + Q_ELEMS * 2;              // STAGES stages
  const unsigned sV_u = sK_u + STAGES * KV_ELEMS * 2;    // STAGES stages
  const unsigned bar_u = sQ_u + BAR_OFF;
  // barrier addresses: fullK[s] = bar_u + 8s, fullV[s] = bar_u + 8(STAGES+s), empty[s] = bar_u + 8(2 STAGES+s)
#define FULLK(s) (bar_u + 8u * (unsigned)(s))
#define FULLV(s) (bar_u + 8u * (unsigned)(STAGES + (s)))
#define EMPTY(s) (bar_u + 8u * (unsigned)(2 * STAGES + (s)))

  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;

#if EVO_CAUSAL
  const int m0 = (gridDim.x - 1 - blockIdx.x) * BLOCK_M;  // longest (bottom) tiles start first
#else
  const int m0 = blockIdx.x * BLOCK_M;
#endif
  const int h = blockIdx.y;
  const int b = blockIdx.z;
  const int hkv = evo_kv_head(p, h);
  const int seq_q = p.seq_q;
  const int seq_kv = p.seq_kv;

  const int q_rows = min(BLOCK_M, seq_q - m0);
  const int kv_end = evo_kv_limit(p, m0, q_rows);
  const int ntiles = (kv_end + BLOCK_N - 1) / BLOCK_N;

  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(FULLK(s), 32);    // the producer's 32 lanes (cp.async.mbarrier.arrive.noinc)
      mbar_init(FULLV(s), 32);
      mbar_init(EMPTY(s), NCONS); // every consumer thread
    }
  }
  __syncthreads();  // barrier init visible to all warps; the only CTA-wide barrier

  // =========================== producer warp ===========================
  if (warp >= NWARPS) {
    if (warp > NWARPS) return;  // (PRODUCER_WARPS == 1: never)
    const evo_t* Kg = evo_k_ptr(p, b, hkv);
    const evo_t* Vg = evo_v_ptr(p, b, hkv);
    const long long ks = p.k_stride[2];
    const long long vs = p.v_stride[2];
    int stage = 0;
    unsigned phase = 0;  // parity of the ring pass
    for (int it = 0; it < ntiles; ++it) {
      const int n0 = it * BLOCK_N;
      if (it >= STAGES) mbar_wait(EMPTY(stage), phase ^ 1u);  // consumers released tile it - STAGES
      if (it == 0) {
        const evo_t* Qg = evo_q_ptr(p, b, h) + (long long)m0 * p.q_stride[2];
        load_tile_warp<BLOCK_M>(sQ_u, Qg, p.q_stride[2], q_rows, lane);
      }
      load_tile_warp<BLOCK_N>(sK_u + stage * KV_ELEMS * 2, Kg + n0 * ks, ks, seq_kv - n0, lane);
      cp_async_mbar_arrive(FULLK(stage));  // (tile 0: Q too)
      load_tile_warp<BLOCK_N>(sV_u + stage * KV_ELEMS * 2, Vg + n0 * vs, vs, seq_kv - n0, lane);
      cp_async_mbar_arrive(FULLV(stage));
      if (++stage == STAGES) {
        stage = 0;
        phase ^= 1u;
      }
    }
    asm volatile("cp.async.wait_all;\n" ::: "memory");
    return;
  }

  // =========================== consumer warps ===========================
  const int g = lane >> 2;  // row within an 8-row group
  const int t = lane & 3;   // thread within quad

  // per-lane ldmatrix offsets (bytes)
  // One pattern for Q (A operand), K (B operand, non-trans) and V (B operand, .trans):
  // row = (lane&7) + ((lane>>3)&1)*8, col = (lane>>4)*8, i.e. matrices (rows 0-7, cols 0-7), (8-15, 0-7),
  // (0-7, 8-15), (8-15, 8-15). For K the n8 block of keys 0-7 is then {r0, r2} and keys 8-15 {r1, r3}
  // (stage 3 used a second K-specific lane offset; sharing one saves a register under the 168 cap).
  const unsigned offA = (((lane & 7) + ((lane >> 3) & 1) * 8) * LDS + (lane >> 4) * 8) * 2;

  const int wrow0 = warp * WROWS;  // first row of this warp inside the CTA tile

#if Q_REG_KC > 0
  unsigned qf[MT][Q_REG_KC][4];
#endif
  float o[MT][HD / 8][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int j = 0; j < HD / 8; ++j) o[mt][j][0] = o[mt][j][1] = o[mt][j][2] = o[mt][j][3] = 0.f;
  float m_run[MT][2], l_run[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    m_run[mt][0] = m_run[mt][1] = NEG_INF;
    l_run[mt][0] = l_run[mt][1] = 0.f;
  }
  const float sl2 = p.softmax_scale_log2;
#if EVO_CAUSAL
  const int wrow_abs = m0 + wrow0;  // first query row of this warp
  const int g_2t = g - 2 * t;
#endif

  const unsigned sQ_w = sQ_u + wrow0 * LDS * 2 + offA;  // this warp's Q rows, per-lane ldmatrix address
#if Q_REG_KC > 0
  auto load_q_frags = [&]() {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int kc = 0; kc < Q_REG_KC; ++kc)
        ldsm_x4(sQ_w + (mt * 16 * LDS + kc * 16) * 2, qf[mt][kc][0], qf[mt][kc][1], qf[mt][kc][2], qf[mt][kc][3]);
  };
#endif

  // S = Q Kᵀ for the K tile in `stage`
  auto qk = [&](float (&s)[MT][BLOCK_N / 8][4], int stage) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int j = 0; j < BLOCK_N / 8; ++j) s[mt][j][0] = s[mt][j][1] = s[mt][j][2] = s[mt][j][3] = 0.f;
    const unsigned sK_s = sK_u + stage * KV_ELEMS * 2 + offA;
#pragma unroll
    for (int kc = 0; kc < HD / 16; ++kc) {
      unsigned qa[MT][4];  // Q A-fragments of this k16 step: resident, or re-read from smem
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
#if Q_REG_KC > 0
        if (kc < Q_REG_KC) {
#pragma unroll
          for (int r = 0; r < 4; ++r) qa[mt][r] = qf[mt][kc < Q_REG_KC ? kc : 0][r];
        } else
#endif
          ldsm_x4(sQ_w + (mt * 16 * LDS + kc * 16) * 2, qa[mt][0], qa[mt][1], qa[mt][2], qa[mt][3]);
      }
#pragma unroll
      for (int np = 0; np < BLOCK_N / 16; ++np) {
        unsigned b0, b1, b2, b3;
        ldsm_x4(sK_s + (np * 16 * LDS + kc * 16) * 2, b0, b1, b2, b3);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma16816(s[mt][2 * np], qa[mt], b0, b2);
          mma16816(s[mt][2 * np + 1], qa[mt], b1, b3);
        }
      }
    }
  };

  // ragged tail (last tile) and causal diagonal tiles only. Element e of n8 block j holds key
  // n0 + 8j + 2t + (e&1) of row m0 + wrow0 + 16mt + g + 8(e>>1); compare offsets relative to n0 + 2t.
  auto mask = [&](float (&s)[MT][BLOCK_N / 8][4], int n0) {
    const int kvalid = seq_kv - n0 - 2 * t;  // key offset 8j + (e&1) is valid when < kvalid
    bool need = n0 + BLOCK_N > seq_kv;
#if EVO_CAUSAL
    const int rel = n0 - wrow_abs;  // tile start relative to the warp's first row
    const int rdiff = g_2t - rel;   // key offset visible when <= rdiff + 16mt + 8(e>>1)
    need = need || (rel + BLOCK_N - 1 > 0);
#endif
    if (need) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int j = 0; j < BLOCK_N / 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int kofs = j * 8 + (e & 1);
            bool masked = kofs >= kvalid;
#if EVO_CAUSAL
            masked = masked || kofs > rdiff + mt * 16 + (e >> 1) * 8;
#endif
            if (masked) s[mt][j][e] = NEG_INF;
          }
    }
  };

  // online softmax of S (rows g and g+8 of each m16 tile; a quad shares a row), O rescale, then wait for
  // the V tile of `stage` and O += P V
  auto softmax_pv = [&](float (&s)[MT][BLOCK_N / 8][4], int stage, unsigned phase) {
    unsigned pa[MT][BLOCK_N / 16][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
      for (int hi = 0; hi < 2; ++hi) {
        float mx = NEG_INF;
#pragma unroll
        for (int j = 0; j < BLOCK_N / 8; ++j) mx = fmaxf(mx, fmaxf(s[mt][j][2 * hi], s[mt][j][2 * hi + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_new = fmaxf(m_run[mt][hi], mx * sl2);
        const float m_use = (m_new == NEG_INF) ? 0.f : m_new;  // no valid key yet: avoid -inf - -inf
        const float alpha = fast_exp2(m_run[mt][hi] - m_use);
        m_run[mt][hi] = m_new;
        float rs = 0.f;
#pragma unroll
        for (int j = 0; j < BLOCK_N / 8; ++j) {
          const float p0 = fast_exp2(fmaf(s[mt][j][2 * hi], sl2, -m_use));
          const float p1 = fast_exp2(fmaf(s[mt][j][2 * hi + 1], sl2, -m_use));
          // S accumulator (16x8 per j) -> A fragment (16x16 per kk = j/2) right away, no smem round trip:
          // a-register hi + 2 (j&1) holds row g + 8hi, keys 8(j&1) + 2t, +1 of the k16 block
          pa[mt][j >> 1][hi + 2 * (j & 1)] = pack2(p0, p1);
          rs += p0 + p1;
        }
        l_run[mt][hi] = l_run[mt][hi] * alpha + rs;
#pragma unroll
        for (int d = 0; d < HD / 8; ++d) {
          o[mt][d][2 * hi] *= alpha;
          o[mt][d][2 * hi + 1] *= alpha;
        }
      }
    }
    mbar_wait(FULLV(stage), phase);
    const unsigned sV_s = sV_u + stage * KV_ELEMS * 2 + offA;
#pragma unroll
    for (int kk = 0; kk < BLOCK_N / 16; ++kk) {
#pragma unroll
      for (int dp = 0; dp < HD / 16; ++dp) {
        unsigned b0, b1, b2, b3;
        ldsm_x4_t(sV_s + (kk * 16 * LDS + dp * 16) * 2, b0, b1, b2, b3);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma16816(o[mt][2 * dp], pa[mt][kk], b0, b1);
          mma16816(o[mt][2 * dp + 1], pa[mt][kk], b2, b3);
        }
      }
    }
  };

#if Q_REG_KC > 0
  mbar_wait(FULLK(0), 0);  // Q tile (and K tile 0) has landed
  load_q_frags();
#endif
  int stage = 0;
  unsigned phase = 0;
  for (int it = 0; it < ntiles; ++it) {
    const int n0 = it * BLOCK_N;
    mbar_wait(FULLK(stage), phase);  // K tile `it` (it == 0: and the Q tile) has landed
#if EVO_CAUSAL
    // All rows of this warp lie above the tile: no math. The empty arrive below still happens, after the
    // fullK wait, so it can only count toward this pass of the ring.
    if (n0 - wrow_abs < WROWS)
#endif
    {
      float s[MT][BLOCK_N / 8][4];
      qk(s, stage);
      mask(s, n0);
      softmax_pv(s, stage, phase);
    }
    if (it + STAGES < ntiles) mbar_arrive(EMPTY(stage));  // done reading K/V of this stage
    if (++stage == STAGES) {
      stage = 0;
      phase ^= 1u;
    }
  }

  // ---- epilogue: O / l -> smem (this warp's own Q rows) -> 16-byte global stores
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      float l = l_run[mt][hi];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const float inv = l > 0.f ? fast_rcp(l) : 0.f;
      evo_t* srow = sQ + (wrow0 + mt * 16 + g + hi * 8) * LDS + 2 * t;
#pragma unroll
      for (int d = 0; d < HD / 8; ++d)
        *reinterpret_cast<evo_t2*>(srow + d * 8) = evo2_from_float2(o[mt][d][2 * hi] * inv, o[mt][d][2 * hi + 1] * inv);
    }
  }
  __syncwarp();
  evo_t* Og = evo_o_ptr(p, b, h);
  const long long os = p.o_stride[2];
  constexpr int CPR = HD / 8;
#pragma unroll
  for (int i = 0; i < WROWS * CPR / 32; ++i) {
    const int c = lane + i * 32;
    const int r = c / CPR;
    const int col = (c % CPR) * 8;
    const int row = m0 + wrow0 + r;
    if (row < seq_q)
      *reinterpret_cast<uint4*>(Og + row * os + col) =
          *reinterpret_cast<const uint4*>(sQ + (wrow0 + r) * LDS + col);
  }
#undef FULLK
#undef FULLV
#undef EMPTY
}

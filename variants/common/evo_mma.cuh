// Warp-level sm_80 primitives a variant may share: shared-memory addresses, cp.async, ldmatrix,
// mma.sync m16n8k16 with FP32 accumulation, exp2 and the 16-bit pair packing of P.
//
// A library of small inline functions, so a kernel reads as its algorithm and the copies of
// these wrappers stop drifting apart. They stand in an unnamed namespace, as they did in each
// variant: NVRTC compiles one kernel per translation unit, and internal linkage keeps the code
// a variant gets from here the code it had as its own (lab/notes/prims-20261128.md checks that
// the SASS of every configuration of the variants that include it is unchanged).
// Include it after evo_attn.cuh. fp8 tasks get the addressing and copy wrappers only.
#pragma once

#include "evo_attn.cuh"

namespace {

__device__ __forceinline__ unsigned smem_u32(const void* ptr) {
  return static_cast<unsigned>(__cvta_generic_to_shared(ptr));
}

// 16 bytes global -> shared, bypassing L1; src_bytes 0 zero-fills the destination.
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
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

__device__ __forceinline__ float fast_exp2(float x) {  // ex2.approx(-inf) = 0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

#if EVO_DTYPE != EVO_DTYPE_FP8
// D += A(16x16, row) * B(16x8, col), f32 accumulate.
__device__ __forceinline__ void mma16816(float* d, const unsigned* a, unsigned b0, unsigned b1) {
#if EVO_DTYPE == EVO_DTYPE_FP16
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}
// Two floats as one register of the input type (the A operand of P·V).
__device__ __forceinline__ unsigned pack2(float lo, float hi) {
  evo_t2 v = evo2_from_float2(lo, hi);
  return *reinterpret_cast<unsigned*>(&v);
}
#endif

}  // namespace

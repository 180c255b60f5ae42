// Example A: a pointwise chain with explicit float32 rounding, as three kernels or one.
//
//   a = round32(x + 1),  b = round32(a * a),  y = round32(b * 0.5)
//
// Every operation is an intrinsic with a named rounding mode (__fadd_rn, __fmul_rn): the
// compiler never contracts such intrinsics into a fused multiply-add, so the result is the
// same whatever --fmad says (the module is still built with --fmad=false, and a test checks
// the SASS holds no FFMA). Each step is then one IEEE float32 round-to-nearest operation, and
// the host oracle (launchlab/model/pointwise.py) reproduces it bit for bit.
//
// One element per thread, BLOCK-thread blocks, grid = ceil(n / BLOCK); the guard covers an n
// that is not a multiple of BLOCK.
//
// Bytes per element (logical: what the kernels must read and write in DRAM terms):
//   three kernels: pw_add_one reads x, writes a; pw_square reads a, writes b; pw_halve reads b,
//                  writes y: 6 x 4 = 24 bytes per element, a and b stored in global memory;
//   fused:         pw_fused reads x, writes y: 8 bytes per element, a and b stay in registers.
// ---- common.cuh ----
// Shared device helpers for every kernel family: block-wide reductions and the
// optional per-block timeline probe used by instrumented (never timed) builds.
#pragma once

#ifndef BLOCK
#define BLOCK 256
#endif

// NVRTC has no <cmath>: spell negative infinity by its bit pattern.
#define NEG_INF __int_as_float(0xff800000)

// Warp and block reductions. Every thread of the block must call block_sum /
// block_max; every thread gets the result (each warp reduces all the per-warp
// partials itself). `scratch` holds one value per warp (32 floats cover 1024 threads).
__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

__device__ __forceinline__ float block_sum(float v, float* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    __syncthreads();  // scratch may still be read by a previous reduction
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = (lane < BLOCK / 32) ? scratch[lane] : 0.0f;
    return warp_sum(v);
}

__device__ __forceinline__ float block_max(float v, float* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = (lane < BLOCK / 32) ? scratch[lane] : NEG_INF;
    return warp_max(v);
}

// Timeline probe. Built with -DLAUNCHLAB_TRACE, each block of kernel `k` writes
// {start ns, end ns, SM id} of %globaltimer / %smid into trace_records
// [k][blockIdx.x]; without it the macros vanish and the kernels are the timed ones.
#ifdef LAUNCHLAB_TRACE
__device__ unsigned long long* trace_records;  // set by the host: 3 words per block
__device__ unsigned int trace_stride;          // blocks per kernel slot

__device__ __forceinline__ unsigned long long global_timer_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ unsigned int sm_id() {
    unsigned int s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}

#define TRACE_BEGIN(kernel_slot)                                      \
    __syncthreads();                                                  \
    unsigned long long trace_start_ns = global_timer_ns();
#define TRACE_END(kernel_slot)                                                         \
    __syncthreads();                                                                   \
    if (threadIdx.x == 0) {                                                            \
        unsigned long long* rec = trace_records +                                      \
            3ull * ((unsigned long long)(kernel_slot) * trace_stride + blockIdx.x);    \
        rec[0] = trace_start_ns;                                                       \
        rec[1] = global_timer_ns();                                                    \
        rec[2] = sm_id();                                                              \
    }
#else
#define TRACE_BEGIN(kernel_slot)
#define TRACE_END(kernel_slot)
#endif

// ---- end common.cuh ----
__device__ __forceinline__ float add_one(float x) { return __fadd_rn(x, 1.0f); }
__device__ __forceinline__ float square(float a) { return __fmul_rn(a, a); }
__device__ __forceinline__ float halve(float b) { return __fmul_rn(b, 0.5f); }

// A 64-bit index and length: no size the host may pass (up to the grid limit) can wrap the index.
__device__ __forceinline__ unsigned long long element_index() {
    return (unsigned long long)blockIdx.x * BLOCK + threadIdx.x;
}

// docs:begin pointwise-three
extern "C" __global__ void __launch_bounds__(BLOCK) pw_add_one(const float* __restrict__ x, float* __restrict__ a,
                                                               unsigned long long n) {
    const unsigned long long i = element_index();
    if (i < n) a[i] = add_one(x[i]);
}

extern "C" __global__ void __launch_bounds__(BLOCK) pw_square(const float* __restrict__ a, float* __restrict__ b,
                                                              unsigned long long n) {
    const unsigned long long i = element_index();
    if (i < n) b[i] = square(a[i]);
}

extern "C" __global__ void __launch_bounds__(BLOCK) pw_halve(const float* __restrict__ b, float* __restrict__ y,
                                                             unsigned long long n) {
    const unsigned long long i = element_index();
    if (i < n) y[i] = halve(b[i]);
}
// docs:end pointwise-three

// docs:begin pointwise-fused
extern "C" __global__ void __launch_bounds__(BLOCK) pw_fused(const float* __restrict__ x, float* __restrict__ y,
                                                             unsigned long long n) {
    const unsigned long long i = element_index();
    if (i < n) y[i] = halve(square(add_one(x[i])));
}
// docs:end pointwise-fused

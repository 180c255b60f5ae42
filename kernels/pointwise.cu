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
#include "common.cuh"

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

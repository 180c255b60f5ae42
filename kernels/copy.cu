// The copy ceiling's second contender: y = x for n floats, in 16-byte chunks.
//
// cudaMemcpyAsync is one way to move the bytes a fused kernel must move (read x once, write y once); this kernel is
// another, and at some sizes and L2 states the faster one, so chapter 3's ceiling at a shape is whichever of the two
// took less time there. Each thread moves UNROLL float4 chunks a block width apart (every load of a warp is one
// coalesced 512-byte request; the UNROLL loads are issued before any store, so each thread keeps UNROLL requests in
// flight). The grid covers the chunks once: no grid-stride loop, no work for a block that has none.
//
// Alignment: the float4 path needs x and y on 16-byte boundaries; where either is not, every element goes the
// scalar way (a call on a view that starts mid-chunk stays correct). n need not be a multiple of 4: the last n % 4
// floats are copied one by one by the first threads of block 0. No thread-block clusters or other sm_90 features:
// it builds and runs unchanged on every architecture of arch.cuh.
#include "arch.cuh"
#include "common.cuh"

#ifndef UNROLL
#define UNROLL 4
#endif

extern "C" __global__ void __launch_bounds__(BLOCK) copy_vec4(const float* __restrict__ x, float* __restrict__ y,
                                                              unsigned long long n) {
    const bool aligned = ((reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(y)) & 15) == 0;
    const unsigned long long base = (unsigned long long)blockIdx.x * BLOCK * UNROLL + threadIdx.x;
    if (!aligned) {
        for (int k = 0; k < UNROLL * 4; ++k) {
            const unsigned long long i = (unsigned long long)blockIdx.x * BLOCK * UNROLL * 4 + (unsigned long long)k * BLOCK
                                         + threadIdx.x;
            if (i < n) y[i] = x[i];
        }
        return;
    }
    const unsigned long long chunks = n >> 2;
    const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x);
    float4* __restrict__ y4 = reinterpret_cast<float4*>(y);
    float4 held[UNROLL];
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) {
        const unsigned long long c = base + (unsigned long long)k * BLOCK;
        if (c < chunks) held[k] = x4[c];
    }
#pragma unroll
    for (int k = 0; k < UNROLL; ++k) {
        const unsigned long long c = base + (unsigned long long)k * BLOCK;
        if (c < chunks) y4[c] = held[k];
    }
    const unsigned long long tail = n & 3;
    if (blockIdx.x == 0 && threadIdx.x < tail) {
        const unsigned long long i = (chunks << 2) + threadIdx.x;
        y[i] = x[i];
    }
}

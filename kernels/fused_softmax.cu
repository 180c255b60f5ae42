// Fused row kernel: one launch, one block of BLOCK threads per row, no global e array.
//   fused_rms_softmax: y_rj = rho_r * exp(x_rj - m_r) / z_r,  rho_r = sqrt(mean_j x_rj^2)
//   fused_softmax:     y_rj =         exp(x_rj - m_r) / z_r   (rho = 1, as library softmax)
// Global traffic per element: x read once, y written once — 8 bytes, against 24 for the
// four-kernel row path (kernels/row_softmax.cu). Only a row too long for registers and for
// the dynamic shared memory it was given reads x a second time (normally from L2).
//
// The row is walked in 16-byte chunks aligned in memory (row_helpers.cuh): a chunk that lies wholly
// inside the row is one 16-byte access whatever cols % 4 is. x and y must have the same address modulo 16.
//
// Where a row lives while it is reduced is decided per block from the kernel's own parameters:
//   registers  chunks <= REG_CHUNKS * BLOCK: each thread holds its chunks in a float4[REG_CHUNKS];
//   shared     else if 16 * chunks <= the dynamic shared memory of the launch: the row is kept in
//              shared memory (each thread reads back only the chunks it stored: no extra barrier);
//   streamed   else: one pass keeps an online max and sum, a second pass reads x again.
// Every tier reduces its row ONCE (row_helpers.cuh, block_stats): each thread's max, sum of exp(x - that max) and
// (RMS) sum of squares are combined over the block together, by shuffles alone in a block of one warp, with one
// barrier in a larger block; the final division is a reciprocal on the special-function unit.
#include "row_helpers.cuh"

#ifndef REG_CHUNKS
#define REG_CHUNKS 4  // 16-byte chunks per thread held in registers
#endif
#ifndef UNROLL
#define UNROLL 4      // chunks per thread in flight in the shared and streamed passes
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1  // resident blocks per SM the register allocation must allow
#endif

// One reduction per row (row_helpers.cuh): every thread's (max, sum of exp(x - max)[, sum of squares]) combined
// over the block at once. A block of one warp needs neither shared memory nor a barrier, a larger one one barrier;
// on short rows these latencies are most of a block's life. `scratch` holds 2 floats a warp (3 in RMS mode).
template <bool RMS>
__device__ __forceinline__ RowStats row_stats(RowStats t, float* scratch) {
    return block_stats<BLOCK, RMS>(t, scratch);
}

// Registers: every chunk of the thread is loaded before the first is used (REG_CHUNKS x 16 bytes in flight per
// thread), exp(x - the thread's own max) in place, one reduction, then one store per chunk.
template <bool RMS>
// docs:begin fused-row-in-registers
__device__ __forceinline__ void row_in_registers(const Row& r, float* scratch) {
    float4 v[REG_CHUNKS];
#pragma unroll
    for (int i = 0; i < REG_CHUNKS; ++i) {
        const int c = threadIdx.x + i * BLOCK;
        v[i] = c < r.chunks ? load_chunk(r, c) : neg_inf4();
    }
    float shift;
    const RowStats row = row_stats<RMS>(own_stats<RMS>(v, shift), scratch);
    const float factor = row_factor<RMS>(row, shift, r.cols);
#pragma unroll
    for (int i = 0; i < REG_CHUNKS; ++i) {
        const int c = threadIdx.x + i * BLOCK;
        if (c < r.chunks) store_chunk(r, c, scale4(v[i], factor));
    }
}
// docs:end fused-row-in-registers

// Shared memory: x is read from global memory once and kept in `cache` while each thread keeps a running max and
// sum (online softmax); after one reduction, y = exp(x - m) rho / z is written from the cache. Thread t only ever
// touches chunks t, t + BLOCK, ... (no barrier beyond the reduction's).
template <bool RMS>
__device__ __forceinline__ void row_in_shared(const Row& r, float4* cache, float* scratch) {
    RowStats t = {NEG_INF, 0.0f, 0.0f};
    for (int base = threadIdx.x; base < r.chunks; base += UNROLL * BLOCK) {
        float4 v[UNROLL];
        load_unrolled(r, base, r.chunks, v);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int c = base + u * BLOCK;
            if (c < r.chunks) {  // such a chunk holds a finite element
                cache[c] = v[u];
                absorb(t.m, t.s, v[u]);
                if (RMS) t.q += squares4(v[u]);
            }
        }
    }
    const RowStats row = row_stats<RMS>(t, scratch);
    const float factor = row_factor<RMS>(row, row.m, r.cols);
    for (int c = threadIdx.x; c < r.chunks; c += BLOCK) store_chunk(r, c, scale4(exp4(cache[c], row.m), factor));
}

// Streamed: pass 1 keeps a running max m and sum s of exp(x - m), rescaling s when m grows; one reduction gives
// the row's; pass 2 reads x again and writes y.
template <bool RMS>
__device__ __forceinline__ void row_streamed(const Row& r, float* scratch) {
    RowStats t = {NEG_INF, 0.0f, 0.0f};
    for (int base = threadIdx.x; base < r.chunks; base += UNROLL * BLOCK) {
        float4 v[UNROLL];
        load_unrolled(r, base, r.chunks, v);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            if (base + u * BLOCK < r.chunks) {  // such a chunk holds a finite element
                absorb(t.m, t.s, v[u]);
                if (RMS) t.q += squares4(v[u]);
            }
        }
    }
    const RowStats row = row_stats<RMS>(t, scratch);
    const float factor = row_factor<RMS>(row, row.m, r.cols);
    for (int base = threadIdx.x; base < r.chunks; base += UNROLL * BLOCK) {
        float4 v[UNROLL];
        load_unrolled(r, base, r.chunks, v);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int c = base + u * BLOCK;
            if (c < r.chunks) store_chunk(r, c, scale4(exp4(v[u], row.m), factor));
        }
    }
}

template <bool RMS>
// docs:begin fused-row-dispatch
__device__ __forceinline__ void fused_row(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float scratch[3 * BLOCK / 32];  // block_stats: 3 floats a warp
    extern __shared__ float4 row_cache[];
    const Row r = row_at(x, y, blockIdx.x, cols);
    if (r.chunks <= REG_CHUNKS * BLOCK) {
        row_in_registers<RMS>(r, scratch);
    } else if (16u * (unsigned int)r.chunks <= dynamic_shared_bytes()) {
        row_in_shared<RMS>(r, row_cache, scratch);
    } else {
        row_streamed<RMS>(r, scratch);
    }
}
// docs:end fused-row-dispatch

extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
fused_rms_softmax(const float* __restrict__ x, float* __restrict__ y, int cols) {
    fused_row<true>(x, y, cols);
}

extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
fused_softmax(const float* __restrict__ x, float* __restrict__ y, int cols) {
    fused_row<false>(x, y, cols);
}

// Packed rows (chapter 4's tiled cases, rows of different lengths end to end): block r reduces row r,
// elements row_offsets[r] .. row_offsets[r + 1] of x, with the tiers of fused_row. fused_row finds its
// row at blockIdx.x * cols; here the row's start comes from the offsets, so the dispatch is repeated
// on a Row built from them (the same tier conditions, the same dynamic shared memory rule).
// Compiled only with -DFUSED_PACKED (chapter 4's build), so chapter 3's builds stay as they were.
#ifdef FUSED_PACKED
extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
fused_rms_softmax_packed(const float* __restrict__ x, float* __restrict__ y, const int* __restrict__ row_offsets) {
    __shared__ float scratch[3 * BLOCK / 32];  // block_stats: 3 floats a warp
    extern __shared__ float4 row_cache[];
    const int start = row_offsets[blockIdx.x];
    const Row r = row_from(x, y, start, row_offsets[blockIdx.x + 1] - start);
    if (r.chunks <= REG_CHUNKS * BLOCK) {
        row_in_registers<true>(r, scratch);
    } else if (16u * (unsigned int)r.chunks <= dynamic_shared_bytes()) {
        row_in_shared<true>(r, row_cache, scratch);
    } else {
        row_streamed<true>(r, scratch);
    }
}
#endif  // FUSED_PACKED

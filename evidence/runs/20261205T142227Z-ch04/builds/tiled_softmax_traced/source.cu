// Tiled path, three kernels: A (one block per tile), B (one block per row), C (one block per tile).
// Each kernel boundary is a full dependency: every B waits for every A, every C for every B.
// ---- tiled.cuh ----
// Tiled RMS-scaled softmax: the three stages as block-wide device functions, shared by
// the three-kernel path (tiled_softmax.cu) and the persistent kernels of chapter 4.
//
// Rows are packed one after another in x and y; row r spans [row_offsets[r], row_offsets[r+1]).
// Each row is cut into tiles of at most TILE elements; tile t covers
// [tile_start[t], tile_start[t] + tile_len[t]) of row tile_row[t]; the tiles of row r are
// row_first_tile[r] .. row_first_tile[r+1]-1.
//   A, tile producer: tile_stats[t] = (q_t = sum x^2, m_t = max x, z_t = sum exp(x - m_t))
//   B, row combine:   row_stats[r] = (rho, m = max_t m_t, z = sum_t z_t exp(m_t - m))
//   C, tile consumer: y = rho * exp(x - m) / z over the tile
// Global traffic per element: A reads x (4 B), C reads x and writes y (8 B): 12 B, plus
// 12 B per tile and per row of statistics.
// Statistics written by another block are read with __ldcg (L2, not a possibly stale L1),
// so a persistent kernel can hand them over between blocks after a fence.
#pragma once
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
#ifndef TILE
#define TILE 1024
#endif

struct TiledProblem {
    const float* x;
    float* y;
    const int* row_offsets;
    const int* row_first_tile;
    const int* tile_row;
    const int* tile_start;
    const int* tile_len;
    float* tile_stats;  // 3 floats per tile
    float* row_stats;   // 3 floats per row
};

// docs:begin tile-produce
__device__ __forceinline__ void tile_produce(const TiledProblem& p, int t, float* scratch) {
    const float* v = p.x + p.tile_start[t];
    const int n = p.tile_len[t];
    float q = 0.0f, m = NEG_INF;
    for (int j = threadIdx.x; j < n; j += BLOCK) {
        q = fmaf(v[j], v[j], q);
        m = fmaxf(m, v[j]);
    }
    q = block_sum(q, scratch);
    m = block_max(m, scratch);
    float z = 0.0f;
    for (int j = threadIdx.x; j < n; j += BLOCK) z += expf(v[j] - m);  // second read hits L1/L2
    z = block_sum(z, scratch);
    if (threadIdx.x == 0) {
        p.tile_stats[3 * t + 0] = q;
        p.tile_stats[3 * t + 1] = m;
        p.tile_stats[3 * t + 2] = z;
    }
}
// docs:end tile-produce

// docs:begin row-combine
__device__ __forceinline__ void row_combine(const TiledProblem& p, int r, float* scratch) {
    const int first = p.row_first_tile[r], last = p.row_first_tile[r + 1];
    float q = 0.0f, m = NEG_INF;
    for (int t = first + threadIdx.x; t < last; t += BLOCK) {
        q += __ldcg(p.tile_stats + 3 * t + 0);
        m = fmaxf(m, __ldcg(p.tile_stats + 3 * t + 1));
    }
    q = block_sum(q, scratch);
    m = block_max(m, scratch);
    float z = 0.0f;
    for (int t = first + threadIdx.x; t < last; t += BLOCK)
        z += __ldcg(p.tile_stats + 3 * t + 2) * expf(__ldcg(p.tile_stats + 3 * t + 1) - m);  // rescale to m
    z = block_sum(z, scratch);
    if (threadIdx.x == 0) {
        const float length = (float)(p.row_offsets[r + 1] - p.row_offsets[r]);
        p.row_stats[3 * r + 0] = sqrtf(q / length);
        p.row_stats[3 * r + 1] = m;
        p.row_stats[3 * r + 2] = z;
    }
}
// docs:end row-combine

// docs:begin tile-consume
__device__ __forceinline__ void tile_consume(const TiledProblem& p, int t) {
    const int r = p.tile_row[t], start = p.tile_start[t], n = p.tile_len[t];
    const float rho = __ldcg(p.row_stats + 3 * r + 0);
    const float m = __ldcg(p.row_stats + 3 * r + 1);
    const float factor = rho / __ldcg(p.row_stats + 3 * r + 2);
    for (int j = threadIdx.x; j < n; j += BLOCK) p.y[start + j] = factor * expf(p.x[start + j] - m);
}
// docs:end tile-consume

#define TILED_PROBLEM_PARAMS                                                                   \
    const float *__restrict__ x, float *__restrict__ y, const int *__restrict__ row_offsets,  \
        const int *__restrict__ row_first_tile, const int *__restrict__ tile_row,             \
        const int *__restrict__ tile_start, const int *__restrict__ tile_len, float *tile_stats, \
        float *row_stats
#define TILED_PROBLEM {x, y, row_offsets, row_first_tile, tile_row, tile_start, tile_len, tile_stats, row_stats}

// ---- end tiled.cuh ----
extern "C" __global__ void __launch_bounds__(BLOCK) tile_producer(TILED_PROBLEM_PARAMS) {
    __shared__ float scratch[32];
    TRACE_BEGIN(0)
    const TiledProblem p = TILED_PROBLEM;
    tile_produce(p, blockIdx.x, scratch);
    TRACE_END(0)
}

extern "C" __global__ void __launch_bounds__(BLOCK) row_combiner(TILED_PROBLEM_PARAMS) {
    __shared__ float scratch[32];
    TRACE_BEGIN(1)
    const TiledProblem p = TILED_PROBLEM;
    row_combine(p, blockIdx.x, scratch);
    TRACE_END(1)
}

extern "C" __global__ void __launch_bounds__(BLOCK) tile_consumer(TILED_PROBLEM_PARAMS) {
    TRACE_BEGIN(2)
    const TiledProblem p = TILED_PROBLEM;
    tile_consume(p, blockIdx.x);
    TRACE_END(2)
}

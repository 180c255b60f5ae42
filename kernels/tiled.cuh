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
#include "common.cuh"

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

// Lagged split rows (a development probe, tools/dev_lag.py): the split design's pieces (kernels/softmax_designs.cu:
// a row cut into `pieces` parts over a resident grid, statistics exchanged through epoch-stamped words in L2), but
// a block never waits for a row it has just read. At grid step i it streams piece p_i once for its statistics and
// publishes them, then writes y for the piece it read `lag` steps earlier, p_(i - lag): it gathers that row's
// statistics, published long since, and reads the piece's x again, from L2 if the lag steps between kept it there.
// x then crosses the DRAM bus once and y once, as in a copy, and no step holds its blocks while a row's statistics
// travel; the price is a second read of x from L2. The host keeps lag x grid x piece bytes well inside the L2.
//
// The grid is a multiple of `pieces` and at most what the GPU holds at once (the host checks with the occupancy
// API): a row's pieces fall in one grid step, and a block waiting for a row's statistics waits only for blocks that
// are running and published them at an earlier step. Every invocation stamps every slot of [0, rows x pieces)
// once, so all of them carry the same epoch: a block reads it from its first slot, once. The host zeroes the
// slots whenever rows x pieces changes.
#ifndef DESIGN
#define DESIGN 9  // softmax_designs.cu's helpers, none of its kernels
#endif
#include "../kernels/softmax_designs.cu"
#include "dev_slices.cuh"

template <bool RMS>
__device__ __forceinline__ void lag_rows(const float* __restrict__ x, float* __restrict__ y, int rows, int cols,
                                         int pieces, int lag, unsigned long long* __restrict__ slots) {
    __shared__ float scratch[96];
    const long long work = (long long)rows * pieces, step = gridDim.x, behind = (long long)lag * step;
    const unsigned int epoch =
        blockIdx.x < work ? epoch_of(load_word(slots + SLOT_WORDS * (long long)blockIdx.x)) + 1u : 0u;
    int begin, end;
    for (long long p = blockIdx.x; p < work + behind; p += step) {
        if (p < work) {  // this step's piece: its statistics, published
            const Row r = piece_at(x, y, p, cols, pieces, begin, end);
            float m = NEG_INF, s = 0.0f, q = 0.0f;
            streamed_stats<RMS>(r, begin, end, m, s, q);
            block_merge_stats(m, s, q, scratch);
            if (threadIdx.x == 0) publish_stats(slots + SLOT_WORDS * p, epoch, m, s, q);
        }
        const long long w = p - behind;
        if (w >= 0) {  // the piece of `lag` steps ago: its row's statistics, then y from x read again
            const Row r = piece_at(x, y, w, cols, pieces, begin, end);
            float m, s, q;
            gather_stats<RMS>(slots + SLOT_WORDS * (w / pieces) * pieces, pieces, epoch, m, s, q);
            block_merge_stats(m, s, q, scratch);  // the row's (m, z, q), in every thread
            streamed_write(r, begin, end, m, row_scale<RMS>(s, q, cols));
        }
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
lag_softmax(const float* __restrict__ x, float* __restrict__ y, int rows, int cols, int pieces, int lag,
            unsigned long long* __restrict__ slots) {
    lag_rows<false>(x, y, rows, cols, pieces, lag, slots);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
lag_rms_softmax(const float* __restrict__ x, float* __restrict__ y, int rows, int cols, int pieces, int lag,
                unsigned long long* __restrict__ slots) {
    lag_rows<true>(x, y, rows, cols, pieces, lag, slots);
}

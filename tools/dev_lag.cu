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

// The slots of the row a block writes this step are read before it streams this step's piece, so that their round
// trip through L2 is off the block's path: thread t reads slots t and t + BLOCK (the host keeps pieces <= 2 BLOCK),
// and after the piece waits only on a slot not yet stamped then (grid_flags.cuh's gather_stats, split in two).
struct EarlySlots {
    unsigned long long m[2], s[2], q[2];
};

template <bool RMS>
__device__ __forceinline__ void read_early(const unsigned long long* slots, int pieces, EarlySlots& e) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
        const int k = (int)threadIdx.x + j * BLOCK;
        e.q[j] = 0ull;
        if (k < pieces) {
            load_words(slots + SLOT_WORDS * k, e.m[j], e.s[j]);
            if (RMS) e.q[j] = load_word(slots + SLOT_WORDS * k + 2);
        }
    }
}

template <bool RMS>
__device__ __forceinline__ void merge_early(const unsigned long long* slots, int pieces, unsigned int epoch,
                                            const EarlySlots& e, float& m, float& s, float& q) {
    m = NEG_INF;
    s = 0.0f;
    q = 0.0f;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
        const int k = (int)threadIdx.x + j * BLOCK;
        if (k < pieces) {
            const unsigned long long* slot = slots + SLOT_WORDS * k;
            unsigned long long wm = e.m[j], ws = e.s[j], wq = e.q[j];
            const unsigned long long start = global_ns();
            while (!slot_ready<RMS>(wm, ws, wq, epoch)) {
                __nanosleep(32);
                load_words(slot, wm, ws);
                if (RMS) wq = load_word(slot + 2);
                if (global_ns() - start > FLAG_WAIT_LIMIT_NS) __trap();
            }
            merge_stats(m, s, q, value_of(wm), value_of(ws), RMS ? value_of(wq) : 0.0f);
        }
    }
}

template <bool RMS>
__device__ __forceinline__ void lag_rows(const float* __restrict__ x, float* __restrict__ y, int rows, int cols,
                                         int pieces, int lag, unsigned long long* __restrict__ slots) {
    __shared__ float scratch[96];
    const long long work = (long long)rows * pieces, step = gridDim.x, behind = (long long)lag * step;
    const unsigned int epoch =
        blockIdx.x < work ? epoch_of(load_word(slots + SLOT_WORDS * (long long)blockIdx.x)) + 1u : 0u;
    int begin, end;
    for (long long p = blockIdx.x; p < work + behind; p += step) {
        const long long w = p - behind;
        const unsigned long long* row_slots = slots + SLOT_WORDS * (w >= 0 ? w / pieces * pieces : 0);
        EarlySlots early;
        if (w >= 0) read_early<RMS>(row_slots, pieces, early);
        if (p < work) {  // this step's piece: its statistics, published
            const Row r = piece_at(x, y, p, cols, pieces, begin, end);
            float m = NEG_INF, s = 0.0f, q = 0.0f;
            streamed_stats<RMS>(r, begin, end, m, s, q);
            block_merge_stats(m, s, q, scratch);
            if (threadIdx.x == 0) publish_stats(slots + SLOT_WORDS * p, epoch, m, s, q);
        }
        if (w >= 0) {  // the piece of `lag` steps ago: its row's statistics, then y from x read again
            const Row r = piece_at(x, y, w, cols, pieces, begin, end);
            float m, s, q;
            merge_early<RMS>(row_slots, pieces, epoch, early, m, s, q);
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

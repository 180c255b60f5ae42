// Pipelined split rows (a development probe, tools/dev_gpipe.py): the split design's pieces (kernels/softmax_designs.cu:
// a row cut into `pieces` parts over a resident grid, statistics exchanged through epoch-stamped words in L2), but a
// block keeps each piece in one of DEPTH shared-memory buffers and requests its next DEPTH - 1 pieces (p + grid,
// p + 2 grid, ...) before it reduces the one it holds. The reads of later grid steps are then in flight while this
// step's statistics travel and its y is written, instead of every block of a step reading, then waiting, then
// writing. tools/dev_pipeline_floor.cu measures the same schedule with nothing reduced.
//
// The grid is a multiple of `pieces` and at most what the GPU holds at once (the host checks), so a row's pieces
// fall in one grid step and all of its blocks are resident. Every invocation stamps every slot of [0, rows x pieces)
// once, so all of them carry the same epoch: a block reads it from its first slot, once, off the path of any step.
// The host zeroes the slots whenever rows x pieces changes.
#ifndef DESIGN
#define DESIGN 9  // softmax_designs.cu's helpers, none of its kernels
#endif
#ifndef DEPTH
#define DEPTH 2   // shared-memory buffers a block cycles through: its loads run DEPTH - 1 grid steps ahead
#endif
#include "../kernels/softmax_designs.cu"
#include "dev_slices.cuh"

static_assert(DEPTH >= 1 && DEPTH <= 8, "cp.async.wait_group takes DEPTH - 1 as an immediate of at most 7");

template <bool RMS>
__device__ __forceinline__ void gpipe_rows(const float* __restrict__ x, float* __restrict__ y, int rows, int cols,
                                           int pieces, int stride, unsigned long long* __restrict__ slots) {
    __shared__ float scratch[96];
    extern __shared__ float4 buffers[];  // DEPTH buffers of `stride` chunks
    const long long work = (long long)rows * pieces, step = gridDim.x;
    const unsigned int epoch =
        pieces > 1 && blockIdx.x < work ? epoch_of(load_word(slots + SLOT_WORDS * (long long)blockIdx.x)) + 1u : 0u;
    int begin, end;
#pragma unroll
    for (int k = 0; k < DEPTH - 1; ++k) {  // the first DEPTH - 1 pieces, a commit group each (maybe empty)
        const long long p = blockIdx.x + k * step;
        if (p < work) {
            const Row r = piece_at(x, y, p, cols, pieces, begin, end);
            request_slice(r, begin, end, buffers + k * stride);
        } else {
            commit_copies();
        }
    }
    int i = 0;
    for (long long p = blockIdx.x; p < work; p += step, ++i) {
        const long long ahead = p + (DEPTH - 1) * step;
        if (ahead < work) {
            const Row n = piece_at(x, y, ahead, cols, pieces, begin, end);
            request_slice(n, begin, end, buffers + ((i + DEPTH - 1) % DEPTH) * stride);
        } else {
            commit_copies();  // an empty group keeps "all but the newest DEPTH - 1" meaning this piece's
        }
        asm volatile("cp.async.wait_group %0;" ::"n"(DEPTH - 1) : "memory");
        const Row r = piece_at(x, y, p, cols, pieces, begin, end);
        const float4* slice = buffers + (i % DEPTH) * stride;  // a thread reads back only the entries it requested
        float m = NEG_INF, s = 0.0f, q = 0.0f;
        slice_stats<RMS>(end - begin, slice, m, s, q);
        block_merge_stats(m, s, q, scratch);
        if (pieces > 1) {
            if (threadIdx.x == 0) publish_stats(slots + SLOT_WORDS * p, epoch, m, s, q);
            gather_stats<RMS>(slots + SLOT_WORDS * (p / pieces) * pieces, pieces, epoch, m, s, q);
            block_merge_stats(m, s, q, scratch);  // the row's (m, z, q), in every thread
        }
        shared_write(r, begin, end, slice, m, row_scale<RMS>(s, q, cols));
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
gpipe_softmax(const float* __restrict__ x, float* __restrict__ y, int rows, int cols, int pieces, int stride,
              unsigned long long* __restrict__ slots) {
    gpipe_rows<false>(x, y, rows, cols, pieces, stride, slots);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
gpipe_rms_softmax(const float* __restrict__ x, float* __restrict__ y, int rows, int cols, int pieces, int stride,
                  unsigned long long* __restrict__ slots) {
    gpipe_rows<true>(x, y, rows, cols, pieces, stride, slots);
}

// The Triton-gap probe's own kernel (tools/dev_triton_gap.py): the row kernel's registers tier with the layout of
// the chapter's Triton kernel. Thread t holds elements t, t + BLOCK, ... of its row (ELEMS of them) as plain 4-byte
// loads, so each load of a warp covers one 128-byte line, where the chapter's kernel holds 16-byte chunks
// t, t + BLOCK, ... and a warp's load covers four lines. Statistics as the chapter's: the thread's own max and
// exponentials, one block reduction (row_helpers.cuh), then one store an element.
#include "../kernels/fused_softmax.cu"

#ifndef ELEMS
#define ELEMS (4 * REG_CHUNKS)
#endif
#ifndef SCALAR_MIN_BLOCKS
#define SCALAR_MIN_BLOCKS (2048 / BLOCK > 32 ? 32 : 2048 / BLOCK)
#endif

extern "C" __global__ void __launch_bounds__(BLOCK, SCALAR_MIN_BLOCKS)
scalar_softmax(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float scratch[3 * BLOCK / 32];
    const float* xr = x + (size_t)blockIdx.x * (size_t)cols;
    float* yr = y + (size_t)blockIdx.x * (size_t)cols;
    float v[ELEMS];
#pragma unroll
    for (int i = 0; i < ELEMS; ++i) {
        const int j = threadIdx.x + i * BLOCK;
        v[i] = j < cols ? xr[j] : NEG_INF;
    }
    RowStats t = {NEG_INF, 0.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < ELEMS; ++i) t.m = fmaxf(t.m, v[i]);
    const float shift = t.m == NEG_INF ? 0.0f : t.m;
#pragma unroll
    for (int i = 0; i < ELEMS; ++i) {
        v[i] = exp_shifted(v[i], shift);
        t.s += v[i];
    }
    const RowStats row = block_stats<BLOCK, false>(t, scratch);
    const float factor = row_factor<false>(row, shift, cols);
#pragma unroll
    for (int i = 0; i < ELEMS; ++i) {
        const int j = threadIdx.x + i * BLOCK;
        if (j < cols) yr[j] = v[i] * factor;
    }
}

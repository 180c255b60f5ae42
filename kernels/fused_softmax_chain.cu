// Chapter 3's fused row kernel on packed rows in plain-softmax mode (rho = 1): the chain's fused
// contender (kernels/design_helpers.cuh says why the chain is a plain softmax). The same tiers and device
// functions as fused_rms_softmax_packed; built with chapter 3's defines for its class.
#ifndef FUSED_PACKED
#define FUSED_PACKED
#endif
#include "fused_softmax.cu"

extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
fused_softmax_packed(const float* __restrict__ x, float* __restrict__ y, const int* __restrict__ row_offsets) {
    __shared__ float scratch[3 * BLOCK / 32];  // block_stats: 3 floats a warp
    extern __shared__ float4 chain_row_cache[];
    const int start = row_offsets[blockIdx.x];
    const Row r = row_from(x, y, start, row_offsets[blockIdx.x + 1] - start);
    if (r.chunks <= REG_CHUNKS * BLOCK) {
        row_in_registers<false>(r, scratch);
    } else if (16u * (unsigned int)r.chunks <= dynamic_shared_bytes()) {
        row_in_shared<false>(r, chain_row_cache, scratch);
    } else {
        row_streamed<false>(r, scratch);
    }
}

// The row kernel's registers tier alone (kernels/fused_softmax.cu's row_in_registers), for rows that REG_CHUNKS
// chunks a thread hold: registers_softmax and registers_rms_softmax. Without the shared and streamed tiers' code a
// block needs no more than 32 registers a thread at 1, 2 or 4 chunks (ptxas, no spills), so REGISTERS_MIN_BLOCKS
// can ask for the SM's whole 2048 threads; the full build (fused_softmax, 48 registers) holds 1024-1280. More rows
// then run in one wave, with more loads in flight per SM. The host launches it only where
// chunks <= REG_CHUNKS x BLOCK (gpu/targets.py, RegistersRow); a longer row would be left partly unwritten.
// The module also holds fused_softmax.cu's own kernels, built with its MIN_BLOCKS, unused.
#include "fused_softmax.cu"

#ifndef REGISTERS_MIN_BLOCKS
#define REGISTERS_MIN_BLOCKS MIN_BLOCKS  // resident blocks per SM the registers-only kernels must allow
#endif

template <bool RMS>
__device__ __forceinline__ void registers_row(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float scratch[3 * BLOCK / 32];  // block_stats: 3 floats a warp
    row_in_registers<RMS>(row_at(x, y, blockIdx.x, cols), scratch);
}

extern "C" __global__ void __launch_bounds__(BLOCK, REGISTERS_MIN_BLOCKS)
registers_rms_softmax(const float* __restrict__ x, float* __restrict__ y, int cols) {
    registers_row<true>(x, y, cols);
}

extern "C" __global__ void __launch_bounds__(BLOCK, REGISTERS_MIN_BLOCKS)
registers_softmax(const float* __restrict__ x, float* __restrict__ y, int cols) {
    registers_row<false>(x, y, cols);
}

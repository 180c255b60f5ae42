// The chain's three kernels: tiled_softmax.cu's A and C, and B with design_helpers.cuh's ROW_RHO in
// plain-softmax mode (design_helpers.cuh says why the chain is a plain softmax).
#define PLAIN_SOFTMAX
#include "tiled_softmax.cu"
#include "design_helpers.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK) chain_row_combiner(TILED_PROBLEM_PARAMS) {
    __shared__ float scratch[32];
    row_combine_rho(TILED_PROBLEM, blockIdx.x, scratch);
}

// Tiled path, three kernels: A (one block per tile), B (one block per row), C (one block per tile).
// Each kernel boundary is a full dependency: every B waits for every A, every C for every B.
#include "tiled.cuh"

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

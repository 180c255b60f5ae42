// The narrow design's kernels (softmax_designs.cu: part of a warp per row, the row in registers) built to hold the
// SM's whole 2048 threads: narrow_softmax and narrow_rms_softmax under __launch_bounds__(BLOCK, NARROW_MIN_BLOCKS).
// softmax_designs.cu's own narrow build needs 44-48 registers a thread and holds 1280 threads an SM; at 1 or 2 chunks
// a lane the same code fits 32 registers with no spills (ptxas), so more rows are in flight an SM (4 chunks spill).
// Same kernel names and arguments as softmax_designs.cu's: the narrow target (gpu/fused_designs.NarrowRows) launches
// either module, and sizes its grid by the occupancy API. Not the scalar build. Build without -DDESIGN.
#define DESIGN 9  // softmax_designs.cu's helpers, none of its kernels
#ifndef ROW_CHUNKS
#define ROW_CHUNKS 2   // 1 or 2: at 4 chunks a lane the kernels spill under this bound
#endif
#include "softmax_designs.cu"

#ifndef NARROW_MIN_BLOCKS
#define NARROW_MIN_BLOCKS (2048 / BLOCK)  // resident blocks an SM __launch_bounds__ must allow: 2048 threads
#endif
static_assert(!SCALAR && !PREFETCH, "the full-occupancy build is the narrow design's chunked build without prefetch");

extern "C" __global__ void __launch_bounds__(BLOCK, NARROW_MIN_BLOCKS)
narrow_rms_softmax(const float* __restrict__ x, float* __restrict__ y, int rows, int cols, int lanes) {
    narrow_dispatch<true>(x, y, rows, cols, lanes);
}

extern "C" __global__ void __launch_bounds__(BLOCK, NARROW_MIN_BLOCKS)
narrow_softmax(const float* __restrict__ x, float* __restrict__ y, int rows, int cols, int lanes) {
    narrow_dispatch<false>(x, y, rows, cols, lanes);
}

// Megakernel designs for the tiled RMS-scaled softmax (chapter 4, "Megakernels that win").
// Same tile table, same statistics buffers and the same arithmetic as tiled.cuh; what changes is
// how the A -> B -> C dependencies are carried:
//
// 1. pdl_tile_producer, pdl_row_combiner, pdl_tile_consumer: the three-kernel path with
//    programmatic dependent launch. Each kernel lets its dependent grid launch at once
//    (griddepcontrol.launch_dependents) and waits for its own producer grid
//    (griddepcontrol.wait) only before it touches what that grid writes: C loads its x tile
//    before waiting, A computes its tile statistics before waiting. Every kernel waits before
//    its first write, so a kernel's completion implies its predecessor's: the stream order of
//    whole invocations stays what it was.
// 2. pdl_tile_producer + combining_tile_consumer: B folded into C. Each C block combines its
//    row's tile statistics itself (every warp redundantly, no barrier), then writes y.
// 3. dependency_persistent: one cooperative grid, static per-worker task lists built on the host;
//    the last A tile of a row to finish combines the row (B) and publishes its round number with
//    a release store; C tasks wait for that round with acquire loads (bounded, %globaltimer).
//    Counters reset themselves: each invocation is one more round.
// 4. cluster_rows: one thread-block cluster per row, the row's reduction through distributed
//    shared memory; x stays in shared memory between the statistics and the output pass.
//
// Without PDL (plain launches) griddepcontrol.wait returns at once and launch_dependents does
// nothing, so designs 1 and 2 also run as ordinary launches. Below compute capability 9.0 the
// instructions are compiled out and cluster_rows only traps (arch.cuh): designs 1 to 3 run there
// as ordinary launches, design 4 does not run.
//
// Task numbers (the host models in launchlab/model/design_schedules.py use the same):
//   A tile t -> t,   B row r -> tiles + r,   C tile t -> tiles + rows + t
// (cluster_rows: tiles are its chunks, one per block).
#include <cooperative_groups.h>
// ---- design_helpers.cuh ----
// Device helpers of chapter 4's designs (kernels/megakernel_designs.cu, kernels/megakernel_flow.cu): the
// trace probe's task records, the register-held tile, the statistics and their merge, and the
// acquire/release accesses the persistent kernels hand work over with.
#pragma once
// ---- tiled.cuh ----
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
// ---- common.cuh ----
// Shared device helpers for every kernel family: block-wide reductions and the
// optional per-block timeline probe used by instrumented (never timed) builds.
#pragma once

#ifndef BLOCK
#define BLOCK 256
#endif

// NVRTC has no <cmath>: spell negative infinity by its bit pattern.
#define NEG_INF __int_as_float(0xff800000)

// Warp and block reductions. Every thread of the block must call block_sum /
// block_max; every thread gets the result (each warp reduces all the per-warp
// partials itself). `scratch` holds one value per warp (32 floats cover 1024 threads).
__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

__device__ __forceinline__ float block_sum(float v, float* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    __syncthreads();  // scratch may still be read by a previous reduction
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = (lane < BLOCK / 32) ? scratch[lane] : 0.0f;
    return warp_sum(v);
}

__device__ __forceinline__ float block_max(float v, float* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = (lane < BLOCK / 32) ? scratch[lane] : NEG_INF;
    return warp_max(v);
}

// Timeline probe. Built with -DLAUNCHLAB_TRACE, each block of kernel `k` writes
// {start ns, end ns, SM id} of %globaltimer / %smid into trace_records
// [k][blockIdx.x]; without it the macros vanish and the kernels are the timed ones.
#ifdef LAUNCHLAB_TRACE
__device__ unsigned long long* trace_records;  // set by the host: 3 words per block
__device__ unsigned int trace_stride;          // blocks per kernel slot

__device__ __forceinline__ unsigned long long global_timer_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ unsigned int sm_id() {
    unsigned int s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}

#define TRACE_BEGIN(kernel_slot)                                      \
    __syncthreads();                                                  \
    unsigned long long trace_start_ns = global_timer_ns();
#define TRACE_END(kernel_slot)                                                         \
    __syncthreads();                                                                   \
    if (threadIdx.x == 0) {                                                            \
        unsigned long long* rec = trace_records +                                      \
            3ull * ((unsigned long long)(kernel_slot) * trace_stride + blockIdx.x);    \
        rec[0] = trace_start_ns;                                                       \
        rec[1] = global_timer_ns();                                                    \
        rec[2] = sm_id();                                                              \
    }
#else
#define TRACE_BEGIN(kernel_slot)
#define TRACE_END(kernel_slot)
#endif

// ---- end common.cuh ----
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

// ---- end tiled.cuh ----
// ---- arch.cuh ----
// What differs between the GPUs the kernels are built for (sm_80, sm_89, sm_90, sm_100).
//
// SM90_FEATURES: thread-block clusters, distributed shared memory (cg::this_cluster,
// map_shared_rank, barrier.cluster.*, __cluster_dims__) and programmatic dependent launch
// (griddepcontrol.*) need compute capability 9.0. SM90_FEATURES is 0 where device code is compiled
// for an earlier GPU, 1 for 9.0 and later and in nvcc's host pass (which then sees what the sm_90
// device pass sees). Below 9.0 a kernel that needs clusters is still defined, so that a module holds
// the same kernels on every GPU and the host can read their attributes, but its body only traps: the
// host never launches it there (its row requires clusters, the fused launch policy picks another
// design). The griddepcontrol instructions compile to nothing below 9.0, which is what they do in a
// grid launched without programmatic dependent launch.
//
// SM_THREADS: the threads one SM holds, for __launch_bounds__'s resident blocks: 2048, but 1536 on
// compute capability 8.6, 8.7, 8.9 and 12.0.
#pragma once

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define SM90_FEATURES 0
#else
#define SM90_FEATURES 1
#endif

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 870 || __CUDA_ARCH__ == 890 || __CUDA_ARCH__ == 1200)
#define SM_THREADS 1536
#else
#define SM_THREADS 2048
#endif

// ---- end arch.cuh ----
// rho of a row from its sum of squares and length; 1 in the chain's builds (-DPLAIN_SOFTMAX): a chained
// RMS-scaled softmax shrinks every row by its length per stage and underflows float32 within a few stages,
// a plain softmax stays in range however long the chain.
#ifdef PLAIN_SOFTMAX
#define ROW_RHO(q, length) ((void)(q), (void)(length), 1.0f)
#else
#define ROW_RHO(q, length) sqrtf((q) / (length))
#endif

// tiled.cuh's row_combine with ROW_RHO: the chain's B kernels. tiled.cuh itself stays as chapter 2's runs
// built it, so its row_combine is not given the switch.
__device__ __forceinline__ void row_combine_rho(const TiledProblem& p, int r, float* scratch) {
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
        p.row_stats[3 * r + 0] = ROW_RHO(q, length);
        p.row_stats[3 * r + 1] = m;
        p.row_stats[3 * r + 2] = z;
    }
}

// Both builds (timed and traced) must fit the same resident blocks per SM: ask ptxas for a full
// SM of BLOCK-thread blocks (the persistent grid is sized from the occupancy API).
#define RESIDENT_BLOCKS (SM_THREADS / BLOCK)
#define VALUES_PER_THREAD (TILE / BLOCK)  // one tile held in registers
static_assert(TILE % BLOCK == 0, "a tile must split evenly over the block's threads");
#define ERROR_WORDS 4                     // {code, task, seen, needed}
#define ERROR_WAIT_EXPIRED 1
#define ERROR_NO_ROUND 2                  // a C task before any A task of its worker (bad list)

__device__ __forceinline__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Programmatic dependent launch (compute capability 9.0; nothing below it, arch.cuh says why).
#if SM90_FEATURES
__device__ __forceinline__ void wait_for_producer_grid() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void allow_dependent_launch() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
#else
__device__ __forceinline__ void wait_for_producer_grid() {}
__device__ __forceinline__ void allow_dependent_launch() {}
#endif

// Task timeline probe: with -DLAUNCHLAB_TRACE, thread 0 writes TASK_WORDS words at
// trace_records[TASK_WORDS * task]: taken (block or worker reached the task), start (its inputs
// are known), end (read BEFORE the task publishes anything, so a consumer never starts before
// it), worker (blockIdx.x), SM, task. The layout of kernels/megakernel.cu.
#define TASK_WORDS 6
#ifdef LAUNCHLAB_TRACE
#define TRACE_NOW(name) const unsigned long long name = now_ns();
#define TRACE_SYNC() __syncthreads();
#define TRACE_WRITE(task, taken, start, end) write_task_record((task), (taken), (start), (end));
__device__ __forceinline__ void write_task_record(int task, unsigned long long taken, unsigned long long start,
                                                  unsigned long long end) {
    unsigned long long* rec = trace_records + (unsigned long long)TASK_WORDS * task;
    rec[0] = taken;
    rec[1] = start;
    rec[2] = end;
    rec[3] = blockIdx.x;
    rec[4] = sm_id();
    rec[5] = (unsigned long long)task;
}
#else
#define TRACE_NOW(name)
#define TRACE_SYNC()
#define TRACE_WRITE(task, taken, start, end)
#endif

// ------------------------------------------------------------------ shared arithmetic
struct Stats {
    float q, m, z;  // sum x^2, max x, sum exp(x - m)
};

// Merge two (m, z) pairs onto the larger maximum; an empty side has m = -inf and adds nothing.
__device__ __forceinline__ void merge_exp_sums(float& m, float& z, float other_m, float other_z) {
    const float top = fmaxf(m, other_m);
    const float mine = (m == NEG_INF) ? 0.0f : z * expf(m - top);
    const float theirs = (other_m == NEG_INF) ? 0.0f : other_z * expf(other_m - top);
    m = top;
    z = mine + theirs;
}

// tile_produce's statistics of n values at v, every thread gets them; `keep` (may be null)
// receives the values, each at the index its own thread reads back later (no barrier needed).
__device__ __forceinline__ Stats block_statistics(const float* v, int n, float* keep, float* scratch) {
    float q = 0.0f, m = NEG_INF;
    for (int j = threadIdx.x; j < n; j += BLOCK) {
        const float value = v[j];
        if (keep) keep[j] = value;
        q = fmaf(value, value, q);
        m = fmaxf(m, value);
    }
    q = block_sum(q, scratch);
    m = block_max(m, scratch);
    float z = 0.0f;
    const float* again = keep ? keep : v;  // second read: shared memory, else L1/L2
    for (int j = threadIdx.x; j < n; j += BLOCK) z += expf(again[j] - m);
    z = block_sum(z, scratch);
    return {q, m, z};
}

// The row combine of tiled.cuh by one warp (every lane gets the result): lanes stride over the
// row's tiles, merge online, then across lanes. Returns {rho, m, z}.
__device__ __forceinline__ float3 warp_row_statistics(const TiledProblem& p, int r) {
    const int lane = threadIdx.x & 31;
    const int first = p.row_first_tile[r], last = p.row_first_tile[r + 1];
    float q = 0.0f, m = NEG_INF, z = 0.0f;
    for (int t = first + lane; t < last; t += 32) {
        q += __ldcg(p.tile_stats + 3 * t + 0);
        merge_exp_sums(m, z, __ldcg(p.tile_stats + 3 * t + 1), __ldcg(p.tile_stats + 3 * t + 2));
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        q += __shfl_xor_sync(0xffffffffu, q, offset);
        const float other_m = __shfl_xor_sync(0xffffffffu, m, offset);
        const float other_z = __shfl_xor_sync(0xffffffffu, z, offset);
        merge_exp_sums(m, z, other_m, other_z);
    }
    const float rho = ROW_RHO(q, (float)(p.row_offsets[r + 1] - p.row_offsets[r]));
    return make_float3(rho, m, z);
}

// block_sum(q) and block_max(m) in one exchange through `scratch` (64 floats): every thread gets both.
__device__ __forceinline__ void block_sum_and_max(float& q, float& m, float* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    q = warp_sum(q);
    m = warp_max(m);
    __syncthreads();  // scratch may still be read by a previous reduction
    if (lane == 0) {
        scratch[warp] = q;
        scratch[32 + warp] = m;
    }
    __syncthreads();
    q = warp_sum(lane < BLOCK / 32 ? scratch[lane] : 0.0f);
    m = warp_max(lane < BLOCK / 32 ? scratch[32 + lane] : NEG_INF);
}

__device__ __forceinline__ void load_tile(const float* v, int n, float (&values)[VALUES_PER_THREAD]) {
#pragma unroll
    for (int k = 0; k < VALUES_PER_THREAD; ++k) {
        const int j = threadIdx.x + k * BLOCK;
        values[k] = j < n ? v[j] : 0.0f;
    }
}

__device__ __forceinline__ void store_tile(float* out, int n, const float (&values)[VALUES_PER_THREAD], float m,
                                           float factor) {
#pragma unroll
    for (int k = 0; k < VALUES_PER_THREAD; ++k) {
        const int j = threadIdx.x + k * BLOCK;
        if (j < n) out[j] = factor * expf(values[k] - m);
    }
}

__device__ __forceinline__ unsigned load_acquire(const unsigned* address) {
    unsigned value;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(value) : "l"(address) : "memory");
    return value;
}

__device__ __forceinline__ void store_release(unsigned* address, unsigned value) {
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(address), "r"(value) : "memory");
}

__device__ __forceinline__ void raise_error(int* error, int code, int task, int seen, int needed) {
    if (atomicCAS(error, 0, code) == 0) {
        error[1] = task;
        error[2] = seen;
        error[3] = needed;
        __threadfence();
    }
}

// ---- end design_helpers.cuh ----
namespace cg = cooperative_groups;

// ------------------------------------------------------------------ 1 and 2: programmatic dependent launch
// A: statistics from x (read by nobody's writes), wait, then write. The wait comes before the
// write because the previous invocation's B (three kernels) or C (two kernels) reads tile_stats.
// docs:begin pdl-producer
extern "C" __global__ void __launch_bounds__(BLOCK) pdl_tile_producer(TILED_PROBLEM_PARAMS) {
    __shared__ float scratch[32];
    TRACE_NOW(taken_ns)
    allow_dependent_launch();  // B (or C) may be scheduled once every A block has started
    const TiledProblem p = TILED_PROBLEM;
    const int t = blockIdx.x;
    const Stats s = block_statistics(p.x + p.tile_start[t], p.tile_len[t], nullptr, scratch);
    wait_for_producer_grid();
    if (threadIdx.x == 0) {
        TRACE_NOW(end_ns)
        p.tile_stats[3 * t + 0] = s.q;
        p.tile_stats[3 * t + 1] = s.m;
        p.tile_stats[3 * t + 2] = s.z;
        TRACE_WRITE(t, taken_ns, taken_ns, end_ns)
    }
}
// docs:end pdl-producer

extern "C" __global__ void __launch_bounds__(BLOCK) pdl_row_combiner(TILED_PROBLEM_PARAMS, int tiles) {
    __shared__ float scratch[32];
    TRACE_NOW(taken_ns)
    allow_dependent_launch();  // C blocks may load their x tiles while B runs
    const TiledProblem p = TILED_PROBLEM;
    wait_for_producer_grid();  // every A block's statistics are written and visible
    TRACE_NOW(start_ns)
    row_combine(p, blockIdx.x, scratch);
    TRACE_SYNC()
    if (threadIdx.x == 0) {
        TRACE_NOW(end_ns)
        TRACE_WRITE(tiles + blockIdx.x, taken_ns, start_ns, end_ns)
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK) pdl_tile_consumer(TILED_PROBLEM_PARAMS, int tiles, int rows) {
    TRACE_NOW(taken_ns)
    allow_dependent_launch();  // the next invocation's A may start computing
    const TiledProblem p = TILED_PROBLEM;
    const int t = blockIdx.x, r = p.tile_row[t], start = p.tile_start[t], n = p.tile_len[t];
    float values[VALUES_PER_THREAD];
    load_tile(p.x + start, n, values);  // x is nobody's output: load it before the wait
    wait_for_producer_grid();           // every B block's row statistics are written and visible
    TRACE_NOW(start_ns)
    const float m = __ldcg(p.row_stats + 3 * r + 1);
    const float factor = __ldcg(p.row_stats + 3 * r + 0) / __ldcg(p.row_stats + 3 * r + 2);
    store_tile(p.y + start, n, values, m, factor);
    TRACE_SYNC()
    if (threadIdx.x == 0) {
        TRACE_NOW(end_ns)
        TRACE_WRITE(tiles + rows + t, taken_ns, start_ns, end_ns)
    }
}

// C with B folded in: each warp combines the row's tile statistics itself (at most a few dozen
// L2 reads per warp), so the block needs no barrier between the combine and the output.
// Traced, the block of a row's first tile also records the row's B task (start: its wait
// returned, end: its combine done).
extern "C" __global__ void __launch_bounds__(BLOCK) combining_tile_consumer(TILED_PROBLEM_PARAMS, int tiles,
                                                                           int rows) {
    TRACE_NOW(taken_ns)
    allow_dependent_launch();
    const TiledProblem p = TILED_PROBLEM;
    const int t = blockIdx.x, r = p.tile_row[t], start = p.tile_start[t], n = p.tile_len[t];
    float values[VALUES_PER_THREAD];
    load_tile(p.x + start, n, values);
    wait_for_producer_grid();  // every A block's tile statistics are written and visible
    TRACE_NOW(start_ns)
    const float3 row = warp_row_statistics(p, r);
#ifdef LAUNCHLAB_TRACE
    if (threadIdx.x == 0 && t == p.row_first_tile[r]) {
        TRACE_NOW(combined_ns)
        TRACE_WRITE(tiles + r, start_ns, start_ns, combined_ns)
    }
#endif
    store_tile(p.y + start, n, values, row.y, row.x / row.z);
    TRACE_SYNC()
    if (threadIdx.x == 0) {
        TRACE_NOW(end_ns)
        TRACE_WRITE(tiles + rows + t, taken_ns, start_ns, end_ns)
    }
}

// ------------------------------------------------------------------ 3: dependency-driven persistent kernel

// Thread 0 waits until row_round[r] reaches `round` (acquire loads, backing off with
// __nanosleep up to 256 ns), bounded by `limit_ns` on %globaltimer; a worker that sees the error
// flag raised elsewhere leaves too. The block learns the outcome through `ready`; true: the row's
// statistics are visible to every thread of the block (acquire by thread 0, then the barrier).
__device__ __forceinline__ bool wait_for_round(const unsigned* row_round, unsigned round, int task, int* error,
                                               unsigned long long limit_ns, int* ready) {
    if (threadIdx.x == 0) {
        unsigned seen = load_acquire(row_round);
        int ok = 1;
        if ((int)(seen - round) < 0) {
            const unsigned long long deadline = now_ns() + limit_ns;
            unsigned pause_ns = 32;
            while ((int)((seen = load_acquire(row_round)) - round) < 0) {
                if (*(volatile const int*)error != 0) {
                    ok = 0;
                    break;
                }
                if (now_ns() > deadline) {
                    raise_error(error, ERROR_WAIT_EXPIRED, task, (int)seen, (int)round);
                    ok = 0;
                    break;
                }
                __nanosleep(pause_ns);
                pause_ns = min(2 * pause_ns, 256u);
            }
        }
        *ready = ok;
    }
    __syncthreads();
    return *ready != 0;
}

// Worker w runs worker_tasks[worker_first[w] .. worker_first[w + 1]) in order: A tiles (task <
// tiles) and C tiles (task >= tiles + rows). task_slot[i] >= 0 names a shared-memory tile slot:
// an A task stores its x values there, a C task reads them back instead of x.
// arrivals[r] counts A arrivals of row r over all invocations, row_round[r] is the last round
// (invocation) whose B of row r is published (32-bit: wraps after 2^32 / need invocations, far beyond a run). An A arrival with old value `old` belongs to round
// old / need + 1 and is the row's last when (old + 1) % need == 0; every row does one round per
// invocation, so the round an A arrival reports is this invocation's number for every row, and a C
// task waits for row_round[r] to reach it. The grid must be co-resident (a cooperative launch), and
// every worker's A tasks must precede its C tasks as far as the host's check requires.
// docs:begin dependency-persistent
extern "C" __global__ void __launch_bounds__(BLOCK, RESIDENT_BLOCKS)
    dependency_persistent(TILED_PROBLEM_PARAMS, int rows, int tiles, const int* __restrict__ worker_first,
                          const int* __restrict__ worker_tasks, const int* __restrict__ task_slot,
                          unsigned* arrivals, unsigned* row_round, int* error, unsigned long long wait_limit_ns) {
    extern __shared__ float cached[];  // slots x TILE floats
    __shared__ float scratch[32];
    __shared__ int ready;
    __shared__ unsigned shared_round;
    __shared__ int combines_row;
    const TiledProblem p = TILED_PROBLEM;
    unsigned round = 0;  // 0: no A task seen yet
    const int last = worker_first[blockIdx.x + 1];
    for (int i = worker_first[blockIdx.x]; i < last; ++i) {
        __syncthreads();  // every thread has read the previous task's shared flags (ready, round)
        const int task = worker_tasks[i], slot = task_slot[i];
        TRACE_NOW(taken_ns)
        if (task < tiles) {  // A, and B when this is the row's last A tile
            const int r = p.tile_row[task];
            const Stats s = block_statistics(p.x + p.tile_start[task], p.tile_len[task],
                                             slot >= 0 ? cached + slot * TILE : nullptr, scratch);
            if (threadIdx.x == 0) {
                TRACE_NOW(end_ns)
                p.tile_stats[3 * task + 0] = s.q;
                p.tile_stats[3 * task + 1] = s.m;
                p.tile_stats[3 * task + 2] = s.z;
                __threadfence();  // release the statistics before the arrival
                const unsigned need = (unsigned)(p.row_first_tile[r + 1] - p.row_first_tile[r]);
                const unsigned old = atomicAdd(arrivals + r, 1u);
                __threadfence();  // acquire: the other tiles' statistics, should this block combine
                shared_round = old / need + 1u;
                combines_row = (old + 1u) % need == 0u;
                TRACE_WRITE(task, taken_ns, taken_ns, end_ns)
            }
            __syncthreads();
            round = shared_round;
            if (combines_row && threadIdx.x < 32) {  // B by warp 0; the other warps go on
                TRACE_NOW(b_start_ns)
                const float3 row = warp_row_statistics(p, r);
                if (threadIdx.x == 0) {
                    p.row_stats[3 * r + 0] = row.x;
                    p.row_stats[3 * r + 1] = row.y;
                    p.row_stats[3 * r + 2] = row.z;
                    TRACE_NOW(b_end_ns)
                    TRACE_WRITE(tiles + r, b_start_ns, b_start_ns, b_end_ns)
                    __threadfence();
                    store_release(row_round + r, round);
                }
            }
        } else {  // C: after B of its row in this round
            const int t = task - tiles - rows, r = p.tile_row[t];
            if (round == 0u) {
                if (threadIdx.x == 0) raise_error(error, ERROR_NO_ROUND, task, 0, 1);
                return;
            }
            if (!wait_for_round(row_round + r, round, task, error, wait_limit_ns, &ready)) return;
            TRACE_NOW(start_ns)
            const float m = __ldcg(p.row_stats + 3 * r + 1);
            const float factor = __ldcg(p.row_stats + 3 * r + 0) / __ldcg(p.row_stats + 3 * r + 2);
            const int start = p.tile_start[t], n = p.tile_len[t];
            const float* v = slot >= 0 ? cached + slot * TILE : p.x + start;
            for (int j = threadIdx.x; j < n; j += BLOCK) p.y[start + j] = factor * expf(v[j] - m);
            TRACE_SYNC()
            if (threadIdx.x == 0) {
                TRACE_NOW(end_ns)
                TRACE_WRITE(task, taken_ns, start_ns, end_ns)
            }
        }
    }
}
// docs:end dependency-persistent

// ------------------------------------------------------------------ 4: one thread-block cluster per row
#if SM90_FEATURES
__device__ __forceinline__ void cluster_arrive_release() {
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait_acquire() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
#endif  // SM90_FEATURES

// Launch with cluster dimension K (1..16): cluster c = blocks [c K, c K + K) handles row
// class_rows[c]; block `rank` covers [rank * chunk, (rank + 1) * chunk) of the row, chunk =
// ceil(length / K). Its values stay in dynamic shared memory when chunk <= cache_elements (else
// the output pass reads x again). Partials (q, m, z) meet through distributed shared memory; no
// global synchronisation, no spin. Several row classes (cluster sizes) are several launches of
// this kernel, chained with PDL on the host: each lets the next launch at once and waits for its
// predecessor only at its very end, so that its completion implies theirs.
// Traced: A = block statistics, B = the combine of rank 0, C = the output pass; chunk numbers
// row_first_chunk[r] + rank, tasks as above with `chunks` tiles. Below 9.0 the kernel only traps.
extern "C" __global__ void __launch_bounds__(BLOCK) cluster_rows(TILED_PROBLEM_PARAMS, const int* __restrict__ class_rows,
                                                                 const int* __restrict__ row_first_chunk, int rows,
                                                                 int chunks, int cache_elements) {
#if SM90_FEATURES
    extern __shared__ float cached[];
    __shared__ float scratch[32];
    __shared__ float partial[3];  // this block's (q, m, z), read by the whole cluster
    __shared__ float row_result[2];  // (m, rho / z) of the row
    TRACE_NOW(taken_ns)
    allow_dependent_launch();
    const TiledProblem p = TILED_PROBLEM;
    cg::cluster_group cluster = cg::this_cluster();
    const int K = (int)cluster.num_blocks(), rank = (int)cluster.block_rank();
    const int r = class_rows[blockIdx.x / K];
    const int row_start = p.row_offsets[r], length = p.row_offsets[r + 1] - row_start;
    const int chunk = (length + K - 1) / K;
    const int begin = min(rank * chunk, length), n = min(chunk, length - begin);
    const float* v = p.x + row_start + begin;
    float* keep = chunk <= cache_elements ? cached : nullptr;
    const Stats s = block_statistics(v, n, keep, scratch);
    if (threadIdx.x == 0) {
        partial[0] = s.q;
        partial[1] = n > 0 ? s.m : NEG_INF;
        partial[2] = s.z;
    }
    TRACE_NOW(a_end_ns)
    cluster.sync();  // every block's partial is written and visible to the cluster
    TRACE_NOW(b_start_ns)
    if (threadIdx.x < 32) {  // warp 0: lane k reads rank k's partial
        const int lane = threadIdx.x;
        float q = 0.0f, m = NEG_INF, z = 0.0f;
        if (lane < K) {
            const float* remote = cluster.map_shared_rank(partial, lane);
            q = remote[0];
            m = remote[1];
            z = remote[2];
        }
        for (int offset = 16; offset > 0; offset >>= 1) {
            q += __shfl_xor_sync(0xffffffffu, q, offset);
            const float other_m = __shfl_xor_sync(0xffffffffu, m, offset);
            const float other_z = __shfl_xor_sync(0xffffffffu, z, offset);
            merge_exp_sums(m, z, other_m, other_z);
        }
        if (lane == 0) {
            row_result[0] = m;
            row_result[1] = sqrtf(q / (float)length) / z;
        }
    }
    cluster_arrive_release();  // done reading the other blocks' shared memory
    __syncthreads();
    TRACE_NOW(c_start_ns)
    const float m = row_result[0], factor = row_result[1];
    const float* again = keep ? keep : v;
    for (int j = threadIdx.x; j < n; j += BLOCK) p.y[row_start + begin + j] = factor * expf(again[j] - m);
    TRACE_SYNC()
#ifdef LAUNCHLAB_TRACE
    if (threadIdx.x == 0) {
        const int c = row_first_chunk[r] + rank;
        TRACE_NOW(end_ns)
        write_task_record(c, taken_ns, taken_ns, a_end_ns);
        if (rank == 0) write_task_record(chunks + r, b_start_ns, b_start_ns, c_start_ns);
        write_task_record(chunks + rows + c, b_start_ns, c_start_ns, end_ns);
    }
#endif
    cluster_wait_acquire();   // no block leaves while another may still read its partial
    wait_for_producer_grid(); // PDL-chained class launches: complete only after the previous one
#else
    __trap();  // no clusters below compute capability 9.0 (arch.cuh)
#endif
}

// Device helpers of chapter 4's designs (kernels/megakernel_designs.cu, kernels/megakernel_flow.cu): the
// trace probe's task records, the register-held tile, the statistics and their merge, and the
// acquire/release accesses the persistent kernels hand work over with.
#pragma once
#include "tiled.cuh"
#include "arch.cuh"

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

// The chain's three kernels: tiled_softmax.cu's A and C, and B with design_helpers.cuh's ROW_RHO in
// plain-softmax mode (design_helpers.cuh says why the chain is a plain softmax).
#define PLAIN_SOFTMAX
// ---- tiled_softmax.cu ----
// Tiled path, three kernels: A (one block per tile), B (one block per row), C (one block per tile).
// Each kernel boundary is a full dependency: every B waits for every A, every C for every B.
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

// ---- end tiled_softmax.cu ----
// ---- design_helpers.cuh ----
// Device helpers of chapter 4's designs (kernels/megakernel_designs.cu, kernels/megakernel_flow.cu): the
// trace probe's task records, the register-held tile, the statistics and their merge, and the
// acquire/release accesses the persistent kernels hand work over with.
#pragma once
// ---- tiled.cuh (pasted above) ----
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
extern "C" __global__ void __launch_bounds__(BLOCK) chain_row_combiner(TILED_PROBLEM_PARAMS) {
    __shared__ float scratch[32];
    row_combine_rho(TILED_PROBLEM, blockIdx.x, scratch);
}

// Persistent megakernels for the tiled RMS-scaled softmax (chapter 4). Both run the very
// device functions of the three-kernel path (tiled.cuh): A = tile_produce, B = row_combine,
// C = tile_consume; only the way a block finds its next task and learns that the task's
// inputs are ready differs.
//
// Tasks are numbered once for every schedule (the host model in launchlab/schedules.py
// uses the same numbers):
//   A tile t  -> task t                       (0 <= t < tiles)
//   B row r   -> task tiles + r               (0 <= r < rows)
//   C tile t  -> task tiles + rows + t
//
// coop_phases: a cooperative launch of at most as many blocks as can be resident at once
//   (checked on the host against the occupancy API). Each phase is a grid-stride loop over
//   its tasks; this_grid().sync() between phases is the kernel boundary, moved on-chip.
//
// queue_persistent: S worker blocks take task numbers from one atomic counter (the queue
//   head). Every dependency of a task has a smaller number, so the task a worker takes
//   depends only on tasks already taken by running workers: by induction on the smallest
//   unfinished task, the queue always makes progress, whatever the number of resident
//   workers. Per-row counters carry the dependencies:
//     a_done[r]: A tiles of row r finished; B waits until it equals the row's tile count;
//     b_done[r]: 1 once B of row r has written rho, m and z; C waits for it.
//   Producers publish with __threadfence() then an atomic; a consumer's thread 0 spins on a
//   volatile read, then __threadfence(), then the block reads the statistics with __ldcg
//   (tiled.cuh), past any stale L1 line. Head and counters are zeroed by a device memset
//   before every invocation (the host enqueues it; it is part of the timed work).
//   Every wait is bounded by a %globaltimer deadline: a block that waits past it records
//   {1, task, counter seen, counter needed} in `error` and leaves; a block waiting elsewhere
//   leaves at its next poll once the flag is up, and tasks that wait on nothing still run to
//   the end of the queue. Nothing spins forever. (The flag is read only while waiting: a read
//   per task fetch would add an L2 round trip to every task.)
#include <cooperative_groups.h>
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
// Both builds (timed and traced) must fit the same number of resident blocks per SM, so that
// a trace shows the timed kernel's worker count: ask ptxas for a full SM of BLOCK-thread blocks.
#define RESIDENT_BLOCKS (SM_THREADS / BLOCK)

// The device clock, in every build (common.cuh's global_timer_ns exists only when tracing).
__device__ __forceinline__ unsigned long long deadline_clock_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Task timeline probe. With -DLAUNCHLAB_TRACE every task writes TASK_WORDS words at
// trace_records[TASK_WORDS * slot] (slot: its place in the queue; the task number where there
// is no queue): taken ns (the worker has its number), start ns (its inputs are ready), end ns
// (its block finished the work, read BEFORE it publishes, so a consumer's start can never
// precede it), worker (blockIdx.x), SM (%smid), task. A record per slot, not per task, lets a
// check see a task that ran twice. Without the define the macros vanish and the kernels are
// the timed ones.
#define TASK_WORDS 6
#ifdef LAUNCHLAB_TRACE
#define TASK_TAKEN() const unsigned long long task_taken_ns = global_timer_ns();
#define TASK_START()  \
    __syncthreads();  \
    const unsigned long long task_start_ns = global_timer_ns();
#define TASK_END(task, slot)                                                              \
    __syncthreads();                                                                      \
    if (threadIdx.x == 0) {                                                               \
        unsigned long long* rec = trace_records + (unsigned long long)TASK_WORDS * (slot); \
        rec[0] = task_taken_ns;                                                           \
        rec[1] = task_start_ns;                                                           \
        rec[2] = global_timer_ns();                                                       \
        rec[3] = blockIdx.x;                                                              \
        rec[4] = sm_id();                                                                 \
        rec[5] = (unsigned long long)(task);                                              \
    }
#else
#define TASK_TAKEN()
#define TASK_START()
#define TASK_END(task, slot)
#endif

// ------------------------------------------------------------------ cooperative phases
// docs:begin coop-phases
extern "C" __global__ void __launch_bounds__(BLOCK, RESIDENT_BLOCKS) coop_phases(TILED_PROBLEM_PARAMS, int rows, int tiles) {
    __shared__ float scratch[32];
    const TiledProblem p = TILED_PROBLEM;
    cooperative_groups::grid_group grid = cooperative_groups::this_grid();
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {  // phase A
        TASK_TAKEN()
        TASK_START()
        tile_produce(p, t, scratch);
        TASK_END(t, t)
    }
    grid.sync();  // every tile's statistics are written and visible
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {  // phase B
        TASK_TAKEN()
        TASK_START()
        row_combine(p, r, scratch);
        TASK_END(tiles + r, tiles + r)
    }
    grid.sync();  // every row's rho, m, z are written and visible
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {  // phase C
        TASK_TAKEN()
        TASK_START()
        tile_consume(p, t);
        TASK_END(tiles + rows + t, tiles + rows + t)
    }
}
// docs:end coop-phases

// ------------------------------------------------------------------ atomic task queue
#define ERROR_WORDS 4  // {flag, task, counter seen, counter needed}

__device__ __forceinline__ bool failed(const int* error) { return *(volatile const int*)error != 0; }

// Thread 0 waits until *counter >= need, bounded by `limit_ns`; the whole block learns the
// outcome through `ready`. True: the inputs are visible to every thread of the block.
__device__ __forceinline__ bool wait_at_least(const unsigned int* counter, unsigned int need, int task,
                                              int* error, unsigned long long limit_ns, int* ready) {
    if (threadIdx.x == 0) {
        unsigned int seen = *(volatile const unsigned int*)counter;
        int ok = 1;
        if (seen < need) {
            const unsigned long long deadline = deadline_clock_ns() + limit_ns;
            while ((seen = *(volatile const unsigned int*)counter) < need) {
                if (failed(error)) {  // another block gave up: leave too
                    ok = 0;
                    break;
                }
                if (deadline_clock_ns() > deadline) {
                    if (atomicCAS(error, 0, 1) == 0) {
                        error[1] = task;
                        error[2] = (int)seen;
                        error[3] = (int)need;
                        __threadfence();
                    }
                    ok = 0;
                    break;
                }
            }
        }
        __threadfence();  // acquire: order the statistics reads after the counter read
        *ready = ok;
    }
    __syncthreads();
    return *ready != 0;
}

// counters: [0] queue head, [1, 1 + rows) a_done, [1 + rows, 1 + 2 rows) b_done; zeroed before
// every invocation. task_order: slot -> task (nullptr: slot == task); only tests pass another
// order, to provoke the bounded-wait error.
// docs:begin queue-persistent
extern "C" __global__ void __launch_bounds__(BLOCK, RESIDENT_BLOCKS) queue_persistent(TILED_PROBLEM_PARAMS, int rows, int tiles,
                                                                     unsigned int* counters, int* error,
                                                                     const int* task_order,
                                                                     unsigned long long wait_limit_ns) {
    __shared__ float scratch[32];
    __shared__ int shared_slot;
    __shared__ int ready;
    const TiledProblem p = TILED_PROBLEM;
    unsigned int* head = counters;
    unsigned int* a_done = counters + 1;
    unsigned int* b_done = counters + 1 + rows;
    const int total = 2 * tiles + rows;
    for (;;) {
        __syncthreads();  // every thread has read the previous slot
        if (threadIdx.x == 0) shared_slot = (int)atomicAdd(head, 1u);
        __syncthreads();
        const int slot = shared_slot;
        if (slot >= total) return;
        const int task = task_order ? task_order[slot] : slot;
        TASK_TAKEN()
        if (task < tiles) {  // A: tile producer
            TASK_START()
            tile_produce(p, task, scratch);
            TASK_END(task, slot)
            if (threadIdx.x == 0) {  // thread 0 wrote the tile's statistics
                __threadfence();
                atomicAdd(a_done + p.tile_row[task], 1u);
            }
        } else if (task < tiles + rows) {  // B: row combine, after every A tile of its row
            const int r = task - tiles;
            const unsigned int need = (unsigned int)(p.row_first_tile[r + 1] - p.row_first_tile[r]);
            if (!wait_at_least(a_done + r, need, task, error, wait_limit_ns, &ready)) return;
            TASK_START()
            row_combine(p, r, scratch);
            TASK_END(task, slot)
            if (threadIdx.x == 0) {  // thread 0 wrote the row's statistics
                __threadfence();
                atomicExch(b_done + r, 1u);
            }
        } else {  // C: tile consumer, after B of its row
            const int t = task - tiles - rows;
            if (!wait_at_least(b_done + p.tile_row[t], 1u, task, error, wait_limit_ns, &ready)) return;
            TASK_START()
            tile_consume(p, t);
            TASK_END(task, slot)
        }
    }
}
// docs:end queue-persistent

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
#include "tiled.cuh"
#include "arch.cuh"

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

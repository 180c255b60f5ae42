// The flow kernel: a tiled persistent kernel built to beat the three-kernel graph, and the kernels of
// the chain (the tiled A -> B -> C step repeated as k dependent stages).
//
// flow_persistent: W co-resident workers (a cooperative launch; the host checks the occupancy API
// first). Worker w owns tiles w, w + W, w + 2W, ... and runs, per stage: the loads of every tile it
// owns at once (the claims of a static schedule are known, so the next tile's loads are in flight
// while the current tile's statistics are reduced), A for each owned tile, then C for each owned
// tile. A row's B runs where its last A tile arrives, or (`fold_b`) inside each C of the row:
//   arrivals[r]: A arrivals of row r over all stages and invocations (never reset: round n of a row
//     is complete when arrivals[r] reaches n x its tiles; wraps after 2^32 arrivals, far beyond a run);
//   row_round[r]: the last round whose B of row r is published (release store, acquire polls).
// The hot path has no atomic round trip where none is needed and no __threadfence: an A arrival is
// one release reduction (fold_b) or one acq_rel atomic (B by the last arrival, which must know it
// is last); a C waits with acquire loads by one thread, spinning (or backing off `sleep_ns`), bounded
// by `wait_limit_ns` on %globaltimer.
// Rounds: a worker reads its first row's arrivals before its own first arrival: every row has the
// same number of complete rounds then (invocations so far x stages), so stage s of this invocation
// is round base + s + 1 for every row.
// Buffers: stage s reads buffers[s] and writes buffers[s + 1]. FLOW_KEEP_X (below) says whether C
// reads x from registers or again from global memory, before its wait. With fold_b the tile statistics alternate
// between two halves by stage parity: a late C of stage s still reads its row's tile statistics
// when the next stage's A tiles of that row (on other workers) write theirs.
// Task numbers (the trace): stage s adds s x (2 tiles + rows) to A t -> t, B r -> tiles + r,
// C t -> tiles + rows + t.
#include "design_helpers.cuh"

// One tile per worker and eight workers per SM (32 registers, no spill) ran faster than four workers of two
// register-held tiles each: more tiles' loads in flight per SM, and no worker runs two A tasks in a row.
#ifndef FLOW_SLOTS
#define FLOW_SLOTS 1      // tiles a worker holds in registers (more are loaded again for C)
#endif
#ifndef FLOW_MIN_BLOCKS
#define FLOW_MIN_BLOCKS 8  // resident workers per SM the register budget must allow
#endif
// C reads x from the registers A loaded (1: fewer bytes, the single step) or from global memory again (0: the
// chain, where every contender moves the same bytes; chain_flow.cu). A build-time choice: a run-time one costs
// the 32-register budget a spill.
#ifndef FLOW_KEEP_X
#define FLOW_KEEP_X 1
#endif

__device__ __forceinline__ unsigned arrive_acq_rel(unsigned* counter) {
    unsigned old;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(counter) : "memory");
    return old;
}

__device__ __forceinline__ void arrive_release(unsigned* counter) {
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(counter) : "memory");
}

__device__ __forceinline__ unsigned load_relaxed(const unsigned* address) {
    unsigned value;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(value) : "l"(address) : "memory");
    return value;
}

// C's x without registers held across the wait: each thread copies the elements it will read
// (cp.async, 4 bytes each: packed rows need not be 16-byte aligned) and waits for its own copies
// after the wait, so no barrier is needed between the copy and the read.
__device__ __forceinline__ void copy_tile_async(const float* v, int n, float* staged) {
#pragma unroll
    for (int k = 0; k < VALUES_PER_THREAD; ++k) {
        const int j = threadIdx.x + k * BLOCK;
        if (j < n) {
            const unsigned to = (unsigned)__cvta_generic_to_shared(staged + j);
            asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(to), "l"(v + j) : "memory");
        }
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
}

__device__ __forceinline__ void staged_tile(int n, const float* staged, float (&values)[VALUES_PER_THREAD]) {
    asm volatile("cp.async.wait_all;" ::: "memory");
#pragma unroll
    for (int k = 0; k < VALUES_PER_THREAD; ++k) {
        const int j = threadIdx.x + k * BLOCK;
        values[k] = j < n ? staged[j] : 0.0f;
    }
}

// Thread 0 polls `word` until it reaches `target` (wrapping compare), bounded by `limit_ns`; a worker
// that sees the error flag raised elsewhere leaves too. `relaxed`: spin with relaxed loads and acquire
// once the target is seen (an acquire per poll may cost the SM more than a load). True: what the
// producer released is visible to the whole block (thread 0's acquire, then the barrier).
__device__ __forceinline__ bool poll_until(const unsigned* word, unsigned target, int task, int* error,
                                           unsigned long long limit_ns, unsigned sleep_ns, int relaxed, int* ready) {
    if (threadIdx.x == 0) {
        unsigned seen = load_acquire(word);
        int ok = 1;
        if ((int)(seen - target) < 0) {
            const unsigned long long deadline = now_ns() + limit_ns;
            for (unsigned spins = 1;; ++spins) {
                seen = relaxed ? load_relaxed(word) : load_acquire(word);
                if ((int)(seen - target) >= 0) {
                    if (relaxed) seen = load_acquire(word);  // orders the block's reads after the producer's writes
                    break;
                }
                if ((spins & 31u) == 0u) {  // the clock and the flag every 32 polls: off the hot path
                    if (*(volatile const int*)error != 0) {
                        ok = 0;
                        break;
                    }
                    if (now_ns() > deadline) {
                        raise_error(error, ERROR_WAIT_EXPIRED, task, (int)seen, (int)target);
                        ok = 0;
                        break;
                    }
                }
                if (sleep_ns) __nanosleep(sleep_ns);
            }
        }
        *ready = ok;
    }
    __syncthreads();
    return *ready != 0;
}

// docs:begin flow-persistent
extern "C" __global__ void __launch_bounds__(BLOCK, FLOW_MIN_BLOCKS)
    flow_persistent(const float* const* __restrict__ buffers, int stages, const int* __restrict__ row_offsets,
                    const int* __restrict__ row_first_tile, const int* __restrict__ tile_row,
                    const int* __restrict__ tile_start, const int* __restrict__ tile_len, float* tile_stats,
                    float* row_stats, int rows, int tiles, unsigned* arrivals, unsigned* row_round, int* error,
                    unsigned long long wait_limit_ns, unsigned sleep_ns, int fold_b, int relaxed) {
    __shared__ float scratch[64];
    __shared__ int ready;
    __shared__ unsigned shared_word;
    __shared__ int combines_row;
#if !FLOW_KEEP_X
    __shared__ float staged[TILE];  // C's x, copied while the worker waits for its row
#endif
    const int W = gridDim.x, w = blockIdx.x;
    if (w >= tiles) return;
    const int owned = (tiles - 1 - w) / W + 1;
    if (threadIdx.x == 0) {  // complete rounds so far: no row has this worker's first arrival yet
        const int r0 = tile_row[w];
        shared_word = load_acquire(arrivals + r0) / (unsigned)(row_first_tile[r0 + 1] - row_first_tile[r0]);
    }
    __syncthreads();
    const unsigned base = shared_word;
    float values[FLOW_SLOTS][VALUES_PER_THREAD];
    const int per_stage = 2 * tiles + rows;
    for (int s = 0; s < stages; ++s) {
        const unsigned round = base + (unsigned)s + 1u;
        TiledProblem p = {buffers[s], const_cast<float*>(buffers[s + 1]), row_offsets, row_first_tile, tile_row,
                          tile_start, tile_len, tile_stats + (fold_b ? (s & 1) * 3 * tiles : 0), row_stats};
        const int task0 = s * per_stage;
        TRACE_NOW(loads_ns)
#pragma unroll
        for (int i = 0; i < FLOW_SLOTS; ++i)  // every owned tile's loads in flight at once
            if (i < owned) load_tile(p.x + tile_start[w + i * W], tile_len[w + i * W], values[i]);
        for (int i = 0; i < owned; ++i) {  // A (and B where this is the row's last tile)
            const int t = w + i * W, r = tile_row[t];
            TRACE_NOW(a_start_ns)
            float local[VALUES_PER_THREAD];
            if (i < FLOW_SLOTS) {
#pragma unroll
                for (int k = 0; k < FLOW_SLOTS; ++k)
                    if (k == i) {
#pragma unroll
                        for (int j = 0; j < VALUES_PER_THREAD; ++j) local[j] = values[k][j];
                    }
            } else {
                load_tile(p.x + tile_start[t], tile_len[t], local);
            }
            const int n = tile_len[t];
            float q = 0.0f, m = NEG_INF;
#pragma unroll
            for (int j = 0; j < VALUES_PER_THREAD; ++j)
                if (threadIdx.x + j * BLOCK < n) {
                    q = fmaf(local[j], local[j], q);
                    m = fmaxf(m, local[j]);
                }
            block_sum_and_max(q, m, scratch);  // one exchange for both: two barriers fewer than apart
            float z = 0.0f;
#pragma unroll
            for (int j = 0; j < VALUES_PER_THREAD; ++j)
                if (threadIdx.x + j * BLOCK < n) z += expf(local[j] - m);
            z = block_sum(z, scratch);
            const unsigned need = (unsigned)(row_first_tile[r + 1] - row_first_tile[r]);
            if (threadIdx.x == 0) {
                TRACE_NOW(a_end_ns)
                p.tile_stats[3 * t + 0] = q;
                p.tile_stats[3 * t + 1] = m;
                p.tile_stats[3 * t + 2] = z;
                if (fold_b) {
                    arrive_release(arrivals + r);
                    combines_row = 0;
                } else {
                    combines_row = arrive_acq_rel(arrivals + r) + 1u == round * need;
                }
                TRACE_WRITE(task0 + t, i == 0 ? loads_ns : a_start_ns, a_start_ns, a_end_ns)  // after the arrival
            }
            __syncthreads();
            if (combines_row && threadIdx.x < 32) {  // B by warp 0 of the row's last arrival
                __syncwarp();
                TRACE_NOW(b_start_ns)
                const float3 row = warp_row_statistics(p, r);
                if (threadIdx.x == 0) {
                    p.row_stats[3 * r + 0] = row.x;
                    p.row_stats[3 * r + 1] = row.y;
                    p.row_stats[3 * r + 2] = row.z;
                    TRACE_NOW(b_end_ns)
                    store_release(row_round + r, round);
                    TRACE_WRITE(task0 + tiles + r, b_start_ns, b_start_ns, b_end_ns)
                }
            }
        }
        for (int i = 0; i < owned; ++i) {  // C, after its row's B (or every A tile of its row)
            const int t = w + i * W, r = tile_row[t], task = task0 + tiles + rows + t;
            TRACE_NOW(taken_ns)
#if !FLOW_KEEP_X
            copy_tile_async(p.x + tile_start[t], tile_len[t], staged);  // nobody's output this stage: fetch it now
#endif
            const unsigned need = (unsigned)(row_first_tile[r + 1] - row_first_tile[r]);
            const bool ok = fold_b ? poll_until(arrivals + r, round * need, task, error, wait_limit_ns, sleep_ns,
                                                relaxed, &ready)
                                   : poll_until(row_round + r, round, task, error, wait_limit_ns, sleep_ns, relaxed,
                                                &ready);
            if (!ok) return;
            TRACE_NOW(start_ns)
            float m, factor;
            if (fold_b) {  // B folded in: every warp combines the row's tile statistics itself
                const float3 row = warp_row_statistics(p, r);
                m = row.y;
                factor = row.x / row.z;
#ifdef LAUNCHLAB_TRACE
                if (threadIdx.x == 0 && t == row_first_tile[r]) {
                    TRACE_NOW(combined_ns)
                    TRACE_WRITE(task0 + tiles + r, start_ns, start_ns, combined_ns)
                }
#endif
            } else {
                m = __ldcg(p.row_stats + 3 * r + 1);
                factor = __ldcg(p.row_stats + 3 * r + 0) / __ldcg(p.row_stats + 3 * r + 2);
            }
            const int start = tile_start[t], n = tile_len[t];
            float local[VALUES_PER_THREAD];
#if FLOW_KEEP_X
            if (i < FLOW_SLOTS) {
#pragma unroll
                for (int k = 0; k < FLOW_SLOTS; ++k)
                    if (k == i) {
#pragma unroll
                        for (int j = 0; j < VALUES_PER_THREAD; ++j) local[j] = values[k][j];
                    }
            } else {
                load_tile(p.x + start, n, local);
            }
#else
            staged_tile(n, staged, local);
#endif
            store_tile(p.y + start, n, local, m, factor);
            __syncthreads();  // the next stage's A reads what every thread of this block wrote
            if (threadIdx.x == 0) {
                TRACE_NOW(end_ns)
                TRACE_WRITE(task, taken_ns, start_ns, end_ns)
            }
        }
    }
}
// docs:end flow-persistent

// ------------------------------------------------------------------ the chain's programmatic launches
// Stage s + 1's A reads what stage s's C wrote, and C reads what A read two launches before: in the
// chain every kernel waits for its producer grid before its first read, not only before its first
// write (pdl_row_combiner of megakernel_designs.cu already does). PDL then overlaps only the launch
// and the blocks' start with the previous kernel's tail.
extern "C" __global__ void __launch_bounds__(BLOCK) chain_pdl_producer(TILED_PROBLEM_PARAMS) {
    __shared__ float scratch[32];
    allow_dependent_launch();
    wait_for_producer_grid();
    tile_produce(TILED_PROBLEM, blockIdx.x, scratch);
}

extern "C" __global__ void __launch_bounds__(BLOCK) chain_pdl_combiner(TILED_PROBLEM_PARAMS) {
    __shared__ float scratch[32];
    allow_dependent_launch();
    wait_for_producer_grid();
    row_combine_rho(TILED_PROBLEM, blockIdx.x, scratch);
}

extern "C" __global__ void __launch_bounds__(BLOCK) chain_pdl_consumer(TILED_PROBLEM_PARAMS) {
    allow_dependent_launch();
    wait_for_producer_grid();
    tile_consume(TILED_PROBLEM, blockIdx.x);
}

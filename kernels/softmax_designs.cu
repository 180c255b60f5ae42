// Fused softmax designs by row length: one launch per invocation, y = rho * exp(x - m) / z per row
// (rho = sqrt(mean x^2) in the *_rms_* kernels, rho = 1 in the plain ones).
//
// Global traffic per element (FP32): x read once, y written once — 8 bytes — in every design,
// except the split design's streamed case (a piece longer than its block's shared memory), which
// reads x a second time: 12 bytes, the second read normally from L2.
//
// How each design maps rows to blocks:
//   narrow   (narrow_*):  `lanes` lanes of a warp per row (1-32, a launch argument), 32 / lanes rows per warp,
//            BLOCK / lanes rows per block; the grid is sized to the GPU (SMs x resident blocks at most) and each
//            warp strides over groups of 32 / lanes rows. A row lives in registers: ROW_CHUNKS 16-byte chunks
//            per lane, so rows of up to 4 * lanes * ROW_CHUNKS - 3 floats at the worst alignment. A row is reduced
//            once: (max, sum of exp, sum of squares) together, by log2(lanes) rounds of shuffles (row_helpers.cuh).
//   cluster  (cluster_*): a thread-block cluster of CLUSTER blocks per row (grid = rows x CLUSTER).
//            Block k of the cluster keeps chunks [k S, (k + 1) S) of the row (S = ceil(chunks / CLUSTER))
//            in its dynamic shared memory, reduces its own (max m_k, sum s_k = sum exp(x - m_k),
//            sum of squares q_k), publishes them in shared memory, and after one cluster barrier
//            every warp reads the CLUSTER triples through distributed shared memory and combines them.
//            A slice of up to SLICE_REGS x BLOCK chunks stays in registers instead (chosen at run time).
//   split    (split_*):   rows x PIECES pieces over a cooperative grid of PIECES x (rows per iteration)
//            blocks, every block resident at once. Each block reduces its piece (kept in dynamic shared
//            memory when it fits, else streamed with an online max and sum) to (m_k, s_k, q_k) in a
//            global array; the row's last block to arrive combines them into the row's (m, z, q) and
//            releases the others, which wait on a per-row generation counter; then every block writes
//            its piece of y (from shared memory, or by reading x again).
//
// Rows are walked in 16-byte chunks aligned in memory (row_helpers.cuh): chunk c covers row elements
// 4c - lead .. 4c - lead + 3, -inf standing for a missing element. x and y must have the same address modulo 16.
#include <cooperative_groups.h>

#include "row_helpers.cuh"
#include "arch.cuh"

namespace cg = cooperative_groups;

#ifndef ROW_CHUNKS
#define ROW_CHUNKS 4   // narrow: 16-byte chunks of a row each lane holds in registers
#endif
#ifndef PREFETCH
#define PREFETCH 0     // narrow: 1 loads the next group of rows while this one is reduced
#endif
#ifndef CLUSTER
#define CLUSTER 8      // cluster: blocks per row (8 portable, 16 with the non-portable attribute)
#endif
#ifndef UNROLL
#define UNROLL 4       // cluster and split: chunks per thread in flight while a slice is read
#endif
#ifndef SLICE_REGS
#define SLICE_REGS 0   // cluster: a slice of up to SLICE_REGS x BLOCK chunks stays in registers, a longer one in shared memory
#endif
// DESIGN selects the kernels a module holds: 1 narrow, 2 cluster, 3 split, 0 (default) all three.
// A target needs only its own pair, and a module of one pair compiles in a third of the time.
#ifndef DESIGN
#define DESIGN 0
#endif
#define EMITS(design) (DESIGN == 0 || DESIGN == (design))

static_assert(CLUSTER >= 1 && CLUSTER <= 16, "a cluster holds at most 16 blocks");
static_assert(BLOCK % 32 == 0, "whole warps");

#define FULL_MASK 0xffffffffu

// Statistics of part of a row: max m, sum s of exp(x - m), sum q of squares.
struct Stats {
    float m, s, q;
};

// ---------------------------------------------------------------- narrow: a part of a warp per row
// A group's ROW_CHUNKS chunks a lane: loaded all at once (-inf where the row has none or the group is past the
// last row).
template <int LANES>
__device__ __forceinline__ void narrow_load(const float* __restrict__ x, float* __restrict__ y, long long first,
                                            int rows, int cols, float4 (&v)[ROW_CHUNKS]) {
    const int lane = threadIdx.x & 31, part = lane % LANES;
    const long long row = first + lane / LANES;
    const Row r = row_at(x, y, row < rows ? row : 0, cols);
#pragma unroll
    for (int i = 0; i < ROW_CHUNKS; ++i) {
        const int c = part + i * LANES;
        v[i] = (row < rows && c < r.chunks) ? load_chunk(r, c) : neg_inf4();
    }
}

// The warp strides over groups of 32 / LANES consecutive rows, so every lane runs the same number
// of iterations; a group past the last row loads nothing and stores nothing. Lane `part` of a group
// holds chunks part, part + LANES, ...: a group's loads of one step are contiguous. With PREFETCH the
// next group's loads are issued before this group is reduced, so that a warp keeps loads in flight
// while it reduces and stores (twice the registers for the row).
// docs:begin narrow-rows
template <bool RMS, int LANES>
__device__ __forceinline__ void narrow_rows(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    constexpr int ROWS_PER_WARP = 32 / LANES;
    const int lane = threadIdx.x & 31, part = lane % LANES;
    const long long warp = (long long)blockIdx.x * (BLOCK / 32) + threadIdx.x / 32;
    const long long step = (long long)gridDim.x * (BLOCK / 32) * ROWS_PER_WARP;
    float4 v[ROW_CHUNKS];
    if (PREFETCH) narrow_load<LANES>(x, y, warp * ROWS_PER_WARP, rows, cols, v);
    for (long long first = warp * ROWS_PER_WARP; first < rows; first += step) {
        const long long row = first + lane / LANES;
        const bool live = row < rows;
        const Row r = row_at(x, y, live ? row : 0, cols);
        float4 next[ROW_CHUNKS];  // without PREFETCH never used, and no register is spent on it
        if (PREFETCH) narrow_load<LANES>(x, y, first + step, rows, cols, next);
        else narrow_load<LANES>(x, y, first, rows, cols, v);
        // One reduction per row within the group: (max, sum of exp, sum of squares) together (row_helpers.cuh).
        float shift;
        const RowStats stats = group_stats<LANES, RMS>(own_stats<RMS>(v, shift));
        const float factor = row_factor<RMS>(stats, shift, cols);
#pragma unroll
        for (int i = 0; i < ROW_CHUNKS; ++i) {
            const int c = part + i * LANES;
            if (live && c < r.chunks) store_chunk(r, c, scale4(v[i], factor));
        }
        if (PREFETCH) {
#pragma unroll
            for (int i = 0; i < ROW_CHUNKS; ++i) v[i] = next[i];
        }
    }
}
// docs:end narrow-rows

// Lanes per row are chosen at launch (a power of two, 1-32; the host checks), so that one build serves
// every row length its ROW_CHUNKS covers: the branch is uniform over the grid. Comparisons rather than a
// switch: a switch compiles to a jump table in constant memory, one more dependent load (a constant-cache miss
// on an SM that has not run the kernel yet) before a short row's first instruction of work.
template <bool RMS>
__device__ __forceinline__ void narrow_dispatch(const float* __restrict__ x, float* __restrict__ y, int rows, int cols,
                                                int lanes) {
    if (lanes <= 4) {
        if (lanes <= 1) narrow_rows<RMS, 1>(x, y, rows, cols);
        else if (lanes <= 2) narrow_rows<RMS, 2>(x, y, rows, cols);
        else narrow_rows<RMS, 4>(x, y, rows, cols);
    } else {
        if (lanes <= 8) narrow_rows<RMS, 8>(x, y, rows, cols);
        else if (lanes <= 16) narrow_rows<RMS, 16>(x, y, rows, cols);
        else narrow_rows<RMS, 32>(x, y, rows, cols);
    }
}

#if EMITS(1)
extern "C" __global__ void __launch_bounds__(BLOCK)
narrow_rms_softmax(const float* __restrict__ x, float* __restrict__ y, int rows, int cols, int lanes) {
    narrow_dispatch<true>(x, y, rows, cols, lanes);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
narrow_softmax(const float* __restrict__ x, float* __restrict__ y, int rows, int cols, int lanes) {
    narrow_dispatch<false>(x, y, rows, cols, lanes);
}
#endif

// ---------------------------------------------------------------- slices kept in shared memory
// Chunks [begin, end) of a row into `slice`, then exp(x - m_k) in place: the block's Stats (every
// thread gets them). Thread t only touches slice entries t, t + BLOCK, ...: no barrier between the
// passes beyond those of the reductions. An empty slice gives (-inf, 0, 0).
template <bool RMS>
__device__ __forceinline__ Stats slice_to_shared(const Row& r, int begin, int end, float4* slice, float* scratch) {
    float m = NEG_INF, squares = 0.0f;
    for (int base = begin + (int)threadIdx.x; base < end; base += UNROLL * BLOCK) {
        float4 v[UNROLL];
        load_unrolled(r, base, end, v);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int c = base + u * BLOCK;
            if (c < end) slice[c - begin] = v[u];
            m = fmaxf(m, max4(v[u]));
            if (RMS) squares += squares4(v[u]);
        }
    }
    Stats local;
    local.m = block_max(m, scratch);
    local.q = RMS ? block_sum(squares, scratch) : 0.0f;
    float s = 0.0f;
    if (local.m > NEG_INF) {  // the same for the whole block
        for (int c = threadIdx.x; c < end - begin; c += BLOCK) {
            const float4 e = exp4(slice[c], local.m);
            slice[c] = e;
            s += sum4(e);
        }
    }
    local.s = block_sum(s, scratch);
    return local;
}

// y for chunks [begin, end) from the exp(x - m_k) kept in `slice`, times factor.
__device__ __forceinline__ void slice_from_shared(const Row& r, int begin, int end, const float4* slice, float factor) {
    for (int c = threadIdx.x; c < end - begin; c += BLOCK) store_chunk(r, begin + c, scale4(slice[c], factor));
}

// Registers instead: thread t holds chunks begin + t + i BLOCK (i < SLICE_REGS) of the slice, read all at
// once (SLICE_REGS x 16 bytes in flight per thread), then exp(x - m_k) in place. Same Stats as above.
template <bool RMS, int K>
__device__ __forceinline__ Stats slice_to_registers(const Row& r, int begin, int end, float4 (&v)[K], float* scratch) {
    float m = NEG_INF, squares = 0.0f;
#pragma unroll
    for (int i = 0; i < K; ++i) {
        const int c = begin + (int)threadIdx.x + i * BLOCK;
        v[i] = c < end ? load_chunk(r, c) : neg_inf4();
    }
#pragma unroll
    for (int i = 0; i < K; ++i) {
        m = fmaxf(m, max4(v[i]));
        if (RMS) squares += squares4(v[i]);
    }
    Stats local;
    local.m = block_max(m, scratch);
    local.q = RMS ? block_sum(squares, scratch) : 0.0f;
    float s = 0.0f;
    if (local.m > NEG_INF) {
#pragma unroll
        for (int i = 0; i < K; ++i) {
            v[i] = exp4(v[i], local.m);
            s += sum4(v[i]);
        }
    }
    local.s = block_sum(s, scratch);
    return local;
}

template <int K>
__device__ __forceinline__ void slice_from_registers(const Row& r, int begin, int end, const float4 (&v)[K], float factor) {
#pragma unroll
    for (int i = 0; i < K; ++i) {
        const int c = begin + (int)threadIdx.x + i * BLOCK;
        if (c < end) store_chunk(r, c, scale4(v[i], factor));
    }
}

// ---------------------------------------------------------------- cluster: a cluster of blocks per row
#if SM90_FEATURES
// docs:begin cluster-row
template <bool RMS>
__device__ __forceinline__ void cluster_row(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float scratch[32];
    __shared__ float published[3];  // this block's (m_k, s_k, q_k), read by the whole cluster
    extern __shared__ float4 slice[];
    cg::cluster_group cluster = cg::this_cluster();
    const int rank = (int)cluster.block_rank();
    const Row r = row_at(x, y, blockIdx.x / CLUSTER, cols);
    const int per_block = (r.chunks + CLUSTER - 1) / CLUSTER;
    const int begin = rank * per_block, end = min(begin + per_block, r.chunks);
    // The slice stays in registers where SLICE_REGS chunks per thread hold it, else in shared memory: decided
    // per launch from the row length (the same for every block), so one build serves every row length.
    const bool in_registers = SLICE_REGS > 0 && per_block <= SLICE_REGS * BLOCK;
    float4 v[SLICE_REGS > 0 ? SLICE_REGS : 1];
    const Stats local = in_registers ? slice_to_registers<RMS>(r, begin, end, v, scratch)
                                     : slice_to_shared<RMS>(r, begin, end, slice, scratch);
    if (threadIdx.x == 0) {
        published[0] = local.m;
        published[1] = local.s;
        published[2] = local.q;
    }
    cluster.sync();  // every block's triple is written and visible to the cluster
    // Each warp combines the cluster's triples: lane k < CLUSTER reads block k's through DSMEM.
    const int lane = threadIdx.x & 31;
    float mk = NEG_INF, sk = 0.0f, qk = 0.0f;
    if (lane < CLUSTER) {
        const float* remote = cluster.map_shared_rank(published, lane);
        mk = remote[0];
        sk = remote[1];
        qk = remote[2];
    }
    const float m = warp_max(mk);
    const float z = warp_sum(rescaled(sk, mk, m));
    const float rho = RMS ? sqrtf(warp_sum(qk) / (float)cols) : 1.0f;
    cluster.barrier_arrive();  // this block has read every remote triple it needs
    if (local.m > NEG_INF) {
        const float factor = exp_shifted(local.m, m) * rho / z;
        if (in_registers) slice_from_registers(r, begin, end, v, factor);
        else slice_from_shared(r, begin, end, slice, factor);
    }
    cluster.barrier_wait();    // no block leaves while another may still read its triple
}
// docs:end cluster-row

#if EMITS(2)
extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(BLOCK)
cluster_rms_softmax(const float* __restrict__ x, float* __restrict__ y, int cols) {
    cluster_row<true>(x, y, cols);
}

extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(BLOCK)
cluster_softmax(const float* __restrict__ x, float* __restrict__ y, int cols) {
    cluster_row<false>(x, y, cols);
}
#endif  // EMITS(2)
#elif EMITS(2)
// Below compute capability 9.0 there are no clusters: the kernels exist (arch.cuh says why) and trap.
extern "C" __global__ void __launch_bounds__(BLOCK) cluster_rms_softmax(const float* x, float* y, int cols) { __trap(); }
extern "C" __global__ void __launch_bounds__(BLOCK) cluster_softmax(const float* x, float* y, int cols) { __trap(); }
#endif  // SM90_FEATURES

// ---------------------------------------------------------------- split: pieces of a row over the grid
// Streamed piece: a running max and sum per thread, rescaled when the max grows, combined over the block.
template <bool RMS>
__device__ __forceinline__ Stats piece_streamed(const Row& r, int begin, int end, float* scratch) {
    float m = NEG_INF, s = 0.0f, squares = 0.0f;
    for (int base = begin + (int)threadIdx.x; base < end; base += UNROLL * BLOCK) {
        float4 v[UNROLL];
        load_unrolled(r, base, end, v);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            if (base + u * BLOCK < end) {  // such a chunk holds a finite element
                absorb(m, s, v[u]);
                if (RMS) squares += squares4(v[u]);
            }
        }
    }
    Stats local;
    local.m = block_max(m, scratch);
    local.s = block_sum(local.m > NEG_INF ? rescaled(s, m, local.m) : 0.0f, scratch);
    local.q = RMS ? block_sum(squares, scratch) : 0.0f;
    return local;
}

// y for chunks [begin, end) by reading x again: exp(x - m) * factor.
__device__ __forceinline__ void piece_rewritten(const Row& r, int begin, int end, float m, float factor) {
    for (int base = begin + (int)threadIdx.x; base < end; base += UNROLL * BLOCK) {
        float4 v[UNROLL];
        load_unrolled(r, base, end, v);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int c = base + u * BLOCK;
            if (c < end) store_chunk(r, c, scale4(exp4(v[u], m), factor));
        }
    }
}

__device__ __forceinline__ unsigned int load_acquire(const unsigned int* address) {
    unsigned int value;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(value) : "l"(address) : "memory");
    return value;
}

#define SPLIT_WAIT_LIMIT_NS 2000000000ull  // 2 s: far beyond any piece; only a broken launch waits so long

// The row's (m, z, q) from every piece's Stats. Each block publishes its triple, then arrives on the
// row's counter; the last to arrive combines the row's triples, publishes the total, resets the
// counter and bumps the row's generation, which the other blocks (having read it before arriving)
// wait to change. The counter is back at zero after every invocation, so graph replays reuse it.
// The grid is cooperative, so every block of a row is resident and the wait ends.
__device__ __forceinline__ Stats row_total(Stats mine, long long row, long long piece, int pieces,
                                           float* __restrict__ partials, float* __restrict__ totals,
                                           unsigned int* arrivals, unsigned int* generations, float* scratch) {
    __shared__ unsigned int last, generation;
    if (pieces == 1) return mine;
    if (threadIdx.x == 0) {
        const unsigned int seen = load_acquire(generations + row);  // before arriving: see above
        __stcg(partials + 3 * piece + 0, mine.m);
        __stcg(partials + 3 * piece + 1, mine.s);
        __stcg(partials + 3 * piece + 2, mine.q);
        __threadfence();
        last = atomicAdd(arrivals + row, 1u) == (unsigned int)pieces - 1u;
        generation = seen;
    }
    __syncthreads();
    Stats total;
    if (last) {
        __threadfence();
        const float* own = partials + 3 * row * pieces;
        float m = NEG_INF;
        for (int k = threadIdx.x; k < pieces; k += BLOCK) m = fmaxf(m, __ldcg(own + 3 * k));
        total.m = block_max(m, scratch);
        float s = 0.0f, q = 0.0f;
        for (int k = threadIdx.x; k < pieces; k += BLOCK) {
            s += rescaled(__ldcg(own + 3 * k + 1), __ldcg(own + 3 * k), total.m);
            q += __ldcg(own + 3 * k + 2);
        }
        total.s = block_sum(s, scratch);
        total.q = block_sum(q, scratch);
        if (threadIdx.x == 0) {
            __stcg(totals + 3 * row + 0, total.m);
            __stcg(totals + 3 * row + 1, total.s);
            __stcg(totals + 3 * row + 2, total.q);
            arrivals[row] = 0u;
            __threadfence();
            atomicAdd(generations + row, 1u);
        }
    } else {
        if (threadIdx.x == 0) {
            unsigned long long start, now;
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
            while (load_acquire(generations + row) == generation) {
                __nanosleep(64);
                asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
                if (now - start > SPLIT_WAIT_LIMIT_NS) __trap();  // loud: a row's blocks were not all resident
            }
        }
        __syncthreads();
        total.m = __ldcg(totals + 3 * row + 0);
        total.s = __ldcg(totals + 3 * row + 1);
        total.q = __ldcg(totals + 3 * row + 2);
    }
    return total;
}

// Piece p of row p / pieces covers chunks [k S, (k + 1) S) of the row, k = p % pieces, S = ceil(chunks /
// pieces). The grid is a multiple of `pieces`, so the pieces of a row always fall in one grid-stride
// step and a block only ever waits for blocks of the same step.
template <bool RMS>
__device__ __forceinline__ void split_rows(const float* __restrict__ x, float* __restrict__ y, int rows, int cols,
                                           int pieces, float* __restrict__ partials, float* __restrict__ totals,
                                           unsigned int* arrivals, unsigned int* generations) {
    __shared__ float scratch[32];
    extern __shared__ float4 slice[];
    const long long work = (long long)rows * pieces;
    for (long long piece = blockIdx.x; piece < work; piece += gridDim.x) {
        const long long row = piece / pieces;
        const Row r = row_at(x, y, row, cols);
        const int per_piece = (r.chunks + pieces - 1) / pieces;
        const int begin = (int)(piece % pieces) * per_piece, end = min(begin + per_piece, r.chunks);
        const bool kept = 16u * (unsigned int)per_piece <= dynamic_shared_bytes();
        const Stats mine = kept ? slice_to_shared<RMS>(r, begin, end, slice, scratch)
                                : piece_streamed<RMS>(r, begin, end, scratch);
        const Stats total = row_total(mine, row, piece, pieces, partials, totals, arrivals, generations, scratch);
        const float rho = RMS ? sqrtf(total.q / (float)cols) : 1.0f;
        if (mine.m > NEG_INF) {
            if (kept) slice_from_shared(r, begin, end, slice, exp_shifted(mine.m, total.m) * rho / total.s);
            else piece_rewritten(r, begin, end, total.m, rho / total.s);
        }
        __syncthreads();  // the slice and the shared flags are reused by the next step
    }
}

#if EMITS(3)
extern "C" __global__ void __launch_bounds__(BLOCK)
split_rms_softmax(const float* __restrict__ x, float* __restrict__ y, int rows, int cols, int pieces,
                  float* __restrict__ partials, float* __restrict__ totals, unsigned int* arrivals,
                  unsigned int* generations) {
    split_rows<true>(x, y, rows, cols, pieces, partials, totals, arrivals, generations);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
split_softmax(const float* __restrict__ x, float* __restrict__ y, int rows, int cols, int pieces,
              float* __restrict__ partials, float* __restrict__ totals, unsigned int* arrivals,
              unsigned int* generations) {
    split_rows<false>(x, y, rows, cols, pieces, partials, totals, arrivals, generations);
}
#endif

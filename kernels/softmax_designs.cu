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
//            The scalar build (SCALAR 1) holds ROW_CHUNKS single floats a lane (rows of up to lanes * ROW_CHUNKS
//            floats, any alignment), and its grid has a warp for every group of rows (no grid-stride loop).
//   cluster  (cluster_*): a thread-block cluster of CLUSTER blocks per row (grid = rows x CLUSTER).
//            Block k of the cluster keeps chunks [k S, (k + 1) S) of the row (S = ceil(chunks / CLUSTER))
//            in its dynamic shared memory, reduces its own (max m_k, sum s_k = sum exp(x - m_k),
//            sum of squares q_k), pushes them into entry k of every block's shared memory (distributed
//            shared memory, each push signalling the receiving block's mbarrier), waits until its own
//            CLUSTER entries have arrived, and every warp combines them.
//            A slice of up to SLICE_REGS x BLOCK chunks stays in registers instead (chosen at run time).
//   split    (split_*):   rows x pieces pieces over a grid of pieces x (rows per step) blocks, every block
//            resident at once (the host checks with the occupancy API; the launch may also be cooperative).
//            Each block keeps its piece on chip where it fits (SPLIT_REGS chunks per thread in registers, then
//            dynamic shared memory; the rest is streamed and read again) and reduces it to one (m_k, s_k, q_k),
//            which it publishes as epoch-stamped words (grid_flags.cuh); its threads then gather the row's
//            stamped words themselves and merge them (one round trip through L2, no counter, nothing to reset),
//            and every block writes its piece of y.
//
// Rows are walked in 16-byte chunks aligned in memory (row_helpers.cuh): chunk c covers row elements
// 4c - lead .. 4c - lead + 3, -inf standing for a missing element. x and y must have the same address modulo 16.
#include <cooperative_groups.h>

#include "row_helpers.cuh"
#include "grid_flags.cuh"
#include "arch.cuh"

namespace cg = cooperative_groups;

#ifndef ROW_CHUNKS
#define ROW_CHUNKS 4   // narrow: 16-byte chunks of a row each lane holds in registers
#endif
#ifndef PREFETCH
#define PREFETCH 0     // narrow: 1 loads the next group of rows while this one is reduced
#endif
#ifndef SCALAR
#define SCALAR 0       // narrow: 1 holds ROW_CHUNKS single floats a lane (4-byte loads), one group of rows a warp
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
#ifndef SPLIT_REGS
#define SPLIT_REGS 4   // split: the first SPLIT_REGS x BLOCK chunks of a piece stay in registers, the next in shared memory
#endif
#ifndef SPLIT_MIN_BLOCKS
#define SPLIT_MIN_BLOCKS (BLOCK < 1024 ? 1024 / BLOCK : 1)  // split: blocks per SM __launch_bounds__ must allow
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

// The scalar build (SCALAR 1), for short rows in small matrices, where a call is its fixed costs: lane `part` of
// a group of LANES lanes holds the row's elements part, part + LANES, ... (ROW_CHUNKS of them, -inf past the row)
// as single floats, so a row's ends need no lane-by-lane chunk and any alignment of x and y will do; each warp
// takes one group of 32 / LANES rows and returns (the grid covers every row: no grid-stride loop).
template <bool RMS, int LANES>
__device__ __forceinline__ void scalar_rows(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    constexpr int ROWS_PER_WARP = 32 / LANES;
    const int lane = threadIdx.x & 31, part = lane % LANES;
    const int row = ((int)blockIdx.x * (BLOCK / 32) + (int)(threadIdx.x >> 5)) * ROWS_PER_WARP + lane / LANES;
    const bool live = row < rows;
    const size_t start = (size_t)(live ? row : 0) * (size_t)cols;
    float v[ROW_CHUNKS];
#pragma unroll
    for (int i = 0; i < ROW_CHUNKS; ++i) {
        const int j = part + i * LANES;
        v[i] = (live && j < cols) ? __ldg(x + start + j) : NEG_INF;
    }
    RowStats own = {NEG_INF, 0.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < ROW_CHUNKS; ++i) {
        own.m = fmaxf(own.m, v[i]);
        if (RMS) own.q += v[i] > NEG_INF ? v[i] * v[i] : 0.0f;
    }
    const float shift = own.m == NEG_INF ? 0.0f : own.m;
#pragma unroll
    for (int i = 0; i < ROW_CHUNKS; ++i) {
        v[i] = exp_shifted(v[i], shift);
        own.s += v[i];
    }
    const float factor = row_factor<RMS>(group_stats<LANES, RMS>(own), shift, cols);
#pragma unroll
    for (int i = 0; i < ROW_CHUNKS; ++i) {
        const int j = part + i * LANES;
        if (live && j < cols) y[start + j] = v[i] * factor;
    }
}

template <bool RMS>
__device__ __forceinline__ void scalar_dispatch(const float* __restrict__ x, float* __restrict__ y, int rows, int cols,
                                                int lanes) {
    if (lanes <= 4) {
        if (lanes <= 1) scalar_rows<RMS, 1>(x, y, rows, cols);
        else if (lanes <= 2) scalar_rows<RMS, 2>(x, y, rows, cols);
        else scalar_rows<RMS, 4>(x, y, rows, cols);
    } else {
        if (lanes <= 8) scalar_rows<RMS, 8>(x, y, rows, cols);
        else if (lanes <= 16) scalar_rows<RMS, 16>(x, y, rows, cols);
        else scalar_rows<RMS, 32>(x, y, rows, cols);
    }
}

#if EMITS(1)
extern "C" __global__ void __launch_bounds__(BLOCK)
narrow_rms_softmax(const float* __restrict__ x, float* __restrict__ y, int rows, int cols, int lanes) {
    if (SCALAR) scalar_dispatch<true>(x, y, rows, cols, lanes);
    else narrow_dispatch<true>(x, y, rows, cols, lanes);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
narrow_softmax(const float* __restrict__ x, float* __restrict__ y, int rows, int cols, int lanes) {
    if (SCALAR) scalar_dispatch<false>(x, y, rows, cols, lanes);
    else narrow_dispatch<false>(x, y, rows, cols, lanes);
}
#endif

// ---------------------------------------------------------------- a thread's part of a slice (cluster and split)
// Thread t takes chunks begin + t, begin + t + BLOCK, ... of [begin, end) and merges their (max m, sum s of
// exp(x - m), sum q of squares) into its running (m, s, q) (grid_flags.cuh's merge_stats). Where the raw x stays
// (shared memory, this thread's own entries: no barrier between a thread's passes; or registers with IN_PLACE
// false), y is exp(x - m_row) * factor from it: one more exponential per element, in exchange for the block
// needing one reduction of (m, s, q) instead of a max, then a sum, then a sum of squares.
// IN_PLACE (the split design) replaces the chunks in registers by exp(x - shift) against the thread's own maximum
// `shift` as their sum is taken, so y costs a multiply by exp(shift - m_row) * factor instead of an exponential
// (1-4 % faster on the H200 at its shapes). The cluster design keeps the raw x: there the in-place build needs
// more registers (its build of 8 chunks a thread 66 instead of 64, one block an SM fewer; its RMS build of 16
// chunks spills under the bound of three blocks an SM) and measured up to 17 % slower.
template <bool RMS, bool IN_PLACE, int K>
__device__ __forceinline__ void registers_stats(const Row& r, int begin, int end, float4 (&v)[K], float& m, float& s,
                                                float& q, float& shift) {
    float mine = NEG_INF, squares = 0.0f, sum = 0.0f;
#pragma unroll
    for (int i = 0; i < K; ++i) {
        const int c = begin + (int)threadIdx.x + i * BLOCK;
        v[i] = c < end ? load_chunk(r, c) : neg_inf4();  // all K loads in flight at once
    }
#pragma unroll
    for (int i = 0; i < K; ++i) mine = fmaxf(mine, max4(v[i]));
    shift = mine > NEG_INF ? mine : 0.0f;  // an empty part (-inf in every lane) sums to 0 either way
    if (mine > NEG_INF) {
#pragma unroll
        for (int i = 0; i < K; ++i) {
            if (RMS) squares += squares4(v[i]);
            if (IN_PLACE) {
                v[i] = exp4(v[i], shift);
                sum += sum4(v[i]);
            } else {
                sum += sum4(exp4(v[i], mine));
            }
        }
    }
    merge_stats(m, s, q, mine, sum, squares);
}

// y for the chunks registers_stats left in v: exp(x - m) * factor, or with IN_PLACE exp(x - shift) times
// exp(shift - m) * factor.
template <bool IN_PLACE, int K>
__device__ __forceinline__ void registers_write(const Row& r, int begin, int end, const float4 (&v)[K], float shift,
                                                float m, float factor) {
    const float scale = IN_PLACE ? exp_shifted(shift, m) * factor : factor;
#pragma unroll
    for (int i = 0; i < K; ++i) {
        const int c = begin + (int)threadIdx.x + i * BLOCK;
        if (c < end) store_chunk(r, c, scale4(IN_PLACE ? v[i] : exp4(v[i], m), scale));
    }
}

// 16 bytes of global memory into shared memory with no register on the way (cp.async, sm_80 and later); the
// thread's copies since the last commit form a group, and a thread waits for its own groups only.
__device__ __forceinline__ void copy_chunk_async(float4* to, const float4* from) {
    const unsigned int address = (unsigned int)__cvta_generic_to_shared(to);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(address), "l"(from) : "memory");
}

__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;" ::: "memory"); }

// Until at most `pending` of this thread's newest groups are still in flight. The count is an immediate operand:
// comparisons (no jump table), and a count above 7 waits as for 7, which only waits longer.
__device__ __forceinline__ void wait_copies(int pending) {
    if (pending <= 0) asm volatile("cp.async.wait_group 0;" ::: "memory");
    else if (pending == 1) asm volatile("cp.async.wait_group 1;" ::: "memory");
    else if (pending == 2) asm volatile("cp.async.wait_group 2;" ::: "memory");
    else if (pending == 3) asm volatile("cp.async.wait_group 3;" ::: "memory");
    else if (pending == 4) asm volatile("cp.async.wait_group 4;" ::: "memory");
    else if (pending == 5) asm volatile("cp.async.wait_group 5;" ::: "memory");
    else if (pending == 6) asm volatile("cp.async.wait_group 6;" ::: "memory");
    else asm volatile("cp.async.wait_group 7;" ::: "memory");
}

// The same with the chunks kept in `slice` (entry c - begin): thread t only touches entries t, t + BLOCK, ...
// The raw x goes to shared memory while an online max and sum take in each group of UNROLL chunks as it lands, so
// the exponentials overlap loads still in flight rather than filling a pass of their own after the last load.
// How the chunks get there:
//   ASYNC false  a register loop, UNROLL chunks a thread in flight: the cluster design, whose grid is mostly one
//                wave of blocks that all start at once (on the H200, 5-10 % faster than requesting a whole slice
//                at once there);
//   ASYNC true   every chunk of the thread's part requested before the first is used, by cp.async straight into
//                shared memory (a chunk that straddles a row's end lane by lane), a commit group per UNROLL: the
//                split design, whose resident blocks walk grid steps (3-8 % faster at its bandwidth-bound shapes).
template <bool RMS, bool ASYNC>
__device__ __forceinline__ void shared_stats(const Row& r, int begin, int end, float4* slice, float& m, float& s,
                                             float& q) {
    const float4* chunks = reinterpret_cast<const float4*>(r.x);
    int groups = 0;
    if (ASYNC) {
        for (int base = begin + (int)threadIdx.x; base < end; base += UNROLL * BLOCK, ++groups) {
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                const int c = base + u * BLOCK;
                if (c < end) {
                    if (whole_chunk(r, c)) copy_chunk_async(slice + (c - begin), chunks + c);
                    else slice[c - begin] = load_chunk(r, c);
                }
            }
            commit_copies();
        }
    }
    float mine = NEG_INF, squares = 0.0f, sum = 0.0f;
    int group = 0;
    for (int base = begin + (int)threadIdx.x; base < end; base += UNROLL * BLOCK, ++group) {
        float4 v[UNROLL];
        if (ASYNC) {
            wait_copies(groups - 1 - group);  // this thread's groups up to `group` have landed
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                const int c = base + u * BLOCK;
                v[u] = c < end ? slice[c - begin] : neg_inf4();
            }
        } else {
            load_unrolled(r, base, end, v);  // -inf past `end`
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                const int c = base + u * BLOCK;
                if (c < end) slice[c - begin] = v[u];
            }
        }
        float top = mine;  // chunk `base` holds an element of the row: top ends finite
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            top = fmaxf(top, max4(v[u]));
            if (RMS) squares += squares4(v[u]);
        }
        float added = 0.0f;
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) added += sum4(exp4(v[u], top));
        sum = rescaled(sum, mine, top) + added;
        mine = top;
    }
    merge_stats(m, s, q, mine, sum, squares);
}

__device__ __forceinline__ void shared_write(const Row& r, int begin, int end, const float4* slice, float m, float factor) {
    for (int c = threadIdx.x; c < end - begin; c += BLOCK) store_chunk(r, begin + c, scale4(exp4(slice[c], m), factor));
}

// ---------------------------------------------------------------- cluster: a cluster of blocks per row
#if SM90_FEATURES
// A cluster's blocks exchange their triples by pushing them: block k stores its (m_k, s_k, q_k) into entry k of
// every block's `triples` (distributed shared memory) and arrives on that block's mbarrier with release semantics;
// a block waits on its own mbarrier (acquire) until all CLUSTER triples are in, then reads them locally. One
// one-way trip instead of a cluster barrier followed by remote reads. The mbarrier must be initialised before any
// block pushes: each block initialises its own, then arrives (relaxed) on the cluster barrier at once and waits on
// it only after its loads and reduction, when the other blocks have long arrived.
__device__ __forceinline__ unsigned int shared_address(const void* pointer) {
    return (unsigned int)__cvta_generic_to_shared(pointer);
}

// The address of the same shared variable in block `rank` of the cluster.
__device__ __forceinline__ unsigned int cluster_address(unsigned int local, unsigned int rank) {
    unsigned int remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
    return remote;
}

__device__ __forceinline__ void push_triple(unsigned int entry, unsigned int barrier, float m, float s, float q) {
    asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(entry), "f"(m) : "memory");
    asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(entry + 4u), "f"(s) : "memory");
    asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(entry + 8u), "f"(q) : "memory");
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(barrier) : "memory");
}

__device__ __forceinline__ void wait_for_triples(unsigned int barrier) {
    asm volatile(
        "{\n"
        ".reg .pred done;\n"
        "WAIT_%=:\n"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], 0;\n"
        "@!done bra WAIT_%=;\n"
        "}\n" ::"r"(barrier)
        : "memory");
}

// docs:begin cluster-row
template <bool RMS>
__device__ __forceinline__ void cluster_row(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float scratch[96];
    __shared__ float triples[CLUSTER][3];       // block k's (m_k, s_k, q_k) in entry k, pushed by block k
    __shared__ unsigned long long arrivals;     // mbarrier: CLUSTER arrivals, one per pushed triple
    extern __shared__ float4 slice[];
    cg::cluster_group cluster = cg::this_cluster();
    const int rank = (int)cluster.block_rank();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(&arrivals)), "r"(CLUSTER)
                     : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");  // this block's mbarrier is ready
    const Row r = row_at(x, y, blockIdx.x / CLUSTER, cols);
    const int per_block = (r.chunks + CLUSTER - 1) / CLUSTER;
    const int begin = min(rank * per_block, r.chunks), end = min(begin + per_block, r.chunks);
    // The slice stays in registers where SLICE_REGS chunks per thread hold it, else in shared memory: decided
    // per launch from the row length (the same for every block), so one build serves every row length.
    const bool in_registers = SLICE_REGS > 0 && per_block <= SLICE_REGS * BLOCK;
    float4 v[SLICE_REGS > 0 ? SLICE_REGS : 1];
    float m = NEG_INF, s = 0.0f, q = 0.0f, shift;
    if (in_registers) registers_stats<RMS, false>(r, begin, end, v, m, s, q, shift);
    else shared_stats<RMS, false>(r, begin, end, slice, m, s, q);
    block_merge_stats(m, s, q, scratch);
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");  // every block's mbarrier is initialised
    const unsigned int barrier = shared_address(&arrivals);
    if (threadIdx.x < CLUSTER) {  // thread k pushes this block's triple to block k
        push_triple(cluster_address(shared_address(&triples[rank][0]), threadIdx.x),
                    cluster_address(barrier, threadIdx.x), m, s, q);
    }
    wait_for_triples(barrier);
    // Each warp combines the cluster's triples: lane k < CLUSTER reads block k's from this block's shared memory.
    const int lane = threadIdx.x & 31;
    float mk = NEG_INF, sk = 0.0f, qk = 0.0f;
    if (lane < CLUSTER) {
        mk = triples[lane][0];
        sk = triples[lane][1];
        qk = triples[lane][2];
    }
    warp_merge_stats(mk, sk, qk);
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");  // this block's pushes are issued
    // The IEEE division and square root rather than row_scale (row_helpers.cuh): with row_scale here, or with
    // replicated_stats in place of warp_merge_stats above, ptxas gives the build of 16 chunks a thread 96-97
    // registers instead of 80, two blocks an SM instead of three.
    const float factor = (RMS ? sqrtf(qk / (float)cols) : 1.0f) / sk;
    if (in_registers) registers_write<false>(r, begin, end, v, shift, mk, factor);
    else shared_write(r, begin, end, slice, mk, factor);
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");  // no block leaves while its pushes may be in flight
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
// Streamed chunks: a running max and sum per thread, rescaled when the max grows.
template <bool RMS>
__device__ __forceinline__ void streamed_stats(const Row& r, int begin, int end, float& m, float& s, float& q) {
    for (int base = begin + (int)threadIdx.x; base < end; base += UNROLL * BLOCK) {
        float4 v[UNROLL];
        load_unrolled(r, base, end, v);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            if (base + u * BLOCK < end) {  // such a chunk holds a finite element
                absorb(m, s, v[u]);
                if (RMS) q += squares4(v[u]);
            }
        }
    }
}

// y for chunks [begin, end) by reading x again: exp(x - m) * factor.
__device__ __forceinline__ void streamed_write(const Row& r, int begin, int end, float m, float factor) {
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

// Part k of a row: chunks [k S, (k + 1) S) of it (S = ceil(chunks / pieces)), the first SPLIT_REGS x BLOCK in
// registers, the next (dynamic shared bytes) / 16 in shared memory, the rest streamed (x read again for y).
struct Piece {
    int begin, registers_end, shared_end, end;
};

__device__ __forceinline__ Piece piece_of(const Row& r, int k, int pieces) {
    const int per_piece = (r.chunks + pieces - 1) / pieces;
    Piece p;
    p.begin = min(k * per_piece, r.chunks);
    p.end = min(p.begin + per_piece, r.chunks);
    p.registers_end = min(p.end, p.begin + SPLIT_REGS * BLOCK);
    p.shared_end = min(p.end, p.registers_end + (int)(dynamic_shared_bytes() / 16u));
    return p;
}

// Piece p of row p / pieces covers part p % pieces of the row (piece_of), and slot p holds its stamped (m, s, q)
// (grid_flags.cuh). The grid is a multiple of `pieces` and at most what the GPU holds at once (the host checks with
// the occupancy API, and the launch may be cooperative), so a row's pieces always fall in one grid-stride step and
// every block of the step is resident: the wait for the row's other slots ends. One round trip through L2 per
// row: publish, then gather.
template <bool RMS>
__device__ __forceinline__ void split_rows(const float* __restrict__ x, float* __restrict__ y, int rows, int cols,
                                           int pieces, unsigned long long* __restrict__ slots) {
    __shared__ float scratch[96];
    extern __shared__ float4 slice[];
    const long long work = (long long)rows * pieces;
    for (long long p = blockIdx.x; p < work; p += gridDim.x) {
        const long long row = p / pieces;
        const Row r = row_at(x, y, row, cols);
        const Piece part = piece_of(r, (int)(p % pieces), pieces);
        unsigned long long* own = slots + SLOT_WORDS * p;
        const unsigned int epoch = pieces > 1 ? epoch_of(load_word(own)) + 1u : 0u;  // in flight with the piece's loads
        float4 v[SPLIT_REGS];
        float m = NEG_INF, s = 0.0f, q = 0.0f, shift;
        registers_stats<RMS, true>(r, part.begin, part.registers_end, v, m, s, q, shift);
        shared_stats<RMS, true>(r, part.registers_end, part.shared_end, slice, m, s, q);
        streamed_stats<RMS>(r, part.shared_end, part.end, m, s, q);
        block_merge_stats(m, s, q, scratch);
        if (pieces > 1) {
            if (threadIdx.x == 0) publish_stats(own, epoch, m, s, q);
            gather_stats<RMS>(slots + SLOT_WORDS * row * pieces, pieces, epoch, m, s, q);
            block_merge_stats(m, s, q, scratch);  // the row's (m, z, q), in every thread
        }
        const float factor = row_scale<RMS>(s, q, cols);
        registers_write<true>(r, part.begin, part.registers_end, v, shift, m, factor);
        shared_write(r, part.registers_end, part.shared_end, slice, m, factor);
        streamed_write(r, part.shared_end, part.end, m, factor);
    }
}

#if EMITS(3)
extern "C" __global__ void __launch_bounds__(BLOCK, SPLIT_MIN_BLOCKS)
split_rms_softmax(const float* __restrict__ x, float* __restrict__ y, int rows, int cols, int pieces,
                  unsigned long long* __restrict__ slots) {
    split_rows<true>(x, y, rows, cols, pieces, slots);
}

extern "C" __global__ void __launch_bounds__(BLOCK, SPLIT_MIN_BLOCKS)
split_softmax(const float* __restrict__ x, float* __restrict__ y, int rows, int cols, int pieces,
              unsigned long long* __restrict__ slots) {
    split_rows<false>(x, y, rows, cols, pieces, slots);
}
#endif

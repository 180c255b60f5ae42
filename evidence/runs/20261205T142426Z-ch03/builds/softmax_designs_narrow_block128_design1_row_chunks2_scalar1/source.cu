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
// ---- row_helpers.cuh ----
// Rows of a float matrix walked in 16-byte chunks aligned in memory, and the pieces of a row reduction, shared by
// the fused row kernel (fused_softmax.cu) and the fused designs (softmax_designs.cu).
//
// Chunk c of a row covers row elements 4c - lead .. 4c - lead + 3, where lead (0-3) counts the
// elements of chunk 0 that belong to the row before, so every load and store of a chunk that lies
// wholly inside the row is one 16-byte access whatever cols % 4 is. The at most two chunks that
// straddle a row's ends are read and written lane by lane, with -inf standing for a missing element
// (exp(-inf) = 0). x and y must have the same address modulo 16 (the launchers check it).
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
#define LOG2E 1.4426950408889634f

// exp(v - m) as 2^((v - m) log2 e) on the special-function unit: one multiply and one MUFU.EX2
// (relative error about 2^-22, far inside the oracles' 1e-4); exp(-inf - m) = +0 for finite m.
__device__ __forceinline__ float exp_shifted(float v, float m) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"((v - m) * LOG2E));
    return r;
}

__device__ __forceinline__ unsigned int dynamic_shared_bytes() {
    unsigned int bytes;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));
    return bytes;
}

struct Row {
    const float* x;  // x of this row, moved back to a 16-byte boundary: chunk c is x[4c .. 4c + 3]
    float* y;        // the same for y
    int lead;        // elements before the row in chunk 0 (0-3)
    int cols;
    int chunks;      // chunks holding at least one element of the row
};

// The row of `cols` elements that starts `start` elements into x and y (an int or a size_t offset).
template <typename Offset>
__device__ __forceinline__ Row row_from(const float* x, float* y, Offset start, int cols) {
    Row r;
    r.lead = (int)((reinterpret_cast<unsigned long long>(x + start) >> 2) & 3ull);
    r.x = x + start - r.lead;
    r.y = y + start - r.lead;
    r.cols = cols;
    r.chunks = (r.lead + cols + 3) >> 2;
    return r;
}

// Row `row` of a matrix of `cols` columns (rows start at row * cols elements).
__device__ __forceinline__ Row row_at(const float* x, float* y, long long row, int cols) {
    return row_from(x, y, (size_t)row * (size_t)cols, cols);
}

__device__ __forceinline__ float4 neg_inf4() { return make_float4(NEG_INF, NEG_INF, NEG_INF, NEG_INF); }

// One lane of a straddling chunk: the element if it belongs to the row, else -inf.
__device__ __forceinline__ float load_lane(const Row& r, int c, int k) {
    const int j = 4 * c - r.lead + k;
    return (j >= 0 && j < r.cols) ? __ldg(r.x + 4 * c + k) : NEG_INF;
}

__device__ __forceinline__ void store_lane(const Row& r, int c, int k, float v) {
    const int j = 4 * c - r.lead + k;
    if (j >= 0 && j < r.cols) r.y[4 * c + k] = v;
}

__device__ __forceinline__ bool whole_chunk(const Row& r, int c) {
    const int first = 4 * c - r.lead;  // row index of the chunk's first lane
    return first >= 0 && first + 4 <= r.cols;
}

__device__ __forceinline__ float4 load_chunk(const Row& r, int c) {
    if (whole_chunk(r, c)) return __ldg(reinterpret_cast<const float4*>(r.x) + c);
    return make_float4(load_lane(r, c, 0), load_lane(r, c, 1), load_lane(r, c, 2), load_lane(r, c, 3));
}

__device__ __forceinline__ void store_chunk(const Row& r, int c, float4 v) {
    if (whole_chunk(r, c)) {
        reinterpret_cast<float4*>(r.y)[c] = v;
        return;
    }
    store_lane(r, c, 0, v.x);
    store_lane(r, c, 1, v.y);
    store_lane(r, c, 2, v.z);
    store_lane(r, c, 3, v.w);
}

__device__ __forceinline__ float max4(float4 v) { return fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)); }
__device__ __forceinline__ float sum4(float4 v) { return (v.x + v.y) + (v.z + v.w); }
// Sum of squares of the lanes that belong to the row (a missing lane holds -inf; x is finite).
__device__ __forceinline__ float squares4(float4 v) {
    return (v.x > NEG_INF ? v.x * v.x : 0.0f) + (v.y > NEG_INF ? v.y * v.y : 0.0f) +
           (v.z > NEG_INF ? v.z * v.z : 0.0f) + (v.w > NEG_INF ? v.w * v.w : 0.0f);
}
__device__ __forceinline__ float4 exp4(float4 v, float m) {
    return make_float4(exp_shifted(v.x, m), exp_shifted(v.y, m), exp_shifted(v.z, m), exp_shifted(v.w, m));
}
__device__ __forceinline__ float4 scale4(float4 v, float s) { return make_float4(v.x * s, v.y * s, v.z * s, v.w * s); }

// U chunks of the row a thread loads at once, base, base + BLOCK, ... (-inf past `end`): the loads of a pass that
// walks chunks [.., end) U x BLOCK at a time, all in flight before the first is used.
template <int U>
__device__ __forceinline__ void load_unrolled(const Row& r, int base, int end, float4 (&v)[U]) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int c = base + u * BLOCK;
        v[u] = c < end ? load_chunk(r, c) : neg_inf4();
    }
}

// A sum of exp(x - from) re-expressed against the larger maximum `to`; an empty part (from = -inf,
// sum 0) contributes 0 rather than 0 * exp(NaN).
__device__ __forceinline__ float rescaled(float sum, float from, float to) {
    return from == NEG_INF ? 0.0f : sum * exp_shifted(from, to);
}

// One step of the online softmax statistics: the running max m and sum s of exp(x - m) take in a chunk
// holding at least one element of the row (so the grown max is finite).
__device__ __forceinline__ void absorb(float& m, float& s, float4 v) {
    const float grown = fmaxf(m, max4(v));
    s = rescaled(s, m, grown) + sum4(exp4(v, grown));
    m = grown;
}

// 1 / v on the special-function unit (MUFU.RCP, relative error about 2^-23): one instruction where the IEEE
// division is a dozen with a slow path, on a latency-bound row's critical path.
__device__ __forceinline__ float fast_rcp(float v) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
    return r;
}

// ---------------------------------------------------------------- one online reduction per row
// Statistics of part of a row: max m, sum s of exp(x - m), sum q of squares (RMS mode only). Parts combine in any
// order, so a row's max, sum and sum of squares come out of ONE reduction (one round of shuffles, at most one
// barrier) instead of a max, then a sum of exponentials against it.
struct RowStats {
    float m, s, q;
};

// s, a sum of exp(x - from), against the larger maximum `to`; from == to covers two empty parts (-inf, s = 0).
__device__ __forceinline__ float rescale_sum(float s, float from, float to) {
    return from == to ? s : s * exp_shifted(from, to);
}

__device__ __forceinline__ RowStats combine_stats(RowStats a, float m, float s, float q) {
    const float top = fmaxf(a.m, m);
    return {top, rescale_sum(a.s, a.m, top) + rescale_sum(s, m, top), a.q + q};
}

// The largest of the warp's values, in every lane: one redux.sync on an integer key that orders like the float
// (a negative float's magnitude bits flipped, -inf lowest; a NaN in x makes its row's outputs NaN either way), where
// shuffles take five rounds.
__device__ __forceinline__ int ordered_key(float v) {
    const int bits = __float_as_int(v);
    return bits >= 0 ? bits : bits ^ 0x7fffffff;
}

__device__ __forceinline__ float warp_max_of(float v) {
    const int key = __reduce_max_sync(0xffffffffu, ordered_key(v));
    return __int_as_float(key >= 0 ? key : key ^ 0x7fffffff);
}

// Every group of GROUP lanes (a power of two, at most 32) holds the same parts, one a lane: the statistics of all
// of them, in every lane. The max comes from one redux over the warp (every group holds the same maxima), then
// each lane's sum is rescaled to it once and the sums (and sums of squares) add up in log2(GROUP) rounds of
// shuffles. The merged rounds below put an exponential on every round's path; these put one before the sums.
template <int GROUP, bool RMS>
__device__ __forceinline__ RowStats replicated_stats(RowStats t) {
    static_assert(GROUP >= 1 && GROUP <= 32 && (GROUP & (GROUP - 1)) == 0, "a group is a power of two of lanes");
    const float top = warp_max_of(t.m);
    RowStats r = {top, rescale_sum(t.s, t.m, top), t.q};
#pragma unroll
    for (int offset = GROUP / 2; offset > 0; offset >>= 1) {
        r.s += __shfl_xor_sync(0xffffffffu, r.s, offset);
        if (RMS) r.q += __shfl_xor_sync(0xffffffffu, r.q, offset);
    }
    return r;
}

// Within each group of LANES lanes (xor offsets below LANES never leave the group; every lane of the warp calls
// it): every lane gets its group's statistics. A whole warp takes replicated_stats; a smaller group merges
// (max, sum) pairs over log2(LANES) rounds of shuffles (redux.sync has no segmented form).
template <int LANES, bool RMS>
__device__ __forceinline__ RowStats group_stats(RowStats t) {
    if constexpr (LANES == 32) {
        return replicated_stats<32, RMS>(t);
    } else {
#pragma unroll
        for (int offset = LANES / 2; offset > 0; offset >>= 1) {
            const float m = __shfl_xor_sync(0xffffffffu, t.m, offset);
            const float s = __shfl_xor_sync(0xffffffffu, t.s, offset);
            const float q = RMS ? __shfl_xor_sync(0xffffffffu, t.q, offset) : 0.0f;
            t = combine_stats(t, m, s, q);
        }
        return t;
    }
}

// Over a block of THREADS threads (every thread calls it, once per launch: `scratch` is not reused, so no
// barrier guards it): the warps' statistics meet in shared memory after ONE barrier, and each group of
// THREADS / 32 lanes of every warp combines all of them itself. `scratch` holds 2 floats a warp (3 in RMS mode):
// maxima, then sums, then sums of squares.
template <int THREADS, bool RMS>
__device__ __forceinline__ RowStats block_stats(RowStats t, float* scratch) {
    t = group_stats<(THREADS < 32 ? THREADS : 32), RMS>(t);
    if constexpr (THREADS > 32) {
        constexpr int WARPS = THREADS / 32;
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        if (lane == 0) {
            scratch[warp] = t.m;
            scratch[WARPS + warp] = t.s;
            if (RMS) scratch[2 * WARPS + warp] = t.q;
        }
        __syncthreads();
        const int k = lane % WARPS;
        const RowStats part = {scratch[k], scratch[WARPS + k], RMS ? scratch[2 * WARPS + k] : 0.0f};
        // Merged rounds cost an exponential each, replicated_stats a redux and one exponential: below 8 warps
        // (two rounds or fewer) the merged rounds are as fast or faster (measured on the H200).
        if constexpr (WARPS >= 8) t = replicated_stats<WARPS, RMS>(part);
        else t = group_stats<WARPS, RMS>(part);
    }
    return t;
}

// A thread's own part of a row held in registers: its max, and exp(x - max) in place with their sum (an empty
// part, all -inf, gives (-inf, 0) and zeros). `shift` receives the max the exponentials were taken against.
template <bool RMS, int K>
__device__ __forceinline__ RowStats own_stats(float4 (&v)[K], float& shift) {
    RowStats t = {NEG_INF, 0.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < K; ++i) {
        t.m = fmaxf(t.m, max4(v[i]));
        if (RMS) t.q += squares4(v[i]);
    }
    shift = t.m == NEG_INF ? 0.0f : t.m;
#pragma unroll
    for (int i = 0; i < K; ++i) {
        v[i] = exp4(v[i], shift);
        t.s += sum4(v[i]);
    }
    return t;
}

// rho / z from a row's sum of exponentials z and sum of squares q, with reciprocals on the special-function unit
// (MUFU.RCP, relative error about 2^-23) where an IEEE division is a dozen instructions with a slow path, right
// after the reduction on a latency-bound row's critical path. The square root stays IEEE: sqrt.approx made ptxas
// spill the row kernel's RMS build of 32 threads and 8 chunks a thread (64 registers at most).
template <bool RMS>
__device__ __forceinline__ float row_scale(float z, float q, int cols) {
    return (RMS ? sqrtf(q * fast_rcp((float)cols)) : 1.0f) * fast_rcp(z);
}

// What a thread multiplies its exp(x - shift) by: exp(shift - m) rho / z with the row's statistics.
template <bool RMS>
__device__ __forceinline__ float row_factor(const RowStats& row, float shift, int cols) {
    return exp_shifted(shift, row.m) * row_scale<RMS>(row.s, row.q, cols);
}

// ---- end row_helpers.cuh ----
// ---- grid_flags.cuh ----
// Row statistics merged in one pass, and the epoch-stamped words the split design (softmax_designs.cu) combines a
// row's pieces through: no counter, no reset, one round trip through L2.
//
// A piece's statistics (m, s, q) travel as words of 64 bits, each the float's bits under a 32-bit epoch. An aligned
// 64-bit access is single-copy atomic, so a reader that sees the epoch it expects also sees that invocation's
// float: every word carries its own readiness and no fence or flag orders one word against another. A block reads
// the epoch of its own slot (only it ever writes there; the previous invocation's write is visible across the
// kernel boundary), adds one and stamps its words with that; every slot of a row was written the same number of
// times (all of a row's pieces run in every invocation), so the row's blocks expect the same epoch. The state is
// consistent after every invocation by construction, graph replays included; an epoch wraps after 2^32
// invocations, and the comparison is for equality, which the wrap keeps.
#pragma once
// ---- row_helpers.cuh (pasted above) ----
#define SLOT_WORDS 4  // words per piece: (m, s, q, unused), one 32-byte sector

// Merge (om, os, oq) into (m, s, q); an empty side (m = -inf, s = 0) adds nothing.
__device__ __forceinline__ void merge_stats(float& m, float& s, float& q, float om, float os, float oq) {
    const float top = fmaxf(m, om);
    s = rescaled(s, m, top) + rescaled(os, om, top);
    m = top;
    q += oq;
}

__device__ __forceinline__ void warp_merge_stats(float& m, float& s, float& q) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        const float om = __shfl_xor_sync(0xffffffffu, m, offset);
        const float os = __shfl_xor_sync(0xffffffffu, s, offset);
        const float oq = __shfl_xor_sync(0xffffffffu, q, offset);
        merge_stats(m, s, q, om, os, oq);
    }
}

// The block's (m, s, q) from every thread's, in one exchange through `scratch` (3 x 32 floats): every thread gets
// them. Replaces a max, then a sum of exp(x - max), then a sum of squares: three reductions, six barriers.
__device__ __forceinline__ void block_merge_stats(float& m, float& s, float& q, float* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    warp_merge_stats(m, s, q);
    __syncthreads();  // scratch may still be read by a previous reduction
    if (lane == 0) {
        scratch[warp] = m;
        scratch[32 + warp] = s;
        scratch[64 + warp] = q;
    }
    __syncthreads();
    const bool live = lane < BLOCK / 32;
    m = live ? scratch[lane] : NEG_INF;
    s = live ? scratch[32 + lane] : 0.0f;
    q = live ? scratch[64 + lane] : 0.0f;
    warp_merge_stats(m, s, q);
}

__device__ __forceinline__ unsigned long long load_word(const unsigned long long* address) {
    unsigned long long value;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(value) : "l"(address) : "memory");
    return value;
}

__device__ __forceinline__ void store_word(unsigned long long* address, unsigned long long value) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(address), "l"(value) : "memory");
}

// Two words in one access (each of the two is single-copy atomic on its own, which is all a reader relies on).
__device__ __forceinline__ void load_words(const unsigned long long* address, unsigned long long& a,
                                           unsigned long long& b) {
    asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(address) : "memory");
}

__device__ __forceinline__ void store_words(unsigned long long* address, unsigned long long a, unsigned long long b) {
    asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" ::"l"(address), "l"(a), "l"(b) : "memory");
}

__device__ __forceinline__ unsigned long long stamped(float v, unsigned int epoch) {
    return ((unsigned long long)epoch << 32) | (unsigned long long)__float_as_uint(v);
}

__device__ __forceinline__ unsigned int epoch_of(unsigned long long word) { return (unsigned int)(word >> 32); }
__device__ __forceinline__ float value_of(unsigned long long word) { return __uint_as_float((unsigned int)word); }

__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

#define FLAG_WAIT_LIMIT_NS 2000000000ull  // 2 s: far beyond any piece; only blocks that were never resident wait so long
// Piece k's slot: (m, s) in one 16-byte access, q in the next word.
__device__ __forceinline__ void publish_stats(unsigned long long* slot, unsigned int epoch, float m, float s, float q) {
    store_words(slot, stamped(m, epoch), stamped(s, epoch));
    store_word(slot + 2, stamped(q, epoch));
}

template <bool RMS>
__device__ __forceinline__ bool slot_ready(unsigned long long wm, unsigned long long ws, unsigned long long wq,
                                           unsigned int epoch) {
    return epoch_of(wm) == epoch && epoch_of(ws) == epoch && (!RMS || epoch_of(wq) == epoch);
}

// Every thread of the block calls it: thread t merges slots t, t + BLOCK, ... of the row's `pieces` at `slots`,
// each stamped `epoch`, into its (m, s, q) (a block_merge_stats then gives the row's): all of a block's reads are
// in flight at once, one round trip where the row has at most BLOCK pieces. A slot not yet stamped is read again;
// one that stays unstamped for FLAG_WAIT_LIMIT_NS traps (loudly): a piece's block never ran.
template <bool RMS>
__device__ __forceinline__ void gather_stats(const unsigned long long* slots, int pieces, unsigned int epoch, float& m,
                                             float& s, float& q) {
    m = NEG_INF;
    s = 0.0f;
    q = 0.0f;
    for (int k = threadIdx.x; k < pieces; k += BLOCK) {
        const unsigned long long* slot = slots + (size_t)SLOT_WORDS * k;
        unsigned long long wm, ws, wq = 0ull;
        load_words(slot, wm, ws);
        if (RMS) wq = load_word(slot + 2);
        if (!slot_ready<RMS>(wm, ws, wq, epoch)) {
            const unsigned long long start = global_ns();
            do {
                __nanosleep(32);
                load_words(slot, wm, ws);
                if (RMS) wq = load_word(slot + 2);
                if (global_ns() - start > FLAG_WAIT_LIMIT_NS) __trap();
            } while (!slot_ready<RMS>(wm, ws, wq, epoch));
        }
        merge_stats(m, s, q, value_of(wm), value_of(ws), RMS ? value_of(wq) : 0.0f);
    }
}

// ---- end grid_flags.cuh ----
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

// One-launch varlen RMS-scaled softmax over packed rows of any lengths (chapter 4's tiled cases):
//   y_rj = rho_r * exp(x_rj - m_r) / z_r,  rho_r = sqrt(mean_j x_rj^2)
// the output of every other chapter 4 design, from one launch whose blocks are cut from the rows by a
// partition rule on the host (launchlab/model/varlen_partition.py):
//   piece block   (j >= 0) piece j of the k pieces of row r, elements [start, start + len) of x: a whole row
//                 when k = 1; a long row is split over several blocks, each of equal work;
//   packed block  (j < 0)  several short rows, one warp per row: rows pack_rows[first .. first + count).
// A block's descriptor (8 ints) holds everything it needs before it loads x: {r, start, len, j, k, first slot,
// row length, 0}, or {first, count, 0, -1, 0, 0, 0, 0}.
// x is read once and y written once: a piece keeps its values in registers between its statistics and its
// output (REG_CHUNKS 16-byte chunks per thread; a longer piece reads x again in its output pass).
//
// Split rows: each piece reduces its values to one partial (q = sum x^2, m = max x, z = sum exp(x - m)) and
// publishes it as three 64-bit words {value, stamp} at partials[3 (first slot + j) ..]: a 64-bit access is
// single-copy atomic, so a word read with its stamp holds that stamp's value, and no fence orders the words. Warp 0
// then reads the row's k slots (lane s: slot s, s + 32, ...) until every word carries this invocation's stamp, and
// merges them where they arrive: the wait and the read are the same loads, one L2 round trip per poll.
// The stamp is n + 1 for invocation n, which a piece learns from the row's 64-bit arrival counter: invocation n
// starts with it at n k (the previous invocation's k pieces have each added 1, and kernel boundaries order them
// before this one), and a piece reads it before it adds its own 1, so the read c lies in [n k, n k + k - 1] and
// n = floor(c / k). The counter is read before x is loaded (in flight with it) and incremented after the partial is
// written; nothing is reset between invocations (32-bit stamps repeat after 2^32 invocations, the 64-bit counter
// never wraps). The pieces of a row wait for each other, so every block of the grid must be co-resident: the host
// checks the occupancy API before it launches; a wait that runs out (bounded by %globaltimer) leaves an error word
// instead of a hang.
//
// Each thread keeps its own running maximum m_t and sum z_t = sum exp(x - m_t) over its values (one pass, the
// exponentials kept in registers), so a block needs one reduction of (q, m, z), and the output is
// e * (rho / z) * exp(m_t - m): no second exponential per element.
//
// Two block sizes in one module (varlen_rows_256, varlen_rows_512): the partition rule picks the one whose plan
// its cost model predicts faster.
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
#ifndef REG_CHUNKS
#define REG_CHUNKS 4  // 16-byte chunks per thread kept in registers
#endif
#define ERROR_WAIT_EXPIRED 1
#define ERROR_BAD_BLOCK 2  // the block's size is not the kernel's

__device__ __forceinline__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ unsigned long long load_relaxed(const unsigned long long* address) {
    unsigned long long value;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(value) : "l"(address) : "memory");
    return value;
}

__device__ __forceinline__ void store_relaxed(unsigned long long* address, unsigned long long value) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(address), "l"(value) : "memory");
}

// The arrival: only the next invocation reads the counter (after a kernel boundary), so it orders nothing.
__device__ __forceinline__ void arrive(unsigned long long* address) {
    asm volatile("red.relaxed.gpu.global.add.u64 [%0], 1;" ::"l"(address) : "memory");
}

__device__ __forceinline__ unsigned long long stamped(float value, unsigned stamp) {
    return ((unsigned long long)stamp << 32) | (unsigned long long)__float_as_uint(value);
}

// The first error wins: {code, block, detail, detail} (wait: the slot and the stamp it waited for).
__device__ __forceinline__ void raise_error(int* error, int code, int block, long long first, long long second) {
    if (atomicCAS(error, 0, code) == 0) {
        error[1] = block;
        error[2] = (int)first;
        error[3] = (int)second;
        __threadfence();
    }
}

// Where the pieces of split rows meet: partial slots (three stamped words each), arrival counters, error words,
// the wait's bound.
struct Rendezvous {
    unsigned long long* partials;
    unsigned long long* arrivals;
    int* error;
    unsigned long long wait_limit_ns;
};

// What a piece block knows from its descriptor; `counted` is the row's arrival counter as thread 0 read it at
// the block's start (split rows only).
struct Piece {
    int r, j, k, first_slot, length;
    unsigned long long counted;
};

// (q, m, z) of a set of values: z = sum exp(v - m); an empty set is (0, -inf, 0).
struct Partial {
    float q, m, z;
};

__device__ __forceinline__ Partial merge(Partial a, Partial b) {
    const float top = fmaxf(a.m, b.m);
    const float za = a.m == NEG_INF ? 0.0f : a.z * exp_shifted(a.m, top);
    const float zb = b.m == NEG_INF ? 0.0f : b.z * exp_shifted(b.m, top);
    return {a.q + b.q, top, za + zb};
}

__device__ __forceinline__ Partial warp_merge(Partial p) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        Partial other;
        other.q = __shfl_xor_sync(0xffffffffu, p.q, offset);
        other.m = __shfl_xor_sync(0xffffffffu, p.m, offset);
        other.z = __shfl_xor_sync(0xffffffffu, p.z, offset);
        p = merge(p, other);
    }
    return p;
}

// Every thread gets the block's merge; `scratch` holds one Partial per warp; used once per block.
template <int THREADS>
__device__ __forceinline__ Partial block_merge(Partial p, Partial* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    p = warp_merge(p);
    if (lane == 0) scratch[warp] = p;
    __syncthreads();
    Partial mine = {0.0f, NEG_INF, 0.0f};
    if (lane < THREADS / 32) mine = scratch[lane];
    return warp_merge(mine);
}

// A streamed chunk into a thread's running (q, m, z): the sum is rescaled when the maximum grows; a chunk
// holds at least one element of the row, so the grown maximum is finite (missing lanes are -inf, exp gives 0).
__device__ __forceinline__ void absorb(float4 v, Partial& p) {
    const float grown = fmaxf(p.m, max4(v));
    p.q += squares4(v);
    p.z = p.z * exp_shifted(p.m, grown) + sum4(exp4(v, grown));
    p.m = grown;
}

// Lane `lane` of warp 0 merges slots lane, lane + 32, ... of the row (k slots from `slot`) as each carries
// `stamp` in all three words; false if the wait ran out or another block raised the error word.
__device__ __forceinline__ bool gather_partials(const unsigned long long* slot, int k, unsigned stamp,
                                                const Rendezvous& meet, Partial* merged) {
    const unsigned long long deadline = now_ns() + meet.wait_limit_ns;
    Partial p = {0.0f, NEG_INF, 0.0f};
    for (int s = (int)(threadIdx.x & 31); s < k; s += 32) {
        unsigned long long q, m, z;
        int polls = 0;
        while (true) {
            q = load_relaxed(slot + 3 * s);
            m = load_relaxed(slot + 3 * s + 1);
            z = load_relaxed(slot + 3 * s + 2);
            if ((unsigned)(q >> 32) == stamp && (unsigned)(m >> 32) == stamp && (unsigned)(z >> 32) == stamp) break;
            if (*(volatile const int*)meet.error != 0 || now_ns() > deadline) {
                raise_error(meet.error, ERROR_WAIT_EXPIRED, blockIdx.x, s, (long long)stamp);
                return false;
            }
            if (++polls > 8) __nanosleep(64);  // the first polls back to back: the other pieces are close
        }
        p = merge(p, {__uint_as_float((unsigned)q), __uint_as_float((unsigned)m), __uint_as_float((unsigned)z)});
    }
    *merged = p;
    return true;
}

// The row's (rho / z, m) in every thread: a whole row's from the block's merge (every thread has it); a split
// row's once every piece has published: thread 0 publishes this piece's partial and counts it, warp 0 gathers
// and merges the row's partials. Returns false (after raising the error word) if the wait ran out.
__device__ __forceinline__ bool row_result(Partial block, const Piece& piece, const Rendezvous& meet, float2* row) {
    __shared__ int ok;
    __shared__ float2 result;
    if (piece.k == 1) {
        *row = make_float2(sqrtf(block.q / (float)piece.length) / block.z, block.m);
        return true;
    }
    unsigned long long* slots = meet.partials + 3ull * piece.first_slot;
    if (threadIdx.x < 32) {
        const unsigned stamp = (unsigned)__shfl_sync(0xffffffffu, piece.counted / (unsigned long long)piece.k, 0) + 1u;
        if (threadIdx.x == 0) {
            store_relaxed(slots + 3 * piece.j, stamped(block.q, stamp));
            store_relaxed(slots + 3 * piece.j + 1, stamped(block.m, stamp));
            store_relaxed(slots + 3 * piece.j + 2, stamped(block.z, stamp));
            arrive(meet.arrivals + piece.r);
        }
        Partial p;
        const bool fine = __all_sync(0xffffffffu, gather_partials(slots, piece.k, stamp, meet, &p));
        if (fine) p = warp_merge(p);
        if (threadIdx.x == 0) {
            ok = fine;
            result = make_float2(sqrtf(p.q / (float)piece.length) / p.z, p.m);
        }
    }
    __syncthreads();
    *row = result;
    return ok != 0;
}

// A piece held in registers: the thread's maximum, then its exponentials and their sum; the block merges,
// the row's result arrives, and each thread scales its exponentials by (rho / z) exp(m_t - m).
template <int THREADS>
__device__ __forceinline__ void piece_in_registers(const Row& values, const Piece& piece, const Rendezvous& meet,
                                                   Partial* scratch) {
    float4 v[REG_CHUNKS];
#pragma unroll
    for (int i = 0; i < REG_CHUNKS; ++i) {
        const int c = threadIdx.x + i * THREADS;
        v[i] = c < values.chunks ? load_chunk(values, c) : neg_inf4();
    }
    Partial p = {0.0f, NEG_INF, 0.0f};  // a thread without chunks keeps it: it adds nothing to the merge
#pragma unroll
    for (int i = 0; i < REG_CHUNKS; ++i) {
        p.m = fmaxf(p.m, max4(v[i]));
        p.q += squares4(v[i]);
    }
    if (p.m != NEG_INF) {
#pragma unroll
        for (int i = 0; i < REG_CHUNKS; ++i) {
            v[i] = exp4(v[i], p.m);
            p.z += sum4(v[i]);
        }
    }
    const Partial block = block_merge<THREADS>(p, scratch);
    float2 row;
    if (!row_result(block, piece, meet, &row)) return;
    const float factor = p.m == NEG_INF ? 0.0f : row.x * exp_shifted(p.m, row.y);
#pragma unroll
    for (int i = 0; i < REG_CHUNKS; ++i) {
        const int c = threadIdx.x + i * THREADS;
        if (c < values.chunks) store_chunk(values, c, scale4(v[i], factor));
    }
}

// A piece longer than the registers hold: the same statistics in a streamed pass, then x read again.
template <int THREADS>
__device__ __forceinline__ void piece_streamed(const Row& values, const Piece& piece, const Rendezvous& meet,
                                               Partial* scratch) {
    Partial p = {0.0f, NEG_INF, 0.0f};
    for (int c = threadIdx.x; c < values.chunks; c += THREADS) {
        absorb(load_chunk(values, c), p);
    }
    const Partial block = block_merge<THREADS>(p, scratch);
    float2 row;
    if (!row_result(block, piece, meet, &row)) return;
    for (int c = threadIdx.x; c < values.chunks; c += THREADS)
        store_chunk(values, c, scale4(exp4(load_chunk(values, c), row.y), row.x));
}

// One short row by one warp: a streamed pass of (q, m, z) over the row's chunks, a warp merge, then the
// output pass (its reads of x hit L1).
__device__ __forceinline__ void row_by_warp(const float* x, float* y, const int* row_offsets, int r) {
    const int lane = threadIdx.x & 31, start = row_offsets[r], length = row_offsets[r + 1] - start;
    const Row row = row_from(x, y, start, length);
    Partial p = {0.0f, NEG_INF, 0.0f};
    for (int c = lane; c < row.chunks; c += 32) {
        absorb(load_chunk(row, c), p);
    }
    p = warp_merge(p);
    const float factor = sqrtf(p.q / (float)length) / p.z;
    for (int c = lane; c < row.chunks; c += 32) store_chunk(row, c, scale4(exp4(load_chunk(row, c), p.m), factor));
}

// blocks[8 b .. 8 b + 7]: the block's descriptor (see the top of this file).
template <int THREADS>
__device__ __forceinline__ void varlen_block(const float* __restrict__ x, float* __restrict__ y,
                                             const int* __restrict__ row_offsets, const int* __restrict__ blocks,
                                             const int* __restrict__ pack_rows, unsigned long long* partials,
                                             unsigned long long* arrivals, int* error,
                                             unsigned long long wait_limit_ns) {
    __shared__ Partial scratch[THREADS / 32];
    if (blockDim.x != THREADS) {
        if (threadIdx.x == 0) raise_error(error, ERROR_BAD_BLOCK, blockIdx.x, blockDim.x, THREADS);
        return;
    }
    const int4 d = reinterpret_cast<const int4*>(blocks)[2 * blockIdx.x];
    if (d.w < 0) {
        for (int w = threadIdx.x >> 5; w < d.y; w += THREADS / 32) row_by_warp(x, y, row_offsets, pack_rows[d.x + w]);
        return;
    }
    const int4 e = reinterpret_cast<const int4*>(blocks)[2 * blockIdx.x + 1];
    Piece piece = {d.x, d.w, e.x, e.y, e.z, 0ull};
    if (piece.k > 1 && threadIdx.x == 0) piece.counted = load_relaxed(arrivals + piece.r);  // in flight with x
    const Row values = row_from(x, y, d.y, d.z);
    const Rendezvous meet = {partials, arrivals, error, wait_limit_ns};
    if (values.chunks <= REG_CHUNKS * THREADS)
        piece_in_registers<THREADS>(values, piece, meet, scratch);
    else
        piece_streamed<THREADS>(values, piece, meet, scratch);
}

#define VARLEN_PARAMS                                                                                        \
    const float *__restrict__ x, float *__restrict__ y, const int *__restrict__ row_offsets,                 \
        const int *__restrict__ blocks, const int *__restrict__ pack_rows, unsigned long long *partials,      \
        unsigned long long *arrivals, int *error, unsigned long long wait_limit_ns
#define VARLEN_ARGS x, y, row_offsets, blocks, pack_rows, partials, arrivals, error, wait_limit_ns

// docs:begin varlen-entries
extern "C" __global__ void __launch_bounds__(256, SM_THREADS / 512) varlen_rows_256(VARLEN_PARAMS) {
    varlen_block<256>(VARLEN_ARGS);
}

extern "C" __global__ void __launch_bounds__(512, SM_THREADS / 1024) varlen_rows_512(VARLEN_PARAMS) {
    varlen_block<512>(VARLEN_ARGS);
}
// docs:end varlen-entries

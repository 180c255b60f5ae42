// The row kernel's registers tier alone (kernels/fused_softmax.cu's row_in_registers), for rows that REG_CHUNKS
// chunks a thread hold: registers_softmax and registers_rms_softmax. Without the shared and streamed tiers' code a
// block needs no more than 32 registers a thread at 1, 2 or 4 chunks (ptxas, no spills), so REGISTERS_MIN_BLOCKS
// can ask for the SM's whole 2048 threads; the full build (fused_softmax, 48 registers) holds 1024-1280. More rows
// then run in one wave, with more loads in flight per SM. The host launches it only where
// chunks <= REG_CHUNKS x BLOCK (gpu/targets.py, RegistersRow); a longer row would be left partly unwritten.
// The module also holds fused_softmax.cu's own kernels, built with its MIN_BLOCKS, unused.
// ---- fused_softmax.cu ----
// Fused row kernel: one launch, one block of BLOCK threads per row, no global e array.
//   fused_rms_softmax: y_rj = rho_r * exp(x_rj - m_r) / z_r,  rho_r = sqrt(mean_j x_rj^2)
//   fused_softmax:     y_rj =         exp(x_rj - m_r) / z_r   (rho = 1, as library softmax)
// Global traffic per element: x read once, y written once — 8 bytes, against 24 for the
// four-kernel row path (kernels/row_softmax.cu). Only a row too long for registers and for
// the dynamic shared memory it was given reads x a second time (normally from L2).
//
// The row is walked in 16-byte chunks aligned in memory (row_helpers.cuh): a chunk that lies wholly
// inside the row is one 16-byte access whatever cols % 4 is. x and y must have the same address modulo 16.
//
// Where a row lives while it is reduced is decided per block from the kernel's own parameters:
//   registers  chunks <= REG_CHUNKS * BLOCK: each thread holds its chunks in a float4[REG_CHUNKS];
//   shared     else if 16 * chunks <= the dynamic shared memory of the launch: the row is kept in
//              shared memory (each thread reads back only the chunks it stored: no extra barrier);
//   streamed   else: one pass keeps an online max and sum, a second pass reads x again.
// Every tier reduces its row ONCE (row_helpers.cuh, block_stats): each thread's max, sum of exp(x - that max) and
// (RMS) sum of squares are combined over the block together, by shuffles alone in a block of one warp, with one
// barrier in a larger block; the final division is a reciprocal on the special-function unit.
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
#ifndef REG_CHUNKS
#define REG_CHUNKS 4  // 16-byte chunks per thread held in registers
#endif
#ifndef UNROLL
#define UNROLL 4      // chunks per thread in flight in the shared and streamed passes
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1  // resident blocks per SM the register allocation must allow
#endif

// One reduction per row (row_helpers.cuh): every thread's (max, sum of exp(x - max)[, sum of squares]) combined
// over the block at once. A block of one warp needs neither shared memory nor a barrier, a larger one one barrier;
// on short rows these latencies are most of a block's life. `scratch` holds 2 floats a warp (3 in RMS mode).
template <bool RMS>
__device__ __forceinline__ RowStats row_stats(RowStats t, float* scratch) {
    return block_stats<BLOCK, RMS>(t, scratch);
}

// Registers: every chunk of the thread is loaded before the first is used (REG_CHUNKS x 16 bytes in flight per
// thread), exp(x - the thread's own max) in place, one reduction, then one store per chunk.
template <bool RMS>
// docs:begin fused-row-in-registers
__device__ __forceinline__ void row_in_registers(const Row& r, float* scratch) {
    float4 v[REG_CHUNKS];
#pragma unroll
    for (int i = 0; i < REG_CHUNKS; ++i) {
        const int c = threadIdx.x + i * BLOCK;
        v[i] = c < r.chunks ? load_chunk(r, c) : neg_inf4();
    }
    float shift;
    const RowStats row = row_stats<RMS>(own_stats<RMS>(v, shift), scratch);
    const float factor = row_factor<RMS>(row, shift, r.cols);
#pragma unroll
    for (int i = 0; i < REG_CHUNKS; ++i) {
        const int c = threadIdx.x + i * BLOCK;
        if (c < r.chunks) store_chunk(r, c, scale4(v[i], factor));
    }
}
// docs:end fused-row-in-registers

// Shared memory: x is read from global memory once and kept in `cache` while each thread keeps a running max and
// sum (online softmax); after one reduction, y = exp(x - m) rho / z is written from the cache. Thread t only ever
// touches chunks t, t + BLOCK, ... (no barrier beyond the reduction's).
template <bool RMS>
__device__ __forceinline__ void row_in_shared(const Row& r, float4* cache, float* scratch) {
    RowStats t = {NEG_INF, 0.0f, 0.0f};
    for (int base = threadIdx.x; base < r.chunks; base += UNROLL * BLOCK) {
        float4 v[UNROLL];
        load_unrolled(r, base, r.chunks, v);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int c = base + u * BLOCK;
            if (c < r.chunks) {  // such a chunk holds a finite element
                cache[c] = v[u];
                absorb(t.m, t.s, v[u]);
                if (RMS) t.q += squares4(v[u]);
            }
        }
    }
    const RowStats row = row_stats<RMS>(t, scratch);
    const float factor = row_factor<RMS>(row, row.m, r.cols);
    for (int c = threadIdx.x; c < r.chunks; c += BLOCK) store_chunk(r, c, scale4(exp4(cache[c], row.m), factor));
}

// Streamed: pass 1 keeps a running max m and sum s of exp(x - m), rescaling s when m grows; one reduction gives
// the row's; pass 2 reads x again and writes y.
template <bool RMS>
__device__ __forceinline__ void row_streamed(const Row& r, float* scratch) {
    RowStats t = {NEG_INF, 0.0f, 0.0f};
    for (int base = threadIdx.x; base < r.chunks; base += UNROLL * BLOCK) {
        float4 v[UNROLL];
        load_unrolled(r, base, r.chunks, v);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            if (base + u * BLOCK < r.chunks) {  // such a chunk holds a finite element
                absorb(t.m, t.s, v[u]);
                if (RMS) t.q += squares4(v[u]);
            }
        }
    }
    const RowStats row = row_stats<RMS>(t, scratch);
    const float factor = row_factor<RMS>(row, row.m, r.cols);
    for (int base = threadIdx.x; base < r.chunks; base += UNROLL * BLOCK) {
        float4 v[UNROLL];
        load_unrolled(r, base, r.chunks, v);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int c = base + u * BLOCK;
            if (c < r.chunks) store_chunk(r, c, scale4(exp4(v[u], row.m), factor));
        }
    }
}

template <bool RMS>
// docs:begin fused-row-dispatch
__device__ __forceinline__ void fused_row(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float scratch[3 * BLOCK / 32];  // block_stats: 3 floats a warp
    extern __shared__ float4 row_cache[];
    const Row r = row_at(x, y, blockIdx.x, cols);
    if (r.chunks <= REG_CHUNKS * BLOCK) {
        row_in_registers<RMS>(r, scratch);
    } else if (16u * (unsigned int)r.chunks <= dynamic_shared_bytes()) {
        row_in_shared<RMS>(r, row_cache, scratch);
    } else {
        row_streamed<RMS>(r, scratch);
    }
}
// docs:end fused-row-dispatch

extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
fused_rms_softmax(const float* __restrict__ x, float* __restrict__ y, int cols) {
    fused_row<true>(x, y, cols);
}

extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
fused_softmax(const float* __restrict__ x, float* __restrict__ y, int cols) {
    fused_row<false>(x, y, cols);
}

// Packed rows (chapter 4's tiled cases, rows of different lengths end to end): block r reduces row r,
// elements row_offsets[r] .. row_offsets[r + 1] of x, with the tiers of fused_row. fused_row finds its
// row at blockIdx.x * cols; here the row's start comes from the offsets, so the dispatch is repeated
// on a Row built from them (the same tier conditions, the same dynamic shared memory rule).
// Compiled only with -DFUSED_PACKED (chapter 4's build), so chapter 3's builds stay as they were.
#ifdef FUSED_PACKED
extern "C" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS)
fused_rms_softmax_packed(const float* __restrict__ x, float* __restrict__ y, const int* __restrict__ row_offsets) {
    __shared__ float scratch[3 * BLOCK / 32];  // block_stats: 3 floats a warp
    extern __shared__ float4 row_cache[];
    const int start = row_offsets[blockIdx.x];
    const Row r = row_from(x, y, start, row_offsets[blockIdx.x + 1] - start);
    if (r.chunks <= REG_CHUNKS * BLOCK) {
        row_in_registers<true>(r, scratch);
    } else if (16u * (unsigned int)r.chunks <= dynamic_shared_bytes()) {
        row_in_shared<true>(r, row_cache, scratch);
    } else {
        row_streamed<true>(r, scratch);
    }
}
#endif  // FUSED_PACKED

// ---- end fused_softmax.cu ----
#ifndef REGISTERS_MIN_BLOCKS
#define REGISTERS_MIN_BLOCKS MIN_BLOCKS  // resident blocks per SM the registers-only kernels must allow
#endif

template <bool RMS>
__device__ __forceinline__ void registers_row(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float scratch[3 * BLOCK / 32];  // block_stats: 3 floats a warp
    row_in_registers<RMS>(row_at(x, y, blockIdx.x, cols), scratch);
}

extern "C" __global__ void __launch_bounds__(BLOCK, REGISTERS_MIN_BLOCKS)
registers_rms_softmax(const float* __restrict__ x, float* __restrict__ y, int cols) {
    registers_row<true>(x, y, cols);
}

extern "C" __global__ void __launch_bounds__(BLOCK, REGISTERS_MIN_BLOCKS)
registers_softmax(const float* __restrict__ x, float* __restrict__ y, int cols) {
    registers_row<false>(x, y, cols);
}

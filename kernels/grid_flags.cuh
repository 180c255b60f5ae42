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
#include "row_helpers.cuh"

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

// Warp-wide (every lane calls it): the row's (m, s, q) from the `pieces` slots at `slots`, each stamped `epoch`.
// Lane k waits for slots k, k + 32, ... in turn and merges them; a slot not yet stamped is read again. Traps
// (loudly) where a slot stays unstamped for FLAG_WAIT_LIMIT_NS: a piece's block never ran.
template <bool RMS>
__device__ __forceinline__ void gather_stats(const unsigned long long* slots, int pieces, unsigned int epoch, float& m,
                                             float& s, float& q) {
    m = NEG_INF;
    s = 0.0f;
    q = 0.0f;
    for (int k = threadIdx.x & 31; k < pieces; k += 32) {
        const unsigned long long* slot = slots + (size_t)SLOT_WORDS * k;
        unsigned long long wm = load_word(slot), ws = load_word(slot + 1), wq = RMS ? load_word(slot + 2) : 0ull;
        if (epoch_of(wm) != epoch || epoch_of(ws) != epoch || (RMS && epoch_of(wq) != epoch)) {
            const unsigned long long start = global_ns();
            do {
                __nanosleep(32);
                wm = load_word(slot);
                ws = load_word(slot + 1);
                if (RMS) wq = load_word(slot + 2);
                if (global_ns() - start > FLAG_WAIT_LIMIT_NS) __trap();
            } while (epoch_of(wm) != epoch || epoch_of(ws) != epoch || (RMS && epoch_of(wq) != epoch));
        }
        merge_stats(m, s, q, value_of(wm), value_of(ws), RMS ? value_of(wq) : 0.0f);
    }
    warp_merge_stats(m, s, q);
}

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

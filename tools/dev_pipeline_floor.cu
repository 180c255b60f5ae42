// What a pipelined read-wait-write design costs by itself, with no reduction (tools/dev_pipeline_floor.py).
//
// x is `units` rows of `len` 16-byte chunks. A resident grid is cut into groups of k blocks; group g walks rows
// g, g + groups, ... and block r of the group keeps piece r of each row in one of DEPTH shared-memory slots
// (cp.async). Before it waits for a row's pieces, a block has the next DEPTH - 1 rows' loads in flight. A row is
// written only after every block of its group has its piece on chip (a counter per row that only grows), as a
// softmax row can be written only once its statistics are known. With k = the grid and DEPTH = 1 this is the
// phase-floor probe's grid-wide barrier, once per row; with many rows in flight the reads of later rows overlap the
// writes of earlier ones, as a copy's do.
#define SPIN_LIMIT_NS 1000000000ull  // a group whose blocks are not all resident would wait forever: trap instead

__device__ __forceinline__ void request(const float4* __restrict__ src, int count, float4* slot) {
    for (int c = threadIdx.x; c < count; c += blockDim.x) {
        const unsigned int a = (unsigned int)__cvta_generic_to_shared(slot + c);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(a), "l"(src + c) : "memory");
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
}

// Arrival `old` on a counter that grows by k a call waits until the counter ends its round, (old / k + 1) k.
__device__ __forceinline__ void row_barrier(unsigned int* counter, int k) {
    if (threadIdx.x == 0) {
        unsigned int old;
        asm volatile("atom.add.release.gpu.global.u32 %0, [%1], 1;" : "=r"(old) : "l"(counter) : "memory");
        const unsigned int target = (old / k + 1) * k;
        unsigned int seen;
        unsigned long long start, now;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
        do {
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(counter) : "memory");
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
            if (now - start > SPIN_LIMIT_NS) __trap();
        } while ((int)(seen - target) < 0);
    }
    __syncthreads();
}

template <int DEPTH>
__device__ void pipelined(const float4* __restrict__ x, float4* __restrict__ y, int units, int len, int k,
                          unsigned int* __restrict__ counters) {
    extern __shared__ float4 slots[];  // DEPTH slots of `per` chunks
    const int groups = gridDim.x / k;
    const int group = blockIdx.x / k, rank = blockIdx.x % k;
    const int per = (len + k - 1) / k;
    const int begin = min(rank * per, len);
    const int count = min(begin + per, len) - begin;
    const int steps = group < units ? (units - group + groups - 1) / groups : 0;
    auto piece = [&](int step) { return (long long)(group + (long long)step * groups) * len + begin; };
#pragma unroll
    for (int s = 0; s < DEPTH - 1; ++s) {
        if (s < steps) request(x + piece(s), count, slots + s * per);
        else asm volatile("cp.async.commit_group;" ::: "memory");
    }
    for (int s = 0; s < steps; ++s) {
        const int ahead = s + DEPTH - 1;
        if (ahead < steps) request(x + piece(ahead), count, slots + (ahead % DEPTH) * per);
        else asm volatile("cp.async.commit_group;" ::: "memory");
        asm volatile("cp.async.wait_group %0;" ::"n"(DEPTH - 1) : "memory");
        __syncthreads();
        row_barrier(counters + group + s * groups, k);
        const float4* slot = slots + (s % DEPTH) * per;
        float4* out = y + piece(s);
        for (int c = threadIdx.x; c < count; c += blockDim.x) out[c] = slot[c];
        __syncthreads();  // the slot is requested again DEPTH steps on
    }
}

#define PIPELINED(D)                                                                                             \
    extern "C" __global__ void pipelined_d##D(const float4* __restrict__ x, float4* __restrict__ y, int units,   \
                                              int len, int k, unsigned int* __restrict__ counters) {           \
        pipelined<D>(x, y, units, len, k, counters);                                                            \
    }
PIPELINED(1)
PIPELINED(2)
PIPELINED(4)
PIPELINED(8)

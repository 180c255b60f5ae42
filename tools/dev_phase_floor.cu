// What keeping a read phase apart from a write phase costs by itself, with no reduction and no exchange: the floor
// of a fused design whose blocks read their part of a row, wait, then write it (tools/dev_phase_floor.py).
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void read_only(const float4* __restrict__ x, long long n, float* __restrict__ sink) {
    float acc = 0.f;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        float4 v = __ldg(x + i); acc += v.x + v.y + v.z + v.w;
    }
    if (acc == 12345.f) sink[0] = acc;
}
extern "C" __global__ void write_only(float4* __restrict__ y, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        y[i] = make_float4(1.f, 2.f, 3.f, 4.f);
}
// One wave: block b keeps chunks [b*per, (b+1)*per) of x in shared memory (cp.async), waits as `wait` says, then
// writes them to y.
template <typename Wait>
__device__ void phased(const float4* __restrict__ x, float4* __restrict__ y, long long n, int per, Wait wait) {
    extern __shared__ float4 staged[];
    const long long begin = (long long)blockIdx.x * per;
    for (int c = threadIdx.x; c < per && begin + c < n; c += blockDim.x) {
        unsigned int a = (unsigned int)__cvta_generic_to_shared(staged + c);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(a), "l"(x + begin + c) : "memory");
    }
    asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;" ::: "memory");
    __syncthreads();
    wait();
    for (int c = threadIdx.x; c < per && begin + c < n; c += blockDim.x) y[begin + c] = staged[c];
}

// No block waits for another.
extern "C" __global__ void phased_local(const float4* __restrict__ x, float4* __restrict__ y, long long n, int per) {
    phased(x, y, n, per, [] {});
}

// Every block waits for the slowest block's reads (a grid-wide barrier; the launch is cooperative).
extern "C" __global__ void phased_grid(const float4* __restrict__ x, float4* __restrict__ y, long long n, int per) {
    phased(x, y, n, per, [] { cg::this_grid().sync(); });
}

// Groups of k consecutive blocks wait for one another: a counter per group that only grows (the host zeroes it
// before a run of one k); arrival `old` waits until the counter reaches the end of its round, (old / k + 1) k.
// k = 1 is phased_local, k = the grid phased_grid without the cooperative launch.
__device__ void group_barrier(int k, unsigned int* __restrict__ counters) {
    if (threadIdx.x == 0 && k > 1) {
        unsigned int* c = counters + blockIdx.x / k;
        const unsigned int old = atomicAdd(c, 1u);
        const unsigned int target = (old / k + 1) * k;
        unsigned int seen;
        unsigned long long start, now;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
        do {  // a group whose blocks were not all resident would wait forever: trap after a second instead
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(c) : "memory");
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
            if (now - start > 1000000000ull) __trap();
        } while ((int)(seen - target) < 0);
    }
    __syncthreads();
}

extern "C" __global__ void phased_group(const float4* __restrict__ x, float4* __restrict__ y, long long n, int per,
                                        int k, unsigned int* __restrict__ counters) {
    phased(x, y, n, per, [=] { group_barrier(k, counters); });
}

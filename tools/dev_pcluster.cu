// Persistent pipelined clusters (a development probe, tools/dev_pcluster.py): a grid of as many clusters of
// CLUSTER blocks as the GPU holds at once walks the rows (cluster g takes rows g, g + clusters, ...). Block k of a
// cluster keeps chunk slice k of a row in one of DEPTH shared-memory buffers. Before it reduces the row it holds, it
// requests its slice of the cluster's row DEPTH - 1 steps ahead into a free buffer (cp.async, its own entries only),
// so that later rows' loads are in flight while the cluster exchanges this row's statistics and writes its y: the
// GPU's reads and writes overlap as a copy's do, instead of every block reading, then waiting, then writing.
//
// The exchange per row is the cluster design's (softmax_designs.cu): each block pushes its (m, s, q) into entry k
// of every block's `triples` and arrives on that block's mbarrier. Rows alternate between two sets of entries and
// two mbarriers (row i of a block uses set i & 1, parity (i >> 1) & 1): a block can push row i + 2's triple only
// after every block pushed row i + 1's, which each does after reading row i's set, so a set is never overwritten
// while it is read, and an mbarrier never receives a phase's arrivals before the previous phase completed.
// A thread only ever touches its own buffer entries (t, t + BLOCK, ...), so no block barrier guards them.
#ifndef DESIGN
#define DESIGN 9  // softmax_designs.cu's helpers, none of its kernels
#endif
#ifndef DEPTH
#define DEPTH 2   // shared-memory buffers a block cycles through: its loads run DEPTH - 1 rows ahead
#endif
#include "../kernels/softmax_designs.cu"
#include "dev_slices.cuh"

#if SM90_FEATURES
__device__ __forceinline__ void wait_parity(unsigned int barrier, unsigned int parity) {
    asm volatile(
        "{\n"
        ".reg .pred done;\n"
        "WAIT_%=:\n"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT_%=;\n"
        "}\n" ::"r"(barrier), "r"(parity)
        : "memory");
}

struct Part {
    Row r;
    int begin, end;
};

__device__ __forceinline__ Part part_of(const float* x, float* y, long long row, int cols, int rank) {
    Part p;
    p.r = row_at(x, y, row, cols);
    const int per_block = (p.r.chunks + CLUSTER - 1) / CLUSTER;
    p.begin = min(rank * per_block, p.r.chunks);
    p.end = min(p.begin + per_block, p.r.chunks);
    return p;
}

template <bool RMS>
__device__ __forceinline__ void pcluster_rows(const float* __restrict__ x, float* __restrict__ y, int rows, int cols,
                                              int stride) {
    __shared__ float scratch[96];
    __shared__ float triples[2][CLUSTER][3];
    __shared__ unsigned long long arrivals[2];
    extern __shared__ float4 buffers[];  // DEPTH slices of `stride` chunks
    cg::cluster_group cluster = cg::this_cluster();
    const int rank = (int)cluster.block_rank();
    const long long clusters = gridDim.x / CLUSTER;
    const long long first = blockIdx.x / CLUSTER;
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(&arrivals[0])), "r"(CLUSTER)
                     : "memory");
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(&arrivals[1])), "r"(CLUSTER)
                     : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");  // this block's mbarriers are ready
#pragma unroll
    for (int k = 0; k < DEPTH - 1; ++k) {  // the first DEPTH - 1 rows' slices, a commit group each (maybe empty)
        const long long row = first + k * clusters;
        if (row < rows) {
            const Part p = part_of(x, y, row, cols, rank);
            request_slice(p.r, p.begin, p.end, buffers + k * stride);
        } else {
            commit_copies();
        }
    }
    int i = 0;
    for (long long row = first; row < rows; row += clusters, ++i) {
        float4* slice = buffers + (i % DEPTH) * stride;
        const Part p = part_of(x, y, row, cols, rank);
        const long long ahead = row + (DEPTH - 1) * clusters;
        if (ahead < rows) {
            const Part n = part_of(x, y, ahead, cols, rank);
            request_slice(n.r, n.begin, n.end, buffers + ((i + DEPTH - 1) % DEPTH) * stride);
        } else {
            commit_copies();  // an empty group keeps "all but the newest DEPTH - 1" meaning this row's
        }
        wait_copies(DEPTH - 1);
        float m = NEG_INF, s = 0.0f, q = 0.0f;
        slice_stats<RMS>(p.end - p.begin, slice, m, s, q);
        block_merge_stats(m, s, q, scratch);
        if (i == 0) asm volatile("barrier.cluster.wait.aligned;" ::: "memory");  // every block's mbarriers are ready
        const unsigned int barrier = shared_address(&arrivals[i & 1]);
        if (threadIdx.x < CLUSTER) {
            push_triple(cluster_address(shared_address(&triples[i & 1][rank][0]), threadIdx.x),
                        cluster_address(barrier, threadIdx.x), m, s, q);
        }
        wait_parity(barrier, (i >> 1) & 1);
        const int lane = threadIdx.x & 31;
        float mk = NEG_INF, sk = 0.0f, qk = 0.0f;
        if (lane < CLUSTER) {
            mk = triples[i & 1][lane][0];
            sk = triples[i & 1][lane][1];
            qk = triples[i & 1][lane][2];
        }
        warp_merge_stats(mk, sk, qk);
        const float factor = (RMS ? sqrtf(qk / (float)cols) : 1.0f) / sk;
        shared_write(p.r, p.begin, p.end, slice, mk, factor);
    }
    if (i == 0) asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");  // no block leaves while pushes to it may be in flight
}

extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(BLOCK)
pcluster_softmax(const float* __restrict__ x, float* __restrict__ y, int rows, int cols, int stride) {
    pcluster_rows<false>(x, y, rows, cols, stride);
}

extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(BLOCK)
pcluster_rms_softmax(const float* __restrict__ x, float* __restrict__ y, int rows, int cols, int stride) {
    pcluster_rows<true>(x, y, rows, cols, stride);
}
#endif

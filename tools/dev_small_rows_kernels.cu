// Development kernels for the latency regime of fused softmax (tools/dev_small_rows.py): small variants of the
// fused row and narrow kernels, each isolating one cost. Never used by a chapter. The tool pastes row_helpers.cuh
// in front of this text and appends one extern "C" instantiation per variant (DEV_KERNEL below).
//
// dev_group<G, BT, K, VEC, ONLINE, FAST, RMS>: a group of G lanes reduces one row; BT / G rows per block (G <= 32),
// or one row per block of G = BT threads (G > 32). Each lane holds K 16-byte chunks (VEC 1: row_helpers' Row walk,
// a chunk straddling the row's ends read lane by lane; VEC 2: every chunk one 16-byte load, the lanes outside the
// row replaced by -inf, reading neighbours' elements within the 16-byte granule: development only)
// or K scalar elements (element part + i G of the row). ONLINE: one reduction of (m, s[, q]) per row instead of a max
// then a sum; FAST: the final division as a reciprocal approximation. 32-bit row math, no grid-stride loop.

#define DEV_L2E 1.4426950408889634f

__device__ __forceinline__ float dev_ex2(float v) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
    return r;
}

__device__ __forceinline__ float dev_rcp(float v) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
    return r;
}

// s, a sum of exp(x - from), against the larger maximum `to` (from == to also when both are -inf: s is 0 there).
__device__ __forceinline__ float dev_rescale(float s, float from, float to) {
    return from == to ? s : s * dev_ex2((from - to) * DEV_L2E);
}

// The whole 16-byte granule of chunk c, lanes outside the row as -inf (the granule may hold a neighbour row's
// elements or, past the last row, bytes of the allocation's padding: the memory pool's blocks are 512-byte multiples).
__device__ __forceinline__ float4 load_granule(const Row& r, int c) {
    float4 v = __ldg(reinterpret_cast<const float4*>(r.x) + c);
    const int first = 4 * c - r.lead;
    v.x = (first >= 0 && first < r.cols) ? v.x : NEG_INF;
    v.y = (first + 1 >= 0 && first + 1 < r.cols) ? v.y : NEG_INF;
    v.z = (first + 2 >= 0 && first + 2 < r.cols) ? v.z : NEG_INF;
    v.w = (first + 3 < r.cols) ? v.w : NEG_INF;
    return v;
}

template <int G>
__device__ __forceinline__ void dev_combine(float& m, float& s, float& q, bool rms) {
#pragma unroll
    for (int offset = G / 2; offset > 0; offset >>= 1) {
        const float mo = __shfl_xor_sync(0xffffffffu, m, offset);
        const float so = __shfl_xor_sync(0xffffffffu, s, offset);
        if (rms) q += __shfl_xor_sync(0xffffffffu, q, offset);
        const float mn = fmaxf(m, mo);
        s = dev_rescale(s, m, mn) + dev_rescale(so, mo, mn);
        m = mn;
    }
}

template <int G>
__device__ __forceinline__ float dev_gmax(float v) {
#pragma unroll
    for (int offset = G / 2; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

template <int G>
__device__ __forceinline__ float dev_gsum(float v) {
#pragma unroll
    for (int offset = G / 2; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// Group-wide reductions for G lanes (G <= 32: shuffles; G > 32: one block per row, shared memory).
template <int G>
__device__ __forceinline__ float dev_max(float v, float* scratch) {
    if constexpr (G <= 32) return dev_gmax<G>(v);
    else {
        v = dev_gmax<32>(v);
        __syncthreads();
        if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
        __syncthreads();
        return dev_gmax<32>((threadIdx.x & 31) < G / 32 ? scratch[threadIdx.x & 31] : NEG_INF);
    }
}

template <int G>
__device__ __forceinline__ float dev_sum(float v, float* scratch) {
    if constexpr (G <= 32) return dev_gsum<G>(v);
    else {
        v = dev_gsum<32>(v);
        __syncthreads();
        if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
        __syncthreads();
        return dev_gsum<32>((threadIdx.x & 31) < G / 32 ? scratch[threadIdx.x & 31] : 0.0f);
    }
}

// One (m, s, q) reduction: within warps by shuffles, then (G > 32) one barrier and every warp combines the
// warps' triples itself.
template <int G>
__device__ __forceinline__ void dev_online(float& m, float& s, float& q, bool rms, float* scratch) {
    dev_combine<(G < 32 ? G : 32)>(m, s, q, rms);
    if constexpr (G > 32) {
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        if (lane == 0) {
            scratch[3 * warp] = m;
            scratch[3 * warp + 1] = s;
            scratch[3 * warp + 2] = q;
        }
        __syncthreads();
        const int k = lane % (G / 32);  // every group of G / 32 lanes combines all the warps' triples
        m = scratch[3 * k];
        s = scratch[3 * k + 1];
        q = scratch[3 * k + 2];
        dev_combine<G / 32>(m, s, q, rms);
    }
}

template <int G, int BT, int K, int VEC, bool ONLINE, bool FAST, bool RMS>
__device__ __forceinline__ void dev_group(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    __shared__ float scratch[96];
    constexpr int RPB = G <= BT ? BT / G : 1;
    const int part = threadIdx.x % G;
    const int row = blockIdx.x * RPB + (int)threadIdx.x / G;
    const bool live = row < rows;
    constexpr int N = VEC ? 4 * K : K;  // floats a lane holds
    float v[N];
    Row r;
    if (VEC) {
        r = row_from(x, y, (unsigned int)(live ? row : 0) * (unsigned int)cols, cols);
#pragma unroll
        for (int i = 0; i < K; ++i) {
            const int c = part + i * G;
            const float4 f = (live && c < r.chunks) ? (VEC == 2 ? load_granule(r, c) : load_chunk(r, c)) : neg_inf4();
            v[4 * i] = f.x; v[4 * i + 1] = f.y; v[4 * i + 2] = f.z; v[4 * i + 3] = f.w;
        }
    } else {
        const float* xr = x + (unsigned int)(live ? row : 0) * (unsigned int)cols;
#pragma unroll
        for (int i = 0; i < K; ++i) {
            const int j = part + i * G;
            v[i] = (live && j < cols) ? __ldg(xr + j) : NEG_INF;
        }
    }
    float m = NEG_INF, q = 0.0f, s = 0.0f;
#pragma unroll
    for (int i = 0; i < N; ++i) {
        m = fmaxf(m, v[i]);
        if (RMS) q += v[i] > NEG_INF ? v[i] * v[i] : 0.0f;
    }
    float factor;
    if (ONLINE) {
        const float mine = m;
        const float shift = mine == NEG_INF ? 0.0f : mine;
#pragma unroll
        for (int i = 0; i < N; ++i) {
            v[i] = dev_ex2((v[i] - shift) * DEV_L2E);
            s += v[i];
        }
        dev_online<G>(m, s, q, RMS, scratch);
        const float rho = RMS ? sqrtf(q / (float)cols) : 1.0f;
        const float scale = dev_ex2((shift - m) * DEV_L2E);
        factor = FAST ? scale * rho * dev_rcp(s) : scale * rho / s;
    } else {
        m = dev_max<G>(m, scratch);
        const float rho = RMS ? sqrtf(dev_sum<G>(q, scratch) / (float)cols) : 1.0f;
#pragma unroll
        for (int i = 0; i < N; ++i) {
            v[i] = dev_ex2((v[i] - m) * DEV_L2E);
            s += v[i];
        }
        s = dev_sum<G>(s, scratch);
        factor = FAST ? rho * dev_rcp(s) : rho / s;
    }
    if (VEC) {
#pragma unroll
        for (int i = 0; i < K; ++i) {
            const int c = part + i * G;
            if (live && c < r.chunks)
                store_chunk(r, c, make_float4(v[4 * i] * factor, v[4 * i + 1] * factor, v[4 * i + 2] * factor,
                                              v[4 * i + 3] * factor));
        }
    } else {
        float* yr = y + (unsigned int)(live ? row : 0) * (unsigned int)cols;
#pragma unroll
        for (int i = 0; i < K; ++i) {
            const int j = part + i * G;
            if (live && j < cols) yr[j] = v[i] * factor;
        }
    }
}

// The same walk, no arithmetic: the floor of this memory path (y = x).
template <int G, int BT, int K, int VEC>
__device__ __forceinline__ void dev_group_copy(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    constexpr int RPB = G <= BT ? BT / G : 1;
    const int part = threadIdx.x % G;
    const int row = blockIdx.x * RPB + (int)threadIdx.x / G;
    if (row >= rows) return;
    if (VEC) {
        const Row r = row_from(x, y, (unsigned int)row * (unsigned int)cols, cols);
        float4 v[K];
#pragma unroll
        for (int i = 0; i < K; ++i)
            v[i] = part + i * G < r.chunks ? (VEC == 2 ? load_granule(r, part + i * G) : load_chunk(r, part + i * G)) : neg_inf4();
#pragma unroll
        for (int i = 0; i < K; ++i) if (part + i * G < r.chunks) store_chunk(r, part + i * G, v[i]);
    } else {
        const float* xr = x + (unsigned int)row * (unsigned int)cols;
        float* yr = y + (unsigned int)row * (unsigned int)cols;
        float v[K];
#pragma unroll
        for (int i = 0; i < K; ++i) v[i] = part + i * G < cols ? __ldg(xr + part + i * G) : 0.0f;
#pragma unroll
        for (int i = 0; i < K; ++i) if (part + i * G < cols) yr[part + i * G] = v[i];
    }
}

extern "C" __global__ void dev_empty(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {}

#define DEV_KERNEL(name, G, BT, K, VEC, ONLINE, FAST, RMS)                                                  \
    extern "C" __global__ void __launch_bounds__(BT) name(const float* __restrict__ x, float* __restrict__ y, \
                                                           int rows, int cols) {                             \
        dev_group<G, BT, K, VEC, ONLINE, FAST, RMS>(x, y, rows, cols);                                       \
    }
#define DEV_COPY(name, G, BT, K, VEC)                                                                        \
    extern "C" __global__ void __launch_bounds__(BT) name(const float* __restrict__ x, float* __restrict__ y, \
                                                           int rows, int cols) {                             \
        dev_group_copy<G, BT, K, VEC>(x, y, rows, cols);                                                     \
    }

// RMS-scaled softmax, row path: four kernels, one block of BLOCK threads per row.
//   y_rj = rho_r * exp(x_rj - m_r) / z_r,  rho_r = sqrt(mean_j x_rj^2),
//   m_r = max_j x_rj,  z_r = sum_j exp(x_rj - m_r).
// Global traffic per element (4-byte floats): K1 reads x; K2 reads x; K3 reads x,
// writes e; K4 reads e, writes y — 6 accesses, 24 bytes per element, against 8 for
// a fused kernel that reads x once and writes y once.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
row_rms(const float* __restrict__ x, float* __restrict__ rho, int cols) {
    __shared__ float scratch[32];
    TRACE_BEGIN(0)
    const float* row = x + (size_t)blockIdx.x * cols;
    float acc = 0.0f;
    for (int j = threadIdx.x; j < cols; j += BLOCK) acc = fmaf(row[j], row[j], acc);
    acc = block_sum(acc, scratch);
    if (threadIdx.x == 0) rho[blockIdx.x] = sqrtf(acc / (float)cols);
    TRACE_END(0)
}

extern "C" __global__ void __launch_bounds__(BLOCK)
row_max(const float* __restrict__ x, float* __restrict__ m, int cols) {
    __shared__ float scratch[32];
    TRACE_BEGIN(1)
    const float* row = x + (size_t)blockIdx.x * cols;
    float best = NEG_INF;
    for (int j = threadIdx.x; j < cols; j += BLOCK) best = fmaxf(best, row[j]);
    best = block_max(best, scratch);
    if (threadIdx.x == 0) m[blockIdx.x] = best;
    TRACE_END(1)
}

// docs:begin row-exp-sum
extern "C" __global__ void __launch_bounds__(BLOCK)
row_exp_sum(const float* __restrict__ x, const float* __restrict__ m, float* __restrict__ e,
            float* __restrict__ z, int cols) {
    __shared__ float scratch[32];
    TRACE_BEGIN(2)
    const size_t base = (size_t)blockIdx.x * cols;
    const float row_max_value = m[blockIdx.x];
    float acc = 0.0f;
    for (int j = threadIdx.x; j < cols; j += BLOCK) {
        const float v = expf(x[base + j] - row_max_value);
        e[base + j] = v;  // the full intermediate array the fused kernel avoids
        acc += v;
    }
    acc = block_sum(acc, scratch);
    if (threadIdx.x == 0) z[blockIdx.x] = acc;
    TRACE_END(2)
}
// docs:end row-exp-sum

extern "C" __global__ void __launch_bounds__(BLOCK)
row_scale(const float* __restrict__ e, const float* __restrict__ rho, const float* __restrict__ z,
          float* __restrict__ y, int cols) {
    TRACE_BEGIN(3)
    const size_t base = (size_t)blockIdx.x * cols;
    const float factor = rho[blockIdx.x] / z[blockIdx.x];
    for (int j = threadIdx.x; j < cols; j += BLOCK) y[base + j] = factor * e[base + j];
    TRACE_END(3)
}

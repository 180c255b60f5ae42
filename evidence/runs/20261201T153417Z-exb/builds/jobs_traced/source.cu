// Example B: jobs of two dependent stages, with ragged or balanced work, in three schedules.
//
// A job owns BLOCK uint32 values and is run by one BLOCK-thread CTA, one value per thread:
//   stage A: v = 1664525 v + 1013904223 (mod 2^32), a_iters[job] times, on x[job][t];
//            the result goes to the volatile global array mid[job][t];
//   stage B: after a block barrier, thread t reads mid[job][BLOCK - 1 - t] (a value another
//            thread wrote, so the barrier is what makes it correct), applies
//            v = 22695477 v + 1 (mod 2^32) b_iters times and writes y[job][t].
// `mid` is volatile in every schedule so that stage A's values really pass through global
// memory, never a register, whichever schedule runs them.
//
// Schedules (launchlab/gpu/jobs.py launches them; launchlab/model/jobs.py models them):
//   jobs_stage_a + jobs_stage_b: two kernels, one CTA per job each; the kernel boundary is
//                                the only thing that orders a job's B after its A;
//   jobs_fused:                  one CTA per job, A then the barrier then B;
//   jobs_queue:                  `workers` CTAs (the host launches one per SM) take job numbers
//                                from an atomic counter, `head`, and run each like jobs_fused.
//
// Progress of the queue: jobs depend on nothing outside themselves, so a worker that holds a
// job finishes it in bounded time without waiting for any other CTA. Every taken job
// therefore completes, and the workers leave once the counter passes `jobs`, whether or not
// all of them are resident at once. The host zeroes `head` with a device memset before every
// invocation (part of the timed work, and a memset node in the captured graph).
//
// Each launch reserves just over half of the SM's shared memory as dynamic shared memory that
// the code never touches: only one CTA then fits on an SM (the host checks it with the
// occupancy API), so every schedule runs at most one job per SM at a time.
//
// Bytes per value: x read 4, mid written 4 and read 4, y written 4: 16 bytes, in every schedule
// (the queue adds one 4-byte atomic per job). a_iters adds 4 bytes per job.
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
#define LCG_A_MUL 1664525u
#define LCG_A_ADD 1013904223u
#define LCG_B_MUL 22695477u
#define LCG_B_ADD 1u

#define JOB_PARAMS                                                                                    \
    const unsigned int* __restrict__ x, volatile unsigned int* mid, unsigned int* __restrict__ y, \
        const int* __restrict__ a_iters, int b_iters, int jobs

// Job trace probe. With -DLAUNCHLAB_TRACE each job writes JOB_WORDS words at
// trace_records[JOB_WORDS * slot] (slot: the block index, or the queue position):
//   {A start ns, A end ns, B start ns, B end ns, job, worker, SM of A, SM of B}.
// Both stamps of a stage follow a block barrier, so a stage's interval covers all its threads.
// In the separate schedule the A kernel writes the A words, job and worker, the B kernel the
// B words. Without the define the macros vanish and the kernels are the timed ones.
#define JOB_WORDS 8
#ifdef LAUNCHLAB_TRACE
#define STAGE_BEGIN(name) \
    __syncthreads();      \
    const unsigned long long name##_start_ns = global_timer_ns();
#define STAGE_END_A(slot, job)                                                            \
    __syncthreads();                                                                      \
    if (threadIdx.x == 0) {                                                               \
        unsigned long long* rec = trace_records + (unsigned long long)JOB_WORDS * (slot); \
        rec[0] = a_start_ns;                                                              \
        rec[1] = global_timer_ns();                                                       \
        rec[4] = (unsigned long long)(job);                                               \
        rec[5] = blockIdx.x;                                                              \
        rec[6] = sm_id();                                                                 \
    }
#define STAGE_END_B(slot)                                                                 \
    __syncthreads();                                                                      \
    if (threadIdx.x == 0) {                                                               \
        unsigned long long* rec = trace_records + (unsigned long long)JOB_WORDS * (slot); \
        rec[2] = b_start_ns;                                                              \
        rec[3] = global_timer_ns();                                                       \
        rec[7] = sm_id();                                                                 \
    }
#else
#define STAGE_BEGIN(name)
#define STAGE_END_A(slot, job)
#define STAGE_END_B(slot)
#endif

// n dependent multiply-adds. Unrolled, the compiler folds four steps into one multiply-add by
// composing the affine maps (as the host oracle does), so the unrolling is switched off: the
// work of a stage is then n multiply-adds in a chain, proportional to the count in the job table.
__device__ __forceinline__ unsigned int lcg(unsigned int v, unsigned int mul, unsigned int add, int n) {
#pragma unroll 1
    for (int i = 0; i < n; ++i) v = mul * v + add;
    return v;
}

__device__ __forceinline__ void stage_a(const unsigned int* __restrict__ x, volatile unsigned int* mid,
                                        const int* __restrict__ a_iters, int job) {
    const unsigned long long at = (unsigned long long)job * BLOCK + threadIdx.x;
    mid[at] = lcg(x[at], LCG_A_MUL, LCG_A_ADD, a_iters[job]);
}

// Reads a neighbour's stage A value: correct only after a barrier (or a kernel boundary).
__device__ __forceinline__ void stage_b(volatile unsigned int* mid, unsigned int* __restrict__ y, int b_iters,
                                        int job) {
    const unsigned long long base = (unsigned long long)job * BLOCK;
    y[base + threadIdx.x] = lcg(mid[base + (BLOCK - 1 - threadIdx.x)], LCG_B_MUL, LCG_B_ADD, b_iters);
}

// One job, both stages, in one CTA; `slot` places its trace record.
// docs:begin job-run
__device__ __forceinline__ void run_job(JOB_PARAMS, int job, int slot) {
    STAGE_BEGIN(a)
    stage_a(x, mid, a_iters, job);
    STAGE_END_A(slot, job)
    __syncthreads();  // every value of mid[job] is written before any thread reads a neighbour's
    STAGE_BEGIN(b)
    stage_b(mid, y, b_iters, job);
    STAGE_END_B(slot)
}
// docs:end job-run

// ------------------------------------------------------------------ separate: two kernels
extern "C" __global__ void __launch_bounds__(BLOCK, 1) jobs_stage_a(JOB_PARAMS) {
    const int job = blockIdx.x;
    if (job >= jobs) return;
    STAGE_BEGIN(a)
    stage_a(x, mid, a_iters, job);
    STAGE_END_A(job, job)
}

extern "C" __global__ void __launch_bounds__(BLOCK, 1) jobs_stage_b(JOB_PARAMS) {
    const int job = blockIdx.x;
    if (job >= jobs) return;
    STAGE_BEGIN(b)
    stage_b(mid, y, b_iters, job);
    STAGE_END_B(job)
}

// ------------------------------------------------------------------ fused: one CTA per job
extern "C" __global__ void __launch_bounds__(BLOCK, 1) jobs_fused(JOB_PARAMS) {
    const int job = blockIdx.x;
    if (job >= jobs) return;
    run_job(x, mid, y, a_iters, b_iters, jobs, job, job);
}

// ------------------------------------------------------------------ queue: persistent workers
// head: the queue counter, zeroed by the host before every invocation.
// docs:begin job-queue
extern "C" __global__ void __launch_bounds__(BLOCK, 1) jobs_queue(JOB_PARAMS, unsigned int* head) {
    __shared__ unsigned int taken;
    for (;;) {
        __syncthreads();  // every thread has read the previous job number
        if (threadIdx.x == 0) taken = atomicAdd(head, 1u);
        __syncthreads();
        const unsigned int job = taken;
        if (job >= (unsigned int)jobs) return;
        run_job(x, mid, y, a_iters, b_iters, jobs, (int)job, (int)job);
    }
}
// docs:end job-queue

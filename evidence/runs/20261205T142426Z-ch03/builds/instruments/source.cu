// Instruments of the cold-L2 measurement, never timed themselves (src/launchlab/gpu/instruments.py).
// Before a cold invocation the protocol enqueues l2_flush_read over a buffer twice the L2 size, then
// gpu_wait; the timed invocation's start event follows them on the same stream.

// Reads `count` 16-byte words: run over a buffer twice the L2 size, it leaves the L2 holding
// clean lines of that buffer, so a timed kernel that follows starts from DRAM and its own
// evictions write nothing back. The store never happens for a zeroed buffer; it keeps the loads.
extern "C" __global__ void l2_flush_read(const float4* __restrict__ buffer, unsigned long long count,
                                         float* __restrict__ sink) {
    float acc = 0.0f;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
        const float4 v = buffer[i];
        acc += (v.x + v.y) + (v.z + v.w);
    }
    if (acc == 1.0f) sink[0] = acc;
}

// One thread waits `ns` nanoseconds of %globaltimer: queued after the flush, it keeps the GPU
// busy while the host enqueues the timed invocation, so the invocation's start event is not
// followed by an idle wait for the host (the cold time is device time, not host pace).
extern "C" __global__ void gpu_wait(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        __nanosleep(1000);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}

// Native launch loop: the host cost of kernel launches without Python in the way.
// Python hands over CUfunction handles (CuPy's kernel.kernel.ptr), launch geometry
// and argument arrays; this loop calls the driver's cuLaunchKernel directly and
// times itself with a steady clock. libcuda is opened at run time, so the library
// builds on machines without a driver.
#include <chrono>
#include <dlfcn.h>

namespace {
using LaunchFn = int (*)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         void*, void**, void**);
using SyncFn = int (*)(void*);

LaunchFn launch_kernel = nullptr;
SyncFn stream_synchronize = nullptr;

long long now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
}  // namespace

extern "C" {

// Returns 0 when libcuda and both entry points were found.
int launch_loop_init() {
    void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!driver) return 1;
    launch_kernel = reinterpret_cast<LaunchFn>(dlsym(driver, "cuLaunchKernel"));
    stream_synchronize = reinterpret_cast<SyncFn>(dlsym(driver, "cuStreamSynchronize"));
    return (launch_kernel && stream_synchronize) ? 0 : 2;
}

// Issues `repeats` passes over `kernel_count` kernels (one-dimensional grids) on `stream`
// and returns without waiting. Returns the first non-zero CUresult, or 0.
int launch_enqueue(int kernel_count, void** functions, const unsigned* grid_x, const unsigned* block_x,
                   void*** params, void* stream, int repeats) {
    if (!launch_kernel) return -1;
    for (int r = 0; r < repeats; ++r) {
        for (int k = 0; k < kernel_count; ++k) {
            int status = launch_kernel(functions[k], grid_x[k], 1, 1, block_x[k], 1, 1, 0, stream, params[k], nullptr);
            if (status != 0) return status;
        }
    }
    return 0;
}

// launch_enqueue timed from inside C++, then a wait for the stream: enqueue_ns is the
// time to issue every launch, complete_ns the time until the stream drained, both
// from the same start.
int launch_loop(int kernel_count, void** functions, const unsigned* grid_x, const unsigned* block_x,
                void*** params, void* stream, int repeats, long long* enqueue_ns, long long* complete_ns) {
    const long long start = now_ns();
    int status = launch_enqueue(kernel_count, functions, grid_x, block_x, params, stream, repeats);
    if (status != 0) return status;
    const long long issued = now_ns();
    status = stream_synchronize(stream);
    *enqueue_ns = issued - start;
    *complete_ns = now_ns() - start;
    return status;
}
}

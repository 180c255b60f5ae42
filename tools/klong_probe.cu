// Probes of what a launch of the fused designs costs before any work (tools/klong_bench.py): an empty kernel (its
// grid launched plainly or cooperatively), and clusters of PROBE_CLUSTER blocks that only launch, or only meet at
// one cluster barrier.
#include <cooperative_groups.h>

#include "../kernels/arch.cuh"

namespace cg = cooperative_groups;

#ifndef PROBE_CLUSTER
#define PROBE_CLUSTER 8
#endif

extern "C" __global__ void probe_empty() {}

#if SM90_FEATURES
extern "C" __global__ void __cluster_dims__(PROBE_CLUSTER, 1, 1) probe_cluster_empty() {}

extern "C" __global__ void __cluster_dims__(PROBE_CLUSTER, 1, 1) probe_cluster_sync() { cg::this_cluster().sync(); }
#endif

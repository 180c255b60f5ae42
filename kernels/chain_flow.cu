// The chain's flow kernel and PDL kernels: megakernel_flow.cu in plain-softmax mode (design_helpers.cuh says why).
#define PLAIN_SOFTMAX
#define FLOW_KEEP_X 0  // every chain contender reads a stage's input twice, from global memory
#include "megakernel_flow.cu"

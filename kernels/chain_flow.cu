// The chain's flow kernel and PDL kernels: megakernel_flow.cu in plain-softmax mode (tiled.cuh says why).
#define PLAIN_SOFTMAX
#include "megakernel_flow.cu"

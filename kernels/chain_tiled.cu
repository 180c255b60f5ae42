// The chain's three kernels: tiled_softmax.cu's A, B and C in plain-softmax mode (tiled.cuh says why).
#define PLAIN_SOFTMAX
#include "tiled_softmax.cu"

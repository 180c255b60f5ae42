// A row cut into equal pieces over a grid: piece p is part p % pieces of row p / pieces. Shared by the lagged split
// design (lagged_split.cu) and the development probes that walk pieces (tools/dev_slices.cuh).
#pragma once
#include "row_helpers.cuh"

// Piece p's chunks [begin, end) of its row p / pieces (equal parts of ceil(chunks / pieces), the last one shorter).
__device__ __forceinline__ Row piece_at(const float* x, float* y, long long p, int cols, int pieces, int& begin,
                                        int& end) {
    const Row r = row_at(x, y, p / pieces, cols);
    const int per = (r.chunks + pieces - 1) / pieces;
    begin = min((int)(p % pieces) * per, r.chunks);
    end = min(begin + per, r.chunks);
    return r;
}

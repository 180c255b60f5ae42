// Pieces and slices of rows for the development probes (tools/dev_pcluster.cu, tools/dev_gpipe.cu, tools/dev_lag.cu):
// a piece of a row cut over the grid, and a block's slice in shared memory, requested by cp.async, then reduced to
// (m, s, q) as it is read back.
// Include after kernels/softmax_designs.cu (its helpers and BLOCK, UNROLL).
#pragma once

// Piece p's part [begin, end) of its row p / pieces.
__device__ __forceinline__ Row piece_at(const float* x, float* y, long long p, int cols, int pieces, int& begin,
                                        int& end) {
    const Row r = row_at(x, y, p / pieces, cols);
    const int per = (r.chunks + pieces - 1) / pieces;
    begin = min((int)(p % pieces) * per, r.chunks);
    end = min(begin + per, r.chunks);
    return r;
}

// This block's part [begin, end) of row `row`: whole chunks by cp.async into slice[c - begin], the straddling ones
// lane by lane; one commit group (possibly empty).
__device__ __forceinline__ void request_slice(const Row& r, int begin, int end, float4* slice) {
    const float4* chunks = reinterpret_cast<const float4*>(r.x);
    for (int c = begin + (int)threadIdx.x; c < end; c += BLOCK) {
        if (whole_chunk(r, c)) copy_chunk_async(slice + (c - begin), chunks + c);
        else slice[c - begin] = load_chunk(r, c);
    }
    commit_copies();
}

template <bool RMS>
__device__ __forceinline__ void slice_stats(int count, const float4* slice, float& m, float& s, float& q) {
    float mine = NEG_INF, sum = 0.0f, squares = 0.0f;
    for (int base = (int)threadIdx.x; base < count; base += UNROLL * BLOCK) {
        float4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int c = base + u * BLOCK;
            v[u] = c < count ? slice[c] : neg_inf4();
        }
        float top = mine;
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            top = fmaxf(top, max4(v[u]));
            if (RMS) squares += squares4(v[u]);
        }
        float added = 0.0f;
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) added += sum4(exp4(v[u], top));
        sum = rescaled(sum, mine, top) + added;
        mine = top;
    }
    merge_stats(m, s, q, mine, sum, squares);
}

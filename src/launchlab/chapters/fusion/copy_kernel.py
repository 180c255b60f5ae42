"""The float4 copy kernel (kernels/copy.cu) as a chapter 3 target: the copy ceiling's second contender beside
cudaMemcpyAsync, on the same input matrix."""
from __future__ import annotations

FAMILY = "copy"
KERNELS = ("copy_vec4",)
DEFINES = {"BLOCK": 256, "UNROLL": 4}   # 16 KiB a block; every thread keeps 4 loads of 16 bytes in flight
MODULE = "copy_vec4"                    # the build's label in the run


def grid(elements: int, defines: dict = DEFINES) -> int:
    """Blocks covering `elements` floats once, in chunks of 4 floats, UNROLL chunks a thread (at least one block)."""
    per_block = 4 * defines["BLOCK"] * defines["UNROLL"]
    return max(1, -(-int(elements) // per_block))


def make(built, x):
    """A Target copying x (any float32 CuPy array) into a fresh y of its shape with one launch of copy_vec4."""
    import cupy
    import numpy as np

    from launchlab.gpu.targets import ArrayTarget, module_define

    class CopyKernel(ArrayTarget):
        name = "copy4"

        def __init__(self):
            if x.dtype != cupy.float32 or not x.flags.c_contiguous:
                raise ValueError(f"the copy kernel reads a C-contiguous float32 array, not {x.dtype} {x.shape}")
            self.x, self.y = x, cupy.empty_like(x)
            defines = {key: module_define(built, key, value) for key, value in DEFINES.items()}
            kernel = built.kernel(KERNELS[0])
            self.launches = ((kernel, (grid(x.size, defines),), (defines["BLOCK"],),
                              (self.x, self.y, np.uint64(x.size))),)

        def invoke(self) -> None:
            for kernel, blocks, threads, args in self.launches:
                kernel(blocks, threads, args)

    return CopyKernel()

"""The chain's contenders as Targets on one StageBuffers (k stages of the tiled A -> B -> C step in plain-softmax
mode; stage s reads array s and writes array s + 1, so every contender moves the same bytes):

* `Graph3Chain`: the 3k kernels of chain_tiled.cu (tiled_softmax.cu's A and C, a plain B), one after another (a graph captures them as 3k nodes);
* `Pdl3Chain`: the chain's PDL kernels of megakernel_flow.cu, each launched with programmatic stream
  serialization (cuLaunchKernelEx, pdl.py), each waiting for its producer grid before its first read;
* `FusedChain`: chapter 3's fused row kernel in plain mode (fused_softmax_chain.cu), k launches;
* the flow kernel over all k stages in one launch is flow.FlowPersistent on the same buffers.

Imports CuPy; only GPU mode reaches this module.
"""
from __future__ import annotations

import numpy as np

from launchlab.chapters.megakernels import pdl
from launchlab.gpu.targets import BLOCK, Target, allow_dynamic_shared, enqueue_launches, module_define

TILED_CHAIN_KERNELS = ("tile_producer", "chain_row_combiner", "tile_consumer")
PDL_CHAIN_KERNELS = ("chain_pdl_producer", "chain_pdl_combiner", "chain_pdl_consumer")
FUSED_CHAIN_KERNEL = "fused_softmax_packed"


class _OnStages(Target):
    def __init__(self, buffers):
        self.buffers = buffers
        self.rows, self.tiles, self.stages = buffers.rows, buffers.tiles, buffers.stages

    def poison(self) -> None:
        self.buffers.poison()

    def load(self, values) -> None:
        self.buffers.load(values)

    def output(self) -> np.ndarray:
        return self.buffers.output()


class Graph3Chain(_OnStages):
    name = "chain_graph3"

    def __init__(self, built, buffers):
        super().__init__(buffers)
        producer, combiner, consumer = (built.kernel(name) for name in TILED_CHAIN_KERNELS)
        self.launches = tuple(launch for s in range(self.stages) for launch in (
            (producer, (self.tiles,), (BLOCK,), buffers.stage_args(s)),
            (combiner, (self.rows,), (BLOCK,), buffers.stage_args(s)),
            (consumer, (self.tiles,), (BLOCK,), buffers.stage_args(s))))

    @property
    def submissions(self) -> int:
        return 3 * self.stages

    def invoke(self) -> None:
        enqueue_launches(self.launches)


class Pdl3Chain(_OnStages):
    """Every launch programmatic (the first one towards whatever precedes it in the stream: its kernel waits
    for that grid before reading, so the order of whole invocations holds)."""

    name = "chain_pdl3"

    def __init__(self, built, buffers, programmatic: bool = True, driver: str | None = None):
        super().__init__(buffers)
        producer, combiner, consumer = (built.kernel(name) for name in PDL_CHAIN_KERNELS)
        self.prepared = tuple(pdl.ExtendedLaunch(kernel, grid, BLOCK, buffers.stage_args(s), programmatic=programmatic,
                                                 driver=driver)
                              for s in range(self.stages)
                              for kernel, grid in ((producer, self.tiles), (combiner, self.rows), (consumer, self.tiles)))

    @property
    def submissions(self) -> int:
        return 3 * self.stages

    def invoke(self) -> None:
        for launch in self.prepared:
            launch.launch()


class FusedChain(_OnStages):
    """fused_softmax_packed once per stage, with the fused row design's shared memory for the case's widest row
    under `shared_limit` (packed_shared_bytes)."""

    name = "chain_fused"

    def __init__(self, built, buffers, shared_limit: int):
        from launchlab.chapters.megakernels.megakernel_designs import packed_shared_bytes

        super().__init__(buffers)
        self.block = module_define(built, "BLOCK", BLOCK)
        self.kernel = built.kernel(FUSED_CHAIN_KERNEL)
        self.shared_bytes = packed_shared_bytes(buffers.row_offsets, self.block, module_define(built, "REG_CHUNKS", 4),
                                                shared_limit)
        if self.shared_bytes > 48 * 1024:
            allow_dynamic_shared(self.kernel, self.shared_bytes)
        if any(a.data.ptr % 16 for a in buffers.arrays):
            raise ValueError("every stage's array must start on a 16-byte boundary")
        offsets = buffers.table["row_offsets"]
        self.args = tuple((buffers.arrays[s], buffers.arrays[s + 1], offsets) for s in range(self.stages))

    @property
    def submissions(self) -> int:
        return self.stages

    def invoke(self) -> None:
        for args in self.args:
            self.kernel((self.rows,), (self.block,), args, shared_mem=self.shared_bytes)

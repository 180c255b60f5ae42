"""How each design's Target is made (the rows' `make`), and the run context it is made from: shared by the
chapter's run (run.py) and its compute-sanitizer child (sanitize.py). Importing this module imports no GPU
library; making a target does."""
from __future__ import annotations

import dataclasses

from launchlab.model import workloads

DESIGN_FAMILY = "megakernel_designs"  # kernels/megakernel_designs.cu: the PDL, two-kernel, dependency and cluster designs
FLOW_FAMILY = "megakernel_flow"       # kernels/megakernel_flow.cu: the flow kernel
TASK_RECORD_FAMILIES = (DESIGN_FAMILY, FLOW_FAMILY)  # traced builds that write one record per task of their own graph
CLUSTER_MAX = 8  # blocks per cluster (portable); a row of more tiles shares them out
# Chapter 3's build of the fused kernel for the 4096x16384 class (its shared-memory tier, BLOCK 512):
# rows of 4,096 and 8,192 elements stay in registers, a row of 36,864 in dynamic shared memory.
FUSED_ROW_CLASS = (4096, 16384)


@dataclasses.dataclass
class Context:
    """What the rows' `make` reads: the built modules by kernel family; the persistent designs' worker blocks
    per SM (0: all the occupancy API allows); the device's opt-in shared memory per block (None: read it);
    row lengths that replace a named case's (tests, the sanitizer's small cases). Every design of a case runs
    on the case's one TiledPath (`paths`), so all of them read and write the same buffers."""
    modules: dict
    workers_per_sm: int = 0
    shared_limit: int | None = None
    lengths: dict = dataclasses.field(default_factory=dict)
    paths: dict = dataclasses.field(default_factory=dict)
    stages: int = 1
    chains: dict = dataclasses.field(default_factory=dict)

    def path(self, case: str):
        if case not in self.paths:
            from launchlab.gpu.targets import TiledPath

            lengths = self.lengths.get(case)
            self.paths[case] = TiledPath(self.modules["tiled_softmax"],
                                         workloads.tiled_row_lengths(case) if lengths is None else lengths)
        return self.paths[case]

    def chain(self, case: str):
        """The chain buffers of a case at this context's stage count, shared by every chain contender."""
        key = (case, self.stages)
        if key not in self.chains:
            from launchlab.chapters.megakernels.flow import StageBuffers

            lengths = self.lengths.get(case)
            self.chains[key] = StageBuffers(workloads.tiled_row_lengths(case) if lengths is None else lengths,
                                            self.stages)
        return self.chains[key]

    def with_stages(self, stages: int) -> "Context":
        """The same context (the same paths and chain buffers) for a chain of `stages`."""
        return dataclasses.replace(self, stages=stages)

    def with_workers_per_sm(self, workers_per_sm: int) -> "Context":
        """The same context (the same paths) for a worker-sweep point."""
        return dataclasses.replace(self, workers_per_sm=workers_per_sm)

    def workers(self) -> int | None:
        """Worker blocks of a design that takes a total (0 per SM: None, all that can be co-resident)."""
        from launchlab.gpu import device

        return self.workers_per_sm * device.sm_count() if self.workers_per_sm else None


def fused_defines(shared_limit: int) -> dict:
    """Chapter 3's fused build for its 4096x16384 class (BLOCK, REG_CHUNKS, UNROLL), with MIN_BLOCKS 1: the
    128 rows of a case fill one wave at one block per SM, and the packed entry point spills at the class's
    64-register budget (two blocks of 512 threads per SM). FUSED_PACKED compiles the packed entry point."""
    from launchlab.chapters.fusion import fused_config

    return {**fused_config(*FUSED_ROW_CLASS, shared_limit)["defines"], "MIN_BLOCKS": 1, "FUSED_PACKED": None}


def build_label(family: str, traced: bool) -> str:
    """The build record's label of a kernel family (run.json's builds/<label>/)."""
    if family == "fused_softmax":
        return "fused_softmax_packed"
    return f"{family}_traced" if traced else family


def family_defines(family: str, traced: bool, shared_limit: int) -> dict | None:
    if family in ("fused_softmax", "fused_softmax_chain"):
        return fused_defines(shared_limit)
    return {"LAUNCHLAB_TRACE": None} if traced else None


# --------------------------------------------------------------------------- the rows' make
def make_tiled3(context: Context, case: str):
    return context.path(case)


def make_coop(context: Context, case: str):
    from launchlab.chapters.megakernels import persistent

    return persistent.CooperativePhases(context.modules["megakernel"], context.path(case), context.workers_per_sm)


def make_queue(context: Context, case: str):
    from launchlab.chapters.megakernels import persistent

    return persistent.TaskQueue(context.modules["megakernel"], context.path(case), context.workers_per_sm)


def _pdl3(programmatic: bool):
    def make(context: Context, case: str):
        from launchlab.chapters.megakernels import megakernel_designs as designs

        return designs.PdlThreeKernels(context.modules[DESIGN_FAMILY], context.path(case), programmatic)
    return make


def _tiled2(programmatic: bool):
    def make(context: Context, case: str):
        from launchlab.chapters.megakernels import megakernel_designs as designs

        return designs.TwoKernels(context.modules[DESIGN_FAMILY], context.path(case), programmatic)
    return make


make_pdl3, make_pdl3_off = _pdl3(True), _pdl3(False)
make_tiled2, make_tiled2_pdl = _tiled2(False), _tiled2(True)


def make_depend(context: Context, case: str):
    from launchlab.chapters.megakernels import megakernel_designs as designs

    return designs.DependencyPersistent(context.modules[DESIGN_FAMILY], context.path(case), context.workers())


def _flow(fold_b: bool):
    def make(context: Context, case: str):
        from launchlab.chapters.megakernels import flow

        return flow.FlowPersistent(context.modules[FLOW_FAMILY], context.path(case), context.workers_per_sm, fold_b)
    return make


make_flow, make_flow_last = _flow(True), _flow(False)
CHAIN_FOLD_B = False  # the chain's flow kernel runs B on a row's last A worker: faster than B in every C over 4 and 16 stages


def make_chain_graph3(context: Context, case: str):
    from launchlab.chapters.megakernels import chain

    return chain.Graph3Chain(context.modules["chain_tiled"], context.chain(case))


def make_chain_pdl3(context: Context, case: str):
    from launchlab.chapters.megakernels import chain

    return chain.Pdl3Chain(context.modules["chain_flow"], context.chain(case))


def make_chain_flow(context: Context, case: str):
    from launchlab.chapters.megakernels import flow

    return flow.FlowPersistent(context.modules["chain_flow"], context.chain(case), context.workers_per_sm, CHAIN_FOLD_B)


def make_chain_fused(context: Context, case: str):
    """The plain fused row kernel per stage, with the fused row design's shared memory for the case."""
    from launchlab.chapters.megakernels import chain
    from launchlab.gpu import device

    limit = context.shared_limit if context.shared_limit is not None else device.shared_limit()
    return chain.FusedChain(context.modules["fused_softmax_chain"], context.chain(case), limit)


def make_cluster(context: Context, case: str):
    from launchlab.chapters.megakernels import megakernel_designs as designs

    return designs.ClusterRows(context.modules[DESIGN_FAMILY], context.path(case), max_cluster=CLUSTER_MAX)


def make_varlen(context: Context, case: str):
    """The one-launch varlen design with the plan its partition rule picks for this GPU's co-resident blocks."""
    from launchlab.chapters.megakernels import varlen

    return varlen.VarlenRows(context.modules[varlen.FAMILY], context.path(case))


def make_fused_row(context: Context, case: str):
    """The packed fused kernel, with the shared memory that keeps the case's widest row on chip where it fits."""
    from launchlab.chapters.megakernels import megakernel_designs as designs
    from launchlab.gpu import device

    built, path = context.modules["fused_softmax"], context.path(case)
    limit = context.shared_limit if context.shared_limit is not None else device.shared_limit()
    probe = designs.FusedPackedRows(built, path)  # the module's BLOCK and REG_CHUNKS
    return designs.FusedPackedRows(built, path, designs.packed_shared_bytes(path.row_offsets, probe.block,
                                                                             probe.reg_chunks, limit))


# --------------------------------------------------------------------------- variants
def rows_of(target):
    """What holds a target's packed rows (lengths, row offsets): its tiled path or stage buffers, else itself."""
    return getattr(target, "path", None) or getattr(target, "buffers", None) or target


def make_variants(context: Context, variants, stream, skip=None) -> dict:
    """{VariantId: Target or GraphReplay}, each made by its row: a design's stream and graph variants of a case
    share one target (the graph replays what the stream launches), a sweep point has its own, made with its
    worker blocks per SM. A persistent design with more workers than the GPU holds at once is refused by its
    target; with `skip(vid, reason)` it is skipped instead."""
    from launchlab.chapters.megakernels import design_of, stages_of
    from launchlab.chapters.megakernels.persistent import NotCoResident
    from launchlab.gpu.capture import GraphReplay

    made, shared = {}, {}
    for variant in variants:
        vid = variant.id
        workers_per_sm = design_of(vid)[1]
        try:
            if variant.row.chain:
                target = variant.row.make(context.with_stages(stages_of(vid)), vid.case)
            elif workers_per_sm is None:
                if (vid.target, vid.case) not in shared:
                    shared[vid.target, vid.case] = variant.row.make(context, vid.case)
                target = shared[vid.target, vid.case]
            else:
                target = variant.row.make(context.with_workers_per_sm(workers_per_sm), vid.case)
        except NotCoResident as refused:
            if skip is None:
                raise
            skip(vid, f"{variant.row.label}: {refused}")
            continue
        made[vid] = target if vid.submission == "stream" else GraphReplay(target, stream)
    return made


def load_modules(designs, shared_limit: int, traced: bool = False, build=None) -> dict:
    """{family: BuiltModule} of the designs' kernels; `build(label, family, kernels, defines)` compiles one
    (default: gpu/build.load_module, no record kept)."""
    if build is None:
        from launchlab.gpu import build as compiler

        build = lambda label, family, kernels, defines: compiler.load_module(family, defines)  # noqa: E731
    modules = {}
    for family in dict.fromkeys(d.family for d in designs):
        kernels = tuple(dict.fromkeys(k for d in designs if d.family == family for k in d.kernels))
        modules[family] = build(build_label(family, traced), family, kernels, family_defines(family, traced, shared_limit))
    return modules


def case_variants(modules, case: str, workers_per_sm: int, sweep, stream, lengths=None, designs=None,
                  shared_limit: int | None = None) -> dict:
    """{VariantId: Target or GraphReplay} of one case outside a run (GPU tests, tools): each design from the
    stream and as a graph, each swept design at every `sweep` point; `designs` defaults to those whose kernels
    `modules` holds, `lengths` replaces the case's rows."""
    from launchlab.chapters.megakernels import DESIGN, variants_of

    designs = [d for d in DESIGN.values() if d.family in modules] if designs is None else designs
    context = Context(modules, workers_per_sm, shared_limit, lengths={} if lengths is None else {case: lengths})
    return make_variants(context, variants_of(designs, [case], sweep), stream)

"""The simulated device's stand-ins for the flow kernel and the chain's contenders (megakernel_simulation.py
patches them in): outputs from the float64 oracles, device time per stage from a cost table, the flow kernel's
traces from the dependency model on its owner lists."""
from types import SimpleNamespace

import numpy as np

from launchlab.chapters.megakernels import chain_model
from launchlab.chapters.megakernels import design_schedules as ds
from launchlab.chapters.megakernels.schedules import TaskGraph
from launchlab.model import workloads

SM_COUNT, FLOW_RESIDENT = 132, 8
FLOW_COSTS = {"flow": 8_000, "flow_last": 8_600}  # ns per invocation, stream and graph alike
STAGE_COSTS = {"chain_graph3": 12_000, "chain_pdl3": 11_000, "chain_flow": 4_000, "chain_fused": 4_500}  # ns per stage
DEVICE = {}


class FakeStageBuffers:
    """StageBuffers in NumPy: an invocation marks every stage written; outputs come from the chain oracle."""

    def __init__(self, lengths, stages=1, tile_table=None, arrays=None):
        self.lengths, self.stages = np.asarray(lengths), int(stages)
        table = workloads.tile_table(self.lengths)
        self.row_offsets = table["row_offsets"]
        self.rows, self.tiles = len(self.lengths), len(table["tile_row"])
        self.x, self.written = np.zeros(int(self.row_offsets[-1]), np.float32), False

    def mark_written(self):
        self.written = True

    def poison(self):
        self.written = False

    def load(self, values):
        self.x = np.asarray(values, np.float32).copy()

    def output(self):
        if not self.written:
            return np.full(self.x.size * self.stages, np.nan, np.float32)
        return chain_model.every_stage(self.x, self.row_offsets, self.stages).astype(np.float32)


class FakeFlow:
    """FlowPersistent on a tiled path (one stage, the main designs) or on chain buffers."""

    def __init__(self, built, buffers, workers_per_sm=0, fold_b=True, sleep_ns=0, relaxed=False, wait_limit_ns=0):
        self.chain = isinstance(buffers, FakeStageBuffers)
        self.buffers = buffers if self.chain else None
        self.path = None if self.chain else buffers
        self.device = DEVICE["device"]
        self.fold_b, self.programmatic, self.prepared = bool(fold_b), False, ()
        self.name = "chain_flow" if self.chain else ("flow" if fold_b else "flow_last")
        self.design = "flow" if fold_b else "dependency"
        self.rows, self.tiles = buffers.rows, buffers.tiles
        self.graph = TaskGraph.from_lengths(buffers.lengths)
        self.resident_per_sm, self.capacity = FLOW_RESIDENT, FLOW_RESIDENT * SM_COUNT
        self.workers = min((int(workers_per_sm) or FLOW_RESIDENT) * SM_COUNT, self.tiles)
        self.workers_per_sm = int(workers_per_sm) or FLOW_RESIDENT
        self.lists = ds.owner_task_lists(self.graph, self.workers, 1)
        self.list_check = ds.check_lists(self.graph, self.lists)
        self.shared_bytes, self.error = 0, SimpleNamespace(get=lambda: np.zeros(4, np.int32))
        self.launches = (("flow_persistent", None, None, ()),)
        stages = buffers.stages if self.chain else 1
        self.graph_cost_ns = STAGE_COSTS["chain_flow"] * stages if self.chain else FLOW_COSTS[self.name]

    @property
    def submissions(self):
        return 1

    def holder(self):
        return self.buffers if self.chain else self.path

    def invoke(self):
        self.device.submit(self.holder().mark_written, self.graph_cost_ns, "flow_persistent")

    def compute(self, x, invoke=None):
        self.load(x)
        self.poison()
        (invoke or self.invoke)()
        return self.output()

    def poison(self):
        self.holder().poison()

    def load(self, values):
        self.holder().load(values)

    def output(self):
        return self.holder().output()

    def task_graph(self):
        return self.graph

    def counters_consistent(self):
        return True

    def reset(self):
        pass

    def check_error(self):
        pass


class FakeChain:
    kernels_per_stage, name, programmatic = 3, "", False

    def __init__(self, built, buffers, *args, **kwargs):
        from megakernel_simulation import FakeLaunch

        self.buffers, self.device = buffers, DEVICE["device"]
        count = self.kernels_per_stage * buffers.stages
        self.launches = tuple((f"k{i}", None, None, ()) for i in range(count))
        self.prepared = tuple(FakeLaunch(self.programmatic) for _ in range(count)) if self.programmatic else ()
        self.graph_cost_ns = STAGE_COSTS[self.name] * buffers.stages

    @property
    def submissions(self):
        return len(self.launches)

    def invoke(self):
        for kernel, *_ in self.launches:
            self.device.submit(self.buffers.mark_written, self.graph_cost_ns // len(self.launches), kernel)

    def compute(self, x, invoke=None):
        self.load(x)
        self.poison()
        (invoke or self.invoke)()
        return self.output()

    def poison(self):
        self.buffers.poison()

    def load(self, values):
        self.buffers.load(values)

    def output(self):
        return self.buffers.output()


class FakeGraph3Chain(FakeChain):
    name = "chain_graph3"


class FakePdl3Chain(FakeChain):
    name, programmatic = "chain_pdl3", True


class FakeFusedChain(FakeChain):
    name, kernels_per_stage = "chain_fused", 1


def patch_flow_and_chain(patch, device) -> None:
    """Point flow.py's and chain.py's targets at the stand-ins; traces of the flow kernel from its model."""
    from launchlab.chapters.megakernels import chain, flow
    from launchlab.chapters.megakernels import megakernel_designs as designs

    DEVICE["device"] = device
    patch.setattr(flow, "StageBuffers", FakeStageBuffers)
    patch.setattr(flow, "FlowPersistent", FakeFlow)
    patch.setattr(chain, "Graph3Chain", FakeGraph3Chain)
    patch.setattr(chain, "Pdl3Chain", FakePdl3Chain)
    patch.setattr(chain, "FusedChain", FakeFusedChain)
    others = designs.trace

    def trace(target, traced_module, invoke=None, records=None):
        if not isinstance(target, FakeFlow):
            return others(target, traced_module, invoke, records)
        (invoke or target.invoke)()
        graph = target.task_graph()
        durations = np.random.default_rng(graph.total).uniform(500, 1500, graph.total)
        if target.fold_b:
            durations[graph.tiles:graph.tiles + graph.rows] = 0.0
        model = ds.simulate_dependency(graph, durations, target.lists, handoff_ns=300, blocks_per_sm=FLOW_RESIDENT)
        if not target.fold_b:
            return model
        return _b_in_first_c(model, graph)

    patch.setattr(designs, "trace", trace)


def _b_in_first_c(model, graph):
    """The flow kernel's records with B inside the C of its row's first tile (the kernel's trace layout)."""
    order = np.argsort(model.task)
    columns = {name: getattr(model, name)[order].copy() for name in ("task", "taken_ns", "start_ns", "end_ns",
                                                                     "worker", "sm")}
    tiles, rows = graph.tiles, graph.rows
    first_c = tiles + rows + graph.row_first_tile[:-1]
    for name in ("taken_ns", "start_ns", "worker", "sm"):
        columns[name][tiles:tiles + rows] = columns[name][first_c]
    columns["end_ns"][tiles:tiles + rows] = columns["start_ns"][first_c]
    return type(model)(**columns)

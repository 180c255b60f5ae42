"""A simulated device for chapter 4's tests: the chapter's run.py drives the real Session against NumPy
stand-ins for the GPU targets, graphs and probes (outputs from the float64 oracle, device time from a cost
table, traces from the schedule models). `simulated_gpu` points the GPU modules' names at the stand-ins;
`execute_simulated` makes and seals a run as the runner would."""
import dataclasses
import hashlib
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from launchlab.chapters import megakernels as declared
from launchlab.chapters.megakernels import Parameters, persistent, schedules
from launchlab.chapters.megakernels import design_schedules as ds
from launchlab.chapters.megakernels.schedules import TaskGraph, Trace
from launchlab.measure.protocol import MeasurementProtocol
from launchlab.model import oracles, workloads
from launchlab.store import evidence
from launchlab import analysis
from megakernel_simulation_flow import patch_flow_and_chain  # noqa: E402 - the flow and chain stand-ins

SM_COUNT, RESIDENT = 132, 8
# Device time of one invocation (ns): (design, blocks per SM or None, submission) -> cost.
COSTS = {("tiled3", None, "stream"): 25_500, ("tiled3", None, "graph"): 12_400,
         ("coop", None, "stream"): 15_300, ("coop", None, "graph"): 15_600,
         ("queue", None, "stream"): 14_400, ("queue", None, "graph"): 14_100,
         **{("coop", k, "graph"): c for k, c in ((1, 40_000), (2, 24_000), (4, 18_000), (8, 15_600))},
         **{("queue", k, "graph"): c for k, c in ((1, 30_000), (2, 20_000), (4, 16_000), (8, 14_100))},
         ("pdl3", None, "stream"): 24_000, ("pdl3", None, "graph"): 11_400,
         ("pdl3_off", None, "stream"): 25_500, ("pdl3_off", None, "graph"): 12_400,
         ("tiled2", None, "stream"): 18_000, ("tiled2", None, "graph"): 10_900,
         ("tiled2_pdl", None, "stream"): 17_500, ("tiled2_pdl", None, "graph"): 10_500,
         ("depend", None, "stream"): 9_800, ("depend", None, "graph"): 9_600,
         ("cluster", None, "stream"): 8_800, ("cluster", None, "graph"): 8_600,
         ("fused_row", None, "stream"): 7_300, ("fused_row", None, "graph"): 7_200,
         ("varlen", None, "stream"): 6_300, ("varlen", None, "graph"): 6_000}
COLD_EXTRA_NS = 3_000  # a cold invocation's extra device time in the simulation (the same for every design)
SCHEDULE_GAP_NS = {"three_kernel": 1500, "cooperative": 1000, "queue": 0}


class FakeDevice:
    """Device time advances by each submitted operation's cost; a stream capture records operations instead."""

    def __init__(self):
        self.device_ns, self.host, self.captured, self.cold_extra_ns = 0, 0, None, 0
        self.stream = FakeStream(self)

    def submit(self, run, cost_ns: int, node: str) -> None:
        if self.captured is not None:
            self.captured.append((run, cost_ns, node))
        else:
            run()
            self.advance(cost_ns)

    def advance(self, cost_ns: int) -> None:
        """Device time of one operation; the first after an L2 flush also pays the cold extra."""
        self.device_ns += cost_ns + self.cold_extra_ns
        self.cold_extra_ns = 0

    # the protocol's TimingBackend
    def host_ns(self) -> int:
        self.host += 1000
        return self.host

    def synchronize(self) -> None:
        pass

    def record_event(self):
        return self.device_ns

    def wait_event(self, event) -> None:
        pass

    def elapsed_ms(self, start, end) -> float:
        return (end - start) / 1e6


class FakeStream:
    def __init__(self, device):
        self.device = device

    def synchronize(self):
        pass

    def begin_capture(self):
        self.device.captured = []

    def end_capture(self):
        operations, self.device.captured = self.device.captured, None
        return FakeGraph(self.device, operations)


class FakeGraph:
    """A captured graph: replays its operations; its cost is set by the replaying variant's design."""

    def __init__(self, device, operations):
        self.device, self.operations, self.cost_ns = device, operations, None

    def upload(self, stream):
        pass

    def launch(self, stream):
        for run, _, _ in self.operations:
            run()
        self.device.advance(self.cost_ns if self.cost_ns is not None else sum(c for _, c, _ in self.operations))

    def debug_dot_str(self) -> str:
        nodes = [f'"graph_1_node_{i}"[style="solid" shape="{"invtrapezium" if node == "MEMSET" else "octagon"}" '
                 f'label="{i}\n{node}\n"];' for i, (_, _, node) in enumerate(self.operations)]
        edges = [f'"graph_1_node_{i}" -> "graph_1_node_{i + 1}";' for i in range(len(self.operations) - 1)]
        return "digraph dot {\nsubgraph cluster_1 {\n" + "\n".join(nodes + edges) + "\n}\n}\n"


class FakeTarget:
    name = "target"

    def compute(self, x, invoke=None):
        self.load(x)
        self.poison()
        (invoke or self.invoke)()
        return self.output()


class FakeTiledPath(FakeTarget):
    """TiledPath's buffers in NumPy; an invocation marks y as written, `output` reads the oracle's result."""

    name = "tiled3"
    KERNELS = workloads.STAGE_KERNELS

    def __init__(self, built, lengths):
        self.device = built.device
        self.lengths = np.asarray(lengths)
        table = workloads.tile_table(self.lengths)
        self.row_offsets = table["row_offsets"]
        self.rows, self.tiles = len(self.lengths), len(table["tile_row"])
        self.x, self.written = np.zeros(int(self.row_offsets[-1]), np.float32), False

    @property
    def submissions(self):
        return 3

    def mark_written(self):
        self.written = True

    def invoke(self):
        for kernel in self.KERNELS:
            self.device.submit(self.mark_written, COSTS["tiled3", None, "stream"] // 3, kernel)

    def poison(self):
        self.written = False

    def load(self, values):
        self.x = np.asarray(values, np.float32).copy()

    def output(self):
        if not self.written:
            return np.full(self.x.shape, np.nan, np.float32)
        key = hashlib.sha256(self.x.tobytes()).hexdigest()
        if key not in RESULTS:
            RESULTS[key] = oracles.rms_softmax_packed(self.x, self.row_offsets).astype(np.float32)
        return RESULTS[key].copy()


RESULTS: dict = {}  # the oracle's result per input, as the simulated kernels' output


class FakePersistent(FakeTarget):
    kernel_name, schedule, memset = "", "", False

    def __init__(self, built, path, workers_per_sm=0):
        self.path, self.device = path, path.device
        self.resident_per_sm = RESIDENT
        self.workers_per_sm = workers_per_sm or RESIDENT
        self.capacity, self.workers = RESIDENT * SM_COUNT, self.workers_per_sm * SM_COUNT
        if self.workers > self.capacity:
            raise persistent.NotCoResident(f"{self.workers} worker blocks exceed the {self.capacity} that can be co-resident")

    @property
    def submissions(self):
        return 2 if self.memset else 1

    def invoke(self):
        if self.memset:
            self.device.submit(lambda: None, 0, "MEMSET")
        self.device.submit(self.path.mark_written, COSTS[self.name, None, "stream"], self.kernel_name)

    def poison(self):
        self.path.poison()

    def load(self, values):
        self.path.load(values)

    def output(self):
        return self.path.output()

    def describe(self):
        return {"workers": self.workers, "blocks_per_sm": self.workers_per_sm,
                "resident_blocks_per_sm": self.resident_per_sm, "co_resident_capacity": self.capacity}


class FakeCooperative(FakePersistent):
    name, kernel_name, schedule = "coop", "coop_phases", "cooperative"


class FakeQueue(FakePersistent):
    name, kernel_name, schedule, memset = "queue", "queue_persistent", "queue", True

    def clear_error(self):
        pass

    def error_message(self):
        return None

    def expected_words(self):
        graph = TaskGraph.from_lengths(self.path.lengths)
        return np.concatenate([np.zeros(4, np.int64), graph.expected_counters(self.workers)])

    def words_after(self):
        return self.expected_words()


class FakeGraphReplay:
    """GraphReplay's interface: the target's invocation captured once, replayed at the cost COSTS gives the
    replayed design and worker count."""

    def __init__(self, target, stream):
        self.target, self.stream, self.name = target, stream, target.name
        stream.begin_capture()
        target.invoke()
        self.graph = stream.end_capture()
        self.graph.cost_ns = getattr(target, "graph_cost_ns", None) or COSTS.get(
            (target.name, getattr(target, "workers_per_sm", None), "graph"), COSTS[target.name, None, "graph"])
        self.setup = {"capture_us": 10.0, "end_capture_us": 50.0, "upload_us": 3.0, "first_replay_us": 40.0,
                      "instantiated_in_end_capture": True}
        self.dot = self.graph.debug_dot_str()

    @property
    def submissions(self):
        return 1

    def invoke(self):
        self.graph.launch(self.stream)

    def compute(self, x, invoke=None):
        return self.target.compute(x, invoke or self.invoke)


def fake_trace(variant, task_records, stage_records) -> dict:
    """A trace of the variant's schedule from the model, with jittered nominal durations."""
    from launchlab.chapters.megakernels import persistent

    target = persistent.underlying(variant)
    path = getattr(target, "path", target)
    graph = TaskGraph.from_lengths(path.lengths)
    schedule = getattr(target, "schedule", "three_kernel")
    workers = getattr(target, "workers", RESIDENT * SM_COUNT)
    seed = int(hashlib.sha256(f"{schedule}{workers}{path.lengths.sum()}{path.lengths[0]}".encode()).hexdigest()[:8], 16)
    generator = np.random.default_rng(seed)
    durations = schedules.nominal_durations(graph, path.lengths) * generator.uniform(0.8, 1.2, graph.total)
    arrivals = None if schedule == "three_kernel" else generator.uniform(0, 1000, workers)
    per_sm = max(1, workers // SM_COUNT)
    return schedules.simulate(schedule, graph, durations, workers, SCHEDULE_GAP_NS[schedule], per_sm, arrivals).arrays()


class FakeLaunch:
    """pdl.ExtendedLaunch's facts that run.py reads."""

    def __init__(self, programmatic: bool, shared_bytes: int = 0):
        self.programmatic, self.shared_bytes, self.driver = programmatic, shared_bytes, "ctypes"


class FakeDesign(FakeTarget):
    """A design of megakernel_designs.py on a FakeTiledPath: its kernels as captured nodes, its cost from COSTS."""

    kernel_names: tuple = ()
    design = ""

    def __init__(self, built, path, programmatic: bool = False):
        self.path, self.device = path, path.device
        self.row_offsets, self.rows, self.tiles = path.row_offsets, path.rows, path.tiles
        self.programmatic = programmatic
        self.launches = tuple((kernel, None, None, ()) for kernel in self.kernel_names)
        self.prepared = tuple(FakeLaunch(programmatic) for _ in self.kernel_names)

    @property
    def submissions(self):
        return len(self.launches)

    def invoke(self):
        cost = COSTS[self.name, None, "stream"] // len(self.launches)
        for kernel, *_ in self.launches:
            self.device.submit(self.path.mark_written, cost, kernel)

    def poison(self):
        self.path.poison()

    def load(self, values):
        self.path.load(values)

    def output(self):
        return self.path.output()

    def task_graph(self):
        return TaskGraph.from_lengths(self.path.lengths)


class FakePdl3(FakeDesign):
    kernel_names, design = declared.PDL3_KERNELS, "pdl3"

    def __init__(self, built, path, programmatic=True, driver=None):
        super().__init__(built, path, programmatic)
        self.name = "pdl3" if programmatic else "pdl3_off"


class FakeTwo(FakeDesign):
    kernel_names, design = declared.TILED2_KERNELS, "pdl2"

    def __init__(self, built, path, programmatic=False, driver=None):
        super().__init__(built, path, programmatic)
        self.name = "tiled2_pdl" if programmatic else "tiled2"


class FakeDependency(FakeDesign):
    kernel_names, design, name = ("dependency_persistent",), "dependency", "depend"

    def __init__(self, built, path, workers=None, lists=None, wait_limit_ns=0):
        super().__init__(built, path)
        self.prepared = ()
        self.capacity = RESIDENT * SM_COUNT
        self.workers = min(int(workers or self.capacity), self.tiles)
        self.lists = ds.owner_task_lists(self.task_graph(), self.workers, 1)
        self.list_check = ds.check_lists(self.task_graph(), self.lists)
        self.shared_bytes, self.error = 4096, SimpleNamespace(get=lambda: np.zeros(4, np.int32))  # no error

    def counters_consistent(self):
        return True

    def reset(self):
        pass


class FakeCluster(FakeDesign):
    kernel_names, design, name = ("cluster_rows",), "cluster", "cluster"

    def __init__(self, built, path, max_cluster=8, programmatic=True, driver=None):
        super().__init__(built, path)
        self.max_cluster = max_cluster
        self.plan = ds.cluster_plan(path.lengths, max_cluster)
        self.launches = tuple(("cluster_rows", None, None, ()) for _ in self.plan.classes)
        self.prepared = tuple(FakeLaunch(index > 0, 4 * cache) for index, cache in enumerate(self.plan.cache_elements))

    def task_graph(self):
        return self.plan.graph()


class FakeFused(FakeDesign):
    kernel_names, design, name = ("fused_rms_softmax_packed",), "fused_row", "fused_row"

    def __init__(self, built, path, shared_bytes=0):
        super().__init__(built, path)
        self.prepared, self.block, self.reg_chunks, self.shared_bytes = (), 512, 4, int(shared_bytes)

    def tiers(self):
        chunks = -(-np.asarray(self.path.lengths) // 4)
        registers = chunks <= self.reg_chunks * self.block
        return {"registers": int(registers.sum()), "shared": int((~registers).sum()), "streamed": 0}


class FakeVarlen(FakeDesign):
    """varlen.VarlenRows on a FakeTiledPath: the partition rule's plan for the simulated SMs, no error words."""
    kernel_names, design, name = ("varlen_rows_256",), "varlen", "varlen"

    def __init__(self, built, path, plan=None, cooperative=False):
        from launchlab.model import varlen_partition as partition

        super().__init__(built, path)
        self.prepared, self.cooperative = (), bool(cooperative)
        capacity = {threads: RESIDENT * SM_COUNT for threads in partition.BLOCK_SIZES}
        self.layout = plan or partition.choose(np.asarray(path.lengths, dtype=np.int64), capacity, SM_COUNT)
        self.capacity = capacity[self.layout.threads]

    def words(self):
        return np.array([0, 0, 0, 0, 1], dtype=np.int64), np.array([0, 0, 0, 0, 1], dtype=np.int64)

    def reset(self):
        pass

    def describe(self):
        return {**self.layout.describe(), "capacity": int(self.capacity), "cooperative": self.cooperative}


def fake_design_trace(target, traced_module, invoke=None, records=None) -> Trace:
    """A design's trace from its model in design_schedules.py, with jittered durations."""
    (invoke or target.invoke)()
    graph = target.task_graph()
    generator = np.random.default_rng(graph.total + len(target.name))
    durations = generator.uniform(500, 1500, graph.total)
    slots = RESIDENT * SM_COUNT
    if target.design in ("pdl3", "pdl2"):
        return ds.simulate_pdl(graph, durations, slots, kernels=3 if target.design == "pdl3" else 2,
                               programmatic=target.programmatic, launch_ns=1000, wait_ns=300, prefetch_ns=200)
    if target.design == "dependency":
        return ds.simulate_dependency(graph, durations, target.lists, handoff_ns=300)
    return ds.simulate_cluster(target.plan, durations, slots, barrier_ns=200)


def fake_edge_record(replay) -> dict:
    target = replay.target
    programmatic = sum(1 for launch in getattr(target, "prepared", ())[1:] if launch.programmatic)
    nodes = len(getattr(target, "launches", ())) or 1
    return {"nodes": [{"type": "kernel"}] * nodes, "edges": [],
            "edge_types": {"default": nodes - 1 - programmatic, "programmatic": programmatic}, "dot_edges": []}


class FakeColdL2:
    def __init__(self, built, l2_bytes, sm_count, wait_ns=0):
        self.device = built.device

    def flush(self):
        self.device.cold_extra_ns = COLD_EXTRA_NS  # paid by the next operation, the cold invocation

    def describe(self):
        return {"flush": "simulated"}


def fake_sanitize(child, tools=("memcheck", "racecheck"), timeout_s=300, environment=None):
    results = [{"tool": tool, "child": child, "command": ["compute-sanitizer", "--tool", tool], "exit_code": 0,
                "errors": 0, "inner": {"passed": True, "checks": {"x": True}}, "tail": [], "error": None}
               for tool in tools]
    return {"sanitizer": "compute-sanitizer", "error": None, "tools": results, "clean": True}


@dataclasses.dataclass
class FakeBuilt:
    family: str
    device: FakeDevice

    def kernel(self, name: str) -> str:
        return name


@pytest.fixture(scope="module")
def simulated_gpu():
    """The GPU modules' names that run.py reaches, pointed at the NumPy stand-ins for this module's tests."""
    from launchlab.chapters.megakernels import megakernel_designs as designs
    from launchlab.chapters.megakernels import persistent, varlen
    from launchlab.gpu import build, capture, instruments, probes, sanitizer, targets
    from launchlab.gpu import device as gpu_device

    device = FakeDevice()
    patch = pytest.MonkeyPatch()
    patch.setattr(designs, "PdlThreeKernels", FakePdl3)
    patch.setattr(designs, "TwoKernels", FakeTwo)
    patch.setattr(designs, "DependencyPersistent", FakeDependency)
    patch.setattr(designs, "ClusterRows", FakeCluster)
    patch.setattr(designs, "FusedPackedRows", FakeFused)
    patch.setattr(varlen, "VarlenRows", FakeVarlen)
    patch.setattr(designs, "trace", fake_design_trace)
    patch.setattr(designs, "graph_edge_record", fake_edge_record)
    patch.setattr(instruments, "ColdL2", FakeColdL2)
    patch.setattr(sanitizer, "sanitize", fake_sanitize)
    patch.setattr(targets, "TiledPath", FakeTiledPath)
    patch.setattr(capture, "GraphReplay", FakeGraphReplay)
    patch.setattr(persistent, "PersistentTarget", FakePersistent)
    patch.setattr(persistent, "CooperativePhases", FakeCooperative)
    patch.setattr(persistent, "TaskQueue", FakeQueue)
    patch.setattr(gpu_device, "sm_count", lambda: SM_COUNT)
    patch.setattr(persistent, "resident_blocks_per_sm", lambda kernel, *a: RESIDENT)
    patch.setattr(persistent, "trace", fake_trace)
    patch.setattr(probes, "attach_buffer", lambda *a: None)
    patch.setattr(probes, "attach_task_buffer", lambda *a: None)
    patch.setattr(build, "load_module", lambda family, defines=None, **o: FakeBuilt(family, device))
    patch.setattr(build, "save_build", fake_save_build)
    patch_flow_and_chain(patch, device)
    yield device
    patch.undo()


def fake_save_build(writer, label, built, kernel_names) -> dict:
    record = {"family": built.family, "resources_loaded": {
        k: {"registers": 32, "shared_bytes": 140, "local_bytes": 0} for k in kernel_names}}
    writer.write_json(f"builds/{label}/record.json", record)
    return record


IDENTITY = {"name": "Simulated GPU", "compute_capability": "9.0", "sm_count": SM_COUNT, "l2_bytes": 60 * 2**20,
            "shared_bytes_per_block_optin": 227 * 1024}


class FakeState:
    """The device side the runner reads: identity, environment and state (clocks, temperature, power)."""

    @staticmethod
    def state():
        return {"smi": {"clocks.sm": "1980", "clocks.mem": "3201", "temperature.gpu": "40", "power.draw": "120"}}

    @staticmethod
    def identity():
        return dict(IDENTITY)

    @staticmethod
    def environment():
        return {"libraries": {}, "driver": "none", "cuda_runtime_version": "none"}


SMALL_PROTOCOL = MeasurementProtocol(warmups=1, rounds=5, batch=4, large_batch=2)


def execute_simulated(root: Path, device: FakeDevice, parameters: Parameters = Parameters()) -> Path:
    """runner.execute's steps with the real Session, the simulated device as its timing backend and FakeState
    as its GPU identity; the run sealed as a committed run would be."""
    from launchlab.chapters.megakernels import run
    from launchlab.runner import Session

    session = Session(declared.CHAPTER, evidence.RunWriter("20990101T000000Z-ch04", root=root), parameters,
                      SMALL_PROTOCOL, backend=device, device=FakeState())
    session.record.git_commit = "test"
    run.run(session)
    session.finish()
    summaries, headline = analysis.recompute(session.writer.path)
    session.writer.write_json("summaries.json", summaries)
    session.writer.write_json("headline.json", headline)
    evidence.seal(session.writer.path)
    return session.writer.path

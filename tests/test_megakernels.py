"""Chapter 4 on the CPU: trace checks on saved traces (and broken ones they must reject), the raw-record
conversions, the declaration, and a whole run on a simulated device: the chapter's run.py drives the real
Session against NumPy stand-ins for the GPU targets, graphs and probes (outputs from the float64 oracle,
device time from a cost table, traces from the schedule models), then the summaries, headline arithmetic,
page tables, figures and every glued value of the notebook are computed from that run's files."""
import dataclasses
import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from launchlab.chapters import megakernels as declared
from launchlab.chapters.declaration import Counts
from launchlab.chapters.megakernels import DESIGN, Parameters, design_of, schedules, summary, sweep_variant
from launchlab.chapters.megakernels import design_schedules as ds
from launchlab.chapters.megakernels.schedules import TaskGraph, Trace
from launchlab.measure.protocol import MeasurementProtocol
from launchlab.measure.variant import VariantId
from launchlab.model import oracles, timelines, workloads
from launchlab.store import evidence
from launchlab.store import runs as analysis
from launchlab.store.record import RecordError, RunRecord

REPO_ROOT = Path(__file__).resolve().parents[1]
WORKERS = 1056
SM_COUNT, RESIDENT = 132, 8


def simulated(case: str, schedule: str, seed: int = 0, workers: int = WORKERS) -> tuple[Trace, TaskGraph]:
    lengths = workloads.tiled_row_lengths(case)
    graph = TaskGraph.from_lengths(lengths)
    generator = np.random.default_rng(seed)
    durations = schedules.nominal_durations(graph, lengths) * generator.uniform(0.7, 1.3, graph.total)
    arrivals = None if schedule == "three_kernel" else generator.uniform(0, 2000, workers)
    return schedules.simulate(schedule, graph, durations, workers, 0 if schedule == "queue" else 1500,
                              blocks_per_sm=RESIDENT, arrivals=arrivals), graph


# --------------------------------------------------------------------------- saved traces and broken ones
@pytest.mark.parametrize("schedule", schedules.SCHEDULES)
def test_saved_traces_load_and_pass(tmp_path, schedule):
    trace, graph = simulated("ragged", schedule)
    schedules.save_trace(tmp_path / "t.npz", trace, graph, workers=np.int64(WORKERS))
    loaded, loaded_graph = schedules.load_trace(tmp_path / "t.npz")
    assert np.array_equal(loaded_graph.tile_row, graph.tile_row)
    assert all(np.array_equal(a, b) for a, b in zip(loaded.arrays().values(), trace.arrays().values()))
    assert schedules.check_trace(loaded, loaded_graph, schedule, WORKERS)["passed"]


def broken(trace: Trace, graph: TaskGraph, how: str) -> Trace:
    arrays = {k: v.copy() for k, v in trace.arrays().items()}
    slot_of = {int(t): i for i, t in enumerate(arrays["task"])}
    tiles, rows = graph.tiles, graph.rows
    if how == "b_before_its_a":  # B of row 0 starts just before its last A tile ends
        last_a_end = max(arrays["end_ns"][slot_of[t]] for t in range(int(graph.row_first_tile[1])))
        b = slot_of[tiles]
        arrays["start_ns"][b] = arrays["taken_ns"][b] = last_a_end - 1
    elif how == "c_before_its_b":
        c, b = slot_of[tiles + rows], slot_of[tiles]
        arrays["start_ns"][c] = arrays["taken_ns"][c] = arrays["end_ns"][b] - 1
    elif how == "task_twice":
        arrays["task"][slot_of[5]] = 6
    elif how == "task_missing":
        arrays = {k: np.delete(v, slot_of[7]) for k, v in arrays.items()}
    elif how == "ends_before_start":
        arrays["end_ns"][0] = arrays["start_ns"][0] - 1
    elif how == "worker_outside_grid":
        arrays["worker"][3] = WORKERS
    elif how == "wrong_stride":
        arrays["worker"][slot_of[1]] = 0
    return Trace(**arrays)


@pytest.mark.parametrize("schedule,how,failing", [
    ("queue", "b_before_its_a", "b_after_its_row_a"),
    ("queue", "c_before_its_b", "c_after_its_row_b"),
    ("queue", "task_twice", "every_task_once"),
    ("queue", "task_missing", "every_task_once"),
    ("queue", "ends_before_start", "records_in_time_order"),
    ("queue", "worker_outside_grid", "workers_within_grid"),
    ("cooperative", "wrong_stride", "grid_stride_assignment"),
    ("three_kernel", "wrong_stride", "block_per_task"),
])
def test_a_broken_trace_is_rejected_by_the_named_check(schedule, how, failing):
    trace, graph = simulated("ragged", schedule, seed=4)
    assert schedules.check_trace(trace, graph, schedule, WORKERS)["passed"]
    result = schedules.check_trace(broken(trace, graph, how), graph, schedule, WORKERS)
    assert not result["passed"] and not result["checks"][failing], result


def test_b_before_last_a_counts():
    graph = TaskGraph.from_lengths([2048, 1024])  # A tasks 0-2, B tasks 3-4, C 5-7
    start = np.array([0, 0, 0, 5, 12, 20, 20, 20])
    end = np.array([5, 10, 4, 8, 14, 22, 22, 22])
    trace = Trace(np.arange(8), start.copy(), start, end, np.zeros(8, np.int64), np.zeros(8, np.int64))
    assert schedules.b_before_last_a(trace, graph) == 1   # B of row 0 starts at 5 < 10
    assert schedules.c_before_last_b(trace, graph) == 0
    assert schedules.phase_gaps_ns(trace, graph) == [-5, 6]
    b_handoff, c_handoff = schedules.handoffs_ns(trace, graph)
    assert b_handoff.tolist() == [5 - 10, 12 - 4]           # row 0's A tiles end at 5 and 10; row 1's at 4
    assert c_handoff.tolist() == [20 - 8, 20 - 8, 20 - 14]  # tiles 0, 1 in row 0 (B ends 8), tile 2 in row 1
    assert not schedules.check_trace(trace, graph, "queue")["checks"]["b_after_its_row_a"]  # row 0's A ends at 10


# --------------------------------------------------------------------------- raw records
def test_megakernel_records_become_a_trace():
    table = np.zeros((3, timelines.TASK_WORDS), np.uint64)
    base = 1_700_000_000_000
    table[:, 0] = [base + 10, base, base + 5]          # taken
    table[:, 1] = [base + 12, base + 1, base + 6]      # start
    table[:, 2] = [base + 20, base + 3, base + 9]      # end
    table[:, 3] = [4, 0, 1]                             # worker
    table[:, 4] = [2, 0, 0]                             # SM
    table[:, 5] = [2, 0, 1]                             # task
    arrays = timelines.task_trace_arrays(table.ravel())
    assert arrays["taken_ns"].tolist() == [10, 0, 5] and arrays["end_ns"].tolist() == [20, 3, 9]
    assert arrays["task"].tolist() == [2, 0, 1] and arrays["worker"].tolist() == [4, 0, 1]
    table[1, 2] = 0
    with pytest.raises(ValueError, match="1 task records were never written"):
        timelines.task_trace_arrays(table)


def test_three_kernel_block_records_are_renumbered_as_tasks():
    tiles, rows, stride = 3, 2, 4
    table = np.zeros((3, stride, timelines.WORDS_PER_BLOCK), np.uint64)
    for kernel in range(3):
        for block in range(tiles if kernel != 1 else rows):
            start = 1000 * (kernel + 1) + 10 * block
            table[kernel, block] = [start, start + 5, 7 + block]
    arrays = timelines.stage_blocks_as_tasks(table, tiles, rows)
    assert arrays["task"].tolist() == list(range(8))
    assert arrays["worker"].tolist() == [0, 1, 2, 0, 1, 0, 1, 2]
    assert arrays["start_ns"].tolist() == [0, 10, 20, 1000, 1010, 2000, 2010, 2020]
    assert arrays["sm"].tolist() == [7, 8, 9, 7, 8, 7, 8, 9]
    trace = Trace.from_arrays(arrays)
    assert schedules.check_trace(trace, TaskGraph.from_lengths([2048, 1024]), "three_kernel")["passed"]
    table[1, 1, 0] = 0
    with pytest.raises(ValueError, match="never wrote a record"):
        timelines.stage_blocks_as_tasks(table, tiles, rows)


# --------------------------------------------------------------------------- the declaration
SNAPSHOT = REPO_ROOT / "tests/snapshots/megakernels.txt"


def test_declared_default_table_matches_its_snapshot():
    """The expanded default variants, one line each (id, label, oracle, bytes, pacing per L2 state, outputs,
    requirements): a deleted, renamed or changed row shows here."""
    expected = SNAPSHOT.read_text() if SNAPSHOT.exists() else ""
    assert declared.CHAPTER.snapshot() == expected, (
        "the declared megakernels variants changed; if intended, regenerate the snapshot with\n  PYTHONPATH=src python -c "
        "\"from launchlab.chapters.megakernels import CHAPTER; open('tests/snapshots/megakernels.txt', 'w')"
        ".write(CHAPTER.snapshot())\"")


@pytest.mark.skipif(not (REPO_ROOT / "evidence/accepted.json").exists(), reason="no evidence store")
def test_declared_default_ids_are_what_the_accepted_run_measured():
    path = evidence.accepted_run("megakernels")
    record = RunRecord.read(path)
    assert declared.CHAPTER.parameters_of(record) == Parameters()
    measured = {s["variant"] for s in analysis.read_jsonl(path / "samples/timing.jsonl.gz")}
    skipped = set(record.details.get("skipped_variants", {}))
    assert {str(v.id) for v in declared.CHAPTER.variants()} == measured | skipped


def test_expand_crosses_designs_cases_submissions_and_the_sweep():
    table = declared.CHAPTER.variants()
    parameters = Parameters()
    designs = declared.active_designs(parameters)
    swept = [d for d in designs if "sweep" in d.outputs]
    assert len(table) == len(parameters.tiled_cases) * (2 * len(designs) + len(swept) * len(parameters.sweep_workers_per_sm))
    for variant in table:
        design, workers_per_sm = design_of(variant.id)
        assert variant.row is design and variant.id.case in parameters.tiled_cases
        if workers_per_sm is None:  # a main variant: graphs warm and cold, the stream warm
            assert variant.enters == design.outputs - {"sweep"} and "table" in variant.enters
            assert variant.l2_states == (("warm", "cold") if variant.id.submission == "graph" else ("warm",))
        else:
            assert variant.enters == {"sweep", "trace"} and variant.l2_states == ("warm",)
            assert variant.id.submission == "graph" and workers_per_sm in parameters.sweep_workers_per_sm
        assert variant.pacing("warm") == ("device" if variant.id.submission == "graph" else "host")
        assert ("trace" in variant.enters) == (design.schedule is not None)
        assert (variant.bytes_read, variant.bytes_written) == design.bytes(variant.id.case)


def test_logical_bytes_per_design():
    elements, tiles, rows = 128 * 8192, 1024, 128
    assert declared.task_bytes("balanced") == (8 * elements + 24 * tiles, 4 * elements + 12 * (tiles + rows))
    assert declared.x_once_bytes("balanced") == (4 * elements, 4 * elements)  # x read once, y written once
    assert declared.x_on_chip_bytes("balanced") == (4 * elements + 24 * tiles, 4 * elements + 12 * (tiles + rows))
    # the ragged case: 16 rows of 36 tiles and 112 of 4; C tiles of a row each read all of the row's tile statistics
    assert declared.b_in_c_bytes("ragged")[0] == 8 * elements + 12 * (16 * 36 ** 2 + 112 * 4 ** 2)
    assert DESIGN["tiled2"].bytes is declared.b_in_c_bytes and DESIGN["cluster"].bytes is declared.x_once_bytes


def test_design_facts_and_names():
    assert declared.stream_submissions(DESIGN["cluster"], "ragged") == 2  # clusters of 8 and of 4: two launches
    assert declared.is_one_launch(DESIGN["cluster"], "balanced") and not declared.is_one_launch(DESIGN["cluster"], "ragged")
    assert design_of("queue_wps2.ragged.graph") == (DESIGN["queue"], 2)
    assert design_of(VariantId("coop", "balanced", "stream")) == (DESIGN["coop"], None)
    assert declared.label("queue_wps2.ragged.graph") == "task queue, graph, 2 blocks/SM"
    assert DESIGN["cluster"].requires.missing({"compute_capability": "8.0"}).startswith("needs compute capability 9.0")
    assert DESIGN["tiled3"].requires.missing({"compute_capability": "8.0"}) is None
    with pytest.raises(ValueError, match="traced design needs a schedule"):
        dataclasses.replace(DESIGN["fused_row"], outputs=declared.MAIN_OUTPUTS)


def test_parameters_parse_from_notebook_values_and_name_what_is_wrong():
    parse = declared.CHAPTER.parse_parameters
    parsed = parse({"workers_per_sm": "2", "sweep_workers_per_sm": "8, 1,2,2"})
    assert parsed == Parameters(workers_per_sm=2, sweep_workers_per_sm=Counts((8, 1, 2, 2)))
    assert declared.sweep_points(parsed) == [1, 2, 8] and declared.sweep_points(parse({"sweep_workers_per_sm": ""})) == []
    only = declared.CHAPTER.variants(parse({"designs": "fused_row", "sweep_workers_per_sm": ""}))
    assert {v.id.target for v in only} == {"tiled3", "coop", "queue", "fused_row"}
    for given, problem in (({"workers": 1}, "unknown parameter"), ({"designs": "pdl3,warp"}, "unknown designs"),
                           ({"sweep_workers_per_sm": "0,1"}, "positive"), ({"tiled_cases": "balanced,square"},
                                                                            "unknown tiled case"),
                           ({"tiled_cases": ""}, "no tiled cases"), ({"sanitizer_tools": "initcheck"}, "unknown sanitizer"),
                           ({"workers_per_sm": "1.5"}, "workers_per_sm")):
        with pytest.raises(ValueError, match=problem):
            parse(given)


# --------------------------------------------------------------------------- a simulated device
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
         ("fused_row", None, "stream"): 7_300, ("fused_row", None, "graph"): 7_200}
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
        self.graph.cost_ns = COSTS.get((target.name, getattr(target, "workers_per_sm", None), "graph"),
                                       COSTS[target.name, None, "graph"])
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


class FakeWords:
    def __init__(self, values):
        self.values = np.asarray(values)

    def get(self):
        return self.values.copy()


class FakeDependency(FakeDesign):
    kernel_names, design, name = ("dependency_persistent",), "dependency", "depend"

    def __init__(self, built, path, workers=None, lists=None, wait_limit_ns=0):
        super().__init__(built, path)
        self.prepared = ()
        self.capacity = RESIDENT * SM_COUNT
        self.workers = min(int(workers or self.capacity), self.tiles)
        self.lists = ds.owner_task_lists(self.task_graph(), self.workers, 1)
        self.list_check = ds.check_lists(self.task_graph(), self.lists)
        self.shared_bytes, self.error = 4096, FakeWords(np.zeros(4, np.int32))

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


def fake_sanitize(example, tools=("memcheck", "racecheck"), timeout_s=300):
    results = [{"tool": tool, "example": example, "command": ["compute-sanitizer", "--tool", tool], "exit_code": 0,
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
    from launchlab.chapters.megakernels import persistent
    from launchlab.gpu import build, capture, instruments, probes, sanitizer, targets
    from launchlab.gpu import device as gpu_device

    device = FakeDevice()
    patch = pytest.MonkeyPatch()
    patch.setattr(designs, "PdlThreeKernels", FakePdl3)
    patch.setattr(designs, "TwoKernels", FakeTwo)
    patch.setattr(designs, "DependencyPersistent", FakeDependency)
    patch.setattr(designs, "ClusterRows", FakeCluster)
    patch.setattr(designs, "FusedPackedRows", FakeFused)
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


def make_session(root: Path, device: FakeDevice, parameters: Parameters):
    """The real Session, with the simulated device as its timing backend and FakeState as its GPU identity."""
    from launchlab.runner import Session

    writer = evidence.RunWriter("20990101T000000Z-ch04", root=root)
    session = Session(declared.CHAPTER, writer, parameters, SMALL_PROTOCOL, backend=device, device=FakeState())
    session.record.git_commit = "test"
    return session


def execute_simulated(root: Path, device: FakeDevice, parameters: Parameters = Parameters()) -> Path:
    """runner.execute's steps with the simulated session; the run sealed as a committed run would be."""
    from launchlab.chapters.megakernels import run

    session = make_session(root, device, parameters)
    run.run(session)
    session.finish()
    summaries, headline = analysis.recompute(session.writer.path)
    session.writer.write_json("summaries.json", summaries)
    session.writer.write_json("headline.json", headline)
    evidence.seal(session.writer.path)
    return session.writer.path


@pytest.fixture(scope="module")
def synthetic(simulated_gpu, tmp_path_factory):
    return analysis.Run.open(execute_simulated(tmp_path_factory.mktemp("evidence"), simulated_gpu))


@pytest.mark.slow
def test_the_simulated_run_holds_every_declared_variant(synthetic):
    declared_ids = {str(spec.id) for spec in declared.CHAPTER.variants()}
    samples = synthetic.jsonl("samples/timing.jsonl.gz")
    assert {s["variant"] for s in samples} == declared_ids
    assert {s["launches"] for s in samples if s["variant"] == "queue.ragged.stream"} == {2}
    assert {s["launches"] for s in samples if s["variant"] == "tiled3.ragged.stream"} == {3}
    untraced = {v for v in declared_ids if v.startswith("fused_row.")}  # no schedule model: not traced
    assert set(synthetic.summaries["traces"]) == declared_ids - untraced
    graphs = {v for v in declared_ids if v.endswith(".graph")}
    assert set(synthetic.summaries["graphs"]) == set(synthetic.summaries["graph_setup"]) == graphs
    assert synthetic.record.verdict == "passed"
    checks = synthetic.json("validation.json")
    assert {c["phase"] for c in checks} == {"graph edges", "before", "after", "after timing", "traced build", "trace"}
    queue_words = [c for c in checks if c.get("what") == "queue error words and counters"]
    assert queue_words and all(c["passed"] and c["queue_error"] is None for c in queue_words)
    # one per task queue and case, and one per dependency kernel and case
    assert len([c for c in checks if c["phase"] == "after timing"]) == 2 * (1 + 4) + 2
    edges = [c for c in checks if c["phase"] == "graph edges"]
    assert {c["variant"] for c in edges} == {f"{t}.{case}.graph" for t in ("pdl3", "pdl3_off", "tiled2", "tiled2_pdl",
                                                                          "cluster") for case in ("balanced", "ragged")}
    assert synthetic.json("graphs/pdl3.ragged.graph.edges.json")["edge_types"] == {"default": 0, "programmatic": 2}
    assert synthetic.summaries["graph_edges"]["cluster.ragged.graph"]["programmatic"] == 1
    assert set(synthetic.summaries["sanitizer"]) == {"memcheck", "racecheck", "synccheck"}
    cold = {s["variant"] for s in samples if s["measurement"] == "cold"}
    assert cold == {v for v in graphs if "_wps" not in v}  # every design's graph, cold
    assert all(synthetic.summaries["traces"][f"{t}.ragged.graph"]["passed"]
               for t in ("pdl3", "pdl3_off", "tiled2", "tiled2_pdl", "depend", "cluster"))
    assert synthetic.record.details["persistent_grids"]["queue_wps1.ragged.graph"]["workers"] == SM_COUNT


@pytest.mark.slow
def test_headline_arithmetic(synthetic):
    head = synthetic.headline
    assert analysis.analyze(synthetic.path) == []
    for case in ("balanced", "ragged"):
        graph3 = COSTS["tiled3", None, "graph"] / 1e3
        assert head[f"event_us.tiled3.{case}.graph"] == pytest.approx(graph3)
        assert f"speedup_vs_graph3.tiled3.{case}.graph" not in head
        for (design, per_sm, submission), cost in COSTS.items():
            vid = VariantId(design, case, submission) if per_sm is None else sweep_variant(design, case, per_sm)
            assert head[f"event_us.{vid}"] == pytest.approx(cost / 1e3)
            if str(vid) != f"tiled3.{case}.graph":  # speed-up: the baseline's time over the variant's (>1: faster)
                assert head[f"speedup_vs_graph3.{vid}"] == pytest.approx(graph3 / (cost / 1e3))
                ratio = synthetic.summaries["speedup_vs_graph3"][str(vid)]
                assert ratio["ci_low"] == pytest.approx(ratio["ci_high"])
            if design == "fused_row":  # not traced: no schedule model
                continue
            key = summary.overlap_key(str(vid))  # a sweep point's trace is published as <design>_graph.<case>.wps<k>
            assert isinstance(head[f"b_before_last_a.{key}"], int)
            if DESIGN[design].schedule in schedules.SCHEDULES:  # the design models do not count it
                assert isinstance(head[f"model_b_before_last_a.{key}"], int)
        assert head[f"speedup_vs_coop.queue_wps1.{case}.graph"] == pytest.approx(40_000 / 30_000)
        assert head[f"speedup_vs_coop.queue.{case}.stream"] == pytest.approx(15_300 / 14_400)
        for target in ("tiled3", "coop"):
            assert head[f"b_before_last_a.{target}.{case}.graph"] == 0
        assert head[f"b_before_last_a.queue_graph.{case}.wps1"] > 0
    assert not any(key.endswith("_over_graph3") or "_over_graph3." in key for key in head)
    for case in ("balanced", "ragged"):
        graph3 = COSTS["tiled3", None, "graph"]
        # PDL: (control graph - PDL graph) / 2 boundaries, warm; the cold extra is paid by both, so it cancels
        saving = (COSTS["pdl3_off", None, "graph"] - COSTS["pdl3", None, "graph"]) / 2 / 1e3
        assert head[f"pdl_saving_us_per_boundary.{case}"] == pytest.approx(saving)
        assert head[f"pdl_saving_us_per_boundary.{case}.cold"] == pytest.approx(saving)
        assert head[f"event_us.pdl3.{case}.graph.cold"] == pytest.approx((COSTS["pdl3", None, "graph"] + COLD_EXTRA_NS) / 1e3)
        fused = COSTS["fused_row", None, "graph"]
        assert head[f"speedup_vs_graph3.fused_row.{case}"] == pytest.approx(graph3 / fused)
        assert head[f"speedup_vs_graph3.fused_row.{case}.cold"] == pytest.approx((graph3 + COLD_EXTRA_NS) /
                                                                                  (fused + COLD_EXTRA_NS))
        # the fastest one-launch graph is the fused row kernel (cluster is faster than depend but slower than fused)
        assert head[f"speedup_vs_graph3.best_one_launch.{case}"] == pytest.approx(graph3 / fused)
        assert synthetic.summaries["best_one_launch"][case]["variant"] == f"fused_row.{case}.graph"
        assert head[f"speedup_vs_graph3.depend.{case}.graph.cold"] == pytest.approx(
            (graph3 + COLD_EXTRA_NS) / (COSTS["depend", None, "graph"] + COLD_EXTRA_NS))
    assert f"speedup_vs_graph3.tiled3.ragged.graph.cold" not in head
    nodes = synthetic.summaries["graphs"]
    assert nodes["queue.ragged.graph"]["counts"] == {"kernel": 1, "other": 1}  # the counter reset is a memset node
    assert nodes["coop.ragged.graph"]["counts"] == {"kernel": 1, "other": 0}
    assert nodes["tiled3.ragged.graph"]["counts"] == {"kernel": 3, "other": 0}
    assert all(t["passed"] for t in synthetic.summaries["traces"].values())


@pytest.mark.slow
def test_analysis_sees_a_changed_trace(synthetic, tmp_path):
    copy = tmp_path / synthetic.path.name
    shutil.copytree(synthetic.path, copy)
    path = copy / "traces/queue.ragged.graph.npz"
    with np.load(path) as arrays:
        changed = {k: arrays[k].copy() for k in arrays.files}
    late = changed["task"] >= 1024
    changed["start_ns"][late] += 1
    changed["end_ns"][late] += 1
    path.unlink()
    np.savez_compressed(path, **changed)
    assert f"{copy.name}/summaries.json differs from the recomputation from raw samples" in analysis.analyze(copy)


@pytest.mark.slow
def test_a_new_design_row_reaches_every_output(simulated_gpu, tmp_path, monkeypatch):
    """One more row (the task queue again, under another name) and nothing else: it is timed warm and, as a
    graph, cold; swept; traced; in the summaries, the page's tables and figures, and the sanitizer's designs."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from launchlab.chapters.megakernels import page
    from launchlab.chapters.megakernels.sanitize import DESIGNS_ENVIRONMENT
    from launchlab.gpu import sanitizer

    copy = dataclasses.replace(DESIGN["queue"], name="queue2", label="task queue, again")
    monkeypatch.setitem(DESIGN, copy.name, copy)
    sanitized = []
    monkeypatch.setattr(sanitizer, "sanitize", lambda *a, **k: (sanitized.append(os.environ[DESIGNS_ENVIRONMENT]),
                                                                fake_sanitize(*a, **k))[1])
    parameters = declared.CHAPTER.parse_parameters({"tiled_cases": "ragged", "sweep_workers_per_sm": "1,8",
                                                    "designs": ""})
    new = [v for v in declared.CHAPTER.variants(parameters) if v.row is copy]
    assert {str(v.id) for v in new} == {"queue2.ragged.stream", "queue2.ragged.graph", "queue2_wps1.ragged.graph",
                                        "queue2_wps8.ragged.graph"}
    run = analysis.Run.open(execute_simulated(tmp_path, simulated_gpu, parameters))
    samples = run.jsonl("samples/timing.jsonl.gz")
    assert {s["variant"] for s in samples if s["measurement"] == "cold"} >= {"queue2.ragged.graph"}
    assert {str(v.id) for v in new} <= {s["variant"] for s in samples}
    for v in new:
        assert str(v.id) in run.summaries["timing"] and str(v.id) in run.summaries["speedup_vs_graph3"]
        assert run.summaries["traces"][str(v.id)]["passed"]
    assert "queue2.ragged.graph" in run.summaries["speedup_vs_graph3_cold"]
    assert "queue2" in sanitized[0].split(",")
    for table in (page.timing_table, page.speedup_table, page.pays_table, page.trace_table, page.graph_table):
        index = [key if isinstance(key, tuple) else (key,) for key in table(run).index]
        assert any("task queue, again" in " ".join(map(str, key)) for key in index), table.__name__
    assert ("ragged", "task queue, again", 8) in page.sweep_table(run).index
    assert "task queue, again" in [tick.get_text() for tick in page.speedup_figure(run).axes[0].get_yticklabels()]
    figure = page.sweep_figure(run)
    assert any(line.get_label().startswith("task queue, again") for line in figure.axes[0].get_lines())
    plt.close("all")
    assert page.page_values(run)["speedup_queue2_ragged_graph"]


@pytest.mark.slow
def test_a_design_the_gpu_cannot_run_is_skipped_with_its_reason(simulated_gpu, tmp_path, monkeypatch):
    monkeypatch.setattr(FakeState, "identity", staticmethod(lambda: {**IDENTITY, "compute_capability": "8.0"}))
    parameters = declared.CHAPTER.parse_parameters({"tiled_cases": "ragged", "sweep_workers_per_sm": "",
                                                    "designs": "cluster,fused_row"})
    run = analysis.Run.open(execute_simulated(tmp_path, simulated_gpu, parameters))
    skipped = run.record.details["skipped_variants"]
    assert set(skipped) == {"cluster.ragged.stream", "cluster.ragged.graph"}
    assert "thread-block clusters" in skipped["cluster.ragged.graph"]
    assert "cluster.ragged.graph" not in run.summaries["timing"] and "fused_row.ragged.graph" in run.summaries["timing"]
    assert analysis.analyze(run.path) == []


@pytest.mark.slow
def test_a_sweep_of_other_counts_and_one_case_runs_too(simulated_gpu, tmp_path):
    parameters = declared.CHAPTER.parse_parameters({"tiled_cases": "ragged", "sweep_workers_per_sm": "2,8"})
    run = analysis.Run.open(execute_simulated(tmp_path, simulated_gpu, parameters))
    from launchlab.chapters.megakernels import page

    assert {r["workers_per_sm"] for r in page.sweep_rows(run)} == {2, 8}
    values = page.page_values(run)
    assert values["sweep_min_per_sm"] == "2" and values["workers_queue_min_ragged"] == str(2 * SM_COUNT)


@pytest.mark.slow
def test_a_trace_with_an_unwritten_task_record_fails_the_run_instead_of_crashing_it(simulated_gpu, tmp_path,
                                                                                     monkeypatch):
    from launchlab.chapters.megakernels import persistent
    from launchlab.runner import ValidationFailed

    def lost_record(variant, task_records, stage_records):
        if persistent.underlying(variant).name == "queue":
            raise ValueError("1 task records were never written (first slot 7)")
        return fake_trace(variant, task_records, stage_records)

    monkeypatch.setattr(persistent, "trace", lost_record)
    with pytest.raises(ValidationFailed, match="traces"):
        execute_simulated(tmp_path, simulated_gpu, declared.CHAPTER.parse_parameters(
            {"tiled_cases": "balanced", "sweep_workers_per_sm": ""}))
    run_dir = next((tmp_path / "runs").iterdir())
    assert RunRecord.read(run_dir).verdict == "failed"
    failing = [c for c in json.loads((run_dir / "validation.json").read_text()) if not c["passed"]]
    assert [(c["variant"], c["what"]) for c in failing] == [("queue.balanced.stream", "every task record written"),
                                                            ("queue.balanced.graph", "every task record written")]


def test_pays_sentence_and_verdicts():
    from launchlab.chapters.megakernels import page

    slower = {"median": 0.8, "ci_low": 0.79, "ci_high": 0.81}
    summaries = {"speedup_vs_graph3": {str(VariantId(t, c, s)): slower for t in ("coop", "queue")
                                       for c in ("balanced", "ragged") for s in ("stream", "graph")}}
    assert page.pays_sentence(summaries, ["balanced", "ragged"]) == (
        "In this run no persistent kernel, launched from the stream or replayed as a graph, is faster than the three "
        "kernels replayed as a graph, in either case.")
    assert page.verdict({"ci_low": 1.01, "ci_high": 1.2}) == "faster than"
    assert page.verdict({"ci_low": 0.8, "ci_high": 0.99}) == "slower than"
    assert page.verdict({"ci_low": 0.98, "ci_high": 1.03}) == "not distinguishable from"


def notebook() -> dict:
    return json.loads((REPO_ROOT / "book/megakernels.ipynb").read_text())


def notebook_glue_keys() -> set:
    text = "".join("".join(cell["source"]) for cell in notebook()["cells"] if cell["cell_type"] == "markdown")
    return set(re.findall(r"\{glue:md\}`([^`]+)`", text))


@pytest.mark.slow
def test_page_renders_from_the_simulated_run_and_every_glued_value_exists(synthetic):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from launchlab.chapters.megakernels import page
    from launchlab.present.glue import environment_table, validation_summary

    values = page.page_values(synthetic)
    missing = notebook_glue_keys() - set(values)
    assert not missing, f"the notebook glues values page_values does not make: {sorted(missing)}"
    assert all(isinstance(v, str) and v.strip() for v in values.values())
    assert values["speedup_coop_balanced_graph"] == f"{12.4 / 15.6:.2f}"
    assert values["speedup_verdict_coop_balanced_graph"] == "slower than"
    assert values["queue_vs_coop_verdict_min_ragged"] == "faster than"
    assert values["pays_sentence"].startswith("In this run no persistent kernel")
    assert values["a_tasks"] == "1024" and values["a_wave_phrase"] == "fit in a single wave of"
    assert values["a_waves_min"] == "8" and values["a_waves_max"] == "1"
    assert values["sweep_min_per_sm"] == "1" and values["sweep_max_per_sm"] == "8"
    assert (values["sweep_min_blocks"], values["sweep_max_blocks"]) == ("1 block", "8 blocks")
    assert (values["a_waves_min_phrase"], values["a_waves_max_phrase"]) == ("8 waves", "a single wave")
    assert values["barrier_vs_boundary_balanced"] in ("about as long as", "shorter than", "longer than")
    for table in (page.resources_table, page.graph_table, page.timing_table, page.speedup_table, page.trace_table,
                  page.sweep_table, page.design_trace_table, page.pays_table, page.sanitizer_table):
        frame = table(synthetic)
        assert len(frame) > 0
        assert not frame.astype(str).apply(lambda c: c.str.contains("nan")).any().any(), table.__name__
    assert len(environment_table(synthetic)) > 0
    assert {row[0] for row in validation_summary(synthetic).rows} == {"graph edges", "before", "after", "after timing",
                                                                     "traced build", "trace"}
    assert "fused row kernel" in values["findings_ragged"] and "µs per kernel boundary" in values["findings_ragged"]
    assert values["best_one_launch_ragged"] == "fused row kernel (chapter 3), graph"
    assert values["sanitizer_verdict"] == "memcheck: clean; racecheck: clean; synccheck: clean"
    pays = page.pays_table(synthetic)
    assert len(pays) == 2 * 10 * 2
    assert pays.loc[("ragged", "cluster per row, stream"), "launches / invocation"] == "2"
    assert pays.loc[("ragged", "fused row kernel (chapter 3), stream"), "cold (µs)"] == "—"
    assert page.trace_table(synthetic).loc[("ragged", "task queue, graph"), "checks"] == "passed"
    assert len(page.sweep_table(synthetic)) == 2 * 2 * 4
    for figure in (page.timing_figure(synthetic), page.sweep_figure(synthetic),
                   page.gantt_figure(synthetic, "balanced"), page.gantt_figure(synthetic, "ragged")):
        assert figure.axes
        plt.close(figure)


def test_notebook_is_thin_and_its_parameters_are_the_declared_defaults():
    cells = notebook()["cells"]
    parameters = [c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(parameters) == 1
    namespace: dict = {}
    exec("".join(parameters[0]["source"]), namespace)
    assert namespace["mode"] == "evidence" and namespace["run_id"] == ""
    given = {k: v for k, v in namespace.items() if not k.startswith("__") and k not in ("mode", "run_id")}
    assert given == declared.CHAPTER.defaults()
    code = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    assert "from launchlab.chapters.megakernels import page as chapter" in code
    assert "environment_table(run)" in code and "validation_summary(run)" in code
    markdown = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    assert "The run behind this page" in markdown and "What this run does not establish" in markdown
    assert not re.search(r"\d+(\.\d+)? ?(µs|us|ms)\b", markdown), "a measured time is typed into the prose"


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc is not on PATH")
@pytest.mark.parametrize("traced", [False, True])
def test_megakernel_builds_have_no_spills_or_local_memory(traced):
    from launchlab.gpu import build

    report = build.nvcc_report("megakernel", {"LAUNCHLAB_TRACE": None} if traced else None)
    assert set(report["resources"]) == {"coop_phases", "queue_persistent"}
    for kernel, resources in report["resources"].items():
        assert resources["spill_stores"] == resources["spill_loads"] == resources["local_bytes"] == 0, (kernel, resources)
        assert resources["registers"] <= 32, "both builds must fit 8 blocks of 256 threads per SM"


def accepted_new_run():
    """The accepted megakernels run if it has the new run record, else None (old-schema runs are re-executed)."""
    try:
        path = evidence.accepted_run("megakernels")
        RunRecord.read(path)
        return analysis.Run.open(path)
    except (evidence.EvidenceError, RecordError, KeyError, FileNotFoundError, TypeError, ValueError):
        return None


ACCEPTED = accepted_new_run()


@pytest.mark.skipif(ACCEPTED is None, reason="no accepted megakernels run of the new schema yet")
def test_accepted_run_traces_pass_and_phases_never_overlap():
    assert all(t["passed"] for t in ACCEPTED.summaries["traces"].values())
    for case in declared.CHAPTER.parameters_of(ACCEPTED.record).tiled_cases:
        for target in ("tiled3", "coop"):
            for submission in ("stream", "graph"):
                assert ACCEPTED.value(f"b_before_last_a.{target}.{case}.{submission}") == 0

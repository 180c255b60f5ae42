"""Chapter 4 on the CPU: trace checks on saved traces (and broken ones they must reject), the raw-record
conversions, summaries and headline arithmetic on a synthetic run, the page, the notebook's glue."""
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from launchlab.store import runs as analysis
from launchlab.gpu import build
from launchlab.store import evidence
from launchlab.gpu import capture
from launchlab.model import dot
from launchlab.model import schedules
from launchlab.gpu import probes
from launchlab.model import timelines
from launchlab.model import workloads
from launchlab.chapters import megakernels as chapter
from launchlab.measure.protocol import FROZEN
from launchlab.model.schedules import TaskGraph, Trace

REPO_ROOT = Path(__file__).resolve().parents[1]
WORKERS = 1056
QUEUE_DOT = '''digraph dot {
subgraph cluster_1 {
label="graph_1" graph[style="dashed"];
"graph_1_node_0"[style="solid" shape="invtrapezium" label="0
MEMSET
"];

"graph_1_node_1"[style="bold" shape="octagon" label="1
queue_persistent
"];

"graph_1_node_0" -> "graph_1_node_1";
}
}
'''


def simulated(case: str, schedule: str, seed: int = 0) -> tuple[Trace, TaskGraph]:
    lengths = workloads.tiled_row_lengths(case)
    graph = TaskGraph.from_lengths(lengths)
    generator = np.random.default_rng(seed)
    durations = schedules.nominal_durations(graph, lengths) * generator.uniform(0.7, 1.3, graph.total)
    arrivals = None if schedule == "three_kernel" else generator.uniform(0, 2000, WORKERS)
    return schedules.simulate(schedule, graph, durations, WORKERS, 0 if schedule == "queue" else 1500,
                              blocks_per_sm=8, arrivals=arrivals), graph


# --------------------------------------------------------------------------- saved traces and broken ones
@pytest.mark.parametrize("schedule", schedules.SCHEDULES)
def test_saved_traces_load_and_pass(tmp_path, schedule):
    trace, graph = simulated("ragged", schedule)
    schedules.save_trace(tmp_path / "t.npz", trace, graph)
    loaded, loaded_graph = schedules.load_trace(tmp_path / "t.npz")
    assert np.array_equal(loaded_graph.tile_row, graph.tile_row)
    assert all(np.array_equal(a, b) for a, b in zip(loaded.arrays().values(), trace.arrays().values()))
    assert schedules.check_trace(loaded, loaded_graph, schedule, WORKERS)["passed"]


def broken(trace: Trace, graph: TaskGraph, how: str) -> Trace:
    arrays = {k: v.copy() for k, v in trace.arrays().items()}
    slot_of = {int(t): i for i, t in enumerate(arrays["task"])}
    tiles, rows = graph.tiles, graph.rows
    if how == "b_before_its_a":  # B of row 0 starts just before its last A tile ends
        a_slots = [slot_of[t] for t in range(int(graph.row_first_tile[1]))]
        last_a_end = max(arrays["end_ns"][s] for s in a_slots)
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


def test_a_b_task_moved_before_the_last_a_breaks_the_phase_boundary():
    trace, graph = simulated("ragged", "three_kernel")
    arrays = {k: v.copy() for k, v in trace.arrays().items()}
    # B of the last row, whose A tiles end early in a three-kernel run, moved to just after them
    row = graph.rows - 1
    slot = int(np.flatnonzero(arrays["task"] == graph.tiles + row)[0])
    a_end = arrays["end_ns"][np.isin(arrays["task"], np.arange(graph.row_first_tile[row], graph.row_first_tile[row + 1]))].max()
    duration = arrays["end_ns"][slot] - arrays["start_ns"][slot]
    arrays["taken_ns"][slot] = arrays["start_ns"][slot] = a_end
    arrays["end_ns"][slot] = a_end + duration
    moved = Trace(**arrays)
    if a_end < trace.end_ns[graph.kinds()[trace.task] == 0].max():
        result = schedules.check_trace(moved, graph, "three_kernel", WORKERS)
        assert result["checks"]["b_after_its_row_a"] and not result["checks"]["no_b_before_all_a"]
        assert schedules.b_before_last_a(moved, graph) == 1


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


# --------------------------------------------------------------------------- a synthetic run
EVENT_US = {"stream3": 16.0, "graph3": 12.0, "coop_stream": 10.0, "coop_graph": 8.0, "queue_stream": 15.0,
            "queue_graph": 24.0}


def sample(round_index, position, variant, event_us):
    return {"round": round_index, "position": position, "variant": variant, "single_enqueue_ns": 5000,
            "single_complete_ns": 30000, "batch_size": FROZEN.batch, "batch_enqueue_ns": 1000 * FROZEN.batch,
            "batch_complete_ns": int(event_us * 1000 * FROZEN.batch), "batch_event_ms": event_us * FROZEN.batch / 1e3}


def write_synthetic_run(root: Path) -> Path:
    writer = evidence.RunWriter("20990101T000000Z-ch04", root=root)
    cases = ["balanced", "ragged"]
    record = {"chapter": chapter.STEM, "run_id": writer.run_id, "parameters": dict(chapter.DEFAULT_PARAMETERS),
              "protocol": FROZEN.record(), "device": {"name": "Test GPU", "sm_count": 132}, "sm_count": 132,
              "wait_limit_ns": 1_000_000_000,
              "persistent": {c: {k: {"workers": WORKERS, "blocks_per_sm": 8, "resident_blocks_per_sm": 8,
                                     "co_resident_capacity": WORKERS} for k in ("cooperative", "queue")} for c in cases},
              "three_kernel_resident_blocks_per_sm": {"tile_producer": 8, "row_combiner": 8, "tile_consumer": 8},
              "validation": {"verdict": "passed", "checks": 2, "trace_checks": 12}}
    samples = []
    for round_index in range(FROZEN.rounds):
        names = [f"{v}.{c}" for c in cases for v in chapter.VARIANTS]
        for position, name in enumerate(names):
            variant = name.split(".")[0]
            samples.append(sample(round_index, position, name, EVENT_US[variant] * (1 + 0.01 * (round_index % 3))))
    writer.write_jsonl("samples/timing.jsonl", samples)
    index, nodes, setup = {}, {}, {}
    for case in cases:
        for variant in chapter.VARIANTS:
            trace, graph = simulated(case, chapter.SCHEDULE[variant], seed=len(index))
            name = f"{variant}.{case}"
            index[name] = {"schedule": chapter.SCHEDULE[variant], "workers": WORKERS}
            writer.write_arrays(f"traces/{name}.npz", tile_row=graph.tile_row, **trace.arrays())
        for variant, kernels in (("graph3", ["tile_producer", "row_combiner", "tile_consumer"]),
                                 ("coop_graph", ["coop_phases"]), ("queue_graph", ["queue_persistent"])):
            if variant == "queue_graph":
                parsed = dot.parse_dot(QUEUE_DOT)  # the memset of the counters is a node of its own
            else:
                parsed = {"nodes": {f"n{i}": {"shape": "octagon", "label": [str(i), k]} for i, k in enumerate(kernels)},
                          "edges": [[f"n{i}", f"n{i + 1}"] for i in range(len(kernels) - 1)]}
            nodes[f"{variant}.{case}"] = {"stream_launches": len(kernels), "kernel_names": kernels, **parsed}
            setup[f"{variant}.{case}"] = {"capture_us": 10.0, "end_capture_us": 5.0, "instantiate_us": 50.0,
                                          "upload_us": 3.0, "first_replay_us": 40.0, "instantiated_in_end_capture": True}
    writer.write_json("traces/index.json", index)
    writer.write_json("graphs/nodes.json", nodes)
    writer.write_json("graphs/setup.json", setup)
    for label, kernels in (("tiled_softmax", ("tile_producer", "row_combiner", "tile_consumer")),
                           ("megakernel", ("coop_phases", "queue_persistent"))):
        writer.write_json(f"builds/{label}/record.json", {"resources_loaded": {
            k: {"registers": 32, "shared_bytes": 128, "local_bytes": 0} for k in kernels}})
    writer.write_json("validation.json", [
        {"workload": "queue_graph.ragged", "phase": "before", "fixture": 0, "passed": True, "failing_elements": 0,
         "max_abs_error": 1e-9, "relative_l2_error": 1e-8}])
    writer.write_json("run.json", record)
    summaries, headline = analysis.recompute(writer.path)
    writer.write_json("summaries.json", summaries)
    writer.write_json("headline.json", headline)
    evidence.seal(writer.path)
    return writer.path


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    return write_synthetic_run(tmp_path_factory.mktemp("evidence"))


def test_summaries_and_headline_arithmetic(synthetic):
    assert analysis.analyze(synthetic) == []
    summaries = json.loads((synthetic / "summaries.json").read_text())
    head = json.loads((synthetic / "headline.json").read_text())
    for case in ("balanced", "ragged"):
        for variant, event in EVENT_US.items():
            assert head[f"event_us.{variant}.{case}"] == pytest.approx(event * 1.01)  # median of 1.00/1.01/1.02
            if variant != "graph3":
                # graph3 over the variant within each round: the round factor cancels
                assert head[f"{variant}_over_graph3.{case}"] == pytest.approx(EVENT_US["graph3"] / event)
                ratio = summaries["over_graph3"][f"{variant}.{case}"]
                assert ratio["ci_low"] == pytest.approx(ratio["ci_high"]) == pytest.approx(EVENT_US["graph3"] / event)
            assert isinstance(head[f"b_before_last_a.{variant}.{case}"], int)
        assert f"graph3_over_graph3.{case}" not in head
        assert head[f"b_before_last_a.graph3.{case}"] == head[f"b_before_last_a.coop_graph.{case}"] == 0
        assert head[f"b_before_last_a.queue_graph.{case}"] > 0
    assert summaries["nodes"]["queue_graph.ragged"]["counts"] == {"kernel": 1, "other": 1}
    assert summaries["nodes"]["coop_graph.ragged"]["counts"] == {"kernel": 1, "other": 0}
    assert summaries["nodes"]["graph3.ragged"]["counts"] == {"kernel": 3, "other": 0}
    assert all(t["passed"] for t in summaries["traces"].values())


def test_analysis_sees_a_changed_trace(synthetic, tmp_path):
    copy = tmp_path / synthetic.name
    shutil.copytree(synthetic, copy)
    path = copy / "traces/queue_graph.ragged.npz"
    with np.load(path) as arrays:
        changed = {k: arrays[k].copy() for k in arrays.files}
    changed["start_ns"][changed["task"] >= 1024] += 1
    changed["end_ns"][changed["task"] >= 1024] += 1
    path.unlink()
    np.savez_compressed(path, **changed)
    problems = analysis.analyze(copy)
    assert f"{copy.name}/summaries.json differs from the recomputation from raw samples" in problems


def test_pays_sentence_without_a_faster_persistent_variant():
    slower = {"median": 0.8, "ci_low": 0.79, "ci_high": 0.81}
    summaries = {"over_graph3": {f"{v}.{c}": slower for v in chapter.PERSISTENT for c in ("balanced", "ragged")}}
    assert chapter.pays_sentence(summaries, ["balanced", "ragged"]) == (
        "In this run no persistent kernel, launched from the stream or replayed as a graph, is faster than the three "
        "kernels replayed as a graph, in either case.")


def test_verdicts_follow_the_interval():
    assert chapter._verdict({"ci_low": 1.01, "ci_high": 1.2}) == "faster than"
    assert chapter._verdict({"ci_low": 0.8, "ci_high": 0.99}) == "slower than"
    assert chapter._verdict({"ci_low": 0.98, "ci_high": 1.03}) == "not distinguishable from"


def notebook_glue_keys() -> set:
    notebook = json.loads((REPO_ROOT / "book/megakernels.ipynb").read_text())
    text = "".join("".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "markdown")
    return set(re.findall(r"\{glue:md\}`([^`]+)`", text))


def test_page_renders_from_the_synthetic_run_and_every_glued_value_exists(synthetic):
    import matplotlib
    matplotlib.use("Agg")
    from launchlab.store.runs import open_run

    run = open_run(synthetic)
    values = chapter.page_values(run)
    missing = notebook_glue_keys() - set(values)
    assert not missing, f"the notebook glues values page_values does not make: {sorted(missing)}"
    assert values["verdict_coop_graph_balanced"] == "faster than"
    assert values["verdict_queue_graph_balanced"] == "slower than"
    assert values["ratio_coop_graph_balanced"] == "1.50"
    assert values["pays_sentence"] == ("In this run the cooperative, stream variant on the balanced case, the cooperative, "
                                       "graph variant on the balanced case, the cooperative, stream variant on the ragged "
                                       "case, the cooperative, graph variant on the ragged case beat the three kernels "
                                       "replayed as a graph.")
    assert values["a_tasks"] == "1024" and values["a_wave_phrase"] == "fit in a single wave of"
    assert values["barrier_vs_boundary_balanced"] == "about as long as"  # both models use a 1500 ns boundary
    for table in (chapter.timing_table, chapter.ratio_table, chapter.trace_table, chapter.node_table,
                  chapter.resources_table):
        frame = table(run)
        assert len(frame) > 0
    assert chapter.trace_table(run).loc[("ragged", "task queue, graph"), "checks"] == "passed"
    for figure in (chapter.timing_figure(run), chapter.gantt_figure(run, "balanced"), chapter.gantt_figure(run, "ragged")):
        assert figure.axes
        matplotlib.pyplot.close(figure)


def test_notebook_is_thin_and_parameterised():
    notebook = json.loads((REPO_ROOT / "book/megakernels.ipynb").read_text())
    parameters = [c for c in notebook["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(parameters) == 1
    source = "".join(parameters[0]["source"])
    assert 'mode = "evidence"' in source and 'run_id = ""' in source
    for name in chapter.DEFAULT_PARAMETERS:
        assert re.search(rf"^{name} = ", source, re.MULTILINE), name
    markdown = "".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown")
    assert "What this run does not establish" in markdown
    assert not re.search(r"\d+(\.\d+)? ?(µs|us|ms)\b", markdown), "a measured time is typed into the prose"


@pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc is not on PATH")
def test_traced_megakernel_build_has_no_spills_or_local_memory():
    report = build.nvcc_report("megakernel", {"LAUNCHLAB_TRACE": None})
    assert set(report["resources"]) == {"coop_phases", "queue_persistent"}
    for kernel, resources in report["resources"].items():
        assert resources["spill_stores"] == resources["spill_loads"] == resources["local_bytes"] == 0, (kernel, resources)
        assert resources["registers"] <= 32, "both builds must fit 8 blocks of 256 threads per SM"


@pytest.mark.skipif(chapter.STEM not in evidence.read_accepted(), reason="no accepted megakernels run yet")
def test_accepted_run_traces_pass_and_the_queue_overlaps():
    run = evidence.accepted_run(chapter.STEM)
    summaries = json.loads((run / "summaries.json").read_text())
    assert all(t["passed"] for t in summaries["traces"].values())
    head = json.loads((run / "headline.json").read_text())
    for case in ("balanced", "ragged"):
        assert head[f"b_before_last_a.stream3.{case}"] == head[f"b_before_last_a.graph3.{case}"] == 0
        assert head[f"b_before_last_a.coop_graph.{case}"] == 0

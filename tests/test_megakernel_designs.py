"""The megakernel designs on the CPU: the kernels compile without spills or local memory and carry the
instructions their design rests on; static task lists are complete and deadlock-free (and broken ones
are caught); the schedule models produce traces that pass their design's checks, and the checks
reject traces that break a dependency; cluster plans cover every row; the launcher's C structures
match cuda.h."""
import ctypes
import shutil

import numpy as np
import pytest

from launchlab.chapters.megakernels import design_schedules as ds
from launchlab.chapters.megakernels import pdl, schedules
from launchlab.chapters.megakernels.schedules import Deadlock, TaskGraph, Trace
from launchlab.gpu import build
from launchlab.model import workloads

ARCH = "sm_90"  # the H200 of the book's runs

FAMILY = "megakernel_designs"
KERNELS = ("pdl_tile_producer", "pdl_row_combiner", "pdl_tile_consumer", "combining_tile_consumer",
           "dependency_persistent", "cluster_rows")
IRREGULAR = [1, 1023, 1025, 5000, 3, 2048, 70001, 4096, 777]
CASES = {"balanced": list(workloads.tiled_row_lengths("balanced")),
         "ragged": list(workloads.tiled_row_lengths("ragged")), "irregular": IRREGULAR}
SLOTS = 1056  # 132 SMs x 8 resident blocks of 256 threads


def durations_for(graph: TaskGraph, lengths, seed: int = 0) -> np.ndarray:
    generator = np.random.default_rng(seed)
    return schedules.nominal_durations(graph, lengths) * generator.uniform(0.7, 1.3, graph.total)


# --------------------------------------------------------------------------- compile
@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc is not on PATH")
@pytest.mark.parametrize("defines", [None, {"LAUNCHLAB_TRACE": None}], ids=["timed", "traced"])
def test_designs_compile_without_spills_or_local_memory(defines):
    report = build.nvcc_report(FAMILY, defines, arch=ARCH)
    assert set(KERNELS) <= set(report["resources"]), report["resources"]
    for kernel, resources in report["resources"].items():
        assert resources["spill_stores"] == resources["spill_loads"] == 0, (kernel, resources)
        assert resources["stack_bytes"] == resources["local_bytes"] == 0, (kernel, resources)
    # the persistent kernel must keep 8 blocks of 256 threads per SM in both builds: <= 32 registers
    assert report["resources"]["dependency_persistent"]["registers"] <= 32
    ptx = report["ptx"]
    for instruction in ("griddepcontrol.wait", "griddepcontrol.launch_dependents", "ld.acquire.gpu",
                        "st.release.gpu", "nanosleep", "%globaltimer", "barrier.cluster.arrive",
                        "barrier.cluster.wait", "mapa"):
        assert instruction in ptx, instruction


# --------------------------------------------------------------------------- static task lists
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("workers", [1, 7, 132, 1024, 1056])
def test_owner_lists_are_complete_and_deadlock_free(case, workers):
    graph = TaskGraph.from_lengths(CASES[case])
    lists = ds.owner_task_lists(graph, workers, cache_slots=2)
    result = ds.check_lists(graph, lists)
    assert result["passed"], result
    assert lists.workers == workers
    # the model runs them to the end and its trace passes the design's checks
    trace = ds.simulate_dependency(graph, durations_for(graph, CASES[case]), lists, handoff_ns=300)
    check = ds.check_design_trace(trace, graph, "dependency", lists)
    assert check["passed"], check


def test_one_tile_per_worker_when_the_grid_holds_every_tile():
    graph = TaskGraph.from_lengths(CASES["ragged"])
    lists = ds.owner_task_lists(graph, 1024)
    assert all(lists.of(w).tolist() == [w, graph.tiles + graph.rows + w] for w in range(1024))
    assert lists.slots_needed == 1


def test_broken_lists_are_caught_and_the_model_deadlocks():
    graph = TaskGraph.from_lengths([2048, 2048])  # tiles 0, 1 (row 0) and 2, 3 (row 1)
    c = lambda t: graph.tiles + graph.rows + t  # noqa: E731
    # worker 0 waits on row 1, whose tile 2 it holds itself further down its list
    stuck = ds.WorkerLists(np.array([0, 4, 8], np.int32), np.array([0, c(2), 2, c(0), 1, 3, c(1), c(3)], np.int32),
                           np.full(8, -1, np.int32))
    result = ds.check_lists(graph, stuck)
    assert not result["passed"] and not result["checks"]["deadlock_free"]
    assert result["stuck"] == {0: c(2), 1: c(3)}
    with pytest.raises(Deadlock, match="worker 0 waits on row 1"):
        ds.simulate_dependency(graph, np.ones(graph.total), stuck)
    no_round = ds.WorkerLists(np.array([0, 4, 8], np.int32), np.array([c(0), 0, 1, c(1), 2, 3, c(2), c(3)], np.int32),
                              np.full(8, -1, np.int32))
    assert not ds.check_lists(graph, no_round)["checks"]["round_known_before_every_c"]
    missing = ds.WorkerLists(np.array([0, 3], np.int32), np.array([0, 1, c(0)], np.int32), np.full(3, -1, np.int32))
    assert not ds.check_lists(graph, missing)["checks"]["every_a_and_c_once"]
    wrong_slot = ds.owner_task_lists(graph, 1, cache_slots=4)
    wrong_slot.slot[graph.tiles] = 1  # C of tile 0 would read tile 1's values
    assert not ds.check_lists(graph, wrong_slot)["checks"]["slots_pair_a_with_its_c"]


# --------------------------------------------------------------------------- models and checks
@pytest.mark.parametrize("case", sorted(CASES))
def test_pdl_models_pass_their_checks_and_overlap_the_launches(case):
    graph = TaskGraph.from_lengths(CASES[case])
    durations = durations_for(graph, CASES[case])
    spans = {}
    for design, kernels in (("pdl3", 3), ("pdl2", 2)):
        for programmatic in (True, False):
            trace = ds.simulate_pdl(graph, durations, SLOTS, kernels=kernels, programmatic=programmatic,
                                    launch_ns=2000, wait_ns=500, prefetch_ns=300)
            check = ds.check_design_trace(trace, graph, design)
            assert check["passed"], (design, programmatic, check)
            spans[design, programmatic] = trace.end_ns.max() - trace.taken_ns.min()
    assert spans["pdl3", True] < spans["pdl3", False]
    assert spans["pdl2", True] < spans["pdl2", False]
    assert spans["pdl2", False] < spans["pdl3", False]  # one boundary fewer


def test_dependency_model_beats_the_three_kernel_model_on_the_same_durations():
    lengths = CASES["ragged"]
    graph = TaskGraph.from_lengths(lengths)
    durations = durations_for(graph, lengths)
    three = schedules.simulate_three_kernel(graph, durations, SLOTS, launch_gap_ns=2000)
    lists = ds.owner_task_lists(graph, 1024)
    dependency = ds.simulate_dependency(graph, durations, lists, handoff_ns=500)
    assert dependency.end_ns.max() < three.end_ns.max()


def test_cluster_plans_cover_every_row():
    balanced = ds.cluster_plan(CASES["balanced"])
    assert [(k, rows.size) for k, rows in balanced.classes] == [(8, 128)]
    assert balanced.chunks == 1024 and (balanced.chunk_len == 1024).all()
    ragged = ds.cluster_plan(CASES["ragged"])
    assert [(k, rows.size) for k, rows in ragged.classes] == [(8, 16), (4, 112)]
    assert ragged.cache_elements == (4608, 1024)
    sixteen = ds.cluster_plan(CASES["ragged"], max_cluster=16)
    assert [(k, rows.size) for k, rows in sixteen.classes] == [(16, 16), (4, 112)]
    for lengths in CASES.values():
        plan = ds.cluster_plan(lengths)
        per_row = np.bincount(plan.chunk_row, weights=plan.chunk_len, minlength=len(lengths))
        assert (per_row == np.asarray(lengths)).all()
        assert sorted(np.concatenate([rows for _, rows in plan.classes]).tolist()) == list(range(len(lengths)))
    assert ds.cluster_plan([40 * 1024 * 1024]).cache_elements == (0,)  # too wide to keep: x is read twice
    with pytest.raises(ValueError):
        ds.cluster_plan([10], max_cluster=32)


@pytest.mark.parametrize("case", sorted(CASES))
def test_cluster_model_passes_its_checks_and_its_replay_reproduces_it(case):
    plan = ds.cluster_plan(CASES[case])
    graph = plan.graph()
    durations = np.random.default_rng(1).uniform(200, 900, graph.total)
    trace = ds.simulate_cluster(plan, durations, SLOTS)
    check = ds.check_design_trace(trace, graph, "cluster")
    assert check["passed"], check
    summary = ds.trace_summary(trace, graph, "cluster", SLOTS, plan=plan)
    assert summary["model"]["model_minus_measured_ns"] == 0


def test_checks_reject_traces_that_break_a_dependency():
    lengths = CASES["balanced"][:8]
    graph = TaskGraph.from_lengths(lengths)
    lists = ds.owner_task_lists(graph, 64)
    good = ds.simulate_dependency(graph, durations_for(graph, lengths), lists, handoff_ns=100)
    assert ds.check_design_trace(good, graph, "dependency", lists)["passed"]
    arrays = good.arrays()
    c0 = np.flatnonzero(arrays["task"] == graph.tiles + graph.rows)[0]
    early = {k: v.copy() for k, v in arrays.items()}
    early["taken_ns"][c0] = early["start_ns"][c0] = 0  # C of tile 0 before its row's A tiles ended
    result = ds.check_design_trace(Trace.from_arrays(early), graph, "dependency", lists)
    assert not result["checks"]["c_after_its_row_a"] and not result["checks"]["c_after_its_row_b"]
    moved = {k: v.copy() for k, v in arrays.items()}
    moved["worker"][c0] += 1  # ran on a worker whose list does not hold it
    assert not ds.check_design_trace(Trace.from_arrays(moved), graph, "dependency", lists)["checks"]["tasks_on_listed_workers"]
    twice = {k: np.concatenate([v, v[:1]]) for k, v in arrays.items()}
    assert not ds.check_design_trace(Trace.from_arrays(twice), graph, "dependency", lists)["passed"]
    pdl3 = ds.simulate_pdl(graph, durations_for(graph, lengths), SLOTS, launch_ns=100).arrays()
    b0 = np.flatnonzero(pdl3["task"] == graph.tiles)[0]
    pdl3["start_ns"][b0] = pdl3["taken_ns"][b0]  # B before the A grid completed
    assert not ds.check_design_trace(Trace.from_arrays(pdl3), graph, "pdl3")["passed"]


def test_dependency_replay_runs_on_the_trace_durations():
    lengths = CASES["irregular"]
    graph = TaskGraph.from_lengths(lengths)
    lists = ds.owner_task_lists(graph, 16)
    trace = ds.simulate_dependency(graph, durations_for(graph, lengths), lists, handoff_ns=0)
    summary = ds.trace_summary(trace, graph, "dependency", SLOTS, lists=lists)
    assert summary["passed"] and summary["model"]["model_minus_measured_ns"] == 0


# --------------------------------------------------------------------------- the launcher's structures
def test_launch_structures_match_cuda_h():
    assert ctypes.sizeof(pdl._LaunchAttribute) == 72 and pdl._LaunchAttribute.value.offset == 8
    assert ctypes.sizeof(pdl._LaunchConfig) == 56
    assert (pdl._LaunchConfig.shared_bytes.offset, pdl._LaunchConfig.stream.offset,
            pdl._LaunchConfig.attrs.offset, pdl._LaunchConfig.count.offset) == (24, 32, 40, 48)
    assert ctypes.sizeof(pdl._EdgeData) == 8 and pdl._EdgeData.type.offset == 2
    assert ctypes.sizeof(pdl._KernelNodeParams) == 72 and pdl._KernelNodeParams.params.offset == 40
    assert pdl.default_driver() in pdl.DRIVERS


def test_dot_edges_keep_their_attributes():
    text = '''digraph dot {
"graph_1_node_0"[shape="record" label="{KERNEL\\n| a}"];
"graph_1_node_0" -> "graph_1_node_1";
"graph_1_node_1" -> "graph_1_node_2" [style="dashed" label="programmatic"];
}'''
    edges = pdl.dot_edges(text)
    assert [(e["from"], e["to"], e["programmatic"]) for e in edges] == [
        ("graph_1_node_0", "graph_1_node_1", False), ("graph_1_node_1", "graph_1_node_2", True)]
    assert edges[1]["attributes"] == {"style": "dashed", "label": "programmatic"}
    assert pdl.edge_type_counts({"edges": [{"type": "programmatic"}, {"type": "default"}]}) == \
        {"default": 1, "programmatic": 1}


# --------------------------------------------------------------------------- the fused row kernel on packed rows
def test_packed_shared_memory_keeps_the_longest_row_on_chip_where_it_can():
    from launchlab.chapters.megakernels.targets import fused_defines
    from launchlab.chapters.megakernels import megakernel_designs as designs

    defines = fused_defines(227 * 1024)
    assert (defines["BLOCK"], defines["REG_CHUNKS"], defines["MIN_BLOCKS"]) == (512, 4, 1) and "FUSED_PACKED" in defines
    offsets = lambda case: workloads.tile_table(CASES[case])["row_offsets"]  # noqa: E731
    assert designs.packed_shared_bytes(offsets("balanced"), 512, 4, 227 * 1024) == 0  # 8,192 floats fit the registers
    assert designs.packed_shared_bytes(offsets("ragged"), 512, 4, 227 * 1024) == 16 * 36864 // 4
    assert designs.packed_shared_bytes([0, 70001], 512, 4, 227 * 1024) == 0  # past the limit: streamed


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc is not on PATH")
def test_packed_fused_entry_compiles_without_spills_in_its_build_only():
    from launchlab.chapters.megakernels.targets import fused_defines

    report = build.nvcc_report("fused_softmax", fused_defines(227 * 1024), arch=ARCH)
    packed = report["resources"]["fused_rms_softmax_packed"]
    assert packed["spill_stores"] == packed["spill_loads"] == packed["local_bytes"] == packed["stack_bytes"] == 0
    chapter3 = build.nvcc_report("fused_softmax", {"BLOCK": 512, "REG_CHUNKS": 4, "UNROLL": 8, "MIN_BLOCKS": 2}, arch=ARCH)
    assert "fused_rms_softmax_packed" not in chapter3["resources"]

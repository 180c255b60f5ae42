"""Chapter 3 on the CPU: the declaration (variants, bytes, calls per graph, the sweep's grid, build policy and
fused plans), the plain-softmax oracle, Nsight Compute parsing (marker kernels), the sweep's summary on hand-set
timings, and summaries, headline, tables, figures and page values recomputed from a SYNTHETIC run (fake samples
for every declared variant, written through RunWriter and RunRecord); run.py end to end on fake GPU modules."""
import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

from launchlab.analysis import analyze, open_run, recompute
from launchlab.chapters import fusion
from launchlab.chapters.fusion import page_sweep, plans, summary
from launchlab.chapters.fusion.summary import by_variant
from launchlab.gpu import ncu
from launchlab.chapters.fusion import profile
from launchlab.gpu.ncu import parse_ncu_csv
from launchlab.measure import stats
from launchlab.measure.protocol import FROZEN
from launchlab.measure.variant import VariantId
from launchlab.model import fused_cost, fused_policy, oracles, workloads
from launchlab.runner import SAMPLES_FILE
from launchlab.store import evidence
from launchlab.store.record import RunRecord
from launchlab.store.runs import Run

REPO_ROOT = Path(__file__).resolve().parents[1]
H200_SHARED_OPTIN = 232448  # 227 KiB opt-in shared memory per block
H200 = {"name": "Synthetic GPU", "compute_capability": "9.0", "sm_count": 132, "l2_bytes": 62914560,
        "shared_bytes_per_block_optin": H200_SHARED_OPTIN}


# ---------------------------------------------------------------- the declaration
def typed(**given) -> fusion.Parameters:
    """Parameters as a notebook or run.json gives them (text), parsed by the declaration."""
    return fusion.CHAPTER.parse_parameters(given)


def test_logical_bytes_per_call_are_declared_once_per_contender():
    per_element = {row.name: sum(row.bytes("1x1")) for row in fusion.ROWS}
    assert per_element["copy"] == per_element["fused_rms"] == per_element["fused_plain"] == 8
    assert per_element["row4"] == 24  # x three times, e twice, y once
    assert fusion.row("row4").bytes("2x3") == (16 * 6, 8 * 6)
    assert all(per_element[name] == 8 for name in fusion.LIBRARIES)
    assert fusion.logical_bytes_per_call("row4", 4096, 4096) == 24 * 4096 * 4096


def test_snapshot_of_the_default_variants_is_committed():
    committed = (REPO_ROOT / "tests/snapshots/fusion.txt").read_text()
    assert fusion.CHAPTER.snapshot() == committed, (
        "the expanded default variants changed; if that is intended, regenerate the snapshot with\n"
        "  PYTHONPATH=src python -c 'from launchlab.chapters import fusion; print(fusion.CHAPTER.snapshot(), end=\"\")' "
        "> tests/snapshots/fusion.txt")


def test_the_default_variants_are_what_the_accepted_run_measured():
    """The declaration describes what ran: the accepted run's sampled variants (and those it skipped with a
    reason) are exactly the expanded variants of its parameters, which are the defaults."""
    from launchlab.store.runs import read_jsonl

    run = open_run(evidence.accepted_run("fusion"))
    assert fusion.CHAPTER.parameters_of(run.record) == fusion.Parameters()
    sampled = {sample["variant"] for sample in read_jsonl(run.path / SAMPLES_FILE)}
    skipped = set(run.record.details.get("skipped_variants", {}))
    assert {str(v.id) for v in fusion.CHAPTER.variants()} == sampled | skipped


def test_typed_parameters_parse_once_and_record_as_their_text():
    given = typed(shapes="64x128, 16x1001", baselines="cudnn", sweep_4096="3:9:3", sweep_128="7,5",
                       profile_shapes="", sanitizer_tools="memcheck")
    assert given.shapes == ((64, 128), (16, 1001)) and given.baselines == ("cudnn",)
    assert list(given.sweep_4096.values) == [3, 6, 9] and given.sweep_128 == (7, 5) and given.profile_shapes == ()
    assert fusion.CHAPTER.recorded_parameters(given)["sweep_4096"] == "3:9:3"
    assert fusion.CHAPTER.recorded_parameters(given)["shapes"] == "64x128,16x1001"
    assert typed(**fusion.CHAPTER.defaults()) == fusion.Parameters()


def test_every_row_enters_known_outputs_and_names_its_library():
    assert {output for row in fusion.ROWS for output in row.outputs} <= set(fusion.OUTPUTS)
    assert [row.name for row in fusion.ROWS if row.requires.library] == list(fusion.LIBRARIES)
    assert fusion.submission_paths() == ["row4", "fused_rms", "fused_plain"]
    for variant in fusion.CHAPTER.variants():
        assert variant.enters <= variant.row.outputs, variant.id
        assert variant.calls == fusion.calls_per_invocation(variant.id)
        assert {variant.pacing(l2) for l2 in variant.l2_states} == (
            {"host"} if variant.l2_states == ("warm",) and variant.id.submission == "stream" else
            {"device"} if variant.id.submission != "stream" or variant.l2_states == ("cold",) else {"host", "device"})


def test_variant_table_has_every_contender_submission_and_bytes_per_invocation():
    table = {str(spec.id): spec for spec in fusion.CHAPTER.variants(fusion.Parameters())}
    shapes = [workloads.shape_name(*s) for s in workloads.FUSION_SHAPES]
    assert fusion.Parameters().shapes.text() == ",".join(shapes)
    for shape in shapes:
        for name in (row.name for row in fusion.ROWS if "table" in row.outputs):
            assert f"{name}.{shape}.stream" in table and f"{name}.{shape}.graph32" in table
        assert f"copy4.{shape}.stream" not in table   # the copy kernel stands beside the copy in the sweep and plane only
        for name in ("row4", "fused_rms", "fused_plain"):
            assert f"{name}.{shape}.graph" in table
    rows, cols = 4096, 1024
    assert table["copy.4096x1024.stream"].bytes_read == 4 * rows * cols
    assert table["copy.4096x1024.stream"].logical_bytes == 8 * rows * cols
    assert table["row4.4096x1024.stream"].bytes_read == 16 * rows * cols
    assert table["row4.4096x1024.graph32"].logical_bytes == 32 * 24 * rows * cols  # one replay = 32 calls
    # the sweep: 12 of 128 x N (one fixed: 65536) and the plane's 96 points, each with a graph<k> and a stream variant
    # of both copies, both fused modes and the three libraries; never the row path
    assert len(table) == 6 * (7 * 2 + 3) + (11 + 96) * 7 * 2
    swept = {str(spec.id): spec for spec in fusion.CHAPTER.variants(typed(sweep_4096="2:98:2", plane_points=0))}
    assert swept["copy.4096x2560.graph2"].logical_bytes == 2 * 8 * 4096 * 2560   # 2^28 / 80 MiB: 3 -> 2 calls
    assert swept["fused_rms.4096x256.graph32"].logical_bytes == 32 * 8 * 4096 * 256
    assert table["triton.128x262144.graph1"].bytes_written == 4 * 128 * 262144
    assert "cudnn.128x100003.stream" in table and "row4.4096x256.stream" not in table
    assert not any(key.startswith("row4.") and spec.id.case not in shapes for key, spec in table.items())
    assert "fused_plain.4096x512.graph16" not in table  # a fixed shape on the grid keeps its graph32


def test_libraries_follow_the_parameter_and_unknown_ones_are_refused():
    only_cudnn = typed(baselines="cudnn")
    assert fusion.contenders(only_cudnn) == ["copy", "copy4", "row4", "fused_rms", "fused_plain", "cudnn"]
    assert not any(spec.id.target in ("torch", "triton") for spec in fusion.CHAPTER.variants(only_cudnn))
    assert fusion.contenders(typed(baselines="")) == ["copy", "copy4", "row4", "fused_rms", "fused_plain"]
    with pytest.raises(ValueError, match="unknown baselines"):
        fusion.CHAPTER.variants(typed(baselines="cudnn,mkl"))


def test_calls_per_invocation_and_batch_size():
    assert fusion.calls_per_invocation("fused_rms.4096x4096.graph32") == fusion.CALLS_PER_GRAPH == 32
    assert fusion.calls_per_invocation("copy.4096x1280.graph4") == 4
    assert fusion.calls_per_invocation("copy.128x262144.graph1") == 1
    assert fusion.calls_per_invocation(VariantId("row4", "128x65536", "graph")) == 1
    assert fusion.calls_per_invocation("cudnn.4096x128.stream") == 1
    assert fusion.large(VariantId("copy", "4096x128", "graph32"))        # many calls: the smaller batch
    assert not fusion.large(VariantId("copy", "4096x128", "stream"))
    assert fusion.large(VariantId("copy", "4096x4096", "stream"))        # 2^24 elements


# ---------------------------------------------------------------- the sweep's grid
def test_sweep_grid_parses_both_series_with_the_fixed_shapes_on_them():
    grid = fusion.sweep_grid(typed(sweep_4096="2:10:4", sweep_128="4096, 65536,4096,100003"))
    assert grid == {"4096": [(4096, 256), (4096, 768), (4096, 1280)],
                    "128": [(128, 4096), (128, 65536), (128, 100003)]}  # a repeated N once, in the order given
    default = fusion.sweep_grid(fusion.Parameters())
    assert default["4096"] == []                     # the random plane took the 4096-row series' place
    assert [cols for _, cols in fusion.sweep_grid(typed(sweep_4096="2:98:2"))["4096"]] == list(range(256, 12544 + 1, 256))
    assert [cols for _, cols in default["128"]] == [4096, 5000, 8192, 12345, 16384, 32768, 50000, 65536, 100003,
                                                    131072, 200000, 262144]
    assert (128, 65536) in default["128"]  # fixed shapes stay on the grid
    assert fusion.sweep_grid(typed(sweep_4096="3:3:1", sweep_128=" 7 ")) == {"4096": [(4096, 384)],
                                                                                 "128": [(128, 7)]}
    assert fusion.sweep_grid(typed(sweep_4096="", sweep_128=" ")) == {"4096": [], "128": []}


def test_sweep_shapes_leave_out_the_fixed_shapes_and_all_shapes_put_those_first():
    given = typed(shapes="4096x1024,128x65536", sweep_4096="6:10:2", sweep_128="65536,4096,4096", plane_points=0)
    assert fusion.sweep_shapes(given) == [(4096, 768), (4096, 1280), (128, 4096)]
    assert fusion.all_shapes(given) == [(4096, 1024), (128, 65536), (4096, 768), (4096, 1280), (128, 4096)]
    assert fusion.device_submission(given, 4096, 1024) == fusion.DEVICE == "graph32"  # fixed: graph32
    assert fusion.device_submission(given, 4096, 768) == "graph8"
    assert fusion.device_submission(given, 4096, 1280) == "graph4"
    assert fusion.sweep_shapes(typed(sweep_4096="", sweep_128="")) == []
    assert fusion.all_shapes(typed(sweep_4096="", sweep_128="", plane_points=0)) == list(workloads.FUSION_SHAPES)
    with_plane = typed(sweep_4096="", sweep_128="", plane_points=2)
    assert fusion.all_shapes(with_plane) == list(workloads.FUSION_SHAPES) + fusion.plane_shapes(with_plane)


@pytest.mark.parametrize("field, text, message", [
    ("sweep_4096", "2:98", "is not first:last:step"), ("sweep_4096", "2:x:2", "is not first:last:step"),
    ("sweep_4096", "2:98:2:1", "is not first:last:step"), ("sweep_4096", "2-98-2", "is not first:last:step"),
    ("sweep_4096", "0:10:2", "needs 1 <= first <= last"), ("sweep_4096", "10:2:2", "needs 1 <= first <= last"),
    ("sweep_4096", "2:10:0", "step >= 1"), ("sweep_4096", "2:10:-2", "step >= 1"),
    ("sweep_128", "4096;8192", "is not a comma-separated list"), ("sweep_128", "4096,8k", "is not a comma-separated"),
    ("sweep_128", "4096,1.5", "is not a comma-separated"), ("sweep_128", "4096,0", "must be positive"),
    ("sweep_128", "-5", "must be positive")])
def test_sweep_grid_refuses_bad_input_with_a_clear_error(field, text, message):
    with pytest.raises(ValueError, match=f"parameter {field} of fusion must be .*{message}"):  # refused before any run
        typed(**{field: text})


def test_sweep_calls_are_powers_of_two_from_1_to_32():
    assert fusion.SWEEP_MAX_CALLS == 32 and fusion.SWEEP_BYTES_PER_REPLAY == 256 * 2**20
    assert fusion.sweep_calls(4096, 128) == 32      # 4 MiB a call: 64 would fit, at most 32
    assert fusion.sweep_calls(4096, 1024) == 8      # 32 MiB a call
    assert fusion.sweep_calls(4096, 1280) == 4      # 40 MiB: 6.4 calls, rounded down to a power of two
    assert fusion.sweep_calls(128, 131072) == 2
    assert fusion.sweep_calls(128, 262144) == 1     # exactly 256 MiB a call
    assert fusion.sweep_calls(4096, 12544) == 1     # more than a replay's bytes: still one call
    assert fusion.sweep_calls(1, 1) == 32
    for rows in (1, 7, 128, 4096):
        for cols in (1, 3, 1000, 12544, 131072, 262144, 10**7):
            calls, per_call = fusion.sweep_calls(rows, cols), 8 * rows * cols
            assert 1 <= calls <= fusion.SWEEP_MAX_CALLS and calls & (calls - 1) == 0, (rows, cols, calls)
            assert calls == 1 or calls * per_call <= fusion.SWEEP_BYTES_PER_REPLAY          # within the budget ...
            assert calls == fusion.SWEEP_MAX_CALLS or 2 * calls * per_call > fusion.SWEEP_BYTES_PER_REPLAY  # ... the most


def test_sweep_contenders_are_the_copy_the_fused_modes_and_the_libraries():
    assert fusion.sweep_contenders(fusion.Parameters()) == ["copy", "copy4", "fused_rms", "fused_plain", "cudnn", "torch",
                                                            "triton"]
    assert fusion.sweep_contenders(typed(baselines="")) == ["copy", "copy4", "fused_rms", "fused_plain"]


# ---------------------------------------------------------------- the fused plans (launch policy per shape)
def assert_policy_pick(plan: dict, rows: int, cols: int, device: dict) -> None:
    """The launch policy's contract: the plan is the candidate of least score (the first on a tie), carrying every
    candidate's prediction by tag and the model's version, and its module builds the kernels it names."""
    predicted = plans.predictions(rows, cols, device)
    scores = [plans.score(times) for _, times in predicted]
    best = scores.index(min(scores))
    assert {k: v for k, v in plan.items() if k not in ("predicted_us", "model")} == predicted[best][0], (rows, cols)
    assert plan["predicted_us"] == {candidate["tag"]: times for candidate, times in predicted}
    assert plan["model"] == fused_cost.MODEL_VERSION
    assert plans.score(plan["predicted_us"][plan["tag"]]) == min(scores)
    assert plan["family"] == ("fused_softmax" if plan["design"] == "row" else fused_policy.FAMILY)
    assert len(plans.plan_kernels(plan)) == 2


def test_fused_plans_follow_the_declared_policy_at_fixed_and_swept_shapes():
    parameters = typed(shapes="4096x128,4096x4096,128x65536", sweep_4096="", sweep_128="131072,1000003", plane_points=0)
    found = fusion.fused_plans(parameters, H200)
    assert list(found) == ["4096x128", "4096x4096", "128x65536", "128x131072", "128x1000003"]
    for shape, plan in found.items():
        assert_policy_pick(plan, *workloads.parse_shapes(shape)[0], H200)
    # the SM count is the run's device's: the predictions follow it
    fewer = H200 | {"sm_count": 128}
    assert_policy_pick(fusion.fused_plan(128, 131072, fewer), 128, 131072, fewer)
    assert fusion.fused_plan(128, 131072, fewer)["predicted_us"] != fusion.fused_plan(128, 131072, H200)["predicted_us"]


def test_the_accepted_run_was_planned_by_the_declared_policy():
    """The accepted chapter 3 run: its plans are what the code declares for its parameters and device, every plan's
    module was built, and its summaries and headline recompute exactly from its raw files."""
    run = open_run(evidence.accepted_run("fusion"))
    parameters = summary.parameters_of(run.record)
    plans = run.record.details["fused_plans"]
    assert plans == fusion.fused_plans(parameters, run.record.device)
    assert {plan["module"] for plan in plans.values()} <= {p.name for p in (run.path / "builds").iterdir()}
    for shape, plan in plans.items():   # each the argmin of its candidates on the run's device
        assert_policy_pick(plan, *workloads.parse_shapes(shape)[0], run.record.device)
    summaries, headline = recompute(run.path)
    assert json.dumps(summaries, sort_keys=True) == json.dumps(run.summaries, sort_keys=True)
    assert headline == run.headline
    sweep = summaries["sweep"]
    assert [(p["rows"], p["cols"]) for p in sweep["4096"]] == fusion.sweep_grid(parameters)["4096"]
    assert [(p["rows"], p["cols"]) for p in sweep["128"]] == fusion.sweep_grid(parameters)["128"]
    points = sweep["4096"] + sweep["128"]
    for l2 in fusion.L2_STATES:  # the extremes are the points' own, recomputed here independently
        ge = [p["ratios"]["fused_plain_over_copy"][l2]["median"] for p in points if p["cols"] >= 1024]
        assert sweep["extremes"][f"fused_plain_over_copy.max_n_ge_1024.{l2}"]["value"] == max(ge)
        speedups = [p["ratios"]["cudnn_over_fused_plain"][l2]["median"] for p in points]
        assert sweep["extremes"][f"min_speedup.cudnn.{l2}"]["value"] == min(speedups)
    # compute-sanitizer: every requested tool over every case and the plane's cases (both modes, stream and graph),
    # and the copy kernel at the plane's two smallest points (stream and graph) and on one unaligned view
    from launchlab.chapters.fusion import sanitize

    plane_cases = sanitize.plane_cases(parameters.plane_points, parameters.plane_seed, run.record.device)
    copy_points = min(2, parameters.plane_points) or 1
    checks = 4 * (len(sanitize.CASES) + len(plane_cases)) + 2 * copy_points + 1
    assert {tool: r["child_checks"] for tool, r in summaries["sanitizer"].items()} == {
        tool: checks for tool in parameters.sanitizer_tools}


def test_parameters_cell_equals_declared_defaults():
    notebook = json.loads((REPO_ROOT / "book/fusion.ipynb").read_text())
    cell = next(c for c in notebook["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    namespace = {}
    exec("".join(cell["source"]), namespace)
    declared = fusion.CHAPTER.defaults()
    assert {k: namespace[k] for k in declared} == declared
    assert set(namespace) - {"__builtins__"} == set(declared) | {"mode", "run_id"}


# ---------------------------------------------------------------- plain-softmax oracle
def test_plain_softmax_hand_checked_and_rows_sum_to_one():
    p = 1 / (1 + math.e)
    assert oracles.softmax(np.array([[3.0, 4.0]])) == pytest.approx(np.array([[p, 1 - p]]), rel=1e-15)
    assert oracles.softmax(np.array([[-2.0]])) == pytest.approx(np.array([[1.0]]))
    x = workloads.rms_softmax_fixture(11, 0, 9, 77)
    assert oracles.softmax(x).sum(axis=1) == pytest.approx(np.ones(9), rel=1e-12)


def test_plain_softmax_is_the_rms_form_with_rho_one():
    x = workloads.rms_softmax_fixture(12, 1, 6, 301).astype(np.float64)
    rho = np.sqrt(np.mean(x * x, axis=1, keepdims=True))
    assert oracles.rms_softmax(x) == pytest.approx(rho * oracles.softmax(x), rel=1e-13)
    assert oracles.softmax(x + 50.0) == pytest.approx(oracles.softmax(x), rel=1e-10)  # shift invariance
    with pytest.raises(ValueError, match="non-finite"):
        oracles.softmax(np.array([[1.0, np.inf]]))


# ---------------------------------------------------------------- build policy per shape
def test_chunks_count_the_worst_aligned_row():
    assert fused_policy.worst_chunks(4096, 4096) == 1024       # every row starts on a 16-byte boundary
    assert fused_policy.worst_chunks(3, 70001) == 17501        # (3 + 70001 + 3) // 4: a row may start 3 floats in
    assert fused_policy.worst_chunks(3, 70002) == 17502
    assert fused_policy.worst_chunks(1, 70002) == 17501        # a single row starts at the aligned base


@pytest.mark.parametrize("rows, cols, tier, block, reg_chunks", [
    (4096, 128, "registers", 32, 4), (4096, 512, "registers", 32, 4), (4096, 1024, "registers", 32, 8),
    (4096, 4096, "registers", 256, 4), (4096, 16384, "shared", 512, 4), (128, 65536, "streamed", 1024, 4),
    (3, 70001, "streamed", 1024, 4), (1823, 781, "registers", 32, 8), (7, 6001, "shared", 256, 4),
])
def test_fused_policy_per_shape(rows, cols, tier, block, reg_chunks):
    config = fusion.fused_config(rows, cols, H200_SHARED_OPTIN)
    assert (config["tier"], config["block"], config["defines"]["REG_CHUNKS"]) == (tier, block, reg_chunks)
    assert config["defines"]["BLOCK"] == block
    assert config["defines"]["MIN_BLOCKS"] == fusion.min_blocks(block, fusion.REGISTER_BUDGET[tier])
    assert fusion.fused_tier(rows, cols, block, config["shared_bytes"], reg_chunks) == tier
    if tier == "shared":
        assert config["shared_bytes"] == 16 * fused_policy.worst_chunks(rows, cols) <= H200_SHARED_OPTIN
    else:
        assert config["shared_bytes"] == 0


@pytest.mark.parametrize("rows, cols, block", [(128, 5000, 256), (128, 8192, 256), (128, 12345, 512),
                                              (128, 16384, 512), (131, 32768, 1024), (1, 32765, 1024)])
def test_few_rows_keep_long_rows_in_registers(rows, cols, block):
    """Fewer rows than SMs: rows of up to 8 x 1024 chunks stay in registers, 8 chunks a thread, the smallest
    power-of-two block (at least 256) that holds them, under the wider register budget."""
    config = fusion.fused_config(rows, cols, H200_SHARED_OPTIN, 132)
    assert (config["tier"], config["block"], config["defines"]["REG_CHUNKS"]) == ("registers", block, 8)
    assert config["defines"]["MIN_BLOCKS"] == fusion.min_blocks(block, plans.WIDE_REGISTER_BUDGET)
    assert fusion.fused_tier(rows, cols, block, 0, 8) == "registers"
    many = fusion.fused_config(132, cols, H200_SHARED_OPTIN, 132)   # as many rows as SMs: the old tiers
    assert many["defines"]["REG_CHUNKS"] == fusion.REG_CHUNKS and many["tier"] != "registers"


def test_few_rows_rule_stops_at_8_x_1024_chunks_and_needs_the_sm_count():
    assert fusion.fused_config(128, 32768, H200_SHARED_OPTIN, 132)["tier"] == "registers"
    assert fusion.fused_config(128, 32772, H200_SHARED_OPTIN, 132)["tier"] == "shared"   # 8193 chunks
    assert fusion.fused_config(128, 8192, H200_SHARED_OPTIN)["tier"] == "shared"         # no SM count given
    assert fusion.fused_config(128, 4096, H200_SHARED_OPTIN, 132) == fusion.fused_config(128, 4096, H200_SHARED_OPTIN)


def test_tier_follows_the_kernels_rule_and_builds_are_shared():
    assert fusion.fused_tier(2, 16384, 1024, 0) == "registers"
    assert fusion.fused_tier(2, 16384, 512, 0) == "streamed"
    assert fusion.fused_tier(2, 16384, 512, 65536) == "shared"
    assert fusion.fused_tier(2, 16384, 512, 65535) == "streamed"
    assert [fusion.min_blocks(b) for b in (32, 64, 128, 256, 512, 1024)] == [32, 20, 10, 5, 2, 1]
    assert [fusion.min_blocks(b, 64) for b in (32, 64, 128, 256, 512, 1024)] == [32, 16, 8, 4, 2, 1]
    configs = {workloads.shape_name(*shape): fusion.fused_config(*shape, H200_SHARED_OPTIN, H200["sm_count"])
               for shape in fusion.Parameters().shapes}
    assert configs["4096x128"]["module"] == configs["4096x512"]["module"]  # one build serves both
    assert len({c["module"] for c in configs.values()}) == 5


# ---------------------------------------------------------------- per call, paired ratios, pacing
def sample(measurement, round_index, variant, count, event_us_per_invocation=None, enqueue_us=1.0):
    event_ms = None if event_us_per_invocation is None else count * event_us_per_invocation / 1e3
    total_ns = int(count * (event_us_per_invocation or enqueue_us) * 1e3) + 1000
    return {"measurement": measurement, "round": round_index, "position": 0, "variant": str(variant), "count": count,
            "launches": 1, "enqueue_ns": int(count * enqueue_us * 1e3), "complete_ns": total_ns, "event_ms": event_ms}


def test_per_call_and_call_ratio_divide_by_the_calls_of_each_side():
    assert summary.per_call({"median": 64.0, "p10": 32.0, "p90": 96.0, "n": 21}, 32) == \
        {"median": 2.0, "p10": 1.0, "p90": 3.0, "n": 21}
    samples = []
    for r in range(21):
        drift = 1 + r / 10  # the within-round ratio stays fixed while the GPU drifts
        samples.append(sample("warm_batch", r, "a.1x1.graph32", 32, 32 * 3.0 * drift))
        samples.append(sample("warm_batch", r, "b.1x1.graph32", 32, 32 * 2.0 * drift))
        samples.append(sample("warm_batch", r, "a.1x1.stream", 128, 4.5 * drift))
    grouped = by_variant(samples)
    assert sorted(grouped) == ["a.1x1.graph32", "a.1x1.stream", "b.1x1.graph32"] and len(grouped["a.1x1.stream"]) == 21
    assert summary.call_ratio(grouped, "a.1x1.graph32", "b.1x1.graph32", "warm_batch")["median"] == pytest.approx(1.5)
    stream_over_device = summary.call_ratio(grouped, "a.1x1.stream", "a.1x1.graph32", "warm_batch")
    assert stream_over_device["median"] == pytest.approx(1.5) and stream_over_device["ci_high"] == pytest.approx(1.5)
    graph_over_stream = summary.call_ratio(grouped, "a.1x1.graph32", "a.1x1.stream", "warm_batch")
    assert graph_over_stream["median"] == pytest.approx(1 / 1.5)  # the scale follows which side holds 32 calls
    with pytest.raises(ValueError, match="no round"):
        summary.call_ratio(grouped, "a.1x1.graph32", "c.1x1.graph32", "warm_batch")  # a side never measured


def test_graph_pacing_flags_a_host_paced_round():
    samples = [sample("warm_batch", r, "a.1x1.graph32", 32, 100.0, enqueue_us=3.0) for r in range(21)]
    samples += [sample("warm_batch", r, "b.1x1.graph32", 32, 100.0, enqueue_us=150.0 if r == 4 else 3.0) for r in range(21)]
    pacing = summary.graph_pacing(samples)
    assert pacing["a.1x1.graph32"]["device_paced"] and pacing["a.1x1.graph32"]["host_share_max"] == pytest.approx(0.03)
    assert not pacing["b.1x1.graph32"]["device_paced"] and pacing["b.1x1.graph32"]["host_share_max"] == pytest.approx(1.5)
    assert pacing["a.1x1.graph32"]["host_enqueue_us_per_replay"]["median"] == pytest.approx(3.0)


def test_bandwidth_is_logical_bytes_per_call_over_device_time():
    device = {"copy": {"64x1024": {"warm": {"median": 10.0}, "cold": {"median": 20.0}}},
              "row4": {"64x1024": {"warm": {"median": 30.0}, "cold": {"median": 60.0}}},
              "fused_rms": {"64x1024": {"warm": {"median": 11.5}, "cold": {"median": 23.0}}}}
    band = summary.bandwidth(device, ["64x1024"])
    assert band["copy"]["64x1024"]["warm_gbs"] == pytest.approx(8 * 64 * 1024 / 10.0 / 1e3)
    assert band["row4"]["64x1024"]["warm_pct_of_copy"] == pytest.approx(100)  # 3x the bytes in 3x the time
    assert band["fused_rms"]["64x1024"]["cold_pct_of_copy"] == pytest.approx(100 / 1.15)
    assert stats.gigabytes_per_second(1e9, 1e6) == pytest.approx(1.0)


# ---------------------------------------------------------------- Nsight Compute output
NCU_HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
              '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')


def ncu_lines(kernel_id: int, kernel: str, read: str, write: str, unit: str = "byte", read_unit: str | None = None):
    prefix = (f'"{kernel_id}","1234","python3","127.0.0.1","{kernel}","1","13","(256, 1, 1)","(4096, 1, 1)","0","9.0",'
              '"Command line profiler metrics"')
    return [f'{prefix},"dram__bytes_read.sum","{read_unit or unit}","{read}"',
            f'{prefix},"dram__bytes_write.sum","{unit}","{write}"']


# As chapters/fusion/profile.py's child launches the default profile rows: the fixture's kernel (before the first marker), then the copy, the row
# path, fused RMS, fused plain and cuDNN, each followed by the marker (empty_kernel). Here fused plain launched
# nothing and a stray kernel follows the last marker.
NCU_KERNELS = [
    (0, "normal_float32", "1,000", "67108864"),                        # drawing the input: before the first marker
    (1, "empty_kernel", "0", "0"),
    (2, "copy_kernel", "67108864", "67108864"),                        # copy
    (3, "empty_kernel", "0", "0"),
    (4, "row_rms", "67,108,864", "1,024"), (5, "row_max", "67108864", "0"),
    (6, "row_exp_sum", "67.108864", "67108864"), (7, "row_scale", "67108864", "67108864"),   # row4
    (8, "empty_kernel", "0", "0"),
    (9, "narrow_rms_softmax", "67108864", "60000000"),                  # fused RMS (any design's kernel)
    (10, "empty_kernel", "0", "0"),
    (11, "empty_kernel", "0", "0"),                                     # fused plain: nothing between the markers
    (12, "void cudnn::softmax_fw_kernel<float>(int, float *)", "67108864", "33554432"),
    (13, "void cudnn::softmax_fw_kernel<float>(int, float *)", "33554432", "33554432"),  # cuDNN: two kernels
    (14, "empty_kernel", "0", "0"),
    (15, "stray_kernel", "5", "5"),                                     # after the last marker: no variant's
]
NCU_CSV = "\n".join(["==PROF== Connected to process 1234", NCU_HEADER]
                    + [line for kernel_id, kernel, read, write in NCU_KERNELS
                       for line in ncu_lines(kernel_id, kernel, read, write,
                                             read_unit="Mbyte" if kernel == "row_exp_sum" else None)]
                    + ["==PROF== Disconnected from process 1234", ""])


def test_ncu_csv_is_parsed_with_units():
    rows = parse_ncu_csv(NCU_CSV)
    assert len(rows) == 2 * len(NCU_KERNELS)
    by_id = {(r["id"], r["metric"]): r for r in rows}
    assert by_id[(4, "dram__bytes_read.sum")]["bytes"] == 67108864                  # thousands separators
    assert by_id[(6, "dram__bytes_read.sum")]["bytes"] == pytest.approx(67108864)   # Mbyte
    assert by_id[(12, "dram__bytes_read.sum")]["kernel"] == "void cudnn::softmax_fw_kernel<float>"
    assert parse_ncu_csv("==ERROR== Failed to initialize the profiler\n") == []


def test_ncu_dram_bytes_are_attributed_by_the_markers():
    rows = parse_ncu_csv(NCU_CSV)
    order = profile.ORDER_BEFORE_RECORDED
    assert order == ("copy", "row4", "fused_rms", "fused_plain", "cudnn")   # the rows a run before the copy kernel had
    assert fusion.rows_entering("profile") == ["copy", "copy4", "row4", "fused_rms", "fused_plain", "cudnn"]
    by_variant = ncu.dram_by_marker(rows, order)
    assert list(by_variant) == ["copy", "row4", "fused_rms", "cudnn"]  # fused plain launched nothing: left out
    assert by_variant["copy"] == {"read_bytes": 67108864, "write_bytes": 67108864, "kernels": 1}  # not the fixture's
    assert by_variant["row4"] == {"read_bytes": 4 * 67108864, "write_bytes": 1024 + 2 * 67108864, "kernels": 4}
    assert by_variant["fused_rms"] == {"read_bytes": 67108864, "write_bytes": 60000000, "kernels": 1}
    assert by_variant["cudnn"] == {"read_bytes": 3 * 33554432, "write_bytes": 2 * 33554432, "kernels": 2}
    assert ncu.dram_by_marker(list(reversed(rows)), order) == by_variant  # by kernel ID, not by line order
    assert profile.MARKER == "empty_kernel"
    assert list(ncu.dram_by_marker(rows, ["copy", "row4"])) == ["copy", "row4"]  # the recorded order names the rows


def test_ncu_without_markers_attributes_nothing():
    order = profile.ORDER_BEFORE_RECORDED
    unmarked = [r for r in parse_ncu_csv(NCU_CSV) if r["kernel"] != profile.MARKER]
    assert ncu.dram_by_marker(unmarked, order) == {}
    first = [r for r in parse_ncu_csv(NCU_CSV) if r["id"] <= 2]  # the target stopped after the copy: no closing marker
    assert ncu.dram_by_marker(first, order) == {}
    assert ncu.dram_by_marker([], order) == {}


def test_ncu_runs_the_chapter_child_with_the_plan_and_the_rows(monkeypatch, tmp_path):
    import subprocess
    import sys

    plan = fusion.fused_plan(4096, 128, H200)
    ran = []

    def fake_run(command, **options):
        ran.append(command)
        Path(command[command.index("--log-file") + 1]).write_text(NCU_CSV)
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(ncu, "find_ncu", lambda: "/opt/ncu")
    monkeypatch.setattr(subprocess, "run", fake_run)
    result = profile.dram_bytes(4096, 128, plan, ["copy", "fused_rms"])
    command = ran[0]
    assert command[:3] == ["/opt/ncu", "--clock-control", "none"] and "--csv" in command
    assert command[command.index("--metrics") + 1] == "dram__bytes_read.sum,dram__bytes_write.sum"
    assert command[-7:-1] == [sys.executable, "-m", "launchlab.chapters.fusion.profile", "4096", "128",
                              json.dumps(plan, sort_keys=True)]
    assert command[-1] == "copy,fused_rms" and result["order"] == ["copy", "fused_rms"]
    assert result["csv"] == NCU_CSV and result["error"] is None
    monkeypatch.setattr(ncu, "find_ncu", lambda: None)
    assert profile.dram_bytes(1, 2, plan, ["copy"])["error"] == "ncu (Nsight Compute) is not on this host"


# ---------------------------------------------------------------- a synthetic run of every declared variant
# Device time per call (µs) at 4096x4096; other shapes scale by their elements. torch is declared but absent
# (but in `every_library_run`).
DEVICE_US = {"copy": 30.0, "copy4": 29.0, "row4": 100.0, "fused_rms": 33.0, "fused_plain": 32.0, "cudnn": 48.0, "triton": 36.0,
             "torch": 40.0}  # torch: in the run with every library
HOST_US = {"row4": 16.0}  # host enqueue per stream call; 4 µs for the others
ABSENT = "torch"
# The chapter's fixed shapes with a small sweep (sweep-only points 4096x256, 4096x768, 128x4096 and 128x262144;
# 4096x512, 4096x1024 and 128x65536 are fixed shapes on its grid).
SYNTHETIC_PARAMETERS = typed(sweep_4096="2:8:2", sweep_128="4096,65536,262144", plane_points=8)
SANITIZER_CHECKS = 44


def per_call_us(name: str, shape: str) -> float:
    rows, cols = workloads.parse_shapes(shape)[0]
    return DEVICE_US[name] * max(0.05, rows * cols / 4096**2)


def synthetic_samples(parameters, warm_us=per_call_us, cold_us=None, absent=ABSENT) -> list[dict]:
    """Samples of every declared variant (but the absent library's) as run.py and sweep.py take them: at a fixed
    shape every variant warm, stream and one-call graph variants cold too; at a sweep point its graph<k> warm
    and its stream variant cold. warm_us(name, shape): device time per call; cold: 1.5 times that by default.
    The `absent` library (None: none) has no samples."""
    cold_us = cold_us or (lambda name, shape: 1.5 * warm_us(name, shape))
    samples = []
    for spec in fusion.CHAPTER.variants(parameters):
        vid = spec.id
        if vid.target == absent:
            continue
        calls = fusion.calls_per_invocation(vid)
        count = FROZEN.large_batch if fusion.large(vid) else FROZEN.batch
        enqueue = 3.0 if calls > 1 else HOST_US.get(vid.target, 4.0)
        warm, cold = "warm" in spec.l2_states, "cold" in spec.l2_states
        for r in range(FROZEN.rounds):
            wobble = 1 + 0.01 * ((r * 7) % 5)
            device = calls * warm_us(vid.target, vid.case) * wobble
            stream_event = max(device, enqueue)  # a stream batch runs at the slower of host and GPU
            event = device if calls > 1 else stream_event
            if warm:
                samples.append(sample("warm_single", r, vid, 1, None, enqueue) | {"complete_ns": int((event + 9) * 1e3)})
                samples.append(sample("warm_batch", r, vid, count, event, enqueue))
            if cold:
                samples += [sample("cold", r, vid, 1, cold_us(vid.target, vid.case) * wobble, enqueue)
                            for _ in range(FROZEN.cold_repeats)]
    return samples


def sanitizer_result(tool: str, errors: int) -> dict:
    """sanitizer/<tool>.json as gpu/sanitizer.record writes it."""
    return {"tool": tool, "example": "fusion", "command": ["compute-sanitizer", "--tool", tool], "exit_code": 0,
            "errors": errors, "inner": {"passed": True, "checks": {f"case{i}": True for i in range(SANITIZER_CHECKS)}},
            "tail": [], "error": None}


def write_synthetic_run(root: Path, run_id: str = "20990101T000000Z-ch03", parameters=None,
                        sanitizer: dict | None = None, absent: str | None = ABSENT) -> Path:
    """A run of `parameters` (SYNTHETIC_PARAMETERS by default) with made-up timings, Nsight Compute bytes at 4096x4096
    (and an error at 128x65536), compute-sanitizer results {tool: errors} (default: memcheck clean, racecheck
    with 2 errors; {} for none: no sanitizer/ directory) and one library `absent` (torch; None: none)."""
    parameters = parameters or SYNTHETIC_PARAMETERS
    sanitizer = {"memcheck": 0, "racecheck": 2} if sanitizer is None else sanitizer
    writer = evidence.RunWriter(run_id, root)
    plans = fusion.fused_plans(parameters, H200)
    shapes = [workloads.shape_name(*shape) for shape in parameters.shapes]
    libraries = {name: {"requested": True, "unavailable": {}, "setup": {}} for name in fusion.requested_libraries(parameters)}
    if "cudnn" in libraries:
        libraries["cudnn"]["setup"] = {shape: {"cudnn_version": 91002, "call": "cudnnSoftmaxForward"} for shape in plans}
    if "triton" in libraries:
        libraries["triton"]["setup"] = {shape: {"kernel": "softmax_row_resident" if shape != "128x65536" else
                                                "softmax_row_looped"} for shape in plans}
    if absent in libraries:
        libraries[absent]["unavailable"] = {shape: f"{absent} cannot be imported" for shape in plans}
    details = {"fused_plans": plans, "baselines": libraries, "calls_per_graph": 32,
               "cold_l2": {"flush_bytes": 2 * 62914560, "wait_ns": FROZEN.cold_wait_ns}}
    if sanitizer:
        details["sanitizer"] = {"executable": "compute-sanitizer", "clean": not any(sanitizer.values()), "error": None,
                                "tools": list(sanitizer), "problem": "every fused design (synthetic)"}
    record = RunRecord(chapter="fusion", run_id=run_id, parameters=fusion.CHAPTER.recorded_parameters(parameters),
                       protocol=FROZEN.record(), host_path=fusion.CHAPTER.host_path, device=dict(H200),
                       environment={"driver": "0", "libraries": {"cudnn": "9.10.2"}}, git_commit="0" * 40,
                       source_tree_sha256="0" * 64, states={},
                       validation={"verdict": "passed", "checks": 2 * len(shapes)}, details=details)
    writer.write_jsonl(SAMPLES_FILE, synthetic_samples(parameters, absent=absent))
    builds = {plan["module"]: fusion.plan_kernels(plan) for plan in plans.values()} | {"row_softmax": fusion.ROW_KERNELS}
    for label, kernels in builds.items():
        writer.write_json(f"builds/{label}/record.json", {
            "resources_loaded": {k: {"registers": 40, "shared_bytes": 128, "local_bytes": 0} for k in kernels},
            "nvcc": {"resources": {k: {"spill_stores": 0, "spill_loads": 0, "stack_bytes": 0} for k in kernels}}})
    writer.write_json("graphs/setup.json", {
        str(spec.id): {"capture_us": 10.0, "end_capture_us": 20.0, "instantiate_us": 0.0, "upload_us": 5.0,
                       "first_replay_us": 40.0, "instantiated_in_end_capture": True,
                       "calls": fusion.calls_per_invocation(spec.id), "nodes": fusion.calls_per_invocation(spec.id)}
        for spec in fusion.CHAPTER.variants(parameters) if spec.id.submission != "stream" and spec.id.target != absent})
    writer.write_text("profiles/ncu_4096x4096.csv", NCU_CSV)
    writer.write_json("profiles/ncu_4096x4096.json", {"command": ["ncu"], "returncode": 0, "error": None})
    writer.write_text("profiles/ncu_128x65536.csv", "")
    writer.write_json("profiles/ncu_128x65536.json", {
        "command": ["ncu"], "returncode": 1, "error": "ncu exited with status 1 and no counter values: ERR_NVGPUCTRPERM"})
    for tool, errors in sanitizer.items():
        writer.write_json(f"sanitizer/{tool}.json", sanitizer_result(tool, errors))
    writer.write_json("validation.json", [
        {"phase": phase, "variant": f"fused_rms.{shape}.stream", "fixture": fixture, "passed": True,
         "failing_elements": 0, "max_abs_error": 1e-8, "relative_l2_error": 1e-7}
        for shape in shapes for phase, fixture in (("before", 0), ("after", 3))])
    writer.write_json("run.json", record.to_dict())
    summaries, headline = recompute(writer.path)
    writer.write_json("summaries.json", summaries)
    writer.write_json("headline.json", headline)
    return writer.path


@pytest.fixture(scope="module")
def synthetic_run(tmp_path_factory) -> Run:
    return open_run(write_synthetic_run(tmp_path_factory.mktemp("evidence")), require_sealed=False)


def test_summaries_are_pure_and_recompute_exactly(synthetic_run):
    assert analyze(synthetic_run.path) == []
    again, _ = recompute(synthetic_run.path)
    assert json.dumps(again, sort_keys=True) == json.dumps(synthetic_run.summaries, sort_keys=True)
    evidence.seal(synthetic_run.path)
    assert open_run(synthetic_run.path).headline == synthetic_run.headline


def test_device_time_is_per_call_and_ratios_are_paired(synthetic_run):
    s = synthetic_run.summaries
    assert s["contenders"] == ["copy", "row4", "fused_rms", "fused_plain", "cudnn", "triton"]
    fused = s["device"]["fused_rms"]["4096x4096"]
    assert fused["warm"]["median"] == pytest.approx(33.0 * 1.02, rel=1e-9)  # the median round's wobble
    assert fused["cold"]["median"] == pytest.approx(1.5 * 33.0 * 1.02, rel=1e-9)
    graph = s["ratios"]["graph"]
    assert graph["fused_rms_over_copy"]["4096x4096"]["warm"]["median"] == pytest.approx(1.1)
    assert graph["fused_plain_over_copy"]["128x65536"]["cold"]["median"] == pytest.approx(32 / 30)
    assert graph["cudnn_over_fused_plain"]["4096x128"]["warm"]["median"] == pytest.approx(1.5)
    assert "torch_over_fused_plain" not in graph  # absent: omitted, never faked
    # the host view: at 4096x128 a stream batch runs at the host's pace, the graph32 device time does not
    assert s["host_view"]["row4.4096x128.stream"]["host_bound"] is True
    assert s["host_view"]["copy.4096x4096.stream"]["host_bound"] is False
    assert s["ratios"]["stream"]["row4_over_fused_rms"]["4096x128"]["warm"]["median"] == pytest.approx(4.0)
    assert graph["row4_over_fused_rms"]["4096x128"]["warm"]["median"] == pytest.approx(100 / 33)
    assert all(p["device_paced"] for p in s["graph_pacing"].values())
    assert s["cold_pacing"]["row4.4096x4096.stream"] == {"samples": 63, "host_enqueue_exceeded_wait": 0}
    assert s["ratios"]["submission"]["row4_stream_over_graph"]["4096x4096"]["warm"]["median"] == pytest.approx(1.0)
    assert s["dram"]["4096x4096"]["contenders"]["row4"]["measured_over_logical"] == pytest.approx(1.0, rel=1e-4)
    assert s["dram"]["4096x4096"]["contenders"]["fused_rms"]["measured_over_logical"] == pytest.approx(
        (67108864 + 60000000) / (8 * 4096 * 4096))
    assert "fused_plain" not in s["dram"]["4096x4096"]["contenders"]  # nothing between its markers
    assert s["dram"]["128x65536"] == {"error": "ncu exited with status 1 and no counter values: ERR_NVGPUCTRPERM",
                                      "contenders": {}}
    assert s["configs"] == fusion.fused_plans(SYNTHETIC_PARAMETERS, H200)
    assert {tool: (r["clean"], r["errors"], r["child_checks"]) for tool, r in s["sanitizer"].items()} == {
        "memcheck": (True, 0, SANITIZER_CHECKS), "racecheck": (False, 2, SANITIZER_CHECKS)}


def test_the_sweep_holds_its_points_with_the_fixed_shapes_standing_in(synthetic_run):
    sweep = synthetic_run.summaries["sweep"]
    assert [(p["shape"], p["calls_per_replay"]) for p in sweep["4096"]] == [
        ("4096x256", 32), ("4096x512", 32), ("4096x768", 8), ("4096x1024", 32)]
    assert [(p["shape"], p["calls_per_replay"]) for p in sweep["128"]] == [
        ("128x4096", 32), ("128x65536", 32), ("128x262144", 1)]
    configs = synthetic_run.summaries["configs"]   # the run's plans (fused_plans, checked above)
    assert all(p["design"] == configs[p["shape"]]["design"] for p in sweep["4096"] + sweep["128"])
    point = sweep["128"][2]
    assert sorted(point["device_us"]) == ["copy", "copy4", "cudnn", "fused_plain", "fused_rms", "triton"]  # torch absent
    assert point["device_us"]["fused_rms"]["warm"] == pytest.approx(33.0 * 2 * 1.02)  # 2 x 4096^2 elements
    assert point["device_us"]["fused_rms"]["cold"] == pytest.approx(1.5 * 33.0 * 2 * 1.02)
    assert point["ratios"]["triton_over_fused_plain"]["warm"]["median"] == pytest.approx(36 / 32)
    # a fixed shape's point is its graph32 and cold figures
    fixed = sweep["4096"][3]
    assert fixed["device_us"]["copy"] == {l2: synthetic_run.summaries["device"]["copy"]["4096x1024"][l2]["median"]
                                         for l2 in ("warm", "cold")}
    extremes = sweep["extremes"]
    assert extremes["fused_plain_over_copy.max_n_ge_1024.warm"]["value"] == pytest.approx(32 / 30)
    assert extremes["min_speedup.cudnn.cold"]["value"] == pytest.approx(1.5)
    assert extremes["min_speedup.cudnn.cold"]["points"] == 7
    assert not any(".torch." in key for key in extremes)  # absent: no figure, never a faked one
    targets = {t["key"]: t for t in sweep["targets"]}
    assert targets["fused_plain_within_copy_1.1x.max_n_ge_1024.warm"]["met"] is True
    assert targets["faster_than_cudnn.every_point.cold"]["met"] is True
    assert targets["faster_than_torch.every_point.warm"]["met"] is None


# ---------------------------------------------------------------- the sweep's summary on hand-set timings
SWEEP_PARAMETERS = typed(shapes="4096x1024,128x65536", baselines="cudnn", sweep_4096="4:10:2",
                                     sweep_128="4096,65536,131072", plane_points=0)
# Per point, warm L2: (fused plain / copy, fused RMS / fused plain, cuDNN / fused plain); the copy takes 10 µs a call.
# Cold L2 every time doubles, except fused plain at 4096x512 (1.3 times the copy's, fused RMS and cuDNN unchanged)
# and cuDNN at 4096x1280 (1.1 times fused plain's).
SWEEP_TIMES = {"4096x512": (1.22, 1.02, 2.0), "4096x768": (1.20, 1.05, 2.0), "4096x1024": (1.05, 1.04, 2.0),
               "4096x1280": (1.08, 1.10, 0.98), "128x4096": (1.02, 1.00, 1.5), "128x65536": (1.04, 1.08, 2.0),
               "128x131072": (1.06, 1.09, 1.25)}


def sweep_warm_us(name: str, shape: str) -> float:
    plain, rho, cudnn = SWEEP_TIMES[shape]
    return 10.0 * {"copy": 1.0, "copy4": 1.0, "fused_plain": plain, "fused_rms": plain * rho, "cudnn": plain * cudnn,
                   "row4": 3.0}[name]


def sweep_cold_us(name: str, shape: str) -> float:
    if (name, shape) == ("fused_plain", "4096x512"):
        return 2 * 10.0 * 1.3
    if (name, shape) == ("cudnn", "4096x1280"):
        return 2 * 10.0 * 1.08 * 1.1
    return 2 * sweep_warm_us(name, shape)


@pytest.fixture(scope="module")
def hand_sweep() -> dict:
    samples = synthetic_samples(SWEEP_PARAMETERS, sweep_warm_us, sweep_cold_us)
    plans = fusion.fused_plans(SWEEP_PARAMETERS, H200)
    return summary.summarize_sweep(by_variant(samples), stats.summarize(samples), SWEEP_PARAMETERS, plans)


def test_sweep_points_on_hand_set_timings(hand_sweep):
    assert [p["shape"] for p in hand_sweep["4096"]] == ["4096x512", "4096x768", "4096x1024", "4096x1280"]
    assert [p["shape"] for p in hand_sweep["128"]] == ["128x4096", "128x65536", "128x131072"]
    points = {p["shape"]: p for p in hand_sweep["4096"] + hand_sweep["128"]}
    planned = fusion.fused_plans(SWEEP_PARAMETERS, H200)
    assert {shape: p["design"] for shape, p in points.items()} == {shape: planned[shape]["design"] for shape in points}
    assert {shape: p["calls_per_replay"] for shape, p in points.items()} == {  # the fixed shapes' graph32 stand in
        "4096x512": 16, "4096x768": 8, "4096x1024": 32, "4096x1280": 4, "128x4096": 32, "128x65536": 32,
        "128x131072": 2}
    point = points["4096x768"]
    assert set(point["device_us"]) == {"copy", "copy4", "fused_rms", "fused_plain", "cudnn"}  # never the row path
    assert point["device_us"]["copy"] == {"warm": pytest.approx(10.2), "cold": pytest.approx(20.4)}  # wobble 1.02
    assert point["device_us"]["fused_rms"]["warm"] == pytest.approx(10.2 * 1.2 * 1.05)
    assert point["gbs"]["copy"]["warm"] == pytest.approx(8 * 4096 * 768 / 10.2e3)
    ratios = points["4096x512"]["ratios"]
    assert set(ratios) == {"fused_plain_over_copy", "fused_rms_over_copy", "fused_rms_over_fused_plain",
                           "cudnn_over_fused_plain"}
    assert ratios["fused_plain_over_copy"]["warm"]["median"] == pytest.approx(1.22)
    assert ratios["fused_plain_over_copy"]["cold"]["median"] == pytest.approx(1.3)
    assert ratios["fused_rms_over_fused_plain"]["cold"]["median"] == pytest.approx(1.22 * 1.02 / 1.3)
    assert ratios["cudnn_over_fused_plain"]["cold"]["median"] == pytest.approx(1.22 * 2.0 / 1.3)


def test_sweep_extremes_on_hand_set_timings(hand_sweep):
    """The largest ratio over the copy at N >= 1024 and below, the smallest library speed-up and the price of rho,
    warm and cold, with where each was."""
    expected = {
        "fused_plain_over_copy.max_n_ge_1024.warm": (1.08, "4096x1280"),
        "fused_plain_over_copy.max_n_lt_1024.warm": (1.22, "4096x512"),
        "fused_rms_over_copy.max_n_ge_1024.warm": (1.08 * 1.10, "4096x1280"),
        "fused_rms_over_copy.max_n_lt_1024.warm": (1.20 * 1.05, "4096x768"),
        "min_speedup.cudnn.warm": (0.98, "4096x1280"),
        "price_of_rho.min.warm": (1.00, "128x4096"),
        "price_of_rho.max.warm": (1.10, "4096x1280"),
        "price_of_rho.median.warm": (1.05, None),     # of 1.00 1.02 1.04 1.05 1.08 1.09 1.10
        "fused_plain_over_copy.max_n_ge_1024.cold": (1.08, "4096x1280"),
        "fused_plain_over_copy.max_n_lt_1024.cold": (1.3, "4096x512"),
        "fused_rms_over_copy.max_n_ge_1024.cold": (1.08 * 1.10, "4096x1280"),
        "fused_rms_over_copy.max_n_lt_1024.cold": (1.20 * 1.05, "4096x768"),   # above 4096x512's 1.22 x 1.02
        "min_speedup.cudnn.cold": (1.1, "4096x1280"),
        "price_of_rho.min.cold": (1.22 * 1.02 / 1.3, "4096x512"),
        "price_of_rho.max.cold": (1.10, "4096x1280"),
        "price_of_rho.median.cold": (1.05, None)}     # of 0.957 1.00 1.04 1.05 1.08 1.09 1.10
    extremes = hand_sweep["extremes"]
    assert set(extremes) == set(expected)
    for key, (value, shape) in expected.items():
        assert (extremes[key]["value"], extremes[key]["shape"]) == (pytest.approx(value), shape), key
    assert extremes["min_speedup.cudnn.warm"]["points"] == extremes["min_speedup.cudnn.cold"]["points"] == 7


def test_sweep_targets_on_hand_set_timings(hand_sweep):
    """Each fused mode within SWEEP_COPY_TARGETS of the copy (1.10 at N >= 1024, 1.25 below), fused plain faster
    than every library at every point; a library not requested is not measured (None), never met."""
    assert fusion.SWEEP_COPY_TARGETS == {"max_n_ge_1024": 1.10, "max_n_lt_1024": 1.25}
    found = {t["key"]: (t["measured"], t["shape"], t["met"]) for t in hand_sweep["targets"]}
    expected = {}
    for l2, plain_lt, cudnn in (("warm", (1.22, "4096x512", True), (0.98, False)),
                                ("cold", (1.3, "4096x512", False), (1.1, True))):
        expected |= {
            f"fused_plain_within_copy_1.1x.max_n_ge_1024.{l2}": (1.08, "4096x1280", True),
            f"fused_plain_within_copy_1.25x.max_n_lt_1024.{l2}": plain_lt,
            f"fused_rms_within_copy_1.1x.max_n_ge_1024.{l2}": (1.188, "4096x1280", False),
            f"fused_rms_within_copy_1.25x.max_n_lt_1024.{l2}": (1.26, "4096x768", False),
            f"faster_than_cudnn.every_point.{l2}": (cudnn[0], "4096x1280", cudnn[1]),
            f"faster_than_torch.every_point.{l2}": (None, None, None),
            f"faster_than_triton.every_point.{l2}": (None, None, None)}
    assert set(found) == set(expected)
    for key, (value, shape, met) in expected.items():
        assert found[key] == (value if value is None else pytest.approx(value), shape, met), key
    target = next(t for t in hand_sweep["targets"] if t["key"] == "fused_rms_within_copy_1.25x.max_n_lt_1024.warm")
    assert (target["kind"], target["where"], target["l2"], target["threshold"]) == (
        "fused_rms", "max_n_lt_1024", "warm", 1.25)


def test_sweep_headline_keys_on_hand_set_timings(hand_sweep):
    empty = {"ratios": {"graph": {}, "stream": {}}, "device": {}, "shapes": [], "graph_pacing": {}, "targets": [],
             "dram": {}}
    headline = summary.headline(empty | {"sweep": hand_sweep})
    assert set(headline) == ({f"sweep.{key}" for key in hand_sweep["extremes"]}
                             | {f"sweep_target_met.{t['key']}" for t in hand_sweep["targets"] if t["met"] is not None})
    assert len(headline) == 16 + 10
    assert headline["sweep.price_of_rho.median.cold"] == pytest.approx(1.05)
    assert headline["sweep_target_met.fused_plain_within_copy_1.25x.max_n_lt_1024.warm"] is True
    assert headline["sweep_target_met.faster_than_cudnn.every_point.warm"] is False
    assert "sweep_target_met.faster_than_torch.every_point.warm" not in headline  # not measured: no verdict


def test_an_empty_sweep_summarises_to_nothing():
    parameters = typed(shapes="4096x1024", baselines="", sweep_4096="", sweep_128="", plane_points=0)
    samples = synthetic_samples(parameters, sweep_warm_us, sweep_cold_us)
    sweep = summary.summarize_sweep(by_variant(samples), stats.summarize(samples), parameters,
                                    fusion.fused_plans(parameters, H200))
    assert sweep["4096"] == sweep["128"] == [] and sweep["extremes"] == {}
    assert {t["met"] for t in sweep["targets"]} == {None} and len(sweep["targets"]) == 2 * (4 + 3)


def test_headline_keys_say_what_they_hold(synthetic_run):
    headline = synthetic_run.headline
    for shape in synthetic_run.summaries["shapes"]:
        for l2 in ("warm", "cold"):
            for key in (f"graph.fused_plain_over_copy.{shape}.{l2}", f"graph.fused_rms_over_copy.{shape}.{l2}",
                        f"graph.cudnn_over_fused_plain.{shape}.{l2}", f"device_us_per_call.fused_rms.{shape}.{l2}",
                        f"device_logical_gbs.copy.{shape}.{l2}"):
                assert key in headline, key
            assert f"graph.torch_over_fused_plain.{shape}.{l2}" not in headline
        assert f"stream.fused_rms_over_copy.{shape}.warm" in headline
        assert headline[f"graph32_device_paced.{shape}"] is True
    assert headline["graph.cudnn_over_fused_plain.4096x4096.warm"] == pytest.approx(1.5)
    assert headline["target_met.cudnn_over_fused_plain_at_least_1.3.4096x4096.warm"] is True
    assert headline["target_met.fused_rms_within_copy_1.15x.4096x16384.cold"] is True
    assert "target_met.faster_than_torch.4096x4096.warm" not in headline  # not measured
    assert headline["dram_over_logical.row4.4096x4096"] == pytest.approx(1.0, rel=1e-4)
    assert not any(key.startswith("dram_over_logical.") and key.endswith(".128x65536") for key in headline)  # ncu failed
    for l2 in ("warm", "cold"):
        assert headline[f"sweep.fused_plain_over_copy.max_n_ge_1024.{l2}"] == pytest.approx(32 / 30)
        assert headline[f"sweep.min_speedup.triton.{l2}"] == pytest.approx(36 / 32)
        assert headline[f"sweep_target_met.faster_than_triton.every_point.{l2}"] is True
        assert f"sweep.min_speedup.torch.{l2}" not in headline
        assert f"sweep_target_met.faster_than_torch.every_point.{l2}" not in headline
    json.dumps(headline, allow_nan=False)


def test_tables_figures_and_page_values_render(synthetic_run):
    pytest.importorskip("pandas")
    from launchlab.chapters.fusion import page, page_format
    from launchlab.present.glue import environment_rows, validation_summary

    values = page.page_values(synthetic_run)
    assert values["graph_paced_summary"].startswith("all ")
    assert values["fused_rms_over_copy_4096x4096_warm"] == "1.10"
    assert values["stream_row4_over_fused_rms_4096x128_warm"] == "4.00"
    assert values["copy_target_summary"] == "met in all 4 cases"
    assert values["torch_warm_summary"] == "not measured (library absent)"
    assert values["torch_4096x4096_warm_us"] == "n/a" and "torch" in values["libraries_absent"].lower()
    configs = synthetic_run.summaries["configs"]
    for shape in ("128x65536", "4096x128"):   # where and how each plan keeps a row: plans.place, the design's words
        rows, cols = workloads.parse_shapes(shape)[0]
        assert values[f"tier_{shape}"] == configs[shape]["place"] == plans.place(configs[shape], rows, cols, H200["sm_count"])
        assert values[f"design_{shape}"] == page_format.design_label(configs[shape]["design"])
    assert values["fused_builds"] == str(len({plan["module"] for plan in configs.values()}))
    assert values["dram_4096x4096_status"] == "read by Nsight Compute"
    assert values["dram_128x65536_status"].startswith("not read: ncu exited with status 1")
    assert values["dram_fused_plain_4096x4096_ratio"] == "n/a"
    assert values["sanitizer_memcheck"] == f"clean over {SANITIZER_CHECKS} checks"
    assert values["sanitizer_racecheck"] == f"2 errors over {SANITIZER_CHECKS} checks"
    assert values["sweep_points"] == "7" and values["sweep_points_4096"] == "4" and values["sweep_points_128"] == "3"
    assert values["sweep_min_speedup_cudnn_warm"] == "1.50"
    assert all(isinstance(v, str) and v.strip() for v in values.values())
    for table in (page.config_table, page.policy_table, page.resource_table, page.device_table, page.copy_ratio_table,
                  page.library_ratio_table, page.pacing_table, page.host_table, page.submission_table,
                  page.dram_table, page.targets_table, page.baseline_table, page.sweep_targets_table,
                  page.sanitizer_table):
        rendered = table(synthetic_run)
        assert len(rendered) > 0, table.__name__
        assert "nan" not in rendered.to_html().lower(), table.__name__
    sweep = synthetic_run.summaries["sweep"]   # a line per design and row count among the fixed and swept shapes
    served = {(configs[shape]["design"], workloads.parse_shapes(shape)[0][0])
              for shape in [*synthetic_run.summaries["shapes"], *(p["shape"] for p in sweep["4096"] + sweep["128"])]}
    assert len(page.policy_table(synthetic_run)) == len(served)
    assert len(page.sweep_targets_table(synthetic_run)) == 2 * (4 + 3)
    for figure in (page.ratio_figure, page.bandwidth_figure, page.bytes_figure, page.rho_figure):
        figure(synthetic_run)
    for series in ("4096", "128"):
        page.sweep_figure(synthetic_run, series)
    assert len(validation_summary(synthetic_run)) == 2
    assert dict(environment_rows(synthetic_run))["libraries"] == "cudnn 9.10.2"


def glued_names() -> set[str]:
    import re

    prose = ""
    for page in ("book/fusion.ipynb", "book/data/fusion-data.ipynb"):   # the chapter and its data page
        notebook = json.loads((REPO_ROOT / page).read_text())
        prose += "".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown")
    return set(re.findall(r"\{glue:md\}`([^`]+)`", prose))


def test_the_accepted_run_gives_every_glued_name_a_value():
    """With every library and the sweep present, no sentence of the page may read "n/a", except a sweep extreme over
    a range of row lengths where the run's sweep has no point (its default grid has no 4096-row series), which says so."""
    from launchlab.chapters.fusion import page

    run = open_run(evidence.accepted_run("fusion"))
    values = page.page_values(run)
    cols = [p["cols"] for series in ("4096", "128") for p in run.summaries["sweep"][series]]
    empty = {"max_n_lt_1024": not any(c < 1024 for c in cols), "max_n_ge_1024": not any(c >= 1024 for c in cols)}
    absent = [name for name in glued_names() if str(values[name]).startswith("n/a")]
    for name in absent:
        ranged = [where for where in empty if f"_{where}_" in name]
        assert ranged and empty[ranged[0]], name
        assert values[f"{name}_at"] == "no point: the sweep had no point with " + page_sweep.SWEEP_RANGES[ranged[0]]


@pytest.fixture(scope="module")
def every_library_run(tmp_path_factory) -> Run:
    """The synthetic run with torch present too, the sanitizer not run."""
    return open_run(write_synthetic_run(tmp_path_factory.mktemp("evidence"), absent=None, sanitizer={}),
                    require_sealed=False)


def test_every_glued_name_in_the_notebook_is_a_page_value(every_library_run):
    import re

    from launchlab.chapters.fusion import page

    glued = glued_names()
    assert len(glued) > 50 and {"sweep_min_speedup_torch_warm", "sanitizer_memcheck", "sweep_points"} <= glued
    values = page.page_values(every_library_run)
    assert sorted(glued - set(values)) == []
    assert values["sanitizer_memcheck"] == values["sanitizer_racecheck"] == "not run"
    assert every_library_run.summaries["sanitizer"] == {} and not (every_library_run.path / "sanitizer").exists()
    code = "".join("".join(c["source"]) for page in ("book/fusion.ipynb", "book/data/fusion-data.ipynb")
                   for c in json.loads((REPO_ROOT / page).read_text())["cells"] if c["cell_type"] == "code")
    for called in re.findall(r"chapter\.(\w+)\(run\b", code):
        assert callable(getattr(page, called)), called


def test_every_glued_name_is_a_page_value_with_a_library_absent(synthetic_run):
    from launchlab.chapters.fusion import page

    values = page.page_values(synthetic_run)
    assert sorted(glued_names() - set(values)) == []
    assert values["sweep_min_speedup_torch_warm"] == values["sweep_min_speedup_torch_cold"] == "n/a"
    assert values["sweep_min_speedup_torch_warm_at"] == "no point: torch.softmax was not timed in the sweep"
    assert values["sweep_min_speedup_cudnn_warm"] == "1.50"   # the libraries that ran keep their figures


def test_every_sweep_extreme_the_summary_gives_has_a_default(every_library_run):
    from launchlab.chapters.fusion import page_sweep

    assert sorted(every_library_run.summaries["sweep"]["extremes"]) == sorted(page_sweep.SWEEP_EXTREME_KEYS)


# Runs whose prose has the least to glue: no sweep at all; no library requested, with a sweep only below N = 1024.
NO_SWEEP = typed(sweep_4096="", sweep_128="")
NO_LIBRARY = typed(baselines="", sweep_4096="2:4:2", sweep_128="")


@pytest.mark.parametrize("parameters, expected", [
    (NO_SWEEP, {"sweep_points": "0", "sweep_price_of_rho_median_warm": "n/a",
                "sweep_fused_plain_over_copy_max_n_ge_1024_warm_at": "no point: this run had no sweep",
                "sweep_min_speedup_cudnn_warm_at": "no point: this run had no sweep",
                "sweep_verdict_fused_rms_within_copy_1_1x_max_n_ge_1024_cold": "not measured (no sweep point)"}),
    (NO_LIBRARY, {"sweep_points": "2", "sweep_fused_plain_over_copy_max_n_ge_1024_cold": "n/a",
                  "sweep_fused_plain_over_copy_max_n_ge_1024_warm_at": "no point: the sweep had no point with N ≥ 1024",
                  "sweep_min_speedup_triton_warm_at": "no point: Triton softmax was not timed in the sweep",
                  "sweep_verdict_faster_than_cudnn_every_point_warm": "not measured (library absent)"})],
    ids=["no-sweep", "no-library"])
def test_every_glued_name_is_a_page_value_in_a_sparse_run(tmp_path, parameters, expected):
    from launchlab.chapters.fusion import page

    run = open_run(write_synthetic_run(tmp_path, parameters=parameters, sanitizer={}), require_sealed=False)
    values = page.page_values(run)
    assert sorted(glued_names() - set(values)) == []
    assert {key: values[key] for key in expected} == expected
    assert all(isinstance(v, str) and v.strip() for v in values.values())
    verdicts = set(page.sweep_targets_table(run).raw["verdict"])
    assert verdicts == ({"not measured (no sweep point)"} if parameters is NO_SWEEP else
                        {"met", "not measured (no sweep point)", "not measured (library absent)"})


class FakeGPU:
    """A device clock that fake invocations advance: event intervals are what the fakes 'ran'."""
    ns = 0
    launches = 0

    @classmethod
    def run(cls, nbytes: int) -> None:
        cls.ns += 2000 + nbytes // 3000  # a launch, then about 3 TB/s
        cls.launches += 1


class FakeTarget:
    name, launches = "fake", ()
    submissions = 1

    def __init__(self, x, function, bytes_per_element=8, name="fake"):
        self.x, self.y, self.function, self.name = x, np.empty_like(x), function, name
        self.nbytes = bytes_per_element * x.size

    def invoke(self):
        self.y[...] = self.function(self.x)
        FakeGPU.run(self.nbytes)

    def poison(self):
        self.y.fill(np.nan)

    def load(self, x):
        self.x[...] = x

    def output(self):
        return self.y.copy()

    def device_output(self):
        return self.y

    def compute(self, x, invoke=None):
        self.load(x)
        self.poison()
        (invoke or self.invoke)()
        return self.output()


class FakeWrapper(FakeTarget):
    """A graph or a repetition of a target: its buffers, its own invocation."""

    def load(self, x):
        self.target.load(x)

    def poison(self):
        self.target.poison()

    def output(self):
        return self.target.output()

    def device_output(self):
        return self.target.device_output()

    def compute(self, x, invoke=None):
        return self.target.compute(x, invoke or self.invoke)


def numpy_as_cupy():
    """An array module with NumPy's functions and CuPy's memory pool: what the chapter asks of CuPy, on the CPU."""
    import types

    fake = types.ModuleType("cupy")
    fake.__dict__.update({name: getattr(np, name) for name in dir(np) if not name.startswith("__")})
    fake.get_default_memory_pool = lambda: types.SimpleNamespace(free_all_blocks=lambda: None)
    return fake


def fake_gpu_modules(monkeypatch, broken_library="triton") -> dict:
    """Stand-ins for gpu.targets, gpu.fused_designs, gpu.capture, gpu.instruments, the chapter's baselines, CuPy
    (NumPy), the sweep's device fixtures (the host's), Nsight Compute's and compute-sanitizer's subprocesses.
    Returns what the fakes were asked: {"designs": [(design, rows, cols, mode, module)], "ncu": [(rows, cols, plan,
    rows profiled)], "sanitizer": [(example, tools)]}."""
    import sys
    import types

    import launchlab.gpu
    from launchlab.chapters.fusion import copy_kernel, sweep
    from launchlab.gpu import sanitizer

    asked = {"designs": [], "ncu": [], "sanitizer": []}

    def as_float32(function):
        return lambda x: function(x).astype(np.float32)

    targets = types.ModuleType("launchlab.gpu.targets")
    targets.RowPath = lambda built, rows, cols, x: FakeTarget(x, as_float32(oracles.rms_softmax), 24, "row4")
    targets.FusedRow = lambda built, rows, cols, mode, shared, x: FakeTarget(
        x, as_float32(oracles.rms_softmax if mode == "rms" else oracles.softmax), 8, f"fused_{mode}")
    targets.DeviceCopy = lambda x: FakeTarget(x, lambda v: v.copy(), 8, "copy")
    fused_designs = types.ModuleType("launchlab.gpu.fused_designs")

    def make_target(design, built, rows, cols, mode="rms", x=None, **options):
        asked["designs"].append((design, rows, cols, mode, built))
        return FakeTarget(x, as_float32(oracles.rms_softmax if mode == "rms" else oracles.softmax), 8, f"{design}_{mode}")

    fused_designs.make_target = make_target

    class Repeated(FakeWrapper):  # as gpu.targets.Repeated: `calls` calls of a target as one invocation, on its buffers
        def __init__(self, target, calls):
            self.target, self.calls, self.name = target, calls, target.name

        def invoke(self):
            for _ in range(self.calls):
                self.target.invoke()

    targets.Repeated = Repeated

    class GraphReplay(FakeWrapper):
        def __init__(self, target, stream):
            self.target, self.name = target, target.name
            before = FakeGPU.launches
            target.invoke()
            nodes = FakeGPU.launches - before
            self.dot = "digraph G {\n" + "".join(f'"n{i}" [label="k"];\n' for i in range(nodes)) + "}\n"
            self.setup = {"capture_us": 1.0, "end_capture_us": 1.0, "instantiate_us": 1.0, "upload_us": 1.0,
                          "first_replay_us": 1.0, "instantiated_in_end_capture": True}

        def invoke(self):
            self.target.invoke()

    capture = types.ModuleType("launchlab.gpu.capture")
    capture.GraphReplay = GraphReplay
    instruments = types.ModuleType("launchlab.gpu.instruments")
    instruments.KERNELS = ("l2_flush_read", "gpu_wait")

    class ColdL2:
        def __init__(self, built, l2_bytes, sm_count, wait_ns):
            self.wait_ns = wait_ns

        def flush(self):
            FakeGPU.ns += self.wait_ns

        def describe(self):
            return {"wait_ns": self.wait_ns}

    instruments.ColdL2 = ColdL2
    baselines = types.ModuleType("launchlab.chapters.fusion.baselines")

    def make_baseline(name, x, stream):
        if name == "torch":
            return None, "PyTorch cannot be imported (fake)"
        wrong = (lambda v: np.full_like(v, 0.5)) if name == broken_library else as_float32(oracles.softmax)
        target = FakeTarget(x, wrong, 8, name)
        target.version, target.describe = (lambda: "1.0"), (lambda: {"call": f"{name} (fake)"})
        return target, None

    baselines.make_baseline = make_baseline
    for name, module in (("targets", targets), ("fused_designs", fused_designs), ("capture", capture),
                         ("instruments", instruments)):
        monkeypatch.setitem(sys.modules, f"launchlab.gpu.{name}", module)
        monkeypatch.setattr(launchlab.gpu, name, module, raising=False)  # `from launchlab.gpu import name` too
    monkeypatch.setitem(sys.modules, "launchlab.chapters.fusion.baselines", baselines)
    monkeypatch.setattr(fusion, "baselines", baselines, raising=False)
    monkeypatch.setitem(sys.modules, "cupy", numpy_as_cupy())
    monkeypatch.setattr(sweep, "device_fixture", workloads.rms_softmax_fixture)
    monkeypatch.setattr(copy_kernel, "make", lambda built, x: FakeTarget(x, lambda v: v.copy(), 8, "copy4"))

    def dram_bytes(rows, cols, plan, names):
        asked["ncu"].append((rows, cols, plan, list(names)))
        return {"command": ["ncu"], "returncode": 0, "csv": NCU_CSV, "error": None, "order": list(names)}

    def sanitize(example, tools=sanitizer.TOOLS, timeout_s=300, environment=None):
        asked["sanitizer"].append((example, tuple(tools)))
        results = [sanitizer_result(tool, 0) for tool in tools]
        return {"sanitizer": "/fake/compute-sanitizer", "error": None, "tools": results, "clean": True}

    monkeypatch.setattr(profile, "dram_bytes", dram_bytes)
    monkeypatch.setattr(sanitizer, "sanitize", sanitize)
    return asked


def fake_session(writer, parameters):
    """The runner's Session with the GPU parts replaced: a fake backend and device, builds that compile nothing."""
    from types import SimpleNamespace

    from launchlab import runner
    from launchlab.measure.protocol import MeasurementProtocol

    class Backend:
        stream = SimpleNamespace(ptr=1, synchronize=lambda: None)
        host = 0

        def host_ns(self):
            Backend.host += 500
            return Backend.host

        def synchronize(self):
            pass

        def record_event(self):
            return FakeGPU.ns

        def wait_event(self, event):
            pass

        def elapsed_ms(self, start, end):
            return (end - start) / 1e6

    class Device:
        """The device side the runner reads: identity, environment, state."""
        identity = staticmethod(lambda: {"name": "Fake GPU", "sm_count": 132, "l2_bytes": 62914560,
                                         "compute_capability": "9.0", "shared_bytes_per_block_optin": H200_SHARED_OPTIN})
        environment = staticmethod(lambda: {"libraries": {}})
        state = staticmethod(lambda: {})

    class Session(runner.Session):
        def build(self, label, family, kernels, defines=None, **options):
            self.builds[label] = {"resources_loaded": {k: {"registers": 32, "shared_bytes": 0, "local_bytes": 0}
                                                       for k in kernels}}
            self.writer.write_json(f"builds/{label}/record.json", self.builds[label])
            return SimpleNamespace(family=family, defines=defines)

    protocol = MeasurementProtocol(warmups=1, rounds=4, batch=4, large_batch=2, cold_repeats=2)
    session = Session(fusion.CHAPTER, writer, parameters, protocol, backend=Backend(), device=Device())
    session.record.git_commit = None
    return session


# Small fixed shapes (a narrow design and the row kernel), a profile at one of them, two sweep points of 128 rows and
# a plane of FAKE_PLANE_POINTS points drawn below FAKE_PLANE_BYTES (small_plane).
FAKE_RUN = {"shapes": "64x128,16x1001", "profile_shapes": "64x128", "sweep_4096": "", "sweep_128": "7,100",
            "sanitizer_tools": "memcheck", "plane_points": 3}
FAKE_PLANE_BYTES = 64 << 10


def small_plane(monkeypatch, most_bytes: int = FAKE_PLANE_BYTES) -> None:
    """The plane's draws kept below `most_bytes` a matrix, so that the fakes' host arrays stay small."""
    from launchlab.chapters.fusion import plane

    monkeypatch.setattr(plane, "PLANE_MAX_BYTES", most_bytes)


def run_on_fakes(tmp_path, monkeypatch):
    """run.run(session) on the fakes through the real Session; (session, writer, asked, summaries, headline)."""
    from launchlab.chapters.fusion import run as chapter_run

    asked = fake_gpu_modules(monkeypatch)
    small_plane(monkeypatch)
    writer = evidence.RunWriter("20990101T000000Z-fake", tmp_path)
    session = fake_session(writer, typed(**FAKE_RUN))
    chapter_run.run(session)
    session.finish()
    summaries, headline = recompute(writer.path)
    writer.write_json("summaries.json", summaries)
    writer.write_json("headline.json", headline)
    return session, writer, asked, summaries, headline


def test_run_py_end_to_end_on_fake_gpu_modules(tmp_path, monkeypatch):
    """run.run(session) through the real Session, protocol, checks, samples and summary: every declared
    variant of the rows that set up is measured, at the fixed shapes and the sweep's points; a library failing the
    oracle is dropped with a note; the fused kernel of each shape is the plan's; Nsight Compute and
    compute-sanitizer are asked as the parameters say."""
    session, writer, asked, summaries, headline = run_on_fakes(tmp_path, monkeypatch)
    parameters = session.parameters
    measured = {s["variant"] for s in session.samples}
    declared = {str(spec.id) for spec in fusion.CHAPTER.variants(parameters)}
    assert measured == {v for v in declared if VariantId.parse(v).target not in ("torch", "triton")}
    assert set(session.skipped) == declared - measured
    details = session.record.details
    plans = details["fused_plans"]
    assert plans == fusion.fused_plans(parameters, session.record.device)
    drawn = fusion.plane_shapes(parameters)
    assert len(drawn) == 3 and all(4 * r * c <= FAKE_PLANE_BYTES for r, c in drawn)
    for shape, plan in plans.items():
        assert_policy_pick(plan, *workloads.parse_shapes(shape)[0], session.record.device)
    assert set(plans) == {"64x128", "16x1001", "128x7", "128x100"} | {workloads.shape_name(*s) for s in drawn}
    assert set(session.builds) == {"row_softmax", "copy_vec4", "instruments"} | {plan["module"] for plan in plans.values()}
    assert {(design, rows, cols, mode) for design, rows, cols, mode, _ in asked["designs"]} == {
        (plans[workloads.shape_name(rows, cols)]["design"], rows, cols, mode)
        for rows, cols in ((64, 128), (128, 7), (128, 100), *drawn) for mode in ("rms", "plain")
        if plans[workloads.shape_name(rows, cols)]["design"] != "row"}   # the row kernel (FusedRow) serves the rest
    assert asked["ncu"] == [(64, 128, plans["64x128"], ["copy", "copy4", "row4", "fused_rms", "fused_plain", "cudnn"])]
    assert asked["sanitizer"] == [("launchlab.chapters.fusion.sanitize", ("memcheck",))]
    assert json.loads((writer.path / "sanitizer/memcheck.json").read_text())["errors"] == 0
    assert details["sanitizer"]["tools"] == ["memcheck"] and details["sanitizer"]["clean"] is True
    assert summaries["sanitizer"]["memcheck"]["clean"] and "racecheck" not in summaries["sanitizer"]
    assert [p["shape"] for p in summaries["sweep"]["128"]] == ["128x7", "128x100"] and summaries["sweep"]["4096"] == []
    assert "PyTorch cannot be imported" in details["baselines"]["torch"]["unavailable"]["64x128"]
    assert set(details["baselines"]["triton"]["unavailable"]) == set(plans)
    assert all(reason.startswith("failed the float64 softmax oracle before timing (")
               for reason in details["baselines"]["triton"]["unavailable"].values())
    assert session.record.environment["libraries"] == {"cudnn": "1.0", "triton": "1.0"}
    assert details["baselines"]["cudnn"]["setup"]["16x1001"] == {"call": "cudnn (fake)"}
    phases = {c["phase"] for c in session.checks}
    assert phases == {"before", "after"} and all(c["passed"] for c in session.checks)
    assert all(c.get("on_device") for c in session.checks)     # every fixture drawn and checked on the device
    assert {c["variant"] for c in session.checks} == measured
    assert details["plane_protocol"]["rounds"] == parameters.plane_rounds == fusion.PLANE_ROUNDS
    assert [p["shape"] for p in summaries["plane"]["points"]] == [workloads.shape_name(*s) for s in drawn]
    assert headline["plane.points"] == 3
    setup = json.loads((writer.path / "graphs/setup.json").read_text())
    assert setup["row4.64x128.graph32"]["nodes"] == 32 and setup["row4.64x128.graph"]["nodes"] == 1
    assert setup["copy.128x7.graph32"]["nodes"] == 32
    for shape in ("64x128", "16x1001"):
        for l2 in ("warm", "cold"):
            assert {f"graph.fused_plain_over_copy.{shape}.{l2}", f"graph.fused_rms_over_copy.{shape}.{l2}",
                    f"graph.cudnn_over_fused_plain.{shape}.{l2}"} <= set(headline)
    assert summaries["dram"]["64x128"]["contenders"]["row4"]["read_bytes"] > 0
    assert (writer.path / SAMPLES_FILE).exists() and (writer.path / "profiles/ncu_64x128.json").exists()


def test_a_row_added_to_the_declaration_reaches_every_output(tmp_path, monkeypatch):
    """One more row (the fused plain kernel under a new name) and nothing else: it is timed at the fixed shapes and
    in the sweep, profiled and sanitized, and it appears in the summaries' tables, the submission table and the
    page's tables."""
    pytest.importorskip("pandas")
    from launchlab.chapters.fusion import page

    again = dataclasses.replace(fusion.row("fused_plain"), name="fused_plain_again", label="fused plain, again")
    monkeypatch.setattr(fusion, "ROWS", fusion.ROWS + (again,))
    session, writer, asked, summaries, _ = run_on_fakes(tmp_path, monkeypatch)
    measured = {s["variant"] for s in session.samples}
    assert {f"fused_plain_again.{shape}.{submission}" for shape in ("64x128", "16x1001")
            for submission in ("stream", "graph", "graph32")} <= measured                     # the fixed shapes
    assert {"fused_plain_again.128x7.graph32", "fused_plain_again.128x7.stream",
            "fused_plain_again.128x100.graph32", "fused_plain_again.128x100.stream"} <= measured  # the sweep
    assert asked["ncu"][0][3][-1] == "fused_plain_again"                                         # the profile
    assert "fused_plain_again" in summaries["contenders"]
    for shape in ("64x128", "16x1001"):
        assert set(summaries["device"]["fused_plain_again"][shape]) == {"warm", "cold"}
        assert set(summaries["ratios"]["graph"]["fused_plain_again_over_copy"][shape]) == {"warm", "cold"}
        assert set(summaries["ratios"]["submission"]["fused_plain_again_stream_over_graph"][shape]) == {"warm", "cold"}
    for point in summaries["sweep"]["128"]:
        assert set(point["device_us"]["fused_plain_again"]) == {"warm", "cold"}
    for point in summaries["plane"]["points"]:                                                    # the plane
        assert set(point["device_us"]["fused_plain_again"]) == {"warm", "cold"}
    run = open_run(writer.path, require_sealed=False)
    for table in (page.device_table, page.copy_ratio_table, page.submission_table, page.host_table, page.pacing_table):
        assert "fused plain, again" in set(table(run).raw.iloc[:, :2].astype(str).stack()), table.__name__
    page.page_values(run)
    page.sweep_figure(run, "128")

"""Chapter 3 on the CPU: the declaration (variants, bytes, calls per graph, the sweep's grid, build policy and
fused plans), the plain-softmax oracle, and per-call figures, paired ratios and pacing from samples."""
import json
import math

import numpy as np
import pytest

from launchlab.analysis import open_run, recompute
from launchlab.chapters import fusion
from launchlab.chapters.fusion import plans, summary
from launchlab.chapters.fusion.summary import by_variant
from launchlab.measure import stats
from launchlab.measure.variant import VariantId
from launchlab.model import fused_policy, oracles, workloads
from launchlab.runner import SAMPLES_FILE
from launchlab.store import evidence

from fusion_fakes import H200, H200_SHARED_OPTIN, REPO_ROOT, assert_policy_pick, sample, typed


# ---------------------------------------------------------------- the declaration
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

"""Chapter 3 on the CPU: the declaration (variants, bytes, calls per graph, build policy), the plain-softmax
oracle, Nsight Compute parsing, and summaries, headline, tables, figures and page values recomputed from a
SYNTHETIC run (fake samples for every declared variant, written through RunWriter and RunRecord)."""
import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

from launchlab.chapters import fusion
from launchlab.chapters.fusion import summary
from launchlab.gpu.ncu import dram_by_variant, parse_ncu_csv
from launchlab.measure import stats
from launchlab.measure.protocol import FROZEN
from launchlab.measure.variant import VariantId
from launchlab.model import oracles, workloads
from launchlab.runner import SAMPLES_FILE
from launchlab.store import evidence
from launchlab.store.record import RunRecord
from launchlab.store.runs import Run, analyze, recompute

REPO_ROOT = Path(__file__).resolve().parents[1]
H200_SHARED_OPTIN = 232448  # 227 KiB opt-in shared memory per block


# ---------------------------------------------------------------- the declaration
def test_logical_bytes_per_call_are_declared_once_per_contender():
    per_element = {name: c.bytes_per_element for name, c in fusion.CONTENDERS.items()}
    assert per_element["copy"] == per_element["fused_rms"] == per_element["fused_plain"] == 8
    assert per_element["row4"] == 24  # x three times, e twice, y once
    assert all(per_element[name] == 8 for name in fusion.LIBRARIES)
    assert fusion.logical_bytes_per_call("row4", 4096, 4096) == 24 * 4096 * 4096


def test_variant_table_has_every_contender_submission_and_bytes_per_invocation():
    table = {str(spec.id): spec for spec in fusion.variants(fusion.Parameters())}
    shapes = [workloads.shape_name(*s) for s in workloads.FUSION_SHAPES]
    assert fusion.Parameters().shapes == ",".join(shapes)
    for shape in shapes:
        for name in fusion.CONTENDERS:
            assert f"{name}.{shape}.stream" in table and f"{name}.{shape}.graph32" in table
        for name in ("row4", "fused_rms", "fused_plain"):
            assert f"{name}.{shape}.graph" in table
    rows, cols = 4096, 1024
    assert table["copy.4096x1024.stream"].bytes_read == 4 * rows * cols
    assert table["copy.4096x1024.stream"].logical_bytes == 8 * rows * cols
    assert table["row4.4096x1024.stream"].bytes_read == 16 * rows * cols
    assert table["row4.4096x1024.graph32"].logical_bytes == 32 * 24 * rows * cols  # one replay = 32 calls
    assert len(table) == 6 * (7 * 2 + 3)


def test_libraries_follow_the_parameter_and_unknown_ones_are_refused():
    only_cudnn = fusion.Parameters(baselines="cudnn")
    assert fusion.contenders(only_cudnn) == ["copy", "row4", "fused_rms", "fused_plain", "cudnn"]
    assert not any(spec.id.target in ("torch", "triton") for spec in fusion.variants(only_cudnn))
    assert fusion.contenders(fusion.Parameters(baselines="")) == ["copy", "row4", "fused_rms", "fused_plain"]
    with pytest.raises(ValueError, match="unknown baselines"):
        fusion.variants(fusion.Parameters(baselines="cudnn,mkl"))


def test_calls_per_invocation_and_batch_size():
    assert fusion.calls_per_invocation("fused_rms.4096x4096.graph32") == fusion.CALLS_PER_GRAPH == 32
    assert fusion.calls_per_invocation(VariantId("row4", "128x65536", "graph")) == 1
    assert fusion.calls_per_invocation("cudnn.4096x128.stream") == 1
    assert fusion.large(VariantId("copy", "4096x128", "graph32"))        # many calls: the smaller batch
    assert not fusion.large(VariantId("copy", "4096x128", "stream"))
    assert fusion.large(VariantId("copy", "4096x4096", "stream"))        # 2^24 elements


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
    assert fusion.max_chunks(4096, 4096) == 1024       # every row starts on a 16-byte boundary
    assert fusion.max_chunks(3, 70001) == 17501        # (3 + 70001 + 3) // 4: a row may start 3 floats in
    assert fusion.max_chunks(3, 70002) == 17502
    assert fusion.max_chunks(1, 70002) == 17501        # a single row starts at the aligned base


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
        assert config["shared_bytes"] == 16 * fusion.max_chunks(rows, cols) <= H200_SHARED_OPTIN
    else:
        assert config["shared_bytes"] == 0


def test_tier_follows_the_kernels_rule_and_builds_are_shared():
    assert fusion.fused_tier(2, 16384, 1024, 0) == "registers"
    assert fusion.fused_tier(2, 16384, 512, 0) == "streamed"
    assert fusion.fused_tier(2, 16384, 512, 65536) == "shared"
    assert fusion.fused_tier(2, 16384, 512, 65535) == "streamed"
    assert [fusion.min_blocks(b) for b in (32, 64, 128, 256, 512, 1024)] == [32, 20, 10, 5, 2, 1]
    assert [fusion.min_blocks(b, 64) for b in (32, 64, 128, 256, 512, 1024)] == [32, 16, 8, 4, 2, 1]
    configs = fusion.fused_configs(fusion.Parameters().shapes, H200_SHARED_OPTIN)
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
    assert summary.call_ratio(samples, "a.1x1.graph32", "b.1x1.graph32", "warm_batch")["median"] == pytest.approx(1.5)
    stream_over_device = summary.call_ratio(samples, "a.1x1.stream", "a.1x1.graph32", "warm_batch")
    assert stream_over_device["median"] == pytest.approx(1.5) and stream_over_device["ci_high"] == pytest.approx(1.5)


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
NCU_CSV = '''==PROF== Connected to process 1234
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1234","python3","127.0.0.1","row_rms","1","13","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_read.sum","byte","67,108,864"
"0","1234","python3","127.0.0.1","row_rms","1","13","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_write.sum","byte","1,024"
"1","1234","python3","127.0.0.1","row_max","1","13","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_read.sum","byte","67108864"
"1","1234","python3","127.0.0.1","row_max","1","13","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_write.sum","byte","0"
"2","1234","python3","127.0.0.1","row_exp_sum","1","13","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_read.sum","Mbyte","67.108864"
"2","1234","python3","127.0.0.1","row_exp_sum","1","13","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_write.sum","byte","67108864"
"3","1234","python3","127.0.0.1","row_scale","1","13","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_read.sum","byte","67108864"
"3","1234","python3","127.0.0.1","row_scale","1","13","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_write.sum","byte","67108864"
"4","1234","python3","127.0.0.1","fused_rms_softmax","1","13","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_read.sum","byte","67108864"
"4","1234","python3","127.0.0.1","fused_rms_softmax","1","13","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_write.sum","byte","60000000"
==PROF== Disconnected from process 1234
'''


def test_ncu_csv_is_parsed_with_units_and_summed_per_contender():
    rows = parse_ncu_csv(NCU_CSV)
    assert len(rows) == 10 and rows[4]["bytes"] == pytest.approx(67108864)
    by_variant = dram_by_variant(rows)
    assert by_variant["row4"] == {"read_bytes": 4 * 67108864, "write_bytes": 1024 + 2 * 67108864, "kernels": 4}
    assert by_variant["fused_rms"]["write_bytes"] == 60000000
    assert "fused_plain" not in by_variant  # its kernel was not profiled
    assert parse_ncu_csv("==ERROR== Failed to initialize the profiler\n") == []


# ---------------------------------------------------------------- a synthetic run of every declared variant
# Device time per call (µs) at 4096x4096; other shapes scale by their elements. torch is declared but absent.
DEVICE_US = {"copy": 30.0, "row4": 100.0, "fused_rms": 33.0, "fused_plain": 32.0, "cudnn": 48.0, "triton": 36.0}
HOST_US = {"row4": 16.0}  # host enqueue per stream call; 4 µs for the others
ABSENT = "torch"


def per_call_us(name: str, shape: str) -> float:
    rows, cols = workloads.parse_shapes(shape)[0]
    return DEVICE_US[name] * max(0.05, rows * cols / 4096**2)


def synthetic_samples(parameters) -> list[dict]:
    samples = []
    for spec in fusion.variants(parameters):
        vid = spec.id
        if vid.target == ABSENT:
            continue
        calls = fusion.calls_per_invocation(vid)
        count = FROZEN.large_batch if fusion.large(vid) else FROZEN.batch
        enqueue = 3.0 if calls > 1 else HOST_US.get(vid.target, 4.0)
        for r in range(FROZEN.rounds):
            wobble = 1 + 0.01 * ((r * 7) % 5)
            device = calls * per_call_us(vid.target, vid.case) * wobble
            stream_event = max(device, enqueue)  # a stream batch runs at the slower of host and GPU
            event = device if calls > 1 else stream_event
            samples.append(sample("warm_single", r, vid, 1, None, enqueue) | {"complete_ns": int((event + 9) * 1e3)})
            samples.append(sample("warm_batch", r, vid, count, event, enqueue))
            if vid.submission in ("stream", "graph"):
                samples += [sample("cold", r, vid, 1, 1.5 * device, enqueue) for _ in range(FROZEN.cold_repeats)]
    return samples


def write_synthetic_run(root: Path, run_id: str = "20990101T000000Z-ch03", parameters=None) -> Path:
    parameters = parameters or fusion.Parameters()
    writer = evidence.RunWriter(run_id, root)
    configs = fusion.fused_configs(parameters.shapes, H200_SHARED_OPTIN)
    shapes = list(configs)
    libraries = {name: {"requested": True, "unavailable": {}, "setup": {}} for name in fusion.requested_libraries(parameters)}
    libraries["cudnn"]["setup"] = {shape: {"cudnn_version": 91002, "call": "cudnnSoftmaxForward"} for shape in shapes}
    libraries["triton"]["setup"] = {shape: {"kernel": "softmax_row_resident" if shape != "128x65536" else
                                            "softmax_row_looped"} for shape in shapes}
    libraries[ABSENT]["unavailable"] = {shape: "PyTorch cannot be imported" for shape in shapes}
    record = RunRecord(chapter="fusion", run_id=run_id, parameters=dataclasses.asdict(parameters),
                       protocol=FROZEN.record(), host_path=fusion.CHAPTER.host_path,
                       device={"name": "Synthetic GPU", "compute_capability": "9.0", "sm_count": 132,
                               "l2_bytes": 62914560, "shared_bytes_per_block_optin": H200_SHARED_OPTIN},
                       environment={"driver": "0", "libraries": {"cudnn": "9.10.2"}}, git_commit="0" * 40,
                       source_tree_sha256="0" * 64, states={},
                       validation={"verdict": "passed", "checks": 2 * len(shapes)},
                       details={"fused_configs": configs, "baselines": libraries, "calls_per_graph": 32,
                                "cold_l2": {"flush_bytes": 2 * 62914560, "wait_ns": FROZEN.cold_wait_ns}})
    writer.write_jsonl(SAMPLES_FILE, synthetic_samples(parameters))
    for label in {c["module"] for c in configs.values()} | {"row_softmax"}:
        kernels = fusion.ROW_KERNELS if label == "row_softmax" else fusion.FUSED_KERNELS
        writer.write_json(f"builds/{label}/record.json", {
            "resources_loaded": {k: {"registers": 40, "shared_bytes": 128, "local_bytes": 0} for k in kernels},
            "nvcc": {"resources": {k: {"spill_stores": 0, "spill_loads": 0, "stack_bytes": 0} for k in kernels}}})
    writer.write_json("graphs/setup.json", {
        str(spec.id): {"capture_us": 10.0, "end_capture_us": 20.0, "instantiate_us": 0.0, "upload_us": 5.0,
                       "first_replay_us": 40.0, "instantiated_in_end_capture": True,
                       "calls": fusion.calls_per_invocation(spec.id), "nodes": fusion.calls_per_invocation(spec.id)}
        for spec in fusion.variants(parameters) if spec.id.submission != "stream" and spec.id.target != ABSENT})
    writer.write_text("profiles/ncu_4096x4096.csv", NCU_CSV)
    writer.write_json("profiles/ncu_4096x4096.json", {"command": ["ncu"], "returncode": 0, "error": None})
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
    return Run.open(write_synthetic_run(tmp_path_factory.mktemp("evidence")), require_sealed=False)


def test_summaries_are_pure_and_recompute_exactly(synthetic_run):
    assert analyze(synthetic_run.path) == []
    again, _ = recompute(synthetic_run.path)
    assert json.dumps(again, sort_keys=True) == json.dumps(synthetic_run.summaries, sort_keys=True)
    evidence.seal(synthetic_run.path)
    assert Run.open(synthetic_run.path).headline == synthetic_run.headline


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
    json.dumps(headline, allow_nan=False)


def test_tables_figures_and_page_values_render(synthetic_run):
    pytest.importorskip("pandas")
    from launchlab.chapters.fusion import page
    from launchlab.present.glue import environment_rows, validation_summary

    values = page.page_values(synthetic_run)
    assert values["graph_paced_summary"].startswith("all ")
    assert values["fused_rms_over_copy_4096x4096_warm"] == "1.10"
    assert values["stream_row4_over_fused_rms_4096x128_warm"] == "4.00"
    assert values["copy_target_summary"] == "met in all 4 cases"
    assert values["torch_warm_summary"] == "not measured (library absent)"
    assert values["torch_4096x4096_warm_us"] == "n/a" and "torch" in values["libraries_absent"].lower()
    assert values["tier_128x65536"] == "streamed"
    assert all(isinstance(v, str) and v.strip() for v in values.values())
    for table in (page.config_table, page.resource_table, page.device_table, page.copy_ratio_table,
                  page.library_ratio_table, page.pacing_table, page.host_table, page.submission_table,
                  page.dram_table, page.targets_table, page.baseline_table):
        rendered = table(synthetic_run)
        assert len(rendered) > 0, table.__name__
        assert "nan" not in rendered.to_html().lower(), table.__name__
    for figure in (page.ratio_figure, page.bandwidth_figure, page.bytes_figure):
        figure(synthetic_run)
    assert len(validation_summary(synthetic_run)) == 2
    assert dict(environment_rows(synthetic_run))["libraries"] == "cudnn 9.10.2"


def test_every_glued_name_in_the_notebook_is_a_page_value(synthetic_run):
    import re

    from launchlab.chapters.fusion import page

    notebook = json.loads((REPO_ROOT / "book/fusion.ipynb").read_text())
    prose = "".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown")
    glued = set(re.findall(r"\{glue:md\}`([^`]+)`", prose))
    assert len(glued) > 50
    assert sorted(glued - set(page.page_values(synthetic_run))) == []
    code = "".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code")
    for called in re.findall(r"chapter\.(\w+)\(run\)", code):
        assert callable(getattr(page, called)), called


# ---------------------------------------------------------------- run.py end to end on fake GPU modules
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

    def compute(self, x, invoke=None):
        self.load(x)
        self.poison()
        (invoke or self.invoke)()
        return self.output()


def fake_gpu_modules(monkeypatch, broken_library="triton"):
    """Stand-ins for gpu.targets, gpu.capture, gpu.instruments, gpu.baselines and ncu's subprocess."""
    import sys
    import types

    from launchlab.gpu import ncu

    def as_float32(function):
        return lambda x: function(x).astype(np.float32)

    targets = types.ModuleType("launchlab.gpu.targets")
    targets.RowPath = lambda built, rows, cols: FakeTarget(np.zeros((rows, cols), np.float32),
                                                           as_float32(oracles.rms_softmax), 24, "row4")
    targets.FusedRow = lambda built, rows, cols, mode, shared, x: FakeTarget(
        x, as_float32(oracles.rms_softmax if mode == "rms" else oracles.softmax), 8, f"fused_{mode}")
    targets.DeviceCopy = lambda x: FakeTarget(x, lambda v: v.copy(), 8, "copy")

    class Repeated:  # as gpu.targets.Repeated: `calls` calls of a target as one invocation, on its buffers
        def __init__(self, target, calls):
            self.target, self.calls, self.name = target, calls, target.name

        def invoke(self):
            for _ in range(self.calls):
                self.target.invoke()

        def compute(self, x, invoke=None):
            return self.target.compute(x, invoke or self.invoke)

    targets.Repeated = Repeated

    class GraphReplay(FakeTarget):
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

        def compute(self, x, invoke=None):
            return self.target.compute(x, invoke or self.invoke)

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
    baselines = types.ModuleType("launchlab.gpu.baselines")

    def make_baseline(name, x, stream):
        if name == "torch":
            return None, "PyTorch cannot be imported (fake)"
        wrong = (lambda v: np.full_like(v, 0.5)) if name == broken_library else as_float32(oracles.softmax)
        target = FakeTarget(x, wrong, 8, name)
        target.version, target.describe = (lambda: "1.0"), (lambda: {"call": f"{name} (fake)"})
        return target, None

    baselines.make_baseline = make_baseline
    for name, module in (("targets", targets), ("capture", capture), ("instruments", instruments),
                         ("baselines", baselines)):
        monkeypatch.setitem(sys.modules, f"launchlab.gpu.{name}", module)
    monkeypatch.setattr(ncu, "ncu_dram_bytes",
                        lambda rows, cols, config: {"command": ["ncu"], "returncode": 0, "csv": NCU_CSV, "error": None})


def fake_session(writer, parameters):
    """The runner's Session with the GPU parts replaced: a fake backend and device, builds that compile nothing."""
    from types import SimpleNamespace

    from launchlab import runner
    from launchlab.measure.protocol import MeasurementProtocol

    class Backend:
        stream = SimpleNamespace(ptr=1)
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


def test_run_py_end_to_end_on_fake_gpu_modules(tmp_path, monkeypatch):
    """run.run(session) through the real Session, protocol, checks, samples and summary: every declared
    variant of the contenders that set up is measured; a library failing the oracle is dropped with a note."""
    from launchlab.chapters.fusion import run as chapter_run

    fake_gpu_modules(monkeypatch)
    parameters = fusion.Parameters(shapes="64x128,16x1001", profile_shape="64x128")
    writer = evidence.RunWriter("20990101T000000Z-fake", tmp_path)
    session = fake_session(writer, parameters)
    chapter_run.run(session)
    session.finish()
    summaries, headline = recompute(writer.path)
    measured = {s["variant"] for s in session.samples}
    declared = {str(spec.id) for spec in fusion.variants(parameters)}
    assert measured == {v for v in declared if VariantId.parse(v).target not in ("torch", "triton")}
    details = session.record.details
    assert "PyTorch cannot be imported" in details["baselines"]["torch"]["unavailable"]["64x128"]
    assert "failed the float64 softmax oracle" in details["baselines"]["triton"]["unavailable"]["16x1001"]
    assert session.record.environment["libraries"] == {"cudnn": "1.0", "triton": "1.0"}
    assert details["baselines"]["cudnn"]["setup"]["16x1001"] == {"call": "cudnn (fake)"}
    phases = {c["phase"] for c in session.checks}
    assert phases == {"before", "after"} and all(c["passed"] for c in session.checks)
    setup = json.loads((writer.path / "graphs/setup.json").read_text())
    assert setup["row4.64x128.graph32"]["nodes"] == 32 and setup["row4.64x128.graph"]["nodes"] == 1
    for shape in ("64x128", "16x1001"):
        for l2 in ("warm", "cold"):
            assert {f"graph.fused_plain_over_copy.{shape}.{l2}", f"graph.fused_rms_over_copy.{shape}.{l2}",
                    f"graph.cudnn_over_fused_plain.{shape}.{l2}"} <= set(headline)
    assert summaries["dram"]["64x128"]["contenders"]["row4"]["read_bytes"] > 0
    assert (writer.path / SAMPLES_FILE).exists() and (writer.path / "profiles/ncu_64x128.json").exists()

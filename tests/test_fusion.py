"""Chapter 3 on the CPU: byte and bandwidth arithmetic, the ceiling, the plain-softmax oracle,
the fused kernel's launch policy, paired cold ratios, Nsight Compute parsing, and summaries
recomputed from a synthetic run's raw files (pure, deterministic)."""
import json
import math

import numpy as np
import pytest

from launchlab.store import runs as analysis
from launchlab.model import oracles
from launchlab.measure import stats
from launchlab.model import workloads
from launchlab.chapters import CHAPTERS, fusion
from launchlab.gpu.ncu import dram_by_variant, parse_ncu_csv


# ---------------------------------------------------------------- bytes, bandwidth, ceiling
def test_logical_bytes_are_declared_once_per_variant():
    assert fusion.LOGICAL_BYTES_PER_ELEMENT["copy"] == fusion.LOGICAL_BYTES_PER_ELEMENT["fused_rms"] == 8
    assert fusion.LOGICAL_BYTES_PER_ELEMENT["row4"] == 24  # x three times, e twice, y once
    assert all(fusion.LOGICAL_BYTES_PER_ELEMENT[name] == 8 for name in fusion.LIBRARIES)
    assert set(fusion.LOGICAL_BYTES_PER_ELEMENT) == set(fusion.FAMILIES)
    assert fusion.logical_bytes("row4", 4096, 4096) == 24 * 4096 * 4096


def test_bandwidth_is_bytes_over_time():
    # 4096 x 4096 floats read and written: 134,217,728 bytes; in 31.25 us that is 4294.97 GB/s
    assert fusion.bandwidth_gbs(fusion.logical_bytes("copy", 4096, 4096), 31.25) == pytest.approx(4294.967296)
    assert fusion.bandwidth_gbs(1e9, 1e6) == pytest.approx(1.0)  # 1 GB in 1 s


def test_percent_of_copy_and_ceiling_arithmetic():
    """A variant as fast as the copy with the same bytes sits at 100 %; the row path's 24 bytes
    in three times the copy's time also sit at 100 %; a fused kernel 1.15x the copy's time at 87 %."""
    shape = "64x1024"
    warm = {f"{kind}.{shape}": {"event_us": {"median": t}} for kind, t in
            (("copy.stream", 10.0), ("row4.stream", 30.0), ("fused_rms.stream", 11.5))}
    cold = {name: {"cold_us": {"median": 2 * v["event_us"]["median"]}} for name, v in warm.items()}
    band = fusion.summarize_bandwidth(warm, cold, [shape])
    assert band[f"copy.stream.{shape}"]["warm_pct_of_copy"] == pytest.approx(100)
    assert band[f"row4.stream.{shape}"]["warm_pct_of_copy"] == pytest.approx(100)
    assert band[f"fused_rms.stream.{shape}"]["cold_pct_of_copy"] == pytest.approx(100 / 1.15)
    assert band[f"copy.stream.{shape}"]["warm_gbs"] == pytest.approx(8 * 64 * 1024 / 10.0 / 1e3)


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
    assert oracles.SOFTMAX_TOLERANCE == oracles.RMS_SOFTMAX_TOLERANCE


def test_plain_softmax_rejects_bad_input():
    with pytest.raises(ValueError, match="non-finite"):
        oracles.softmax(np.array([[1.0, np.inf]]))


def test_row_block_oracle_and_comparison_equal_the_whole_matrix_ones():
    x = workloads.rms_softmax_fixture(13, 0, 37, 129)
    reference = oracles.rms_softmax(x)
    assert np.array_equal(oracles.by_row_blocks(oracles.rms_softmax, x, workers=4), reference)
    assert np.array_equal(oracles.by_row_blocks(oracles.softmax, x, workers=5), oracles.softmax(x))
    out = reference.astype(np.float32)
    out[3, 7] = np.nan
    out[20, :] *= 1.01  # a whole row off by 1 %: fails
    whole = oracles.compare(out, reference, oracles.RMS_SOFTMAX_TOLERANCE)
    blocks = oracles.compare_by_row_blocks(out, reference, oracles.RMS_SOFTMAX_TOLERANCE, workers=4)
    assert not blocks["passed"] and blocks["non_finite_elements"] == 1
    for key in ("passed", "elements", "failing_elements", "non_finite_elements", "max_abs_error", "rtol", "atol"):
        assert blocks[key] == whole[key], key
    assert blocks["relative_l2_error"] == pytest.approx(whole["relative_l2_error"], rel=1e-9)
    good = oracles.compare_by_row_blocks(reference.astype(np.float32), reference, oracles.RMS_SOFTMAX_TOLERANCE, workers=3)
    assert good["passed"] and good["failing_elements"] == 0


# ---------------------------------------------------------------- launch policy
def test_chunks_count_the_worst_aligned_row():
    assert fusion.max_chunks(4096, 4096) == 1024       # every row starts on a 16-byte boundary
    assert fusion.max_chunks(3, 70001) == 17501        # (3 + 70001 + 3) // 4: a row may start 3 floats in
    assert fusion.max_chunks(3, 70002) == 17502        # ... and then straddle one more chunk
    assert fusion.max_chunks(1, 70002) == 17501        # a single row starts at the aligned base


@pytest.mark.parametrize("rows, cols, tier, block, reg_chunks", [
    (4096, 128, "registers", 32, 4), (4096, 512, "registers", 32, 4), (4096, 1024, "registers", 32, 8),
    (4096, 4096, "registers", 256, 4), (4096, 16384, "shared", 512, 4), (128, 65536, "streamed", 1024, 4),
    (3, 70001, "streamed", 1024, 4), (1823, 781, "registers", 32, 8), (7, 6001, "shared", 256, 4),
])
def test_fused_policy_per_shape(rows, cols, tier, block, reg_chunks):
    config = fusion.fused_config(rows, cols, 232448)  # H200: 227 KiB opt-in shared memory per block
    assert (config["tier"], config["block"], config["defines"]["REG_CHUNKS"]) == (tier, block, reg_chunks)
    assert config["defines"]["BLOCK"] == block
    assert config["defines"]["MIN_BLOCKS"] == fusion.min_blocks(block, fusion.REGISTER_BUDGET[tier])
    assert fusion.fused_tier(rows, cols, block, config["shared_bytes"], reg_chunks) == tier
    if tier == "shared":
        assert config["shared_bytes"] == 16 * fusion.max_chunks(rows, cols) <= 232448
    else:
        assert config["shared_bytes"] == 0


def test_tier_follows_the_kernels_rule():
    assert fusion.fused_tier(2, 16384, 1024, 0) == "registers"
    assert fusion.fused_tier(2, 16384, 512, 0) == "streamed"
    assert fusion.fused_tier(2, 16384, 512, 65536) == "shared"
    assert fusion.fused_tier(2, 16384, 512, 65535) == "streamed"
    # 48 registers: 10 warps per scheduler, 40 per SM; 64 registers: 32 warps per SM
    assert [fusion.min_blocks(b) for b in (32, 64, 128, 256, 512, 1024)] == [32, 20, 10, 5, 2, 1]
    assert [fusion.min_blocks(b, 64) for b in (32, 64, 128, 256, 512, 1024)] == [32, 16, 8, 4, 2, 1]


# ---------------------------------------------------------------- paired cold ratios
def test_cold_paired_ratio_pairs_rounds_and_medians_repeats():
    samples = []
    for round_index in range(21):
        slow = 1.0 + round_index  # drifts across rounds; the within-round ratio stays 2
        for repeat, noise in enumerate((1.0, 1.1, 0.9)):
            samples.append({"round": round_index, "variant": "a", "event_ms": 2 * slow * noise / 1e3,
                            "enqueue_ns": 10, "wait_ns": 100})
            samples.append({"round": round_index, "variant": "b", "event_ms": slow * noise / 1e3,
                            "enqueue_ns": 10, "wait_ns": 100})
    ratio = fusion.cold_paired_ratio(samples, "a", "b")
    assert ratio["median"] == pytest.approx(2.0) and ratio["n"] == 21
    assert ratio["ci_low"] == pytest.approx(2.0) and ratio["ci_high"] == pytest.approx(2.0)
    with pytest.raises(ValueError, match="no round holds both"):
        fusion.cold_paired_ratio(samples, "a", "c")
    summary = fusion.summarize_cold(samples)
    assert summary["a"]["cold_us"]["n"] == 63 and summary["a"]["host_enqueue_exceeded_wait"] == 0


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


def test_ncu_csv_is_parsed_with_units_and_summed_per_variant():
    rows = parse_ncu_csv(NCU_CSV)
    assert len(rows) == 10 and rows[4]["bytes"] == pytest.approx(67108864)
    by_variant = dram_by_variant(rows)
    assert by_variant["row4"] == {"read_bytes": 4 * 67108864, "write_bytes": 1024 + 2 * 67108864, "kernels": 4}
    assert by_variant["fused_rms"]["write_bytes"] == 60000000
    assert "fused_plain" not in by_variant  # its kernel was not profiled
    assert parse_ncu_csv("==ERROR== Failed to initialize the profiler\n") == []


# ---------------------------------------------------------------- summaries from a synthetic run
SHAPES = ("4096x4096", "128x65536")
TIMES_US = {"copy.stream": 30.0, "row4.stream": 100.0, "row4.graph": 98.0, "fused_rms.stream": 33.0,
            "fused_rms.graph": 32.5, "fused_plain.stream": 32.0, "fused_plain.graph": 31.5, "cudnn.stream": 48.0,
            "triton.stream": 36.0}


def write_synthetic_run(root, run_id="20990101T000000Z-ch03", shapes=SHAPES):
    """A run directory shaped like run_on_gpu's output, with known times (torch absent)."""
    path = root / run_id
    (path / "samples").mkdir(parents=True)
    configs = {shape: fusion.fused_config(*workloads.parse_shapes(shape)[0], 232448) for shape in shapes}
    record = {"chapter": fusion.STEM, "run_id": run_id, "parameters": {**fusion.DEFAULT_PARAMETERS, "shapes": ",".join(shapes)},
              "protocol": {"warmups": 10, "rounds": 21, "batch": 128, "large_batch": 32, "host_seed": 1},
              "cold_protocol": {"repeats": 3, "wait_ns": fusion.COLD_WAIT_NS},
              "device": {"name": "Synthetic GPU", "sm_count": 132, "l2_bytes": 62914560},
              "fused_configs": configs, "validation": {"verdict": "passed", "checks": 0},
              "baselines": {"cudnn": {"requested": True, "unavailable": {}, "setup": {"cudnn_version": 90000}},
                            "torch": {"requested": True, "unavailable": {s: "PyTorch cannot be imported" for s in shapes}},
                            "triton": {"requested": True, "unavailable": {}}}}
    (path / "run.json").write_text(json.dumps(record))
    warm, cold = [], []
    for shape in shapes:
        scale = 1.0 if shape == "4096x4096" else 0.25
        for round_index in range(21):
            wobble = 1 + 0.01 * ((round_index * 7) % 5)
            for position, (kind, us) in enumerate(TIMES_US.items()):
                variant = f"{kind}.{shape}"
                event_us = us * scale * wobble
                warm.append({"round": round_index, "position": position, "variant": variant, "single_enqueue_ns": 5000,
                             "single_complete_ns": int(event_us * 1e3) + 9000, "batch_size": 32,
                             "batch_enqueue_ns": 32 * 4000, "batch_complete_ns": int(32 * event_us * 1e3),
                             "batch_event_ms": 32 * event_us / 1e3})
                for repeat in range(3):
                    cold.append({"round": round_index, "position": position, "variant": variant, "repeat": repeat,
                                 "event_ms": 1.05 * event_us / 1e3, "enqueue_ns": 20000, "wait_ns": fusion.COLD_WAIT_NS})
    (path / "samples/warm.jsonl").write_text("".join(json.dumps(s) + "\n" for s in warm))
    (path / "samples/cold.jsonl").write_text("".join(json.dumps(s) + "\n" for s in cold))
    for label in {c["module"] for c in configs.values()} | {"row_softmax"}:
        kernels = ("row_rms", "row_max") if label == "row_softmax" else fusion.FUSED_KERNELS
        (path / "builds" / label).mkdir(parents=True)
        (path / "builds" / label / "record.json").write_text(json.dumps({
            "resources_loaded": {k: {"registers": 40, "shared_bytes": 128, "local_bytes": 0} for k in kernels},
            "nvcc": {"resources": {k: {"spill_stores": 0, "spill_loads": 0, "stack_bytes": 0} for k in kernels}}}))
    (path / "graphs").mkdir()
    (path / "graphs/setup.json").write_text(json.dumps({f"{f}.graph.{s}": {"capture_us": 10.0, "end_capture_us": 20.0,
                                                                          "instantiate_us": 0.0, "upload_us": 5.0,
                                                                          "first_replay_us": 40.0}
                                                        for f in ("row4", "fused_rms", "fused_plain") for s in shapes}))
    (path / "profiles").mkdir()
    (path / "profiles/ncu_4096x4096.csv").write_text(NCU_CSV)
    (path / "profiles/ncu_4096x4096.json").write_text(json.dumps({"command": ["ncu"], "returncode": 0, "error": None}))
    (path / "validation.json").write_text(json.dumps([
        {"phase": phase, "shape": shape, "variant": f"fused_rms.stream.{shape}", "fixture": fixture, "oracle": "rms",
         "passed": True, "failing_elements": 0, "max_abs_error": 1e-8, "relative_l2_error": 1e-7}
        for shape in shapes for phase, fixture in (("before", 0), ("after", 3))]))
    return path


def test_summaries_from_a_synthetic_run_are_pure_and_correct(tmp_path):
    run = write_synthetic_run(tmp_path)
    first = fusion.summarize(run)
    assert json.dumps(first, sort_keys=True) == json.dumps(fusion.summarize(run), sort_keys=True)
    ratios = first["ratios"]
    assert ratios["fused_rms_over_copy"]["4096x4096"]["warm"]["median"] == pytest.approx(1.1)
    assert ratios["fused_rms_over_copy"]["4096x4096"]["cold"]["median"] == pytest.approx(1.1)
    assert ratios["cudnn_over_fused_plain"]["128x65536"]["warm"]["median"] == pytest.approx(1.5)
    assert "torch_over_fused_plain" not in ratios  # the library was absent: omitted, never faked
    assert first["warm"]["copy.stream.4096x4096"]["host_bound"] is False
    band = first["bandwidth"]["fused_rms.stream.4096x4096"]
    assert band["warm_pct_of_copy"] == pytest.approx(100 / 1.1, rel=1e-3)
    assert first["dram"]["4096x4096"]["variants"]["row4"]["measured_over_logical"] == pytest.approx(1.0, rel=1e-4)  # 6 x 64 MiB
    met = {(t["target"], t["shape"], t["l2"]): t["met"] for t in first["targets"]}
    assert met[("fused RMS time / copy time", "4096x4096", "warm")] is True
    assert met[("cudnn time / fused plain time", "4096x4096", "warm")] is True   # 1.5 > 1 and >= 1.3
    assert met[("torch time / fused plain time", "4096x4096", "warm")] is None   # not measured
    headline = fusion.headline(first)
    for shape in SHAPES:
        assert {f"fused_rms_over_copy.{shape}.warm", f"fused_rms_over_copy.{shape}.cold", f"cudnn_over_fused_plain.{shape}",
                f"row4_over_fused_rms.{shape}"} <= set(headline)
        assert f"torch_over_fused_plain.{shape}" not in headline
    assert headline["row4_over_fused_rms.4096x4096"] == pytest.approx(100 / 33)
    assert headline["target_met.cudnn_over_fused_plain_at_least_1.3.4096x4096.warm"] is True
    json.dumps(headline, allow_nan=False)


def test_analysis_recomputes_a_synthetic_run(tmp_path):
    assert CHAPTERS[fusion.STEM] is fusion
    run = write_synthetic_run(tmp_path)
    summaries, headline = analysis.recompute(run)
    (run / "summaries.json").write_text(json.dumps(summaries, sort_keys=True, allow_nan=False))
    (run / "headline.json").write_text(json.dumps(headline, sort_keys=True, allow_nan=False))
    assert analysis.analyze(run) == []


def test_page_values_and_tables_render_from_a_synthetic_run(tmp_path):
    pytest.importorskip("pandas")
    run_dir = write_synthetic_run(tmp_path)
    summaries, headline = analysis.recompute(run_dir)
    run = analysis.ChapterRun(run_dir, json.loads((run_dir / "run.json").read_text()), summaries, headline)
    values = fusion.page_values(run)
    assert values["fused_rms_over_copy_4096x4096_warm"] == "1.10"
    assert values["copy_target_summary"].startswith("met in all")
    assert values["torch_warm_summary"] == "not measured (library absent)"
    assert "torch" in values["libraries_absent"]
    for table in (fusion.config_table, fusion.timing_table, fusion.ratio_table, fusion.graph_table, fusion.resource_table,
                  fusion.dram_table, fusion.targets_table, fusion.baseline_table, fusion.validation_table):
        assert len(table(run)) > 0, table.__name__


def test_paired_ratio_reused_from_stats():
    """The warm ratios are the harness's stats.paired_ratio, not a copy of it."""
    samples = [{"round": r, "variant": v, "batch_size": 1, "batch_event_ms": t, "single_enqueue_ns": 1,
                "single_complete_ns": 1, "batch_enqueue_ns": 1, "batch_complete_ns": 1}
               for r in range(5) for v, t in (("a", 3.0), ("b", 1.5))]
    assert stats.paired_ratio(samples, "a", "b")["median"] == pytest.approx(2.0)

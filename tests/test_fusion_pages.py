"""Chapter 3's summaries, headline, tables, figures and page values recomputed from a SYNTHETIC run (fake samples for
every declared variant) and the sweep's summary on hand-set timings; every glued name of the page has a value."""
import json

import numpy as np
import pytest

from launchlab.analysis import analyze, open_run, recompute
from launchlab.chapters import fusion
from launchlab.chapters.fusion import page_sweep, plans, summary
from launchlab.chapters.fusion.summary import by_variant
from launchlab.gpu import ncu
from launchlab.measure import stats
from launchlab.model import workloads
from launchlab.store import evidence
from launchlab.store.runs import Run

from fusion_fakes import (H200, REPO_ROOT, SANITIZER_CHECKS, SYNTHETIC_PARAMETERS, synthetic_samples, typed,
                         write_synthetic_run)


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
    assert values["sanitizer_summary"] == (f"compute-sanitizer's memcheck clean over {SANITIZER_CHECKS} checks and racecheck found 2 "
                                           f"errors over {SANITIZER_CHECKS} checks")
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
    # a row per declared sweep target that has a point (a range the sweep does not reach has no row)
    measured = [t for t in sweep["targets"] if page.sweep_verdict(t, synthetic_run.summaries) != page.NO_POINT]
    assert 0 < len(measured) <= len(sweep["targets"]) == 2 * (4 + 3)
    assert len(page.sweep_targets_table(synthetic_run)) == len(measured)
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
    assert len(glued) > 50 and {"sweep_min_speedup_torch_warm", "sanitizer_summary", "sweep_points"} <= glued
    values = page.page_values(every_library_run)
    assert sorted(glued - set(values)) == []
    assert values["sanitizer_summary"] == "compute-sanitizer did not run"
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
    # a target whose range has no point has no row; a run without any gets one row that says so
    assert verdicts == ({"not measured (no sweep point in any target's range)"} if parameters is NO_SWEEP else
                        {"met", "not measured (library absent)"})


@pytest.mark.parametrize("config, phrase", [
    ({"design": "row", "tier": "shared"}, "one block holds each row in shared memory"),
    ({"design": "row", "tier": "streamed"}, "one block streams each row, reading x twice"),
    ({"design": "split", "place": "registers and shared memory, 2 pieces"},
     "each row is split into 2 pieces over resident blocks, each held on chip"),
    ({"design": "split", "place": "streamed, 132 pieces"},
     "each row is split into 132 pieces over resident blocks, streamed, reading x twice"),
    ({"design": "cluster", "place": "registers, 16 blocks"}, "a cluster of 16 blocks holds each row in registers"),
    ({"design": "narrow", "place": "registers (single floats), 16 lanes"},
     "16 lanes of a warp hold each row in registers as single floats"),
])
def test_holding_phrase_says_where_each_design_keeps_a_row(config, phrase):
    from launchlab.chapters.fusion import page

    assert page.holding_phrase(config) == phrase


def test_long_rows_and_widest_miss_follow_the_run_not_the_text(synthetic_run):
    """The sentences about the long-row shapes and the widest fixed-shape miss come from the run's plans and ratios:
    changing a plan or a ratio changes them."""
    from launchlab.chapters.fusion import page

    s = json.loads(json.dumps(synthetic_run.summaries))
    s["configs"]["128x65536"] = {"design": "split", "place": "registers and shared memory, 3 pieces"}
    assert "at 128×65536 each row is split into 3 pieces" in page.long_rows_sentence(s)
    ratios = s["ratios"]["graph"]["fused_plain_over_copy"]
    widest = max(ratios, key=lambda shape: ratios[shape]["warm"]["median"])
    other = next(shape for shape in ratios if shape != widest and shape in s["configs"])
    ratios[other]["warm"]["median"] = ratios[widest]["warm"]["median"] + 1.0
    assert page.widest_fixed_miss_sentence(s).startswith(f"The widest miss among these shapes is {page.shape_label(other)}")


def test_long_rows_sentence_says_so_when_the_run_has_no_long_row_shape(synthetic_run):
    from launchlab.chapters.fusion import page

    s = json.loads(json.dumps(synthetic_run.summaries))
    for shape in page.LONG_ROW_SHAPES:
        s["configs"].pop(shape, None)
    assert page.long_rows_sentence(s) == "This run measured neither 4096×16384 nor 128×65536."


def test_the_below_copy_sentence_counts_the_cases_whose_interval_lies_below_one():
    """page.below_copy_value on the accepted run: the number of (contender, shape, L2) ratios over the copy whose
    whole 95 % interval lies below 1, at the fixed shapes and the sweep's points, and the least of their medians."""
    from launchlab.chapters.fusion import page

    s = open_run(evidence.accepted_run("fusion")).summaries
    below = {}
    for name, shapes in s["ratios"]["graph"].items():
        if name.endswith("_over_copy"):
            for shape, by_l2 in shapes.items():
                for l2, ratio in by_l2.items():
                    if shape in s["shapes"] and ratio["ci_high"] < 1:
                        below[(name, shape, l2)] = ratio["median"]
    for series in ("4096", "128"):
        for point in s["sweep"].get(series, []):
            for name, by_l2 in point["ratios"].items():
                for l2, ratio in by_l2.items():
                    if name.endswith("_over_copy") and ratio.get("ci_high") is not None and ratio["ci_high"] < 1:
                        below.setdefault((name, f"{point['rows']}x{point['cols']}", l2), ratio["median"])
    sentence = page.below_copy_value(s)
    assert below, "the accepted run has cases below the copy"
    assert f" in {len(below)} measured cases " in sentence
    assert f", {min(below.values()):.2f} times its device time" in sentence
    # every such point of the slice also timed the copy kernel, which was faster there: the sentence gives the range
    kernel = [point["device_us"][name[:-len("_over_copy")]][l2] / point["device_us"]["copy4"][l2]
              for (name, shape, l2) in below for point in s["sweep"]["128"] if f"128x{point['cols']}" == shape]
    assert kernel, "the accepted run has slice points below cudaMemcpyAsync"
    assert f"took {min(kernel):.2f}–{max(kernel):.2f} times its device time" in sentence


def test_row_build_values_count_the_registers_only_builds_and_range_their_registers():
    """page.row_build_values: the row shapes, those served by the registers tier alone, and each build's registers
    (from the run's resources) as a range; "none" where a run has no such build."""
    from launchlab.chapters.fusion import page, plans

    rng = np.random.default_rng()
    alone_registers = sorted(int(r) for r in rng.choice(np.arange(16, 40), 3, replace=False))
    configs = {f"{k}x100": {"design": "row", "family": plans.REGISTERS_FAMILY, "module": f"alone{k}"} for k in range(3)}
    configs |= {"5x100": {"design": "row", "family": "fused_softmax", "module": "full"},
                "6x100": {"design": "narrow", "family": "softmax_designs", "module": "narrow"}}
    resources = {f"alone{k}": {kernel: {"registers": alone_registers[k]} for kernel in plans.REGISTERS_KERNELS}
                 for k in range(3)}
    resources["full"] = {"fused_softmax": {"registers": 56}, "fused_rms_softmax": {"registers": 64}}
    values = page.row_build_values({"configs": configs, "resources": resources})
    assert values == {"row_shapes": "4", "registers_only_shapes": "3",
                      "registers_only_registers": f"{alone_registers[0]} to {alone_registers[-1]}",
                      "full_row_registers": "56 to 64"}
    without = page.row_build_values({"configs": {"5x100": configs["5x100"]}, "resources": resources})
    assert without["registers_only_shapes"] == "0" and without["registers_only_registers"] == "none"


def test_row_fit_sentences_follow_the_plans_tier():
    """page.row_fit_sentence: the row's bytes and where it lives, from the plan, for each tier and for a design."""
    from launchlab.chapters.fusion import page

    rng = np.random.default_rng()
    cols = int(rng.integers(1000, 100000))
    block, chunks = int(rng.choice([64, 128, 256, 1024])), int(rng.choice([1, 2, 4, 8]))
    row = {"design": "row", "block": block, "defines": {"REG_CHUNKS": chunks}, "shared_bytes": 4 * cols}
    shape = f"4096x{cols}"
    held = f"{block:,} threads of {chunks} chunks each hold {16 * chunks * block:,} bytes in registers"
    text = page.row_fit_sentence(shape, row | {"tier": "registers"})
    assert text.startswith(f"At 4096×{cols} a row is {4 * cols:,} bytes") and held in text and text.endswith("there.")
    text = page.row_fit_sentence(shape, row | {"tier": "shared"})
    assert f"launched with {4 * cols:,} bytes of dynamic shared memory" in text
    assert "streams it, reading x twice" in page.row_fit_sentence(shape, row | {"tier": "streamed"})
    cluster = {"design": "cluster", "place": "registers, 4 blocks"}
    assert page.row_fit_sentence(shape, cluster).endswith("there a cluster of 4 blocks holds each row in registers.")


def test_a_ratio_cell_shows_three_decimals_where_two_would_hide_its_side_of_one():
    """page_format.ratio_cell: an interval wholly below (above) 1 that rounds to 1.00 at two decimals is written at
    three, so a loss (a win) never reads as a tie; an end across 1 that would print on it gets three too, so an
    interval across 1 shows that it is; an interval clear of 1 keeps two."""
    from launchlab.chapters.fusion.page_format import ratio_cell

    rng = np.random.default_rng()
    below = {"median": 0.99 - rng.uniform(0, 0.004), "ci_low": 0.984, "ci_high": 0.9951 + rng.uniform(0, 0.0048)}
    assert ratio_cell(below).endswith(f"{below['ci_high']:.3f}]")
    above = {"median": 1.01, "ci_low": 1.0001 + rng.uniform(0, 0.0048), "ci_high": 1.02}
    assert f"[{above['ci_low']:.3f}–" in ratio_cell(above)
    across = {"median": 1.0, "ci_low": 0.99, "ci_high": 1.004}
    clear = {"median": 1.2, "ci_low": 1.1, "ci_high": 1.3}
    assert ratio_cell(across) == "1.000 [0.990–1.004]" and ratio_cell(clear) == "1.20 [1.10–1.30]"

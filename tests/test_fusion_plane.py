"""Chapter 3's random plane on the CPU: the declaration's draw, the run on fake GPU modules (fusion_fakes' fakes)
reaching every output (the plane's points, its summary and headline, the page's maps and tables, the notebook's
cells), and the plane's summary on hand-set samples (regimes, ties, the bootstrap, the floor class, the model)."""
import json
from pathlib import Path

import numpy as np
import pytest

from launchlab.analysis import open_run
from launchlab.chapters import fusion
from launchlab.chapters.fusion import plane

REPO_ROOT = Path(__file__).resolve().parents[1]
H200 = {"sm_count": 132, "compute_capability": "9.0", "shared_bytes_per_block_optin": 232448,
        "shared_bytes_per_sm": 233472}


# ---------------------------------------------------------------- the declaration's draw
def test_the_default_plane_is_96_distinct_points_inside_the_declared_bounds():
    shapes = fusion.plane_shapes(fusion.Parameters())
    assert len(shapes) == len(set(shapes)) == plane.PLANE_MIN_POINTS == 96
    assert all(1 <= r <= plane.PLANE_MAX_ROWS and 1 <= c <= plane.PLANE_MAX_COLS for r, c in shapes)
    assert all(plane.PLANE_MIN_BYTES <= 4 * r * c <= plane.PLANE_MAX_BYTES for r, c in shapes)


def test_the_plane_is_fixed_by_its_seed_and_a_shorter_draw_is_its_prefix():
    assert plane.draw(96) == plane.draw(96, plane.PLANE_SEED) == plane.draw(96)
    assert plane.draw(12) == plane.draw(96)[:12]
    assert plane.draw(12, plane.PLANE_SEED + 1) != plane.draw(12)


def test_the_draw_is_log_uniform_in_rows_and_row_length():
    generator = np.random.default_rng(0)
    rows = [plane.log_uniform_int(generator, plane.PLANE_MAX_ROWS) for _ in range(20000)]
    octaves = np.bincount(np.floor(np.log2(rows)).astype(int), minlength=17)
    assert min(rows) == 1 and max(rows) <= plane.PLANE_MAX_ROWS
    assert np.all(np.abs(octaves[:16] / len(rows) - 1 / 16) < 0.015)   # each octave about as likely


def test_plane_parameters_are_typed_and_checked():
    typed = fusion.CHAPTER.parse_parameters({"plane_points": "7", "plane_seed": "5", "plane_rounds": "3"})
    assert (typed.plane_points, typed.plane_seed, typed.plane_rounds) == (7, 5, 3)
    assert fusion.Parameters().plane_seed == plane.PLANE_SEED and fusion.Parameters().plane_rounds == fusion.PLANE_ROUNDS
    with pytest.raises(ValueError, match="plane_rounds >= 1"):
        fusion.Parameters(plane_rounds=0)
    with pytest.raises(ValueError, match="parameter plane_points of fusion must be int"):
        fusion.CHAPTER.parse_parameters({"plane_points": "many"})


def test_the_plane_declares_a_warm_graph_and_a_cold_stream_call_per_contender_and_point():
    parameters = fusion.CHAPTER.parse_parameters({"plane_points": "4", "sweep_128": "", "shapes": "64x128"})
    declared = [v for v in fusion.CHAPTER.variants(parameters) if "plane" in v.enters]
    names = ["copy", "copy4", "fused_rms", "fused_plain", "cudnn", "torch", "triton"]
    assert fusion.sweep_contenders(parameters, "plane") == names
    for rows, cols in fusion.plane_shapes(parameters):
        case = f"{rows}x{cols}"
        found = {(v.id.target, v.id.submission, v.l2_states) for v in declared if v.id.case == case}
        assert found == {(n, s, l2) for n in names for s, l2 in ((f"graph{fusion.sweep_calls(rows, cols)}", ("warm",)),
                                                                 ("stream", ("cold",)))}
    assert not any(v.id.target == "copy4" for v in fusion.CHAPTER.variants(parameters) if "table" in v.enters)


def test_a_plane_point_that_is_also_a_fixed_shape_is_refused_by_name():
    first = plane.draw(1)[0]
    with pytest.raises(ValueError, match=f"plane points {first[0]}x{first[1]} are also fixed or sweep shapes"):
        fusion.plane_shapes(fusion.CHAPTER.parse_parameters({"plane_points": "2", "shapes": f"{first[0]}x{first[1]}"}))


# ---------------------------------------------------------------- the floor class and the regimes
@pytest.mark.parametrize("rows, cols, floor", [
    (1, 1 << 20, True), (2, 1 << 20, True), (2, (1 << 20) - 1, False), (3, 1 << 20, False),   # 4 MiB rows
    (131, 1 << 17, True), (131, 1 << 16, False),    # 64 MiB on 131 rows is over the 63.8 MiB on chip; 32 MiB is not
    (64, 1 << 18, True), (132, 1 << 18, False), (8, 4096, False)])   # 132 rows: not fewer than the SMs
def test_floor_class_from_the_device_identity(rows, cols, floor):
    assert plane.on_chip_bytes(H200) == 132 * (256 * 1024 + 233472)   # 63.8 MiB of registers and shared memory
    assert (plane.floor_reason(rows, cols, H200) is not None) == floor


def test_the_regime_is_set_by_the_copy_ceilings_own_time():
    assert plane.regime(10.0) == "bandwidth" and plane.regime(9.99) == "latency"


# ---------------------------------------------------------------- a run on fake GPU modules, through to the page
@pytest.fixture(scope="module")
def fake_plane_run(tmp_path_factory):
    """run.run on fusion_fakes' fakes (a plane of 3 small points), sealed summaries and headline written."""
    import fusion_fakes

    with pytest.MonkeyPatch.context() as monkeypatch:
        session, writer, asked, summaries, headline = fusion_fakes.run_on_fakes(tmp_path_factory.mktemp("plane"),
                                                                                 monkeypatch)
        yield {"session": session, "path": writer.path, "summaries": summaries, "headline": headline}


def notebook_code(stem: str) -> list[str]:
    notebook = json.loads((REPO_ROOT / "book" / f"{stem}.ipynb").read_text())
    return ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]


def test_every_notebook_cell_runs_on_a_plane_run(fake_plane_run, monkeypatch):
    """The chapter's notebook, its parameters cell aside and the run given, runs every cell on the fake run."""
    pytest.importorskip("pandas")
    import launchlab.chapter

    run = open_run(fake_plane_run["path"], require_sealed=False)
    monkeypatch.setattr(launchlab.chapter, "open_chapter", lambda *args, **kwargs: run)
    namespace = {}
    cells = notebook_code("fusion")
    exec(cells[0], namespace)
    for cell in cells[1:]:
        exec(cell, namespace)


# ---------------------------------------------------------------- the plane's summary on hand-set samples
def plane_samples(shape: tuple[int, int], warm_us: dict, cold_us: dict, rounds: int = 7, spread: dict | None = None):
    """Samples of the plane's variants at one shape: warm per call (graph of sweep_calls calls), cold per call,
    round r scaled by 1 + spread[name] * (r - 3) / 3 (default 1 %, alternating)."""
    import fusion_fakes

    rows, cols = shape
    case, calls = f"{rows}x{cols}", fusion.sweep_calls(rows, cols)
    found = []
    for r in range(rounds):
        for name in warm_us:
            wobble = 1 + (spread or {}).get(name, 0.01) * ((r % 3) - 1)
            found.append(fusion_fakes.sample("warm_batch", r, f"{name}.{case}.graph{calls}", 32,
                                            calls * warm_us[name] * wobble))
            found += [fusion_fakes.sample("cold", r, f"{name}.{case}.stream", 1, cold_us[name] * wobble)
                      for _ in range(3)]
    return found


def summarize_point(shape, warm_us, cold_us, plan=None, spread=None):
    from launchlab.chapters.fusion import summary_plane
    from launchlab.chapters.fusion.summary import by_variant
    from launchlab.measure import stats

    samples = plane_samples(shape, warm_us, cold_us, spread=spread)
    names = list(warm_us)
    plan = plan or {"design": "row", "module": "m"}
    return summary_plane.point_summary(by_variant(samples), stats.summarize(samples), names, *shape, plan, H200, {})


def test_the_ceiling_is_the_faster_copy_in_each_l2_state_and_ratios_pair_against_it():
    point = summarize_point((64, 100000), {"copy": 20.0, "copy4": 16.0, "fused_plain": 19.2, "fused_rms": 20.0},
                            {"copy": 25.0, "copy4": 30.0, "fused_plain": 30.0, "fused_rms": 31.0})
    assert point["ceiling"] == {"warm": {"name": "copy4", "us": pytest.approx(16.0)},
                                "cold": {"name": "copy", "us": pytest.approx(25.0)}}
    assert point["ratios"]["fused_plain_over_copy"]["warm"]["median"] == pytest.approx(1.2)
    assert point["ratios"]["fused_plain_over_copy"]["cold"]["median"] == pytest.approx(1.2)
    assert point["ratios"]["copy_over_ceiling"]["warm"]["median"] == pytest.approx(1.25)    # memcpy, warm
    assert point["ratios"]["copy4_over_ceiling"]["cold"]["median"] == pytest.approx(1.2)    # the kernel, cold
    assert point["regime"] == {"warm": "bandwidth", "cold": "bandwidth"}
    assert point["minus_copy_us"]["warm"] == pytest.approx(3.2)
    assert point["floor"] is None and point["bytes"] == 8 * 64 * 100000


def test_a_copy_under_10_us_is_the_latency_regime():
    point = summarize_point((4, 1000), {"copy": 2.0, "copy4": 2.5, "fused_plain": 3.0},
                            {"copy": 9.99, "copy4": 12.0, "fused_plain": 11.0})
    assert point["regime"] == {"warm": "latency", "cold": "latency"}
    assert point["minus_copy_us"]["warm"] == pytest.approx(1.0)
    assert point["minus_copy_us"]["cold"] == pytest.approx(1.01)


def test_a_library_ratio_whose_interval_includes_1_is_a_tie():
    from launchlab.chapters.fusion import summary_plane

    clear = summarize_point((8, 4096), {"copy": 5.0, "copy4": 5.0, "fused_plain": 5.0, "cudnn": 6.0, "triton": 5.0},
                            {"copy": 5.0, "copy4": 5.0, "fused_plain": 5.0, "cudnn": 6.0, "triton": 5.0},
                            spread={"triton": 0.05, "fused_plain": 0.0})
    ratios = clear["ratios"]
    assert ratios["cudnn_over_fused_plain"]["warm"]["ci_low"] > 1                          # fused plain faster
    assert ratios["triton_over_fused_plain"]["warm"]["ci_low"] < 1 < ratios["triton_over_fused_plain"]["warm"]["ci_high"]
    stats = summary_plane.library_statistics([clear], "triton", "warm")
    assert (stats["fused_faster"], stats["ties"], stats["fused_slower"], stats["share"]) == (0, 1, 0, 0.0)
    stats = summary_plane.library_statistics([clear], "cudnn", "warm")
    assert (stats["fused_faster"], stats["share"], stats["worst"]["value"]) == (1, 1.0, pytest.approx(1.2))
    assert summary_plane.library_statistics([clear], "torch", "warm") == {"points": 0}


def hand_point(shape, regime, ratio, minus=0.0, floor=None, predicted=None, measured=10.0):
    return {"shape": shape, "regime": {"warm": regime}, "floor": floor, "minus_copy_us": {"warm": minus},
            "ratios": {"fused_plain_over_copy": {"warm": {"median": ratio}}},
            "predicted_us": {} if predicted is None else {"warm": predicted},
            "device_us": {"fused_plain": {"warm": measured}}}


def test_regime_statistics_split_by_the_regime_and_leave_the_floor_out_of_the_max():
    from launchlab.chapters.fusion import summary_plane

    points = [hand_point("a", "bandwidth", 1.0), hand_point("b", "bandwidth", 1.21),
              hand_point("c", "bandwidth", 2.0, floor="2 rows of 8 MiB"), hand_point("d", "latency", 3.0, minus=0.4),
              hand_point("e", "latency", 1.5, minus=1.2)]
    ratios = summary_plane.ratio_statistics(points, "fused_plain_over_copy", "warm")
    assert ratios["points"] == 3
    assert ratios["geomean"]["value"] == pytest.approx((1.0 * 1.21 * 2.0) ** (1 / 3))
    assert ratios["geomean"]["ci_low"] <= ratios["geomean"]["value"] <= ratios["geomean"]["ci_high"]
    assert 1.0 <= ratios["geomean"]["ci_low"] and ratios["geomean"]["ci_high"] <= 2.0   # inside the values' range
    assert ratios["max"] == {"value": 1.21, "shape": "b"}                                # the floor point left out
    latency = summary_plane.latency_statistics(points, "warm")
    assert latency["points"] == 2 and latency["median"]["value"] == pytest.approx(0.8)
    assert latency["max"] == {"value": 1.2, "shape": "e"}


def test_the_bootstrap_is_seeded_and_its_interval_narrows_with_more_points():
    from launchlab.chapters.fusion import summary_plane

    few = summary_plane.bootstrap([1.0, 1.1, 1.3, 1.6], summary_plane.geomean)
    assert few == summary_plane.bootstrap([1.0, 1.1, 1.3, 1.6], summary_plane.geomean)
    many = summary_plane.bootstrap([1.0, 1.1, 1.3, 1.6] * 25, summary_plane.geomean)
    assert many["value"] == pytest.approx(few["value"])
    assert many["ci_high"] - many["ci_low"] < few["ci_high"] - few["ci_low"]


def test_the_model_error_is_read_from_the_plans_prediction():
    from launchlab.chapters.fusion import summary_plane

    point = summarize_point((64, 100000), {"copy": 20.0, "copy4": 20.0, "fused_plain": 20.0},
                            {"copy": 20.0, "copy4": 20.0, "fused_plain": 25.0},
                            plan={"design": "row", "module": "m", "predicted_us": {"row": {"warm": 22.0, "cold": 20.0},
                                                                                   "split": {"warm": 1.0}}})
    assert point["predicted_us"] == {"warm": 22.0, "cold": 20.0}   # the chosen design's, not another's
    points = [point, hand_point("x", "bandwidth", 1.0, predicted=5.0, measured=10.0)]
    model = summary_plane.model_statistics(points, "warm")
    assert model["points"] == 2 and model["median"] == pytest.approx((0.1 + 0.5) / 2)
    assert model["worst"] == {"value": 0.5, "shape": "x"}
    assert summary_plane.model_statistics([hand_point("y", "bandwidth", 1.0)], "warm") == {"points": 0}


def test_headline_keys_are_exactly_the_declared_ones(fake_plane_run):
    keys = {k for k in fake_plane_run["headline"] if k.startswith("plane.")}
    allowed = {"plane.points", "plane.floor.points"}
    for l2 in ("warm", "cold"):
        allowed |= {f"plane.{r}.{w}.{l2}" for r in ("fused_plain_over_copy", "fused_rms_over_copy")
                    for w in ("geomean", "p90", "max")}
        allowed |= {f"plane.fused_plain_minus_copy_us.{w}.{l2}" for w in ("median", "p90")}
        allowed |= {f"plane.floor.fused_plain_over_copy.max.{l2}"}
        allowed |= {f"plane.worst_library_ratio.{lib}.{l2}" for lib in ("cudnn", "torch", "triton")}
        allowed |= {f"plane.faster_than.{lib}.share.{l2}" for lib in ("cudnn", "torch", "triton")}
        allowed |= {f"plane.model_error.{w}.{l2}" for w in ("median", "p90")}
    assert keys <= allowed and "plane.points" in keys
    assert "plane.faster_than.cudnn.share.warm" in keys and "plane.faster_than.triton.share.warm" not in keys


def test_the_data_page_and_the_interactive_map_render_every_point(fake_plane_run, monkeypatch):
    pytest.importorskip("pandas")
    import launchlab.chapter
    from launchlab.chapters.fusion import page

    run = open_run(fake_plane_run["path"], require_sealed=False)
    points = fake_plane_run["summaries"]["plane"]["points"]
    monkeypatch.setattr(launchlab.chapter, "open_chapter", lambda *args, **kwargs: run)
    namespace = {}
    for cell in notebook_code("data/fusion-data"):
        if "data.save()" not in cell:
            exec(cell, namespace)
    shown = dict(namespace["data"].shown)
    assert len(shown["Plane points"].raw) == len(points) == 3
    assert set(shown["Plane targets"].raw["L2"]) == {"warm", "cold"}
    svg = page.interactive_map(run, script="planemap.js")
    assert svg.count("<circle") == 3 and svg.count("<title>") == 3 and 'src="planemap.js"' in svg
    for point in points:
        assert f"{point['rows']}×{point['cols']}" in svg


@pytest.mark.parametrize("span", [1.25, 2.0, 3.85, 3.942234621870961, 4.0])
def test_the_colour_bar_ticks_stay_inside_the_norm(span):
    """A tick outside 1/span..span (1/3.94 rounded to 0.25, for one) breaks the diverging bar's scale: every tick lies
    inside, 1 among them, and the ends are within a hundredth of the range's ends."""
    from launchlab.chapters.fusion.page_plane import ratio_ticks

    ticks = ratio_ticks(span)
    assert 1.0 in ticks and all(1 / span <= t <= span for t in ticks)
    assert min(ticks) - 1 / span < 0.01 and span - max(ticks) < 0.01


def test_the_replicate_sentence_gives_each_figure_beside_this_runs_and_the_largest_change(monkeypatch):
    from types import SimpleNamespace

    from launchlab.chapters.fusion import page_plane_text as text

    def headline(scale: float) -> dict:
        base = {"plane.fused_plain_over_copy.geomean": 1.2, "plane.fused_plain_over_copy.max": 1.5,
                "plane.fused_plain_minus_copy_us.median": 0.5, "plane.worst_library_ratio.cudnn": 0.96}
        return {f"{key}.{l2}": value * (scale if l2 == "cold" and "median" in key else 1.0)
                for key, value in base.items() for l2 in ("warm", "cold")}

    here = SimpleNamespace(run_id="run-a", headline=headline(1.0))
    other = SimpleNamespace(run_id="run-b", headline=headline(1.1))
    monkeypatch.setattr(text, "replicates_of", lambda run: [other])
    sentence = text.replicate_sentence(here)
    assert sentence.startswith("This run's replicate, run-b, measured")
    assert "at 0.50 µs warm and 0.55 µs cold (0.50 µs and 0.50 µs here)" in sentence
    assert "geometric mean of fused plain ÷ copy at 1.20 warm and 1.20 cold" in sentence
    assert sentence.endswith("10.0\u00a0%, in the latency regime's median time added (cold L2).")
    assert text.replicate_sentence(here, brief=True) == (
        "This run's replicate, run-b, moved the plane's main figures by at most 10.0\u00a0%, in the latency regime's "
        "median time added (cold L2).")
    monkeypatch.setattr(text, "replicates_of", lambda run: [])
    assert "was not measured" in text.replicate_sentence(here)


@pytest.mark.parametrize("warm, cold", [(True, True), (True, False), (False, True), (False, False)])
def test_the_target_verdicts_name_each_target_once_under_its_verdict_in_both_l2_states(warm, cold):
    """page_plane_text.target_verdicts: a target met in both states, in one only, or in neither lands in its group,
    the statistics of one subject are listed together, and a plane without targets says so."""
    from launchlab.chapters.fusion import page_plane_text as text

    targets = [{"key": "fused_plain_over_copy", "statistic": "geomean", "l2": "warm", "met": warm},
               {"key": "fused_plain_over_copy", "statistic": "geomean", "l2": "cold", "met": cold},
               {"key": "fused_plain_over_copy", "statistic": "p90", "l2": "warm", "met": False},
               {"key": "fused_plain_over_copy", "statistic": "p90", "l2": "cold", "met": False},
               {"key": "faster_than.cudnn", "statistic": "share", "l2": "warm", "met": True},
               {"key": "faster_than.cudnn", "statistic": "share", "l2": "cold", "met": True}]
    sentence = text.target_verdicts({"targets": targets})
    group = ("met warm and cold" if warm and cold else "met warm only" if warm else "met cold only" if cold else None)
    if group == "met warm and cold":   # both targets in one group, in the order declared
        assert sentence.startswith("Met warm and cold: fused plain ÷ copy (geometric mean) and the share of points "
                                   "faster than cuDNN softmax.")
    else:
        assert sentence.startswith("Met warm and cold: the share of points faster than cuDNN softmax.")
    if group is None:
        assert "Missed warm and cold: fused plain ÷ copy (geometric mean and p90)." in sentence
    else:
        if group != "met warm and cold":
            assert f"{group[0].upper()}{group[1:]}: fused plain ÷ copy (geometric mean)." in sentence
        assert "Missed warm and cold: fused plain ÷ copy (p90)." in sentence
    assert text.target_verdicts({"targets": []}) == "This run declared no plane targets."

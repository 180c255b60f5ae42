"""Chapter 3's random plane on the CPU: the declaration's draw, the run on fake GPU modules (test_fusion's fakes)
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
    """run.run on test_fusion's fakes (a plane of 3 small points), sealed summaries and headline written."""
    import test_fusion

    with pytest.MonkeyPatch.context() as monkeypatch:
        session, writer, asked, summaries, headline = test_fusion.run_on_fakes(tmp_path_factory.mktemp("plane"),
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

"""Example A's chapter package on the CPU: the declaration, and summary, headline and page on synthetic runs
(with ncu counters, with an ncu error, and with no profile), and the notebook executed on a sealed one."""
import json

import numpy as np
import pytest

from example_runs import example_a_run
from launchlab.chapters import chapter
from launchlab.chapters.example_a_pointwise import CHAPTER, Parameters, historical_name, label, size_of
from launchlab.measure.variant import VariantId
from launchlab.analysis import analyze, open_run
from launchlab.store import runs

SIZES = (256, 32_768, 1_048_576, 16_777_216)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return open_run(example_a_run(tmp_path_factory.mktemp("evidence")), require_sealed=False)


def test_declaration():
    assert chapter("example_a_pointwise") is CHAPTER and CHAPTER.tag == "exa"
    assert CHAPTER.defaults()["sizes"] == "256,32768,1048576,16777216" and Parameters().sizes == SIZES
    table = {str(spec.id): spec for spec in CHAPTER.variants()}
    assert len(table) == 16
    for n in SIZES:
        for submission in ("stream", "graph"):
            three, fused = table[f"three.n{n}.{submission}"], table[f"fused.n{n}.{submission}"]
            assert three.logical_bytes == 24 * n and (three.bytes_read, three.bytes_written) == (12 * n, 12 * n)
            assert fused.logical_bytes == 8 * n and (fused.bytes_read, fused.bytes_written) == (4 * n, 4 * n)
        assert "dram" in table[f"three.n{n}.stream"].enters and "dram" not in table[f"three.n{n}.graph"].enters
    assert table["three.n256.graph"].row.label == "three kernels"
    vid = VariantId.parse("fused.n16777216.graph")
    assert size_of(vid) == 16_777_216 and historical_name(vid) == "fused_graph" and label(vid) == "fused kernel, graph"
    with pytest.raises(ValueError, match="twice"):
        CHAPTER.variants(CHAPTER.parse_parameters({"sizes": "256,256"}))
    with pytest.raises(ValueError, match="positive"):
        CHAPTER.parse_parameters({"sizes": "0"})


def test_headline_keys_are_exactly_the_declared_ones(run):
    expected = {f"event_us.{v}.{n}" for v in ("three_stream", "three_graph", "fused_stream", "fused_graph")
                for n in SIZES}
    expected |= {"kernel_nodes.three", "kernel_nodes.fused", "dram_over_logical.three_stream.16777216",
                 "dram_over_logical.fused_stream.16777216", "exact_checks"}
    assert set(run.headline) == expected
    assert run.headline["kernel_nodes.three"] == 3 and run.headline["kernel_nodes.fused"] == 1
    assert run.headline["exact_checks"] == 64  # 4 sizes x 4 variants x (3 fixtures before + 1 after)
    n = 16_777_216
    assert run.headline["dram_over_logical.three_stream.16777216"] == pytest.approx((6 * 4 * n + 3 * 65_536) / (24 * n))
    assert run.headline["dram_over_logical.fused_stream.16777216"] == pytest.approx((8 * n + 65_536) / (8 * n))
    assert run.headline["event_us.three_stream.256"] == \
        run.summaries["timing"]["three.n256.stream"]["warm_batch"]["event_us"]["median"]


def test_summaries(run):
    s = run.summaries
    assert set(s["timing"]) == {str(spec.id) for spec in CHAPTER.variants()}
    graph = s["graphs"]["three.n32768.graph"]
    assert graph == {"kernel": 3, "other": 0, "kernels_in_order": ["pw_add_one", "pw_square", "pw_halve"]}
    assert s["dram"]["paths"]["three"]["kernels"] == 3 and s["dram"]["paths"]["fused"]["kernels"] == 1
    assert s["dram"]["paths"]["three"]["logical_read_bytes"] == 12 * 16_777_216
    assert s["checks"]["by_phase"]["graph nodes"] == {"checks": 8, "passed": 8}
    assert set(s["sanitizer"]) == {"memcheck", "racecheck"} and all(t["clean"] for t in s["sanitizer"].values())
    ratio = s["ratios"]["three_over_fused.graph.16777216"]
    assert ratio["ci_low"] <= ratio["median"] <= ratio["ci_high"] and ratio["median"] > 1
    assert analyze(run.path) == []


@pytest.mark.parametrize("ncu", ["error", "none"])
def test_without_ncu_counters_the_key_is_absent_and_the_page_says_why(tmp_path, ncu):
    from launchlab.chapters.example_a_pointwise import page

    run = open_run(example_a_run(tmp_path, ncu=ncu), require_sealed=False)
    assert not [k for k in run.headline if k.startswith("dram_over_logical")]
    values = page.page_values(run)
    status = page.dram_status(run).data
    if ncu == "error":
        assert run.summaries["dram"]["paths"] == {} and "ERR_NVGPUCTRPERM" in status
        assert "no DRAM figure is stated" in values["dram_sentence"]
        assert page.bytes_table(run).rows[0][3] == "no counters"
    else:
        assert run.summaries["dram"] is None and page.bytes_table(run) is None
        assert values["dram_sentence"].startswith("No Nsight Compute profile") and "profile_size" in status
    page.bytes_figure(run)


def test_page_tables_figures_and_values(run):
    import matplotlib

    from launchlab.chapters.example_a_pointwise import page
    from launchlab.present.tables import looks_elided_or_scientific

    matplotlib.use("Agg")
    for table in (page.timing_table(run), page.ratio_table(run), page.bytes_table(run), page.nodes_table(run),
                  page.sanitizer_table(run), page.comparison_table(run)):
        assert table.rows and not any(looks_elided_or_scientific(c) for row in table.rows for c in row), table.columns
    comparison = page.comparison_table(run)
    assert comparison.columns == ["Quantity", "article (H100, October 2026)", f"this book (H200, run {run.run_id})"]
    assert dict((r[0], r[1]) for r in comparison.rows) == {"exact array checks": "272",
                                                           "timing samples": "588 (28 configurations × 21 rounds)"}
    assert comparison.rows[1][2].startswith("336 (16 configurations × 21 rounds)")
    nodes = page.nodes_table(run)
    assert nodes.rows[0][:5] == ["three kernels", "pw_add_one → pw_square → pw_halve", "3", "3", "0"]
    latency = page.latency_figure(run)
    assert len(latency.axes) == 4 and all(ax.get_yscale() == "log" for ax in latency.axes)
    assert {t.get_text() for t in latency.legends[0].get_texts()} == {"three kernels", "fused kernel"}
    values = page.page_values(run)
    assert all(isinstance(v, str) and v.strip() for v in values.values())
    assert values["large_three_stream_event_us"] == f"{run.headline['event_us.three_stream.16777216']:.3g}"
    assert values["kernel_nodes_three"] == "3" and values["largest_array_mib"] == "64"


def test_validation_summary_counts_phases(run):
    from launchlab.present.glue import validation_summary

    table = validation_summary(run).raw.set_index("phase")
    assert table.loc["before", "checks"] == 48 and table.loc["after", "passed"] == 16
    assert table.loc["graph nodes", "checks"] == 8


def test_a_new_row_reaches_the_tables_the_ratios_and_the_dram_profile(tmp_path, monkeypatch):
    """One more row (the fused kernel again, under another name) and its kernels: from the declaration alone it
    is timed, compared with the baseline, counted in its graphs, profiled and shown."""
    import dataclasses

    from launchlab.chapters import example_a_pointwise as package
    from launchlab.chapters.example_a_pointwise import page

    again = dataclasses.replace(package.FUSED, name="again", label="fused kernel again")
    monkeypatch.setattr(package, "ROWS", package.ROWS + (again,))
    run = open_run(example_a_run(tmp_path), require_sealed=False)
    s = run.summaries
    assert {f"again.n{n}.{sub}" for n in SIZES for sub in ("stream", "graph")} <= set(s["timing"])
    assert "again_over_fused.graph.256" in s["ratios"] and "stream_over_graph.again.256" in s["verdicts"]
    assert s["graph_nodes"]["again"]["as_declared"] and "again" in s["dram"]["paths"]
    assert "fused kernel again, graph" in [row[1] for row in page.timing_table(run).rows]
    assert "fused kernel again" in page.page_values(run)["verdict_sentence"]
    assert analyze(run.path) == []


@pytest.mark.slow
def test_notebook_executes_on_a_sealed_synthetic_run(tmp_path, monkeypatch):
    """The thin notebook end to end (papermill, evidence mode) on a run in a temporary evidence root."""
    papermill = pytest.importorskip("papermill")
    from pathlib import Path

    root = tmp_path / "evidence"
    run_dir = example_a_run(root, ncu="error", seal=True)
    monkeypatch.setenv("LAUNCHLAB_EVIDENCE_ROOT", str(root))
    book = Path(__file__).resolve().parents[1] / "book"
    out = tmp_path / "out.ipynb"
    papermill.execute_notebook(str(book / "example_a_pointwise.ipynb"), str(out),
                               parameters={"mode": "evidence", "run_id": run_dir.name}, cwd=str(book),
                               kernel_name="python3", progress_bar=False)
    notebook = json.loads(out.read_text())
    glued = {o["metadata"]["scrapbook"]["name"] for c in notebook["cells"] for o in c.get("outputs", [])
             if o.get("metadata", {}).get("scrapbook")}
    assert {"run_id", "exa-latency", "exa-bytes", "dram_sentence"} <= glued
    sources = "".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown")
    names = {part.split("`")[1] for part in sources.split("{glue:md}")[1:]}
    assert names <= glued, names - glued
    assert np.isfinite(open_run(run_dir).headline["event_us.fused_graph.256"])

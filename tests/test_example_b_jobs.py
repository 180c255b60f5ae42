"""Example B's chapter package on the CPU: the declaration, and summary, headline and page on a synthetic run
whose traces come from the schedule model, and the notebook executed on a sealed one."""
import json

import numpy as np
import pytest

from example_runs import example_b_run, simulated_trace
from launchlab.chapters import chapter
from launchlab.chapters.example_b_jobs import CHAPTER, Parameters, historical_name, label, model
from launchlab.measure.variant import VariantId
from launchlab.analysis import analyze, open_run
from launchlab.store import runs

VARIANTS = ("separate_stream", "separate_graph", "fused_stream", "fused_graph", "queue_stream", "queue_graph")
CASES = ("balanced", "ragged")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return open_run(example_b_run(tmp_path_factory.mktemp("evidence")), require_sealed=False)


def test_declaration():
    assert chapter("example_b_jobs") is CHAPTER and CHAPTER.tag == "exb"
    assert Parameters().cases == CASES and CHAPTER.defaults()["cases"] == "balanced,ragged"
    ids = [str(spec.id) for spec in CHAPTER.variants()]
    assert sorted(ids) == sorted(f"{v.split('_')[0]}.{case}.{v.split('_')[1]}" for v in VARIANTS for case in CASES)
    table = {str(spec.id): spec for spec in CHAPTER.variants()}
    jobs = model.job_count(132)
    assert (table["fused.ragged.stream"].bytes_read, table["fused.ragged.stream"].bytes_written) == \
        ((2048 + 4) * jobs, 2048 * jobs)
    assert table["queue.balanced.graph"].logical_bytes == table["fused.balanced.graph"].logical_bytes + 8 * jobs
    assert table["queue.ragged.graph"].row.label == "persistent queue"
    assert {name for name, v in table.items() if "timeline" in v.enters} == {f"{r}.ragged.graph" for r in ("separate", "fused", "queue")}
    vid = VariantId.parse("queue.ragged.graph")
    assert str(vid) == "queue.ragged.graph" and historical_name(vid) == "queue_graph"
    assert label(vid) == "persistent queue, graph"
    with pytest.raises(ValueError, match="among"):
        CHAPTER.variants(CHAPTER.parse_parameters({"cases": "ragged,skewed"}))


def test_headline_keys_are_exactly_the_declared_ones(run):
    expected = {f"{q}.{v}.{case}" for q in ("event_us", "early_b") for v in VARIANTS for case in CASES}
    expected |= {"jobs", "active_ctas_per_sm", "exact_checks", "trace_checks"}
    assert set(run.headline) == expected
    h = run.headline
    assert h["jobs"] == 597 and h["active_ctas_per_sm"] == 1
    assert h["exact_checks"] == 60 and h["trace_checks"] == 12   # 12 variants x 5 output checks; 12 traces
    assert h["early_b.separate_graph.ragged"] == 0 and h["early_b.fused_graph.ragged"] > 500
    assert h["event_us.queue_graph.ragged"] == run.summaries["timing"]["queue.ragged.graph"]["warm_batch"]["event_us"]["median"]


def test_summaries(run):
    s = run.summaries
    assert s["graphs"]["queue.ragged.graph"] == {"kernel": 1, "other": 1, "memset": 1}
    assert s["graphs"]["separate.balanced.graph"] == {"kernel": 2, "other": 0, "memset": 0}
    assert s["work"]["balanced"]["a_iterations"] == 611_328 and s["work"]["ragged"]["a_iterations"] == 748_032
    assert s["work"]["ragged"]["heavy_jobs"] == 75
    trace = s["traces"]["queue.ragged.graph"]
    assert trace["passed"] and trace["workers"] == 132 and trace["checks"]["workers_in_range"]
    assert trace["a_stage_ns"]["max"] == int(8192 * 2.5)
    assert s["layout"]["active_ctas_per_sm"] == [1] and s["layout"]["shared_memory"]["dynamic_shared_bytes"] == 116_992
    assert s["checks"]["by_phase"]["trace"] == {"checks": 12, "passed": 12}
    assert analyze(run.path) == []


def test_a_broken_trace_is_summarised_as_failing(tmp_path):
    """A separate-schedule trace with one B before the last A fails its rule and counts an early B."""
    from launchlab.chapters.example_b_jobs.summary import trace_summary

    trace = simulated_trace("separate", "ragged", 597, 132)
    trace["b_start_ns"] = trace["b_start_ns"].copy()
    trace["b_start_ns"][5] = trace["a_end_ns"][5]  # its own A has ended, others have not
    path = tmp_path / "separate.ragged.graph.npz"
    np.savez_compressed(path, workers=np.int64(597), **trace)
    result = trace_summary(path, 597)
    assert not result["passed"] and not result["checks"]["no_b_before_all_a"] and result["early_b"] == 1


def test_page_tables_figures_and_values(run):
    import matplotlib

    from launchlab.chapters.example_b_jobs import page
    from launchlab.present.tables import looks_elided_or_scientific

    matplotlib.use("Agg")
    for table in (page.timing_table(run), page.ratio_table(run), page.layout_table(run), page.graph_table(run),
                  page.trace_table(run), page.sanitizer_table(run), page.comparison_table(run)):
        assert table.rows and not any(looks_elided_or_scientific(c) for row in table.rows for c in row), table.columns
    comparison = page.comparison_table(run)
    assert comparison.columns[1:] == ["article (H100, October 2026)", f"this book (H200, run {run.run_id})"]
    rows = {r[0]: r[1:] for r in comparison.rows}
    assert rows["exact array checks"][0] == "272" and rows["trace checks"][0] == "24"
    assert rows["early B starts in graph traces (two kernels; fused kernel)"][0] == "0 against 596, of 597 jobs"
    article_medians = rows["host medians, ragged case"][0]
    assert "three ragged host medians reported: 206.85, 212.52 and 205.79 µs" == article_medians
    assert "ragged: 0 against" in rows["early B starts in graph traces (two kernels; fused kernel)"][1]
    graphs = {r[0]: r for r in page.graph_table(run).rows}
    assert graphs["persistent queue"][3:6] == ["1", "1", "1"]
    timeline = page.timeline_figure(run)
    assert len(timeline.axes) == 3
    assert {t.get_text() for t in timeline.legends[0].get_texts()} == {"stage A", "stage B"}
    assert len(page.latency_figure(run).axes) == 2
    values = page.page_values(run)
    assert all(isinstance(v, str) and v.strip() for v in values.values())
    assert values["balanced_a_iterations"] == "611,328" and values["ragged_a_iterations"] == "748,032"
    assert values["ragged_separate_graph_early_b"] == "0" and values["jobs"] == "597"


@pytest.mark.slow
def test_notebook_executes_on_a_sealed_synthetic_run(tmp_path, monkeypatch):
    papermill = pytest.importorskip("papermill")
    from pathlib import Path

    root = tmp_path / "evidence"
    run_dir = example_b_run(root, seal=True)
    monkeypatch.setenv("LAUNCHLAB_EVIDENCE_ROOT", str(root))
    book = Path(__file__).resolve().parents[1] / "book"
    out = tmp_path / "out.ipynb"
    papermill.execute_notebook(str(book / "example_b_jobs.ipynb"), str(out),
                               parameters={"mode": "evidence", "run_id": run_dir.name}, cwd=str(book),
                               kernel_name="python3", progress_bar=False)
    notebook = json.loads(out.read_text())
    glued = {o["metadata"]["scrapbook"]["name"] for c in notebook["cells"] for o in c.get("outputs", [])
             if o.get("metadata", {}).get("scrapbook")}
    assert {"run_id", "exb-latency", "exb-timeline"} <= glued
    sources = "".join("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown")
    names = {part.split("`")[1] for part in sources.split("{glue:md}")[1:]}
    assert names <= glued, names - glued

"""Two runs of one chapter side by side (launchlab.compare): changes, pacing, intervals, spread and claims."""
import argparse
import json
import shutil
from pathlib import Path

import pytest

from launchlab import compare
from launchlab.analysis import open_run
from launchlab.store import evidence
from launchlab.store.record import RunRecord
from launchlab.store.runs import Run


ROW4_EVENT = "stream_over_graph_event.row4.128x8192.graph"  # chapter 2's figure under claim B06, with an interval


@pytest.fixture(scope="module")
def graphs_run() -> Run:
    return open_run(evidence.accepted_run("graphs"))


def perturbed(run: Run, tmp_path: Path, factor: float) -> Run:
    """A copy of `run` whose B06 ratio (headline figure and summaries record) is scaled by `factor`, read as
    saved: no longer what its raw samples give, as a run from other code or another host would not be."""
    path = tmp_path / run.run_id
    shutil.copytree(run.path, path)
    headline, summaries = json.loads(json.dumps(run.headline)), json.loads(json.dumps(run.summaries))
    headline[ROW4_EVENT] *= factor
    record = summaries["stream_over_graph"]["row4.128x8192.graph"]["event"]
    for field in ("median", "ci_low", "ci_high"):
        record[field] *= factor
    return Run(path, RunRecord.read(path), summaries, headline)


def test_a_run_against_itself_changes_nothing_and_lies_within_every_interval(graphs_run):
    result = compare.comparison(graphs_run, graphs_run)
    table = result["figures"]
    assert set(table["key"]) == set(graphs_run.headline) and (table["change"] == 0).all()
    with_interval = table[table["ci_low"].notna()]
    assert len(with_interval) == 30 and with_interval["within"].all()  # both stream-over-graph ratios per graph
    assert table[table["ci_low"].isna()]["within"].isna().all()  # no interval: said, not guessed
    assert result["spread"]["host"]["median_abs_change"] == 0 and result["spread"]["device"]["figures"] > 0
    assert result["claims"] == {"supported": ["B04", "B05", "B06", "B07"], "broken": {}}


def test_a_figure_moved_outside_its_interval_is_flagged_and_its_claim_broken(graphs_run, tmp_path):
    result = compare.comparison(graphs_run, perturbed(graphs_run, tmp_path, 0.7))
    table = result["figures"].set_index("key")
    assert table.loc[ROW4_EVENT, "change"] == pytest.approx(-0.3) and not table.loc[ROW4_EVENT, "within"]
    assert table.loc[ROW4_EVENT, "pacing"] == "host"
    assert (table.drop(ROW4_EVENT)["change"] == 0).all()
    assert result["spread"]["host"]["median_abs_change"] == 0  # one figure of 97 does not move the median
    assert list(result["claims"]["broken"]) == ["B06"] and "stated above" in result["claims"]["broken"]["B06"][0]
    lines = []
    compare.print_comparison(result, lines.append)
    assert any(line.startswith(ROW4_EVENT) and line.endswith("NO") for line in lines)
    assert "B-claim B06 broken by run B" in "\n".join(lines)


def test_runs_of_two_chapters_are_refused_naming_both(graphs_run):
    other = open_run(evidence.accepted_run("ordinary_launches"))
    with pytest.raises(compare.CompareError,
                       match=rf"^runs {evidence.read_accepted()['graphs']} \(graphs\) and .* \(ordinary_launches\) are of different"):
        compare.comparison(graphs_run, other)


def run_command(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", type=Path, default=evidence.EVIDENCE_ROOT)
    compare.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["compare", *argv])
    return args.handler(args)


def test_the_command_exits_non_zero_with_one_line_on_bad_input_only(capsys):
    run_id = evidence.read_accepted()["ordinary_launches"]
    assert run_command(run_id, str(evidence.run_dir(run_id))) == 0
    assert "B-claims run B supports: B01, B02, B03" in capsys.readouterr().out
    assert run_command(run_id, "20990101T000000Z-ch01") == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "'20990101T000000Z-ch01': neither a run folder nor a run id" in error


@pytest.mark.parametrize("stem, key, pacing", [
    ("graphs", "event_us.empty.n1024.graph", "device"), ("graphs", "event_us.empty.n1024.stream", "host"),
    ("graphs", "node_event_us.empty.n1024.native", "host"), ("graphs", "setup_us.tiled3.ragged.graph", "host"),
    ("ordinary_launches", "enqueue_us_per_launch.empty.1x1.native", "host"),
    ("ordinary_launches", "trace_gaps_us.128x8192", "host"),
    ("fusion", "graph.cudnn_over_fused_plain.4096x128.cold", "device"),
    ("fusion", "stream.torch_over_copy.4096x4096.warm", "host"), ("fusion", "target_met.x.4096x4096.warm", "untimed"),
    ("megakernels", "speedup_vs_graph3.coop.ragged.stream", "host"),
    ("megakernels", "event_us.queue.ragged.graph.cold", "device"),
    ("megakernels", "speedup_vs_graph3.best_one_launch.ragged.cold", "device"),
    ("example_a_pointwise", "event_us.three_stream.256", "host"),
    ("example_b_jobs", "event_us.fused_graph.ragged", "device"), ("example_b_jobs", "jobs", "untimed"),
    ("graphs", "a_new_figure.x", "unknown"), ("no_such_chapter", "event_us.x", "unknown"),
])
def test_pacing_follows_the_submissions_a_figure_reads(stem, key, pacing):
    assert compare.pacing_of(stem, key) == pacing


@pytest.mark.parametrize("stem", sorted(evidence.read_accepted()))
def test_every_headline_figure_of_every_accepted_run_is_classified(stem):
    headline = json.loads((evidence.accepted_run(stem) / "headline.json").read_text())
    assert [key for key in headline if compare.pacing_of(stem, key) == "unknown"] == []


@pytest.mark.parametrize("stem", ["fusion", "megakernels"])
def test_every_ratio_figure_finds_its_interval(stem):
    """Where a chapter's headline figure is the median of a ratio or difference, its interval is found."""
    run_path = evidence.accepted_run(stem)
    view = Run(run_path, RunRecord.read(run_path), json.loads((run_path / "summaries.json").read_text()),
               json.loads((run_path / "headline.json").read_text()))
    ratios = [key for key in view.headline if key.split(".")[0] in ("graph", "stream", "speedup_vs_graph3",
                                                                     "speedup_vs_coop", "pdl_saving_us_per_boundary")]
    assert ratios and [key for key in ratios if compare.interval_of(view, key) is None] == []


def saved_view(stem: str) -> Run:
    """The accepted run as saved (no recomputation: these tests read where its figures sit, not what they are)."""
    path = evidence.accepted_run(stem)
    return Run(path, RunRecord.read(path), json.loads((path / "summaries.json").read_text()),
               json.loads((path / "headline.json").read_text()))


def median_figures(view: Run) -> list[str]:
    """The per-variant medians: event_us.<variant> (and enqueue_us_per_launch.<variant> in chapters 1 and 2)."""
    return [key for key in view.headline if key.split(".")[0] in ("event_us", "enqueue_us_per_launch")]


@pytest.mark.parametrize("stem", ["ordinary_launches", "graphs", "example_a_pointwise", "example_b_jobs"])
def test_every_per_variant_median_finds_its_record_and_no_interval_it_does_not_hold(stem):
    view = saved_view(stem)
    medians = median_figures(view)
    assert medians and [key for key in medians if compare.record_of(view, key) is None] == []
    # Today these records are plain medians (p10, p90, n): no interval is reported, and p10-p90 is never one.
    assert all("ci_low" not in compare.record_of(view, key) for key in medians)
    assert [key for key in medians if compare.interval_of(view, key) is not None] == []


@pytest.mark.parametrize("stem", ["ordinary_launches", "graphs", "example_a_pointwise", "example_b_jobs"])
def test_a_per_variant_median_whose_record_holds_an_interval_reports_it(stem):
    view = saved_view(stem)
    key = median_figures(view)[-1]
    record = compare.record_of(view, key)
    record |= {"ci_low": record["median"] * 0.99, "ci_high": record["median"] * 1.01}
    assert compare.interval_of(view, key) == (record["ci_low"], record["ci_high"])
    table = compare.figures(view, view).set_index("key")
    assert table.loc[key, "within"] and table.loc[key, "ci_low"] == record["ci_low"]


def test_a_record_whose_median_is_not_the_figure_gives_no_interval():
    view = saved_view("example_b_jobs")
    key = "event_us.queue_graph.ragged"
    assert compare.interval_path("example_b_jobs", key) == ("timing", "queue.ragged.graph", "warm_batch", "event_us")
    assert compare.interval_path("example_a_pointwise", "event_us.three_stream.256") == \
        ("timing", "three.n256.stream", "warm_batch", "event_us")
    view.headline[key] += 1.0
    assert compare.record_of(view, key) is None and compare.interval_of(view, key) is None

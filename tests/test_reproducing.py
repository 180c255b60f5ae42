"""The Reproducing appendix (launchlab.pages.reproducing): every chapter's accepted run against its replicates, over
the committed evidence and over a copy in which a replicate's raw samples were changed (CPU only)."""
import dataclasses
import gzip
import json
import os
import shutil
from pathlib import Path

import pytest

from launchlab import compare
from launchlab.analysis import recompute
from launchlab.claims.book import read_replicates
from launchlab.pages import reproducing
from launchlab.pages.conclusion import CHAPTERS
from launchlab.store import evidence

REPO_ROOT = Path(__file__).resolve().parents[1]
# Chapter 2's ratio of stream to graph event intervals for 1024 empty kernels: the first replicate lies within the
# accepted run's 95% interval for it, so a replicate whose stream batches were slowed must leave it.
FIGURE = "stream_over_graph_event.empty.n1024.graph"
SLOWED_VARIANT = "empty.n1024.stream"


@pytest.fixture(scope="module")
def chapters():
    return reproducing.open_chapters()


def rows_by(table, *index):
    """{(index values...): {header: cell}} of a page table, the sparsified index cells filled back in."""
    found, last = {}, [""] * len(index)
    for row in table.rows:
        cells = dict(zip(table.columns, row))
        last = [cells[name] or (last[i] if i < len(index) - 1 else "") for i, name in enumerate(index)]
        found[tuple(last)] = cells
    return found


def test_every_chapter_is_on_the_page_with_the_replicates_the_evidence_lists(chapters):
    listed = read_replicates()
    accepted = evidence.read_accepted()
    assert [entry.stem for entry in chapters] == list(CHAPTERS)
    for entry in chapters:
        assert [r.run.run_id for r in entry.replicates] == listed.get(accepted.get(entry.stem), [])
        assert all(r.accepted.run_id == accepted[entry.stem] for r in entry.replicates)
    assert any(entry.replicates for entry in chapters)


def test_a_chapter_without_replicates_says_so_in_every_table_and_in_the_prose(chapters):
    spread = rows_by(reproducing.spread_table(chapters), "Chapter", "Replicate")
    claims = rows_by(reproducing.claims_table(chapters), "Chapter", "Replicate")
    values = reproducing.page_values(chapters)
    for entry in chapters:
        if entry.replicates:
            assert entry.name not in values["chapters_without_replicates"]
            continue
        assert (entry.name, reproducing.NONE_YET) in spread and (entry.name, reproducing.NONE_YET) in claims
        assert entry.name in values["chapters_without_replicates"]
    assert values["replicate_seeds"].count("instead of the accepted run's") == len(
        {(reproducing.seed_of(r.accepted.record), reproducing.seed_of(r.run.record))
         for _, r in reproducing.all_replicates(chapters)
         if reproducing.seed_of(r.accepted.record) != reproducing.seed_of(r.run.record)})


def test_the_spread_per_pacing_is_compares_for_every_replicate(chapters):
    spread = rows_by(reproducing.spread_table(chapters), "Chapter", "Replicate")
    for entry, replicate in reproducing.all_replicates(chapters):
        row = spread[(entry.name, replicate.run.run_id)]
        table = compare.figures(replicate.accepted, replicate.run)
        for pacing, header in (("device", "Device-paced"), ("host", "Host-paced")):
            changes = table[table["pacing"] == pacing]["change"].abs()
            cell = row[f"{header} figures: median |B/A − 1|"]
            if changes.empty:  # chapter 1 has no device-paced headline figure
                assert cell == "no such figure"
            else:
                assert cell.startswith(f"{reproducing.percent(changes.median())} % over {len(changes)} figure")


def test_the_figures_outside_the_interval_are_listed_with_both_values(chapters):
    moved = rows_by(reproducing.moved_table(chapters), "Chapter", "Replicate", "Figure")
    expected = {}
    for entry, replicate in reproducing.all_replicates(chapters):
        for row in compare.figures(replicate.accepted, replicate.run).itertuples():
            if row.ci_low is not None and row.ci_low == row.ci_low and not row.ci_low <= row.b <= row.ci_high:
                expected[(entry.name, replicate.run.run_id, row.key)] = (row.a, row.b)
    assert expected and set(moved) == set(expected)
    for key, (a, b) in expected.items():
        assert moved[key]["Accepted run (A)"] == reproducing.figure(a)
        assert moved[key]["Replicate (B)"] == reproducing.figure(b)


def test_the_claims_a_replicate_breaks_are_those_the_registry_restates(chapters):
    claims = rows_by(reproducing.claims_table(chapters), "Chapter", "Replicate")
    for entry, replicate in reproducing.all_replicates(chapters):
        row = claims[(entry.name, replicate.run.run_id)]
        broken = ", ".join(replicate.result["claims"]["broken"]) or "none"
        assert row["Restated in the claim audit"] == broken
    assert any(row["Restated in the claim audit"] != "none" for row in claims.values())


def test_the_seed_and_gpu_of_every_run_come_from_its_run_json(chapters):
    runs = rows_by(reproducing.runs_table(chapters), "Chapter", "Run")
    values = reproducing.page_values(chapters)
    for entry, replicate in reproducing.all_replicates(chapters):
        saved = json.loads((replicate.run.path / "run.json").read_text())
        accepted = json.loads((replicate.accepted.path / "run.json").read_text())
        row = runs[(entry.name, replicate.run.run_id)]
        assert row["Fixture seed"] == str(saved["parameters"]["fixture_seed"])
        assert row["GPU"].startswith(saved["device"]["name"])
        other_seed = saved["parameters"]["fixture_seed"] != accepted["parameters"]["fixture_seed"]
        sentence = next((part for part in values["replicate_seeds"].split("; ")
                         if f"`{replicate.run.run_id}`" in part), "")
        assert (f"fixture seed {saved['parameters']['fixture_seed']} instead of the accepted run's "
                f"{accepted['parameters']['fixture_seed']}" in sentence) == other_seed
        assert ("fixture seed" in row["Against the accepted run"]) == other_seed


def slowed_copy(tmp_path: Path, factor: float) -> Path:
    """An evidence root holding chapter 2's accepted run and its replicates, in which the first replicate's stream
    batches of SLOWED_VARIANT took `factor` times as long: its summaries recomputed from the changed samples, the
    run sealed again. Only chapter 2 is accepted there."""
    accepted = evidence.read_accepted()["graphs"]
    replicates = read_replicates()[accepted]
    root = tmp_path / "evidence"
    for run_id in (accepted, *replicates):
        shutil.copytree(evidence.run_dir(run_id), root / "runs" / run_id)
    shutil.copytree(evidence.EVIDENCE_ROOT / "claims", root / "claims")
    (root / "accepted.json").write_text(evidence.to_json({"graphs": accepted}))
    (root / "replicates.json").write_text(evidence.to_json({accepted: replicates}))
    path = root / "runs" / replicates[0]
    samples = path / "samples" / "timing.jsonl.gz"
    lines = [json.loads(line) for line in gzip.decompress(samples.read_bytes()).decode().splitlines()]
    for line in lines:
        if line["variant"] == SLOWED_VARIANT and line["event_ms"] is not None:
            line["event_ms"] *= factor
    samples.write_bytes(gzip.compress("".join(json.dumps(line) + "\n" for line in lines).encode()))
    summaries, headline = recompute(path)
    (path / "summaries.json").write_text(evidence.to_json(summaries))
    (path / "headline.json").write_text(evidence.to_json(headline))
    (path / evidence.MANIFEST).unlink()
    evidence.seal(path)
    return root


def test_a_replicate_moved_beyond_the_interval_is_listed_and_other_chapters_say_they_have_none(chapters, tmp_path):
    replicate_id = read_replicates()[evidence.read_accepted()["graphs"]][0]
    before = rows_by(reproducing.moved_table(chapters), "Chapter", "Replicate", "Figure")
    assert not any(key[1:] == (replicate_id, FIGURE) for key in before)  # within the interval as committed

    root = slowed_copy(tmp_path, 1.5)
    changed = reproducing.open_chapters(root)
    graphs = next(entry for entry in changed if entry.stem == "graphs")
    moved = rows_by(reproducing.moved_table(changed), "Chapter", "Replicate", "Figure")
    row = moved[(graphs.name, replicate_id, FIGURE)]
    a, b = (graphs.replicates[0].accepted.headline[FIGURE], graphs.replicates[0].run.headline[FIGURE])
    assert b / a > 1.3 and row["Accepted run (A)"] == reproducing.figure(a) and row["Replicate (B)"] == reproducing.figure(b)
    assert row["Pacing"] == "host" and row["B/A − 1 (%)"].startswith("+")
    spread = rows_by(reproducing.spread_table(changed), "Chapter", "Replicate")
    count = len([key for key in before if key[1] == replicate_id])
    assert spread[(graphs.name, replicate_id)]["Outside A's 95 % interval (of the figures with one)"] == f"{count + 1} of 30"
    others = [entry for entry in changed if entry.stem != "graphs"]
    assert all(not entry.replicates and entry.accepted_id is None for entry in others)
    assert all(spread[(entry.name, reproducing.NONE_YET)] for entry in others)
    assert "no accepted run" in reproducing.page_values(changed)["chapters_without_replicates"]


def test_an_accepted_chapter_without_replicates_is_said_to_have_none_and_its_run_is_not_opened(tmp_path):
    accepted = evidence.read_accepted()["graphs"]
    root = tmp_path / "evidence"
    shutil.copytree(evidence.run_dir(accepted), root / "runs" / accepted)
    (root / "accepted.json").write_text(evidence.to_json({"graphs": accepted}))
    opened = []
    chapters = reproducing.open_chapters(root, opener=opened.append)
    graphs = next(entry for entry in chapters if entry.stem == "graphs")
    assert opened == [] and graphs.replicates == () and graphs.accepted_id == accepted
    runs = rows_by(reproducing.runs_table(chapters), "Chapter", "Run")
    assert runs[(graphs.name, accepted)]["Against the accepted run"] == reproducing.NONE_YET
    values = reproducing.page_values(chapters)
    assert values["replicate_count"] == "0" and values["replicate_seeds"] == "No chapter has a replicate yet."
    assert f"{graphs.name} (accepted run `{accepted}`)" in values["chapters_without_replicates"]
    assert reproducing.moved_table(chapters).rows[0][2] == "no figure left the accepted run's interval"


@pytest.mark.slow
def test_the_notebook_executes_and_glues_the_page_values(tmp_path, monkeypatch, chapters):
    import papermill

    # The kernel imports this tree's launchlab, wherever the environment's editable install points.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO_ROOT / "src"), os.environ.get("PYTHONPATH")])))
    out = tmp_path / "reproducing.ipynb"
    papermill.execute_notebook(str(REPO_ROOT / "book/appendix/reproducing.ipynb"), str(out),
                               cwd=str(REPO_ROOT / "book/appendix"), kernel_name="python3", progress_bar=False)
    glued = {}
    for cell in json.loads(out.read_text())["cells"]:
        for output in cell.get("outputs", []):
            record = output.get("metadata", {}).get("scrapbook")
            if record:
                glued[record["name"]] = output["data"][record["mime_prefix"] + "text/markdown"]
    assert glued == reproducing.page_values(chapters)


def test_the_execution_time_comes_from_the_accepted_runs_notebooks(chapters):
    """execution_text: the shortest and longest papermill durations the accepted runs' notebooks record, and their
    sum; chapters without an accepted run give none, and the sentence says so."""

    seconds = {}
    for entry in chapters:
        notebook = json.loads((evidence.run_dir(entry.accepted_id, evidence.EVIDENCE_ROOT) / "notebook.ipynb").read_text())
        seconds[entry.name] = notebook["metadata"]["papermill"]["duration"]
    text = reproducing.execution_text(chapters)
    longest = max(seconds, key=seconds.get)
    assert f"to {seconds[longest]:.0f} s ({longest})" in text
    assert f"{sum(seconds.values()) / 60:.1f} minutes for all {len(seconds)}" in text
    unaccepted = [dataclasses.replace(entry, accepted_id=None) for entry in chapters]
    assert reproducing.execution_text(unaccepted) == "No accepted run records how long its notebook took."

"""Chapters on a machine without a GPU: declarations, evidence mode, analysis, bad input, the CLI."""
import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from launchlab import analysis
from launchlab.chapter import open_chapter
from launchlab.chapters import STEMS, available_stems, chapter
from launchlab.gpu import device
from launchlab.store import evidence
from launchlab.store.status import kernel_drift

REPO_ROOT = Path(__file__).resolve().parents[1]
ACCEPTED = evidence.read_accepted()
PACKAGES = available_stems()


def snapshot(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def parameters_cell(stem: str) -> dict:
    """The values assigned in a notebook's `parameters` cell."""
    notebook = json.loads((REPO_ROOT / "book" / f"{stem}.ipynb").read_text())
    cells = [c for c in notebook["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(cells) == 1, f"{stem}.ipynb must have exactly one parameters cell"
    namespace: dict = {}
    exec("".join(cells[0]["source"]), {}, namespace)
    return namespace


@pytest.mark.parametrize("stem", PACKAGES)
def test_notebook_parameters_match_the_declared_defaults(stem):
    cell = parameters_cell(stem)
    assert cell.pop("mode") == "evidence" and cell.pop("run_id") == ""
    assert cell == chapter(stem).defaults()


@pytest.mark.parametrize("stem", PACKAGES)
def test_every_chapter_package_has_its_four_parts_and_a_variant_table(stem):
    declared = chapter(stem)
    assert declared.stem == stem
    for part in ("run", "summary", "page"):
        assert getattr(declared, part) is not None
    table = declared.variants()
    ids = [str(spec.id) for spec in table]
    assert table and len(ids) == len(set(ids))
    assert all(spec.bytes_read >= 0 and spec.bytes_written >= 0 for spec in table)


@pytest.mark.parametrize("stem", PACKAGES)
def test_unknown_parameters_are_refused_in_every_mode(stem):
    for mode in ("evidence", "auto", "gpu"):
        with pytest.raises(ValueError, match="unknown parameter"):
            open_chapter(stem, mode=mode, no_such_parameter=1)


@pytest.mark.parametrize("stem", sorted(ACCEPTED))
def test_analyze_reproduces_every_accepted_run_exactly(stem):
    assert analysis.analyze(evidence.accepted_run(stem)) == []


@pytest.mark.parametrize("stem", sorted(ACCEPTED))
def test_accepted_runs_ran_todays_kernels(stem):
    """A kernel change forces its chapter's re-run: the sources stored in the run equal today's."""
    assert kernel_drift(evidence.accepted_run(stem)) == []


def test_every_chapter_has_an_accepted_run():
    assert set(PACKAGES) <= set(ACCEPTED)


def test_analyze_detects_a_changed_summary(tmp_path):
    source = evidence.accepted_run("ordinary_launches")
    copy = tmp_path / source.name
    shutil.copytree(source, copy)
    summaries = json.loads((copy / "summaries.json").read_text())
    variant = next(iter(summaries["timing"]))
    measurement = next(iter(summaries["timing"][variant]))
    metric = next(iter(summaries["timing"][variant][measurement]))
    summaries["timing"][variant][measurement][metric]["median"] *= 1.0001
    (copy / "summaries.json").write_text(json.dumps(summaries))
    assert analysis.analyze(copy) == [f"{copy.name}/summaries.json differs from the recomputation from raw samples"]


@pytest.mark.skipif(device.gpu_status()[0], reason="a GPU is visible here")
def test_gpu_mode_without_gpu_is_refused_and_touches_nothing():
    before = snapshot(evidence.EVIDENCE_ROOT)
    with pytest.raises(device.NoGPUError, match="mode 'gpu' needs a visible CUDA GPU"):
        open_chapter("ordinary_launches", mode="gpu")
    assert snapshot(evidence.EVIDENCE_ROOT) == before


def test_bad_mode_unknown_run_other_chapter_and_unknown_chapter_are_named():
    with pytest.raises(ValueError, match="mode 'fast' is not one of"):
        open_chapter("ordinary_launches", mode="fast")
    with pytest.raises(evidence.EvidenceError, match="unknown run_id '20990101T000000Z-none'"):
        open_chapter("ordinary_launches", mode="evidence", run_id="20990101T000000Z-none")
    other = next(stem for stem in sorted(ACCEPTED) if stem != "ordinary_launches")
    with pytest.raises(evidence.EvidenceError, match=f"belongs to chapter '{other}'"):
        open_chapter("ordinary_launches", mode="evidence", run_id=ACCEPTED[other])
    with pytest.raises(ValueError, match="unknown chapter 'nope'"):
        open_chapter("nope")


def test_evidence_mode_reads_the_accepted_run():
    run = open_chapter("ordinary_launches", mode="auto" if not device.gpu_status()[0] else "evidence")
    assert run.run_id == ACCEPTED["ordinary_launches"]
    assert run.record.verdict == "passed"
    for shape in run.record.parameters["shapes"].split(","):
        assert f"event_us.row4.{shape}.stream" in run.headline


def test_cli_verify_analyze_and_status():
    run_id = ACCEPTED["ordinary_launches"]
    command = [sys.executable, "-m", "launchlab"]
    verified = subprocess.run(command + ["verify"], capture_output=True, text=True, cwd=REPO_ROOT)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    analyzed = subprocess.run(command + ["analyze", run_id], capture_output=True, text=True, cwd=REPO_ROOT)
    assert analyzed.returncode == 0 and "reproduced exactly" in analyzed.stdout
    unknown = subprocess.run(command + ["analyze", "20990101T000000Z-none"], capture_output=True, text=True, cwd=REPO_ROOT)
    assert unknown.returncode == 2 and "unknown run_id" in unknown.stderr
    status = subprocess.run(command + ["status"], capture_output=True, text=True, cwd=REPO_ROOT)
    assert status.returncode == 0 and run_id in status.stdout


def glued_markdown(notebook: dict) -> dict:
    """The glued Markdown values of an executed notebook (glued figures, which carry images, are left out)."""
    values = {}
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            record = output.get("metadata", {}).get("scrapbook")
            markdown = record and output["data"].get(record["mime_prefix"] + "text/markdown")
            if markdown is not None:
                values[record["name"]] = markdown
    return values


def execute_in_evidence_mode(stem: str, tmp_path: Path) -> dict:
    import papermill

    out = tmp_path / f"{stem}.ipynb"
    papermill.execute_notebook(str(REPO_ROOT / f"book/{stem}.ipynb"), str(out), parameters={"mode": "evidence"},
                               cwd=str(REPO_ROOT / "book"), kernel_name="python3", progress_bar=False)
    return json.loads(out.read_text())


@pytest.mark.slow
@pytest.mark.parametrize("stem", sorted(set(PACKAGES) & set(ACCEPTED)))
def test_chapter_executes_with_papermill_in_evidence_mode(stem, tmp_path):
    values = glued_markdown(execute_in_evidence_mode(stem, tmp_path))
    assert values["run_id"] == ACCEPTED[stem]


@pytest.mark.slow
def test_chapter_1_glues_its_headline_figures(tmp_path):
    values = glued_markdown(execute_in_evidence_mode("ordinary_launches", tmp_path))
    headline = analysis.accepted_run("ordinary_launches").headline
    assert values["row4_4096x4096_warm_batch_event_us"] == f"{headline['event_us.row4.4096x4096.stream']:.3g}"


@pytest.mark.slow
def test_claim_audit_executes_with_papermill(tmp_path):
    from launchlab.claims import registry as claims

    values = glued_markdown(execute_in_evidence_mode("claim-audit", tmp_path))
    counts = claims.verdict_counts(claims.load_claims())
    assert values["count_qualify"] == str(counts["qualify"]) == "38"


def test_parameters_are_typed_from_text():
    declared = chapter("ordinary_launches")
    typed = declared.parse_parameters({"fixture_seed": "7"})
    assert dataclasses.asdict(typed)["fixture_seed"] == 7
    with pytest.raises(ValueError, match="must be int"):
        declared.parse_parameters({"fixture_seed": "seven"})


def test_registry_lists_the_book_chapters():
    assert STEMS[:4] == ("ordinary_launches", "graphs", "fusion", "megakernels")

"""Chapters on a machine without a GPU: evidence mode, analysis, bad input, the CLI."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from launchlab.store import runs as analysis
from launchlab.gpu import device
from launchlab.store import evidence
from launchlab.chapter import open_chapter
from launchlab.chapters import CHAPTERS, ordinary_launches

REPO_ROOT = Path(__file__).resolve().parents[1]
ACCEPTED = evidence.read_accepted()


def snapshot(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("stem", sorted(ACCEPTED))
def test_analyze_reproduces_committed_summaries_exactly(stem):
    assert analysis.analyze(evidence.accepted_run(stem)) == []


def test_every_chapter_has_an_accepted_run():
    assert set(CHAPTERS) <= set(ACCEPTED)


def test_analyze_detects_a_changed_summary(tmp_path):
    source = evidence.accepted_run(ordinary_launches.STEM)
    copy = tmp_path / source.name
    shutil.copytree(source, copy)
    summaries = json.loads((copy / "summaries.json").read_text())
    variant = next(iter(summaries["row_path"]))
    summaries["row_path"][variant]["event_us"]["median"] *= 1.0001
    (copy / "summaries.json").write_text(json.dumps(summaries))
    assert analysis.analyze(copy) == [f"{copy.name}/summaries.json differs from the recomputation from raw samples"]


@pytest.mark.skipif(device.gpu_status()[0], reason="a GPU is visible here")
def test_gpu_mode_without_gpu_is_refused_and_touches_nothing():
    before = snapshot(evidence.EVIDENCE_ROOT)
    with pytest.raises(device.NoGPUError, match="mode 'gpu' needs a visible CUDA GPU"):
        open_chapter(ordinary_launches.STEM, mode="gpu")
    assert snapshot(evidence.EVIDENCE_ROOT) == before


def test_bad_mode_and_unknown_run_are_named():
    with pytest.raises(ValueError, match="mode 'fast' is not one of"):
        open_chapter(ordinary_launches.STEM, mode="fast")
    with pytest.raises(evidence.EvidenceError, match="unknown run_id '20990101T000000Z-none'"):
        open_chapter(ordinary_launches.STEM, mode="evidence", run_id="20990101T000000Z-none")
    with pytest.raises(KeyError, match="unknown chapter 'nope'"):
        open_chapter("nope")


def test_evidence_mode_reads_the_accepted_run():
    run = open_chapter(ordinary_launches.STEM, mode="auto" if not device.gpu_status()[0] else "evidence")
    assert run.run_id == ACCEPTED[ordinary_launches.STEM]
    assert run.record["validation"]["verdict"] == "passed"
    for shape in run.record["parameters"]["shapes"].split(","):
        assert f"event_us.row4.{shape}" in run.headline
    assert {"launch_us.cupy.empty", "launch_us.native.empty"} <= set(run.headline)


def test_cli_verify_and_analyze():
    run_id = ACCEPTED[ordinary_launches.STEM]
    command = [sys.executable, "-m", "launchlab"]
    verified = subprocess.run(command + ["verify"], capture_output=True, text=True, cwd=REPO_ROOT)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    analyzed = subprocess.run(command + ["analyze", run_id], capture_output=True, text=True, cwd=REPO_ROOT)
    assert analyzed.returncode == 0 and "reproduced exactly" in analyzed.stdout
    unknown = subprocess.run(command + ["analyze", "20990101T000000Z-none"], capture_output=True, text=True, cwd=REPO_ROOT)
    assert unknown.returncode == 2 and "unknown run_id" in unknown.stderr


def glued_markdown(notebook: dict) -> dict:
    values = {}
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            record = output.get("metadata", {}).get("scrapbook")
            if record:
                values[record["name"]] = output["data"][record["mime_prefix"] + "text/markdown"]
    return values


def execute_in_evidence_mode(stem: str, tmp_path: Path) -> dict:
    import papermill

    out = tmp_path / f"{stem}.ipynb"
    papermill.execute_notebook(str(REPO_ROOT / f"book/{stem}.ipynb"), str(out), parameters={"mode": "evidence"},
                               cwd=str(REPO_ROOT / "book"), kernel_name="python3", progress_bar=False)
    return json.loads(out.read_text())


@pytest.mark.parametrize("stem", sorted(set(CHAPTERS) - {ordinary_launches.STEM}))
def test_chapter_executes_with_papermill_in_evidence_mode(stem, tmp_path):
    values = glued_markdown(execute_in_evidence_mode(stem, tmp_path))
    assert values["run_id"] == ACCEPTED[stem]


def test_claim_audit_executes_with_papermill(tmp_path):
    from launchlab.claims import registry as claims

    values = glued_markdown(execute_in_evidence_mode("claim-audit", tmp_path))
    counts = claims.verdict_counts(claims.load_claims())
    assert values["count_qualify"] == str(counts["qualify"]) == "38"


def test_chapter_1_executes_with_papermill_in_evidence_mode(tmp_path):
    values = glued_markdown(execute_in_evidence_mode(ordinary_launches.STEM, tmp_path))
    run = evidence.accepted_run(ordinary_launches.STEM)
    headline = json.loads((run / "headline.json").read_text())
    assert values["run_id"] == run.name
    assert values["row4_4096x4096_event_us"] == f"{headline['event_us.row4.4096x4096']:.1f}"
    assert values["launch_cupy_empty_enqueue"] == f"{headline['launch_us.cupy.empty']:.2f}"

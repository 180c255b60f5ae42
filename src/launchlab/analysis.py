"""Opening a run: its manifest checked, its files readable, its summaries recomputed from its raw files and
equal to the saved ones. This sits above the chapters because recomputing needs the run's chapter.

Pages, claims and the command line all open runs here (`open_run`, `accepted_run`); `analyze` is the
recomputation's comparison alone.
"""
from __future__ import annotations

from pathlib import Path

from launchlab.chapters import chapter
from launchlab.store import evidence
from launchlab.store.record import RunRecord
from launchlab.store.runs import Run, differences, summarize


def recompute(run_dir: Path) -> tuple[dict, dict]:
    """(summaries, headline) from the raw files of the run alone. A file that does not decode is named first:
    a chapter's summary would otherwise fail on it with a decoder's message that names no file."""
    run_dir = Path(run_dir)
    broken = [f"{run_dir.name}/{path.relative_to(run_dir).as_posix()}: {why}"
              for path in sorted(run_dir.rglob("*")) if path.is_file() and (why := evidence.unreadable(path))]
    if broken:
        raise evidence.EvidenceError(f"run {run_dir.name} has unreadable files: {'; '.join(broken[:3])}")
    return summarize(run_dir, chapter(RunRecord.read(run_dir).chapter).summary)


def analyze(run_dir: Path) -> list[str]:
    """Differences between the saved summaries/headline and a fresh recomputation (empty: identical)."""
    return differences(run_dir, *recompute(run_dir))


def open_run(path: Path, require_sealed: bool = True) -> Run:
    """A run whose manifest verifies (where `require_sealed`) and whose saved summaries recompute exactly."""
    path = Path(path)
    if require_sealed:
        problems = evidence.verify_run(path)
        if problems:
            raise evidence.EvidenceError(f"run {path.name} does not verify: {'; '.join(problems[:3])}")
    problems = analyze(path)
    if problems:
        raise evidence.EvidenceError("; ".join(problems))
    return Run.read(path)


def accepted_run(stem: str, root: Path = evidence.EVIDENCE_ROOT) -> Run:
    return open_run(evidence.accepted_run(stem, root))

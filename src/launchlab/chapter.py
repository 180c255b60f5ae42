"""What a chapter notebook calls: run on the GPU or open the evidence, then analyse.

    run = open_chapter("ordinary_launches", mode=mode, run_id=run_id, **parameters)

GPU mode writes a new run through the runner and opens it exactly as evidence mode opens a
committed run. Unknown parameters are an error in every mode; a run_id of another chapter too.
"""
from __future__ import annotations

from launchlab.analysis import open_run
from launchlab.chapters import chapter as declared
from launchlab.gpu import device
from launchlab.store import evidence
from launchlab.store.runs import Run


def open_chapter(stem: str, mode: str = "evidence", run_id: str = "", **parameters) -> Run:
    chapter = declared(stem)
    typed = chapter.parse_parameters(parameters)
    if device.resolve_mode(mode) == "evidence":
        path = evidence.run_dir(run_id) if run_id else evidence.accepted_run(stem)
        run = open_run(path)
        if run.chapter != stem:
            raise evidence.EvidenceError(f"run {run.run_id} belongs to chapter {run.chapter!r}, not {stem!r}")
        return run
    from launchlab.runner import execute

    return open_run(execute(chapter, run_id or evidence.new_run_id(chapter.tag), typed), require_sealed=False)

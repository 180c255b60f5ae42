"""What a chapter notebook calls: run on the GPU or open the evidence, then analyse.

    run = open_chapter("ordinary_launches", mode=mode, run_id=run_id, **parameters)

GPU mode writes a new run (raw files, then summaries and headline computed from
them) and analyses it exactly as evidence mode analyses a committed run.
"""
from __future__ import annotations

from launchlab.gpu import device
from launchlab.store import evidence
from launchlab.store.runs import ChapterRun, open_run, recompute
from launchlab.chapters import chapter_module


def open_chapter(stem: str, mode: str = "evidence", run_id: str = "", **parameters) -> ChapterRun:
    module = chapter_module(stem)
    resolved = device.resolve_mode(mode)
    if resolved == "evidence":
        path = evidence.run_dir(run_id) if run_id else evidence.accepted_run(stem)
        return open_run(path)
    unknown = set(parameters) - set(module.DEFAULT_PARAMETERS)
    if unknown:
        raise ValueError(f"unknown parameters for {stem}: {sorted(unknown)}")
    writer = evidence.RunWriter(run_id or evidence.new_run_id(module.TAG))
    module.run_on_gpu(writer, {**module.DEFAULT_PARAMETERS, **parameters})
    summaries, headline = recompute(writer.path)
    writer.write_json("summaries.json", summaries)
    writer.write_json("headline.json", headline)
    return open_run(writer.path)

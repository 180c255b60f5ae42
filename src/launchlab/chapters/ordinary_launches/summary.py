"""Chapter 1's summaries and headline, from the run's raw files alone (NumPy only): timing, who set the pace of
each batch, and the traced timelines (each kernel's span, the gaps, and each SM's span per kernel for the figure)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from launchlab.chapters.ordinary_launches import EMPTY_NATIVE, EMPTY_STREAM, ROW_KERNELS
from launchlab.measure import stats
from launchlab.measure.variant import VariantId
from launchlab.model import timelines
from launchlab.present.prose import comparison, pacer
from launchlab.runner import SAMPLES_FILE
from launchlab.store.runs import read_jsonl


def summarize(run_dir: Path, record) -> dict:
    samples = read_jsonl(Path(run_dir) / SAMPLES_FILE)
    timing = stats.summarize(samples)
    return {"timing": timing, "timelines": traced_timelines(Path(run_dir)), "pace": batch_pace(timing),
            "launch_pace": launch_pace(timing)}


def traced_timelines(run_dir: Path) -> dict:
    traced = {}
    for trace_file in sorted((run_dir / "traces").glob("*.npz")):
        with np.load(trace_file) as arrays:
            traced[trace_file.stem] = {
                "kernels": timelines.kernel_spans(arrays["start_ns"], arrays["end_ns"], ROW_KERNELS),
                "timer_step_ns": timelines.timer_resolution_ns(arrays["start_ns"], arrays["end_ns"]),
                "sms_used": int(np.unique(arrays["sm"]).size),
                "sm_spans": sm_spans(arrays["start_ns"], arrays["end_ns"], arrays["sm"]),
            }
    return traced


def sm_spans(start_ns: np.ndarray, end_ns: np.ndarray, sm: np.ndarray) -> dict:
    """{kernel: [[sm, first start, last end], ...]} in ns since the first block started: what each SM did."""
    origin = int(start_ns.min())
    spans = {}
    for index, name in enumerate(ROW_KERNELS):
        spans[name] = [[int(s), int(start_ns[index][sm[index] == s].min()) - origin,
                        int(end_ns[index][sm[index] == s].max()) - origin] for s in np.unique(sm[index])]
    return spans


def launches_of(vid: VariantId) -> int:
    return 1 if vid.target == "empty" else len(ROW_KERNELS)


def batch_pace(timing: dict) -> dict:
    """Per warm row-path variant: who set the pace of its batch, and the single call's enqueue against the batch's."""
    pace = {}
    for variant, m in timing.items():
        if "warm_batch" not in m:
            continue
        event, batch_enqueue = m["warm_batch"]["event_us"]["median"], m["warm_batch"]["enqueue_us"]["median"]
        single_enqueue = m["warm_single"]["enqueue_us"]["median"]
        pace[variant] = {"paced_by": pacer(event, batch_enqueue), "event_over_enqueue": event / batch_enqueue,
                         "single_vs_batch_enqueue": comparison(single_enqueue, batch_enqueue),
                         "single_over_batch_enqueue": single_enqueue / batch_enqueue}
    return pace


def launch_pace(timing: dict) -> dict:
    """Per launch-cost variant: whether the batch's completion kept up with its enqueue (who set the pace)."""
    pace = {}
    for variant, m in timing.items():
        if "enqueue" in m:
            complete = m["enqueue"]["complete_us"]["median"] / launches_of(VariantId.parse(variant))
            pace[variant] = {"paced_by": pacer(complete, m["enqueue"]["enqueue_us_per_launch"]["median"]),
                             "complete_us_per_launch": complete}
    return pace


def headline(summaries: dict) -> dict:
    figures = {}
    for variant, measurements in summaries["timing"].items():
        if "warm_batch" in measurements:
            figures[f"event_us.{variant}"] = measurements["warm_batch"]["event_us"]["median"]
        if "enqueue" in measurements:
            figures[f"enqueue_us_per_launch.{variant}"] = measurements["enqueue"]["enqueue_us_per_launch"]["median"]
    for shape, timeline in summaries["timelines"].items():
        figures[f"trace_gaps_us.{shape}"] = sum(k["gap_before_ns"] for k in timeline["kernels"][1:]) / 1e3
    if f"enqueue_us_per_launch.{EMPTY_NATIVE}" in figures:
        figures["cupy_over_native.empty"] = (figures[f"enqueue_us_per_launch.{EMPTY_STREAM}"]
                                             / figures[f"enqueue_us_per_launch.{EMPTY_NATIVE}"])
    return figures

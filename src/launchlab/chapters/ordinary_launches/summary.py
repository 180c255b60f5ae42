"""Chapter 1's summaries and headline, from the run's raw files alone (NumPy only)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from launchlab.chapters.ordinary_launches import EMPTY_NATIVE, EMPTY_STREAM, ROW_KERNELS
from launchlab.measure import stats
from launchlab.model import timelines
from launchlab.runner import SAMPLES_FILE
from launchlab.store.runs import read_jsonl


def summarize(run_dir: Path, record) -> dict:
    samples = read_jsonl(Path(run_dir) / SAMPLES_FILE)
    traced = {}
    for trace_file in sorted((Path(run_dir) / "traces").glob("*.npz")):
        with np.load(trace_file) as arrays:
            traced[trace_file.stem] = {
                "kernels": timelines.kernel_spans(arrays["start_ns"], arrays["end_ns"], ROW_KERNELS),
                "timer_step_ns": timelines.timer_resolution_ns(arrays["start_ns"], arrays["end_ns"]),
                "sms_used": int(np.unique(arrays["sm"]).size),
            }
    return {"timing": stats.summarize(samples), "timelines": traced}


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

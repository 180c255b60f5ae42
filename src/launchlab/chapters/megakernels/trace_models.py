"""The schedule models a design's traces are held to and summarised by (NumPy only): the three schedules of
schedules.py (three kernels, cooperative, queue) and the designs of design_schedules.py."""
from __future__ import annotations

import dataclasses
import typing

import numpy as np

from launchlab.chapters.megakernels import design_schedules, schedules


@dataclasses.dataclass(frozen=True)
class TraceModel:
    """What a schedule's traces are held to (`check`: {"passed", "checks"}) and summarised by (`summary`:
    checks, overlap counts, waits, the model's replay), both called as f(trace, graph, workers, context);
    `context` holds what a design's model needs beyond the graph (trace_context: its task lists or plan)."""
    check: typing.Callable
    summary: typing.Callable


def _schedules_model(schedule: str) -> TraceModel:
    return TraceModel(lambda trace, graph, workers, context: schedules.check_trace(trace, graph, schedule, workers),
                      lambda trace, graph, workers, context: schedules.trace_summary(trace, graph, schedule, workers))


def _design_summary(trace, graph, design: str, slots: int, context: dict) -> dict:
    """design_schedules' summary, with the overlap count and span under the names the queue's summary uses."""
    summary = design_schedules.trace_summary(trace, graph, design, slots, **context)
    if "span_ns" in summary:
        summary.update({"b_before_last_a": schedules.b_before_last_a(trace, graph), "b_tasks": graph.rows,
                        "makespan_ns": summary["span_ns"]})
    return summary


def _design_model(design: str) -> TraceModel:
    return TraceModel(lambda trace, graph, workers, context: design_schedules.check_design_trace(
                          trace, graph, design, context.get("lists")),
                      lambda trace, graph, workers, context: _design_summary(trace, graph, design, workers, context))


# schedule -> its model; a design with a schedule of its own adds an entry
TRACE_MODELS = {**{schedule: _schedules_model(schedule) for schedule in schedules.SCHEDULES},
                **{design: _design_model(design) for design in design_schedules.DESIGNS}}
QUEUE_STYLE = schedules.SCHEDULES  # the schedules whose summaries count overlap and waits (not the design models)


def trace_context(arrays) -> dict:
    """A saved trace's model context: the dependency kernel's task lists, the cluster plan (else nothing)."""
    if "lists_first" in arrays:
        return {"lists": design_schedules.WorkerLists(np.asarray(arrays["lists_first"]),
                                                      np.asarray(arrays["lists_tasks"]), np.asarray(arrays["lists_slot"]))}
    if "plan_lengths" in arrays:
        return {"plan": design_schedules.cluster_plan(np.asarray(arrays["plan_lengths"]), int(arrays["plan_max_cluster"]))}
    return {}


def context_arrays(target) -> dict:
    """What trace_context needs, from a design's Target, for the trace file."""
    if getattr(target, "lists", None) is not None:
        return {"lists_first": target.lists.first, "lists_tasks": target.lists.tasks, "lists_slot": target.lists.slot}
    if getattr(target, "plan", None) is not None:
        return {"plan_lengths": np.asarray(target.plan.lengths), "plan_max_cluster": np.int64(target.max_cluster)}
    return {}

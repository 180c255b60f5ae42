"""Chapter 1's answer and argument as sentences: each one written from a finding in the run's summaries (who set the
pace, what a launch cost, where the GPU idled), so that a run which found otherwise reads otherwise."""
from __future__ import annotations

from launchlab.measure.variant import VariantId
from launchlab.present import tables
from launchlab.present.replicas import joined, replicates_of, spread_sentence


def _shape(case: str) -> str:
    return case.replace("x", "×")


def _paces(run) -> list[tuple[str, dict]]:
    """(shape, pace finding) of each row-path shape, in the run's order of shapes."""
    return [(VariantId.parse(v).case, pace) for v, pace in run.summaries["pace"].items()]


def pace_answer(run) -> str:
    """Who set the pace of the row path's batches, shape by shape, with what that means for the GPU."""
    host = [_shape(shape) for shape, pace in _paces(run) if pace["paced_by"] == "the host"]
    gpu = [(shape, pace) for shape, pace in _paces(run) if pace["paced_by"] == "the GPU"]
    parts = []
    if host:
        parts.append(f"at {joined(host)} the host set the pace: the GPU finished each call as soon as Python had "
                     "submitted it and then waited for the next one")
    if gpu:
        ratios = joined([f"{pace['event_over_enqueue']:.2f}" for _, pace in gpu])
        parts.append(f"at {joined([_shape(s) for s, _ in gpu])} the GPU set the pace, its event interval per call "
                     f"{ratios} times Python's enqueue time{' respectively' if len(gpu) > 1 else ''}")
    return "For the four-kernel row path, " + "; ".join(parts) + "."


def pace_detail(run) -> str:
    """The two readings behind each pace finding, shape by shape."""
    timing = run.summaries["timing"]
    parts = []
    for shape, pace in _paces(run):
        batch = timing[f"row4.{shape}.stream"]["warm_batch"]
        parts.append(f"{tables.fmt_sig(batch['event_us']['median'])} and {tables.fmt_sig(batch['enqueue_us']['median'])}"
                     f" µs at {_shape(shape)} (a ratio of {pace['event_over_enqueue']:.2f})")
    return "Per invocation, the GPU's event interval and Python's enqueue time were " + joined(parts) + "."


def gap_answer(run) -> str:
    """How long the GPU sat idle between the kernels of one traced invocation per shape."""
    parts = []
    for shape, timeline in run.summaries["timelines"].items():
        gaps = run.headline[f"trace_gaps_us.{shape}"]
        total = timeline["kernels"][-1]["last_end_ns"] / 1e3
        parts.append(f"{tables.fmt_sig(gaps)} of {tables.fmt_sig(total)} µs at {_shape(shape)}")
    return ("In one traced call per shape, no block of the path ran between the four kernels for "
            + joined(parts) + ".")


def gap_pace(run) -> str:
    """Whether the idle gaps follow who set the pace: larger at every host-paced shape than at any GPU-paced one."""
    paced = dict(_paces(run))
    gaps = {shape: run.headline[f"trace_gaps_us.{shape}"] for shape in run.summaries["timelines"] if shape in paced}
    host = [gaps[s] for s in gaps if paced[s]["paced_by"] == "the host"]
    gpu = [gaps[s] for s in gaps if paced[s]["paced_by"] == "the GPU"]
    if host and gpu and min(host) > max(gpu):
        return ("The gaps are larger at every shape where the host set the pace than at any where the GPU did, as the "
                "timing predicts.")
    return ("Note: in this run the gaps do not separate the shapes where the host set the pace from those where the "
            "GPU did, so the traces neither confirm nor contradict the timing's finding.")


def launch_pace(run) -> str:
    """Who set the pace of the row path's launch batches, from Python and from C++, each pacer named once."""
    batches: dict[str, list[str]] = {}
    for variant, pace in run.summaries["launch_pace"].items():
        vid = VariantId.parse(variant)
        if vid.target != "empty":
            name = "the Python batch" if vid.submission == "stream" else "the C++ loop's batch"
            batches.setdefault(pace["paced_by"], []).append(name)
    return "; ".join(f"{pacer} set the pace of {joined(names)}" for pacer, names in batches.items())


def _launch_us(run, submission: str) -> float:
    return run.summaries["timing"][f"empty.1x1.{submission}"]["enqueue"]["enqueue_us_per_launch"]["median"]


def launch_cost(run) -> str:
    """The book's launch cost: Python's host time per launch of an empty kernel, as every page cites it."""
    return tables.fmt_sig(_launch_us(run, "stream"))


def launch_answer(run) -> str:
    """What one launch cost the host, from Python and from C++, and whether the replicates agree."""
    python, native = _launch_us(run, "stream"), _launch_us(run, "native")
    others = [_launch_us(r, "stream") for r in replicates_of(run)]
    return (f"One launch of an empty kernel cost the host {launch_cost(run)} µs from Python (CuPy) and "
            f"{tables.fmt_sig(native)} µs from a C++ loop calling `cuLaunchKernel`: {python / native:.2f} times as "
            "much from Python. This is the launch cost the other pages of the book cite. "
            + spread_sentence("Python's launch cost", python, others, tables.fmt_sig, " µs"))


def answer_values(run) -> dict:
    return {"pace_answer": pace_answer(run), "pace_detail": pace_detail(run), "gap_answer": gap_answer(run), "gap_pace": gap_pace(run), "launch_pace": launch_pace(run),
            "launch_answer": launch_answer(run), "launch_cost_us": launch_cost(run)}

"""What a chapter will run, before it runs: `python -m launchlab plan <stem> [-p NAME VALUE ...]`.

Lists the chapter's expanded variants (the rows of its declaration crossed with its cases and submissions) and
estimates the GPU seconds its timed regions take under the frozen protocol. The estimate is a model, not a
measurement: per call, the longer of a launch floor and the call's logical bytes at a copy's bandwidth; per
variant, the invocations the protocol makes (warm-ups, then per round one synchronised call and a batch; cold
calls after an L2 flush and a GPU-side wait). Builds, validation, traces, profiles and sanitizer runs come on top.
"""
from __future__ import annotations

import datetime
from pathlib import Path

from launchlab.measure.protocol import FROZEN, MeasurementProtocol
from launchlab.store import evidence
from launchlab.store.files import read_json

COPY_BYTES_PER_S = 4.0e12          # about what a device-to-device copy moves on an H200 (read + write)
LAUNCH_FLOOR_S = {"stream": 6e-6, "native": 4e-6}  # host cost of one call launched from Python / C++
GRAPH_FLOOR_S = 2e-6               # one call replayed inside a graph
LARGE_BYTES = 1 << 26              # invocations this large use the protocol's smaller batch
FLUSH_S = 60e-6                    # one L2 flush (twice the L2 read at copy bandwidth) before a cold call


def seconds_per_invocation(variant) -> float:
    submission = variant.id.submission
    floor = GRAPH_FLOOR_S if submission.startswith("graph") else LAUNCH_FLOOR_S.get(submission, LAUNCH_FLOOR_S["stream"])
    return max(variant.calls * floor, variant.logical_bytes / COPY_BYTES_PER_S)


def invocations(variant, l2: str, protocol: MeasurementProtocol = FROZEN) -> int:
    if l2 == "cold":
        return protocol.rounds * protocol.cold_repeats
    batch = protocol.large_batch if variant.logical_bytes >= LARGE_BYTES else protocol.batch
    return protocol.warmups + protocol.rounds * (1 + batch)


def estimate(variant, protocol: MeasurementProtocol = FROZEN) -> float:
    """Seconds of GPU time the variant's timed regions take, over its L2 states."""
    total = 0.0
    for l2 in variant.l2_states:
        per_call = seconds_per_invocation(variant)
        extra = FLUSH_S + protocol.cold_wait_ns / 1e9 if l2 == "cold" else 0.0
        total += invocations(variant, l2, protocol) * (per_call + extra)
    return total


def plan_rows(chapter, parameters) -> list[dict]:
    return [{"variant": str(v.id), "row": v.row.label, "l2": ",".join(v.l2_states),
             "pacing": ",".join(v.pacing(l2) for l2 in v.l2_states), "logical_mb": v.logical_bytes / 1e6,
             "outputs": ",".join(sorted(v.enters)), "requires": v.row.requires.text(), "gpu_s": estimate(v)}
            for v in chapter.variants(parameters)]


def accepted_wall_seconds(stem: str, root: Path = evidence.EVIDENCE_ROOT) -> tuple[str, float] | None:
    """(run id, seconds from its first build to its end) of the chapter's accepted run, where there is one."""
    if stem not in evidence.read_accepted(root):
        return None
    path = evidence.accepted_run(stem, root)
    states = read_json(path / "run.json")["states"]
    start, end = (datetime.datetime.fromisoformat(states[key]["utc"]) for key in ("before_build", "end"))
    return path.name, (end - start).total_seconds()


def print_plan(chapter, parameters, out=print, root: Path = evidence.EVIDENCE_ROOT) -> float:
    rows = plan_rows(chapter, parameters)
    out(f"{chapter.stem}: {len(rows)} declared variant(s)")
    out(f"{'variant':<44} {'L2':<10} {'pacing':<12} {'MB/invocation':>13} {'GPU s':>7}  outputs; requires")
    for row in rows:
        out(f"{row['variant']:<44} {row['l2']:<10} {row['pacing']:<12} {row['logical_mb']:>13.2f} "
            f"{row['gpu_s']:>7.2f}  {row['outputs']}; {row['requires']}")
    total = sum(row["gpu_s"] for row in rows)
    out(f"estimated GPU time of the timed regions: {total:.1f} s (a model; builds, validation, traces, profiles "
        f"and sanitizer runs come on top)")
    accepted = accepted_wall_seconds(chapter.stem, root)
    if accepted:
        out(f"the accepted run {accepted[0]} took {accepted[1]:.0f} s from its first build to its end, with its own "
            f"parameters (add about 10 s for papermill)")
    return total

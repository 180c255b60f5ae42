"""What chapter 3's fixed shapes (run.py) and its sweep (sweep.py) share on the GPU: the context the rows' `make`
reads, making a case's rows on one input matrix (a library that cannot be set up is skipped with its reason),
screening the libraries against their oracle, and the graph (or stream) invocation of each variant."""
from __future__ import annotations

import dataclasses

from launchlab.chapters import fusion
from launchlab.model import dot


class Unavailable(RuntimeError):
    """A row that cannot be made here (a library not installed or unable to run); the text is the reason."""


@dataclasses.dataclass
class Context:
    """What the rows' `make` reads: the stream, the built modules ({label: module}, "row_softmax" and every
    plan's), the fused plan per case, and one input matrix per case shared by every row made on it."""
    stream: object
    modules: dict
    plans: dict
    inputs: dict = dataclasses.field(default_factory=dict)

    def input(self, case: str):
        if case not in self.inputs:
            import cupy

            self.inputs[case] = cupy.empty(fusion.dims(case), dtype=cupy.float32)
        return self.inputs[case]

    def release(self, case: str) -> None:
        self.inputs.pop(case, None)


def make_fused(modules: dict, plan: dict, rows: int, cols: int, mode: str, x):
    """The fused kernel the plan names, in `mode` (rms or plain), reading x, with the plan's launch-time options."""
    from launchlab.chapters.fusion.plans import REGISTERS_FAMILY
    from launchlab.gpu import fused_designs, targets

    module = modules[plan["module"]]
    if plan["design"] == "row":  # the full row kernel, or its registers tier alone
        kind = targets.RegistersRow if plan.get("family") == REGISTERS_FAMILY else targets.FusedRow
        return kind(module, rows, cols, mode, plan["shared_bytes"], x=x)
    return fused_designs.make_target(plan["design"], module, rows, cols, mode, x, **plan.get("options", {}))


def make_rows(session, context: Context, libraries: dict, case: str, names) -> dict:
    """{row: Target} for the rows `names` on the case's input matrix. A library that cannot be set up is noted in
    `libraries` (the run's "baselines") and its variants on the case are skipped with the reason; one that can is
    recorded with its version and set-up."""
    made = {}
    for name in names:
        declared = fusion.row(name)
        try:
            target = declared.make(context, case)
        except Unavailable as reason:
            libraries[name]["unavailable"][case] = str(reason)
            session.skip_all(str(reason), name, case)
            continue
        if declared.requires.library:
            libraries[name]["setup"][case] = target.describe()
            session.library(name, target.version())
        made[name] = target
    return made


def screen_libraries(session, targets: dict, case: str, libraries: dict, passed) -> None:
    """A library whose output fails its oracle on fixture 0 (`passed(name, target)` -> the comparison) is recorded
    and dropped, never timed; our own kernels are never screened (their failures fail the run)."""
    for name in [n for n in targets if fusion.is_library(n)]:
        result = passed(name, targets[name])
        if not result["passed"]:
            reason = (f"failed the float64 {fusion.row(name).oracle.name.split(' ')[0]} oracle before timing "
                      f"({result['failing_elements']} of {result['elements']} elements outside the tolerance); not timed")
            libraries[name]["unavailable"][case] = reason
            session.skip_all(reason, name, case)
            del targets[name]


def graph_of_calls(target, stream, calls: int = fusion.CALLS_PER_GRAPH):
    """A GraphReplay whose one replay is `calls` captured calls of `target` (the graph32 and graph<k> variants)."""
    from launchlab.gpu.capture import GraphReplay
    from launchlab.gpu.targets import Repeated

    return GraphReplay(Repeated(target, calls), stream)


def graph_nodes(replay) -> int | None:
    """Nodes of a captured graph, from CUDA's DOT description (None where it does not parse)."""
    try:
        return len(dot.parse_dot(replay.dot)["nodes"])
    except ValueError:
        return None


def invocations(variants, targets: dict, stream, setup: dict) -> dict:
    """{VariantId: what one invocation runs} for the variants whose row was made: the stream target itself, a
    graph of one call (`graph`) or of N calls (`graph<N>`). Capture costs and node counts go into `setup`."""
    from launchlab.gpu.capture import GraphReplay

    found = {}
    for variant in variants:
        target = targets.get(variant.id.target)
        if target is None:
            continue
        if variant.id.submission == "stream":
            found[variant.id] = target
            continue
        calls = fusion.calls_per_invocation(variant.id)
        replay = GraphReplay(target, stream) if variant.id.submission == "graph" else graph_of_calls(target, stream, calls)
        setup[str(variant.id)] = {**replay.setup, "calls": calls, "nodes": graph_nodes(replay)}
        found[variant.id] = replay
    return found


def by_case(variants) -> dict:
    """{case: [variants]} in declaration order."""
    grouped = {}
    for variant in variants:
        grouped.setdefault(variant.id.case, []).append(variant)
    return grouped

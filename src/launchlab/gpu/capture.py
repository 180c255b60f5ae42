"""Capture work into a CUDA graph with its setup costs (CuPy stream capture), and replay it as a target.

Needs a GPU."""
from __future__ import annotations

import time

from launchlab.gpu.targets import Wrapped


def capture(invoke, stream) -> tuple[object, dict]:
    """Capture `invoke` on `stream` into a graph, instantiate, upload and replay it once.

    Returns the graph and the time of each setup step in microseconds (host clock, each step
    synchronised). CuPy may instantiate inside end_capture or defer it to the first use;
    `instantiated_in_end_capture` records which happened. Where it happened inside end_capture,
    `end_capture_us` holds the instantiation and there is no `instantiate_us` (no separate step
    to time); `instantiate_again_us` then times one more instantiation of the same graph alone,
    a part of end_capture_us, never to be added to it. `first_replay_us` is one launch and
    synchronisation: it holds the replay's own device work."""
    stream.synchronize()
    t0 = time.perf_counter_ns()
    stream.begin_capture()
    invoke()
    t1 = time.perf_counter_ns()
    graph = stream.end_capture()
    t2 = time.perf_counter_ns()
    deferred = getattr(graph, "graphExec", 1) == 0 and hasattr(graph, "_ensure_instantiate")
    if deferred:
        graph._ensure_instantiate()  # CuPy's own step; otherwise upload would hide it
    t3 = time.perf_counter_ns()
    graph.upload(stream)
    stream.synchronize()
    t4 = time.perf_counter_ns()
    graph.launch(stream)
    stream.synchronize()
    t5 = time.perf_counter_ns()
    setup = {"capture_us": (t1 - t0) / 1e3, "end_capture_us": (t2 - t1) / 1e3, "upload_us": (t4 - t3) / 1e3,
             "first_replay_us": (t5 - t4) / 1e3, "instantiated_in_end_capture": not deferred}
    if deferred:
        setup["instantiate_us"] = (t3 - t2) / 1e3
    else:
        setup["instantiate_again_us"] = instantiate_alone_us(graph)
    return graph, setup


def instantiate_alone_us(graph) -> float:
    """One more instantiation of a captured graph, timed alone and destroyed: what instantiation costs
    where CuPy hid it inside end_capture."""
    from cupy.cuda import runtime

    start = time.perf_counter_ns()
    executable = runtime.graphInstantiate(graph.graph)
    elapsed_us = (time.perf_counter_ns() - start) / 1e3
    runtime.graphExecDestroy(executable)
    return elapsed_us


class GraphReplay(Wrapped):
    """A target's invocation captured once into a CUDA graph and replayed: the same buffers, so
    load/poison/output are the captured target's; `invoke` is one graph launch on `stream`.

    `setup` holds the capture's host-side costs; `dot` is CUDA's DOT description of the graph."""

    def __init__(self, target, stream):
        super().__init__(target)
        self.stream = stream
        self.graph, self.setup = capture(target.invoke, stream)
        self.dot = self.graph.debug_dot_str()
        self.launches = ()

    @property
    def submissions(self) -> int:
        return 1

    def invoke(self) -> None:
        self.graph.launch(self.stream)


def stream_and_graph(variants, make, stream) -> dict:
    """{VariantId: what invokes it} of the declared `stream` and `graph` variants: `make(variant)` gives the
    stream variant's Target, and its graph twin is a GraphReplay of that very Target captured on `stream`, so
    both read and write the same buffers. Variants of other submissions are left to the caller."""
    targets, runners = {}, {}
    for variant in variants:
        if variant.id.submission not in ("stream", "graph"):
            continue
        stream_id = variant.id.with_submission("stream")
        if stream_id not in targets:
            targets[stream_id] = make(variant)
        target = targets[stream_id]
        runners[variant.id] = target if variant.id.submission == "stream" else GraphReplay(target, stream)
    return runners

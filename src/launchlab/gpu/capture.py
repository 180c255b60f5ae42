"""Capture work into a CUDA graph with its setup costs (CuPy stream capture). Needs a GPU."""
from __future__ import annotations

import time


def capture(invoke, stream) -> tuple[object, dict]:
    """Capture `invoke` on `stream` into a graph, instantiate, upload and replay it once.

    Returns the graph and the time of each setup step in microseconds (host clock,
    each step synchronised). CuPy may instantiate inside end_capture or defer it to
    the first use; `instantiated_in_end_capture` records which happened."""
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
    setup = {"capture_us": (t1 - t0) / 1e3, "end_capture_us": (t2 - t1) / 1e3, "instantiate_us": (t3 - t2) / 1e3,
             "upload_us": (t4 - t3) / 1e3, "first_replay_us": (t5 - t4) / 1e3,
             "instantiated_in_end_capture": not deferred}
    return graph, setup

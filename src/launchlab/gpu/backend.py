"""The protocol's timing backend on the GPU: one non-blocking CuPy stream, the host clock, CUDA events.

Imports CuPy; only GPU mode reaches this module."""
from __future__ import annotations

import time

import cupy

class CupyBackend:
    """The protocol's TimingBackend over one non-blocking CuPy stream made current."""

    def __init__(self):
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.stream.use()

    def host_ns(self) -> int:
        return time.perf_counter_ns()

    def synchronize(self) -> None:
        self.stream.synchronize()

    def record_event(self):
        event = cupy.cuda.Event()
        event.record(self.stream)
        return event

    def wait_event(self, event) -> None:
        event.synchronize()

    def elapsed_ms(self, start, end) -> float:
        return float(cupy.cuda.get_elapsed_time(start, end))

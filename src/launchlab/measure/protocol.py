"""The frozen measurement protocol, independent of any workload, and its three named measurements.

A measured variant is a `VariantId` and a function that enqueues one invocation on the GPU without
waiting for it. Every measurement warms each variant up, then runs the rounds; in each round the
variants come in an order shuffled by the protocol's fixed host seed. The measurements are:

  * `warm`: per round and variant, one synchronised invocation (sample `warm_single`: host enqueue
    and host completion) and one batch of `batch` invocations bracketed by CUDA events (sample
    `warm_batch`: event interval, batch enqueue, batch completion). L2 keeps what the last
    invocation left in it.
  * `cold`: per round and variant, `cold_repeats` invocations (samples `cold`), each after a kernel
    that reads a buffer twice the L2 size and a GPU-side wait long enough for the host to have
    enqueued the invocation: the event interval is device time with a cold L2, not host pace.
  * `enqueue`: per round and variant, `batch` invocations enqueued back to back with no events
    (samples `enqueue`): the host's cost of submitting, and the completion of the whole batch.

All samples share one schema (SAMPLE_FIELDS). Only the invocation runs between the clock reads and
events of a timed region. Enqueue and GPU times are kept apart: never add them.
"""
from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Sequence
from typing import Protocol as Interface

from launchlab.measure.variant import VariantId


@dataclasses.dataclass(frozen=True)
class MeasurementProtocol:
    warmups: int = 10
    rounds: int = 21
    batch: int = 128
    large_batch: int = 32        # for cases whose single invocation is long
    host_seed: int = 20261018
    cold_repeats: int = 3        # cold invocations per variant and round
    cold_wait_ns: int = 200_000  # GPU-side wait between the L2 flush and the cold invocation's start event

    def record(self) -> dict:
        return dataclasses.asdict(self)


FROZEN = MeasurementProtocol()
MEASUREMENTS = ("warm_single", "warm_batch", "cold", "enqueue")
SAMPLE_FIELDS = ("measurement", "round", "position", "variant", "count", "launches",
                 "enqueue_ns", "complete_ns", "event_ms")


class TimingBackend(Interface):
    """What the protocol needs from a GPU: a host clock, a stream to drain, events."""

    def host_ns(self) -> int: ...
    def synchronize(self) -> None: ...
    def record_event(self) -> object: ...
    def wait_event(self, event: object) -> None: ...
    def elapsed_ms(self, start: object, end: object) -> float: ...


@dataclasses.dataclass(frozen=True)
class Measured:
    """One variant as the protocol sees it.

    `launches` is how many host submissions (kernel launches, graph launches, memsets) one
    invocation makes; `large` selects the protocol's smaller batch; `timed_loop`, where given,
    enqueues `n` invocations itself and returns (enqueue ns, completion ns): the native C++ loop."""
    id: VariantId
    invoke: Callable[[], None]
    launches: int = 1
    large: bool = False
    timed_loop: Callable[[int], tuple[int, int]] | None = None


def round_orders(names: Sequence[str], rounds: int, seed: int) -> list[list[str]]:
    """The variant order of every round, reproducible from the seed."""
    generator = random.Random(seed)
    orders = []
    for _ in range(rounds):
        order = list(names)
        generator.shuffle(order)
        orders.append(order)
    return orders


def time_single(invoke: Callable[[], None], backend: TimingBackend) -> tuple[int, int]:
    """One synchronised invocation: (enqueue ns, completion ns), both from its start."""
    backend.synchronize()
    start = backend.host_ns()
    invoke()
    issued = backend.host_ns()
    backend.synchronize()
    done = backend.host_ns()
    return issued - start, done - start


def time_batch(invoke: Callable[[], None], count: int, backend: TimingBackend) -> tuple[int, int, float]:
    """`count` back-to-back invocations between two events: (enqueue ns, completion ns, event ms)."""
    backend.synchronize()
    first = backend.record_event()
    start = backend.host_ns()
    for _ in range(count):
        invoke()
    issued = backend.host_ns()
    last = backend.record_event()
    backend.wait_event(last)
    done = backend.host_ns()
    return issued - start, done - start, backend.elapsed_ms(first, last)


def time_cold(invoke: Callable[[], None], flush: Callable[[], None], backend: TimingBackend) -> tuple[int, int, float]:
    """One invocation after `flush` (L2 flush, then a GPU wait): (enqueue ns, completion ns, event ms)."""
    backend.synchronize()
    flush()
    first = backend.record_event()
    start = backend.host_ns()
    invoke()
    issued = backend.host_ns()
    last = backend.record_event()
    backend.wait_event(last)
    done = backend.host_ns()
    return issued - start, done - start, backend.elapsed_ms(first, last)


def time_enqueue(invoke: Callable[[], None], count: int, backend: TimingBackend) -> tuple[int, int]:
    """`count` back-to-back invocations with no events: (enqueue ns, completion ns)."""
    backend.synchronize()
    start = backend.host_ns()
    for _ in range(count):
        invoke()
    issued = backend.host_ns()
    backend.synchronize()
    return issued - start, backend.host_ns() - start


def _sample(measurement, round_index, position, variant: Measured, count, enqueue_ns, complete_ns, event_ms=None):
    return {"measurement": measurement, "round": round_index, "position": position, "variant": str(variant.id),
            "count": int(count), "launches": int(variant.launches), "enqueue_ns": int(enqueue_ns),
            "complete_ns": int(complete_ns), "event_ms": None if event_ms is None else float(event_ms)}


def _rounds(variants: Sequence[Measured], protocol: MeasurementProtocol):
    """(round, position, variant) in the protocol's shuffled order, after checking names are unique."""
    names = [str(v.id) for v in variants]
    if len(set(names)) != len(names):
        raise ValueError(f"variant ids must be unique: {sorted(names)}")
    by_name = {str(v.id): v for v in variants}
    for round_index, order in enumerate(round_orders(names, protocol.rounds, protocol.host_seed)):
        for position, name in enumerate(order):
            yield round_index, position, by_name[name]


def _warm_up(variants: Sequence[Measured], backend: TimingBackend, protocol: MeasurementProtocol,
             before: Callable[[], None] | None = None) -> None:
    for variant in variants:
        for _ in range(protocol.warmups):
            if before:
                before()
            variant.invoke()
        backend.synchronize()


def batch_size(variant: Measured, protocol: MeasurementProtocol) -> int:
    return protocol.large_batch if variant.large else protocol.batch


def measure_warm(variants: Sequence[Measured], backend: TimingBackend, protocol: MeasurementProtocol = FROZEN) -> list[dict]:
    """Per round and variant: a `warm_single` and a `warm_batch` sample, in the order taken."""
    _warm_up(variants, backend, protocol)
    samples = []
    for round_index, position, variant in _rounds(variants, protocol):
        enqueue, complete = time_single(variant.invoke, backend)
        samples.append(_sample("warm_single", round_index, position, variant, 1, enqueue, complete))
        count = batch_size(variant, protocol)
        enqueue, complete, event_ms = time_batch(variant.invoke, count, backend)
        samples.append(_sample("warm_batch", round_index, position, variant, count, enqueue, complete, event_ms))
    return samples


def measure_cold(variants: Sequence[Measured], backend: TimingBackend, flush: Callable[[], None],
                 protocol: MeasurementProtocol = FROZEN) -> list[dict]:
    """Per round and variant: `cold_repeats` `cold` samples, each after `flush`."""
    _warm_up(variants, backend, protocol, before=flush)
    samples = []
    for round_index, position, variant in _rounds(variants, protocol):
        for _ in range(protocol.cold_repeats):
            enqueue, complete, event_ms = time_cold(variant.invoke, flush, backend)
            samples.append(_sample("cold", round_index, position, variant, 1, enqueue, complete, event_ms))
    return samples


def measure_enqueue(variants: Sequence[Measured], backend: TimingBackend, protocol: MeasurementProtocol = FROZEN) -> list[dict]:
    """Per round and variant: one `enqueue` sample of a batch submitted with no events."""
    for variant in variants:
        for _ in range(protocol.warmups):
            _enqueue_batch(variant, batch_size(variant, protocol), backend)
    samples = []
    for round_index, position, variant in _rounds(variants, protocol):
        count = batch_size(variant, protocol)
        enqueue, complete = _enqueue_batch(variant, count, backend)
        samples.append(_sample("enqueue", round_index, position, variant, count, enqueue, complete))
    return samples


def _enqueue_batch(variant: Measured, count: int, backend: TimingBackend) -> tuple[int, int]:
    if variant.timed_loop is not None:
        return variant.timed_loop(count)
    return time_enqueue(variant.invoke, count, backend)


def metrics_us(sample: dict) -> dict:
    """The per-invocation quantities of one sample, in microseconds (event time where events ran)."""
    count = sample["count"]
    values = {"enqueue_us": sample["enqueue_ns"] / 1e3 / count,
              "complete_us": sample["complete_ns"] / 1e3 / count,
              "enqueue_us_per_launch": sample["enqueue_ns"] / 1e3 / count / sample["launches"]}
    if sample["event_ms"] is not None:
        values["event_us"] = sample["event_ms"] * 1e3 / count
    return values

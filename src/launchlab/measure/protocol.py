"""The frozen measurement protocol of SPEC §4, independent of any workload.

A variant is a name and a function that enqueues one invocation on the GPU without
waiting for it. `measure` warms every variant up, then runs the rounds; in each
round the variants come in an order shuffled by a fixed host seed, and each gets

  * one synchronised invocation: host enqueue time (the call returns) and host
    completion time (the stream drained), from the host clock;
  * one batch of `batch` invocations bracketed by device events: the event interval,
    plus the batch's host enqueue and host completion times.

Only the invocation runs between the clock reads and events of a timed region.
Enqueue and GPU times are kept apart: never add them.
"""
from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Sequence
from typing import Protocol as Interface


@dataclasses.dataclass(frozen=True)
class Protocol:
    warmups: int = 10
    rounds: int = 21
    batch: int = 128
    large_batch: int = 32  # for cases whose single invocation is long
    host_seed: int = 20261018

    def record(self) -> dict:
        return dataclasses.asdict(self)


FROZEN = Protocol()


class TimingBackend(Interface):
    """What the protocol needs from a GPU: a host clock, a stream to drain, events."""

    def host_ns(self) -> int: ...
    def synchronize(self) -> None: ...
    def record_event(self) -> object: ...
    def wait_event(self, event: object) -> None: ...
    def elapsed_ms(self, start: object, end: object) -> float: ...


@dataclasses.dataclass(frozen=True)
class Variant:
    name: str
    invoke: Callable[[], None]
    large: bool = False  # use the protocol's smaller batch


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
    """`count` back-to-back invocations: (enqueue ns, completion ns, event ms)."""
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


def measure(variants: Sequence[Variant], backend: TimingBackend, protocol: Protocol = FROZEN,
            on_round: Callable[[int], None] | None = None) -> list[dict]:
    """Every raw sample, one per (round, variant), in the order taken."""
    names = [v.name for v in variants]
    if len(set(names)) != len(names):
        raise ValueError(f"variant names must be unique: {names}")
    by_name = {v.name: v for v in variants}
    for variant in variants:
        for _ in range(protocol.warmups):
            variant.invoke()
        backend.synchronize()
    samples = []
    for round_index, order in enumerate(round_orders(names, protocol.rounds, protocol.host_seed)):
        for position, name in enumerate(order):
            variant = by_name[name]
            count = protocol.large_batch if variant.large else protocol.batch
            single_enqueue, single_complete = time_single(variant.invoke, backend)
            batch_enqueue, batch_complete, batch_event_ms = time_batch(variant.invoke, count, backend)
            samples.append({
                "round": round_index, "position": position, "variant": name,
                "single_enqueue_ns": single_enqueue, "single_complete_ns": single_complete,
                "batch_size": count, "batch_enqueue_ns": batch_enqueue,
                "batch_complete_ns": batch_complete, "batch_event_ms": batch_event_ms,
            })
        if on_round:
            on_round(round_index)
    return samples


def per_invocation_us(sample: dict) -> dict:
    """The five per-invocation quantities of a raw sample, in microseconds."""
    count = sample["batch_size"]
    return {
        "single_enqueue_us": sample["single_enqueue_ns"] / 1e3,
        "single_complete_us": sample["single_complete_ns"] / 1e3,
        "batch_enqueue_us": sample["batch_enqueue_ns"] / 1e3 / count,
        "batch_complete_us": sample["batch_complete_ns"] / 1e3 / count,
        "event_us": sample["batch_event_ms"] * 1e3 / count,
    }


METRICS = ("single_enqueue_us", "single_complete_us", "batch_enqueue_us", "batch_complete_us", "event_us")

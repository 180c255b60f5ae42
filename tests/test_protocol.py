"""The frozen protocol against a fake clock and backend: order, counts, timed regions."""
import pytest

from launchlab.measure import protocol
from launchlab.measure import stats
from launchlab.measure.protocol import FROZEN, Protocol, Variant, measure, round_orders


class FakeBackend:
    """A host clock that ticks once per read, and a log of every call in order."""

    def __init__(self):
        self.clock = 0
        self.log = []

    def host_ns(self):
        self.clock += 1000
        self.log.append(("clock", self.clock))
        return self.clock

    def synchronize(self):
        self.log.append(("sync",))

    def record_event(self):
        self.log.append(("event",))
        return len(self.log)

    def wait_event(self, event):
        self.log.append(("wait",))

    def elapsed_ms(self, start, end):
        return (end - start) / 1000.0


def make_variants(backend, names=("a", "b", "c"), large=()):
    return [Variant(name, lambda name=name: backend.log.append(("invoke", name)), large=name in large) for name in names]


def test_round_order_reproducible_from_seed_and_shuffled():
    names = [f"v{i}" for i in range(6)]
    first = round_orders(names, 21, 1234)
    assert first == round_orders(names, 21, 1234)
    assert first != round_orders(names, 21, 4321)
    assert all(sorted(order) == names for order in first)
    assert len({tuple(order) for order in first}) > 1  # the order really changes between rounds


def test_measure_counts_warmups_rounds_and_batches():
    backend = FakeBackend()
    small = Protocol(warmups=2, rounds=3, batch=5, large_batch=2, host_seed=9)
    samples = measure(make_variants(backend, large=("c",)), backend, small)
    assert len(samples) == 9
    assert [s["round"] for s in samples] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert {s["variant"]: s["batch_size"] for s in samples} == {"a": 5, "b": 5, "c": 2}
    invokes = [entry[1] for entry in backend.log if entry[0] == "invoke"]
    assert invokes.count("a") == 2 + 3 * (1 + 5) and invokes.count("c") == 2 + 3 * (1 + 2)
    assert [s["variant"] for s in samples[:3]] == round_orders(["a", "b", "c"], 3, 9)[0]


def test_only_the_invocation_runs_inside_timed_regions():
    backend = FakeBackend()
    measure(make_variants(backend), backend, Protocol(warmups=1, rounds=2, batch=4, large_batch=2))
    log = backend.log
    clock_positions = [i for i, entry in enumerate(log) if entry[0] == "clock"]
    # clock reads come in threes per timed region: start, issued, done
    assert len(clock_positions) % 3 == 0
    for start, issued, done in zip(*[iter(clock_positions)] * 3):
        between_start_and_issue = {entry[0] for entry in log[start + 1:issued]}
        assert between_start_and_issue == {"invoke"}, log[start:issued + 1]
        assert {entry[0] for entry in log[issued + 1:done]} <= {"sync", "event", "wait"}
        assert any(entry[0] in ("sync", "wait") for entry in log[issued + 1:done])  # completion waits


def test_per_invocation_values_divide_by_batch():
    sample = {"single_enqueue_ns": 3000, "single_complete_ns": 9000, "batch_size": 4,
              "batch_enqueue_ns": 8000, "batch_complete_ns": 40000, "batch_event_ms": 0.02}
    assert protocol.per_invocation_us(sample) == {
        "single_enqueue_us": 3.0, "single_complete_us": 9.0, "batch_enqueue_us": 2.0,
        "batch_complete_us": 10.0, "event_us": 5.0}


def test_duplicate_variant_names_rejected():
    backend = FakeBackend()
    with pytest.raises(ValueError, match="unique"):
        measure(make_variants(backend, names=("a", "a")), backend)


def test_frozen_protocol_is_the_spec():
    assert (FROZEN.warmups, FROZEN.rounds, FROZEN.batch, FROZEN.large_batch) == (10, 21, 128, 32)


def test_paired_ratio_and_bootstrap_are_deterministic():
    samples = []
    for r in range(21):
        for name, event_ms in (("slow", 0.2 + r * 1e-3), ("fast", 0.1)):
            samples.append({"round": r, "variant": name, "single_enqueue_ns": 1, "single_complete_ns": 1,
                            "batch_size": 1, "batch_enqueue_ns": 1, "batch_complete_ns": 1,
                            "batch_event_ms": event_ms})
    ratio = stats.paired_ratio(samples, "slow", "fast")
    assert ratio == stats.paired_ratio(samples, "slow", "fast")
    assert ratio["median"] == pytest.approx(2.1)
    assert ratio["ci_low"] <= ratio["median"] <= ratio["ci_high"]
    assert ratio["n"] == 21

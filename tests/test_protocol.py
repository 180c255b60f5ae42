"""The frozen protocol and its three measurements against a fake clock and backend: order, counts,
timed regions, one sample schema; statistics and VariantId."""
import pytest

from launchlab.measure import stats
from launchlab.measure.protocol import (FROZEN, MEASUREMENTS, SAMPLE_FIELDS, Measured, MeasurementProtocol,
                                        measure_cold, measure_enqueue, measure_warm, metrics_us, round_orders)
from launchlab.measure.variant import VariantId


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
    return [Measured(VariantId(name, "case"), lambda name=name: backend.log.append(("invoke", name)),
                     large=name in large) for name in names]


SMALL = MeasurementProtocol(warmups=2, rounds=3, batch=5, large_batch=2, host_seed=9, cold_repeats=2)


def test_round_order_reproducible_from_seed_and_shuffled():
    names = [f"v{i}" for i in range(6)]
    first = round_orders(names, 21, 1234)
    assert first == round_orders(names, 21, 1234)
    assert first != round_orders(names, 21, 4321)
    assert all(sorted(order) == names for order in first)
    assert len({tuple(order) for order in first}) > 1


def test_warm_counts_warmups_rounds_and_batches():
    backend = FakeBackend()
    samples = measure_warm(make_variants(backend, large=("c",)), backend, SMALL)
    assert len(samples) == 18 and {s["measurement"] for s in samples} == {"warm_single", "warm_batch"}
    batches = {s["variant"]: s["count"] for s in samples if s["measurement"] == "warm_batch"}
    assert batches == {"a.case.stream": 5, "b.case.stream": 5, "c.case.stream": 2}
    invokes = [entry[1] for entry in backend.log if entry[0] == "invoke"]
    assert invokes.count("a") == 2 + 3 * (1 + 5) and invokes.count("c") == 2 + 3 * (1 + 2)
    ids = ["a.case.stream", "b.case.stream", "c.case.stream"]
    assert [s["variant"] for s in samples[:6:2]] == round_orders(ids, 3, 9)[0]


def test_every_measurement_writes_the_one_schema():
    backend = FakeBackend()
    variants = make_variants(backend)
    samples = (measure_warm(variants, backend, SMALL) + measure_cold(variants, backend, lambda: backend.log.append(("flush",)), SMALL)
               + measure_enqueue(variants, backend, SMALL))
    assert {s["measurement"] for s in samples} == set(MEASUREMENTS)
    assert all(tuple(sorted(s)) == tuple(sorted(SAMPLE_FIELDS)) for s in samples)
    assert sum(s["measurement"] == "cold" for s in samples) == 3 * 3 * 2
    assert all((s["event_ms"] is None) == (s["measurement"] in ("warm_single", "enqueue")) for s in samples)


def test_only_the_invocation_runs_inside_timed_regions():
    backend = FakeBackend()
    measure_warm(make_variants(backend), backend, MeasurementProtocol(warmups=1, rounds=2, batch=4, large_batch=2))
    log = backend.log
    clock_positions = [i for i, entry in enumerate(log) if entry[0] == "clock"]
    assert len(clock_positions) % 3 == 0  # start, issued, done per timed region
    for start, issued, done in zip(*[iter(clock_positions)] * 3):
        assert {entry[0] for entry in log[start + 1:issued]} == {"invoke"}, log[start:issued + 1]
        assert {entry[0] for entry in log[issued + 1:done]} <= {"sync", "event", "wait"}
        assert any(entry[0] in ("sync", "wait") for entry in log[issued + 1:done])


def test_cold_flush_precedes_the_start_event_and_is_outside_the_host_timing():
    backend = FakeBackend()
    flushes = []
    measure_cold(make_variants(backend, names=("a",)), backend,
                 lambda: (flushes.append(1), backend.log.append(("flush",))), SMALL)
    log = [entry[0] for entry in backend.log]
    for index, entry in enumerate(log):
        if entry == "flush" and index + 1 < len(log) and log[index + 1] == "event":
            assert log[index + 2] == "clock" and log[index + 3] == "invoke"
    assert len(flushes) == SMALL.warmups + SMALL.rounds * SMALL.cold_repeats


def test_enqueue_uses_a_self_timed_loop_where_given():
    backend = FakeBackend()
    calls = []
    variant = Measured(VariantId("empty", "1x1", "native"), lambda: None, timed_loop=lambda n: (calls.append(n), (10 * n, 20 * n))[1])
    samples = measure_enqueue([variant], backend, SMALL)
    assert calls == [5] * (SMALL.warmups + SMALL.rounds)
    assert all(metrics_us(s)["enqueue_us"] == pytest.approx(0.01) for s in samples)


def test_metrics_divide_by_count_and_launches():
    sample = {"measurement": "warm_batch", "round": 0, "position": 0, "variant": "a.b.stream", "count": 4,
              "launches": 2, "enqueue_ns": 8000, "complete_ns": 40000, "event_ms": 0.02}
    assert metrics_us(sample) == {"enqueue_us": 2.0, "complete_us": 10.0, "enqueue_us_per_launch": 1.0, "event_us": 5.0}


def test_duplicate_variant_ids_rejected():
    backend = FakeBackend()
    with pytest.raises(ValueError, match="unique"):
        measure_warm(make_variants(backend, names=("a", "a")), backend)


def test_frozen_protocol_is_the_declared_one():
    assert (FROZEN.warmups, FROZEN.rounds, FROZEN.batch, FROZEN.large_batch, FROZEN.host_seed) == (10, 21, 128, 32, 20261018)


def _paired_samples(measurement="warm_batch"):
    samples = []
    for r in range(21):
        for name, event_ms in (("slow.x.stream", 0.2 + r * 1e-3), ("fast.x.stream", 0.1)):
            samples.append({"measurement": measurement, "round": r, "position": 0, "variant": name, "count": 1,
                            "launches": 1, "enqueue_ns": 1, "complete_ns": 1, "event_ms": event_ms})
    return samples


def test_paired_ratio_and_bootstrap_are_deterministic():
    samples = _paired_samples()
    ratio = stats.paired_ratio(samples, "slow.x.stream", "fast.x.stream")
    assert ratio == stats.paired_ratio(samples, "slow.x.stream", "fast.x.stream")
    assert ratio["median"] == pytest.approx(2.1)
    assert ratio["ci_low"] <= ratio["median"] <= ratio["ci_high"]


def test_paired_ratio_is_per_measurement_and_refuses_missing_pairs():
    samples = _paired_samples("cold")
    assert stats.paired_ratio(samples, "slow.x.stream", "fast.x.stream", measurement="cold")["median"] == pytest.approx(2.1)
    with pytest.raises(ValueError, match="no round"):
        stats.paired_ratio(samples, "slow.x.stream", "fast.x.stream")  # no warm_batch samples


def test_summarize_groups_by_variant_measurement_metric():
    summary = stats.summarize(_paired_samples())
    assert set(summary) == {"slow.x.stream", "fast.x.stream"}
    assert summary["fast.x.stream"]["warm_batch"]["event_us"]["median"] == pytest.approx(100.0)


def test_bandwidth_is_bytes_over_time():
    assert stats.gigabytes_per_second(8 * 2**20, 2.0) == pytest.approx(8 * 2**20 / 2e3)


@pytest.mark.parametrize("text", ["row4.128x8192.stream", "fused_rms.4096x4096.graph", "empty.1x1.native"])
def test_variant_id_round_trips(text):
    assert str(VariantId.parse(text)) == text


@pytest.mark.parametrize("bad", ["row4.128x8192", "a.b.c.d", "a..stream", "a.b c.stream"])
def test_variant_id_refuses_bad_forms(bad):
    with pytest.raises(ValueError):
        VariantId.parse(bad)

"""Summary statistics for every measurement: quantiles, paired ratios, bootstrap intervals, bandwidth.

All of them are deterministic functions of the saved samples (the bootstrap draws from a fixed
seed), so `analyze` recomputes a run's summaries exactly.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

from launchlab.measure.protocol import metrics_us

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 7
CONFIDENCE = 0.95


def quantiles(values: Sequence[float]) -> dict:
    """Median and p10/p90 (linear interpolation) of a non-empty sample."""
    array = np.asarray(values, dtype=np.float64)
    if array.size == 0:
        raise ValueError("no samples to summarise")
    p10, median, p90 = np.percentile(array, [10, 50, 90])
    return {"median": float(median), "p10": float(p10), "p90": float(p90), "n": int(array.size)}


def bootstrap_median_interval(values: Sequence[float], seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """Percentile bootstrap interval of the median, resampling the rounds."""
    array = np.asarray(values, dtype=np.float64)
    generator = np.random.default_rng(seed)
    picks = generator.integers(0, array.size, size=(BOOTSTRAP_RESAMPLES, array.size))
    medians = np.median(array[picks], axis=1)
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(medians, [tail, 100 - tail])
    return float(low), float(high)


def with_interval(values: Sequence[float]) -> dict:
    """Quantiles plus the bootstrap interval of the median (`ci_low`, `ci_high`)."""
    summary = quantiles(values)
    summary["ci_low"], summary["ci_high"] = bootstrap_median_interval(values)
    return summary


def summarize(samples: Iterable[dict]) -> dict:
    """{variant: {measurement: {metric: quantiles}}} over the per-invocation quantities."""
    grouped: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for sample in samples:
        for metric, value in metrics_us(sample).items():
            grouped[sample["variant"]][sample["measurement"]][metric].append(value)
    return {variant: {measurement: {metric: quantiles(values) for metric, values in sorted(metrics.items())}
                      for measurement, metrics in sorted(by_measurement.items())}
            for variant, by_measurement in sorted(grouped.items())}


def paired_values(samples: Iterable[dict], variant: str, measurement: str = "warm_batch",
                  metric: str = "event_us") -> dict[int, float]:
    """{round: the round's median of `metric`} for one variant (several per round when repeated)."""
    by_round: dict[int, list] = defaultdict(list)
    for sample in samples:
        if sample["variant"] == variant and sample["measurement"] == measurement:
            by_round[sample["round"]].append(metrics_us(sample)[metric])
    return {r: float(np.median(v)) for r, v in sorted(by_round.items())}


def paired_ratio(samples: Sequence[dict], numerator: str, denominator: str, measurement: str = "warm_batch",
                 metric: str = "event_us") -> dict:
    """numerator/denominator of `metric` within each round: median, p10/p90, bootstrap interval."""
    top = paired_values(samples, str(numerator), measurement, metric)
    bottom = paired_values(samples, str(denominator), measurement, metric)
    ratios = [top[r] / bottom[r] for r in top if r in bottom]
    if not ratios:
        raise ValueError(f"no round holds both {numerator!s} and {denominator!s} in {measurement}")
    summary = with_interval(ratios)
    summary.update({"measurement": measurement, "metric": metric})
    return summary


def paired_difference(samples: Sequence[dict], minuend: str, subtrahend: str, measurement: str = "warm_batch",
                      metric: str = "event_us", divisor: float = 1.0) -> dict:
    """(minuend - subtrahend) / divisor of `metric` within each round, with its bootstrap interval."""
    top = paired_values(samples, str(minuend), measurement, metric)
    bottom = paired_values(samples, str(subtrahend), measurement, metric)
    differences = [(top[r] - bottom[r]) / divisor for r in top if r in bottom]
    if not differences:
        raise ValueError(f"no round holds both {minuend!s} and {subtrahend!s} in {measurement}")
    summary = with_interval(differences)
    summary.update({"measurement": measurement, "metric": metric})
    return summary


def gigabytes_per_second(logical_bytes: int, microseconds: float) -> float:
    """Logical bytes over time: bytes / (us * 1e3) = GB/s (10^9 bytes per second)."""
    return logical_bytes / (microseconds * 1e3)


VERDICTS = ("above", "below", "tie")


def verdict(ratio: dict) -> str:
    """Where a paired ratio stands against 1: "above" or "below" where its 95 % interval lies wholly on that side,
    "tie" where the interval includes 1 (the rounds do not tell the two apart)."""
    if ratio["ci_low"] > 1:
        return "above"
    if ratio["ci_high"] < 1:
        return "below"
    return "tie"


def tally(ratios) -> dict:
    """{"above", "below", "tie": how many} of paired ratios (see `verdict`): a count of "faster" never holds a tie."""
    verdicts = [verdict(ratio) for ratio in ratios]
    return {name: verdicts.count(name) for name in VERDICTS}

"""Summary statistics used by every chapter: quantiles, paired ratios, bootstrap.

All of them are deterministic functions of the saved samples (the bootstrap draws
from a fixed seed), so `analyze` can recompute a run's summaries exactly.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

from launchlab.measure.protocol import METRICS, per_invocation_us

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


def summarize_variants(samples: Iterable[dict]) -> dict:
    """{variant: {metric: quantiles}} over the per-invocation quantities."""
    grouped: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for sample in samples:
        for metric, value in per_invocation_us(sample).items():
            grouped[sample["variant"]][metric].append(value)
    return {variant: {metric: quantiles(metrics[metric]) for metric in METRICS}
            for variant, metrics in sorted(grouped.items())}


def paired_ratio(samples: Iterable[dict], numerator: str, denominator: str, metric: str = "event_us") -> dict:
    """numerator/denominator of `metric` within each round: median, p10/p90, bootstrap interval."""
    by_round: dict[int, dict[str, float]] = defaultdict(dict)
    for sample in samples:
        if sample["variant"] in (numerator, denominator):
            by_round[sample["round"]][sample["variant"]] = per_invocation_us(sample)[metric]
    ratios = [pair[numerator] / pair[denominator] for _, pair in sorted(by_round.items())
              if numerator in pair and denominator in pair]
    if not ratios:
        raise ValueError(f"no round holds both {numerator!r} and {denominator!r}")
    summary = quantiles(ratios)
    summary["ci_low"], summary["ci_high"] = bootstrap_median_interval(ratios)
    summary["metric"] = metric
    return summary

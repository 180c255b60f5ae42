"""The tables of the methods appendix (book/appendix/methods.md), read from the code that applies them: the frozen
protocol, the statistics' constants, the oracle's tolerance and the one sample schema."""
from __future__ import annotations

import inspect

from launchlab.gpu.device import clocks_dropped
from launchlab.measure import stats
from launchlab.measure.protocol import FROZEN, SAMPLE_FIELDS
from launchlab.model.oracles import RMS_SOFTMAX_TOLERANCE
from launchlab.present import tables
from launchlab.present.glue import power_of_ten

# What each setting of the frozen protocol sets (keys: MeasurementProtocol's fields).
PROTOCOL_MEANING = {
    "warmups": "invocations of each variant before its first sample",
    "rounds": "rounds of every measurement: each summary holds this many values per variant",
    "batch": "invocations in one warm batch and in one enqueue sample",
    "large_batch": "the same, for cases whose single invocation is long",
    "host_seed": "seed of the shuffled order of the variants in each round",
    "cold_repeats": "cold invocations per variant and round (the round's value is their median)",
    "cold_wait_ns": "GPU-side wait between the L2 flush and a cold invocation's start event",
}

# What each field of a sample holds (keys: protocol.SAMPLE_FIELDS).
SAMPLE_MEANING = {
    "measurement": "warm_single, warm_batch, cold or enqueue",
    "round": "the round, from 0",
    "position": "the variant's place in that round's shuffled order",
    "variant": "the VariantId, <target>.<case>.<submission>, e.g. row4.128x8192.graph",
    "count": "invocations in the timed region (1, batch or large_batch)",
    "launches": "host submissions per invocation (kernel launches, graph launches, memsets)",
    "enqueue_ns": "host clock from the first call until the last call returned",
    "complete_ns": "host clock from the first call until the stream had drained",
    "event_ms": "CUDA-event interval around the invocations (none for enqueue and warm_single samples)",
}


def _setting_value(name: str, value) -> str:
    if name == "cold_wait_ns":
        return f"{tables.fmt_int(value, grouping=True)} ns ({value / 1e3:g} µs)"
    return tables.fmt_int(value, grouping=name not in ("host_seed",))


def protocol_rows() -> list[dict]:
    """(setting, value, what it sets): the frozen protocol, the bootstrap, the clock flag and the tolerance."""
    record = FROZEN.record()
    if set(record) != set(PROTOCOL_MEANING):
        raise ValueError(f"the protocol's fields changed: {sorted(record)}; describe each in PROTOCOL_MEANING")
    rows = [{"setting": name, "value": _setting_value(name, value), "what it sets": PROTOCOL_MEANING[name]}
            for name, value in record.items()]
    drop = inspect.signature(clocks_dropped).parameters["tolerance"].default
    tolerance = RMS_SOFTMAX_TOLERANCE
    rows += [
        {"setting": "bootstrap resamples", "value": tables.fmt_int(stats.BOOTSTRAP_RESAMPLES, grouping=True),
         "what it sets": "resamples of the rounds behind every interval of a median"},
        {"setting": "bootstrap seed", "value": tables.fmt_int(stats.BOOTSTRAP_SEED),
         "what it sets": "the resampling is fixed, so a recomputation gives the same interval"},
        {"setting": "interval", "value": f"{stats.CONFIDENCE * 100:.0f} %",
         "what it sets": "percentile bootstrap interval of the median"},
        {"setting": "SM clock flag", "value": f"{(1 - drop) * 100:.0f} % drop",
         "what it sets": "a run whose SM clock after timing fell by more than this is flagged"},
        {"setting": "oracle rtol", "value": power_of_ten(tolerance.rtol),
         "what it sets": "relative part of the tolerance against the float64 oracle"},
        {"setting": "oracle atol", "value": f"{power_of_ten(tolerance.atol)} × row max",
         "what it sets": "absolute part, scaled by the row's largest reference value"},
    ]
    return rows


def protocol_table():
    return tables.page_table(protocol_rows(), index="setting", formats={"value": "text"},
                             caption="The frozen protocol and the constants of its statistics, read from the code.")


def sample_rows() -> list[dict]:
    if tuple(SAMPLE_MEANING) != SAMPLE_FIELDS:
        raise ValueError(f"the sample schema changed: {SAMPLE_FIELDS}; describe each field in SAMPLE_MEANING")
    return [{"field": field, "what it holds": meaning} for field, meaning in SAMPLE_MEANING.items()]


def sample_table():
    return tables.page_table(sample_rows(), index="field",
                             caption="One sample, the same fields for every measurement.")


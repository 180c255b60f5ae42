"""Appendix, Example B: jobs of two dependent stages (A, then B reading other threads' A values) run as two
kernels, as one kernel with a block barrier between the stages, or by one persistent worker per SM taking
jobs from an atomic counter; balanced and ragged stage-A work; from the stream or replayed from a graph.
Outputs are checked exactly against the affine-composition oracle (model/jobs.py).

VariantIds: `<schedule>.<case>.<submission>`, schedule `separate` (jobs_stage_a + jobs_stage_b), `fused`
(jobs_fused) or `queue` (a memset of the counter, then jobs_queue), case `balanced` or `ragged`, submission
`stream` or `graph`; e.g. `queue.ragged.graph`. Headline keys name a variant as `<schedule>_<submission>`
with the case last: `event_us.queue_graph.ragged`.

The job count follows the device: 4 S + floor(S / 2) + 3 for S SMs (597 on 132). The variant table, made
without a device, states its bytes at DECLARED_SM_COUNT SMs; the run records the real count (`jobs`).
"""
from __future__ import annotations

import dataclasses

from launchlab.chapters.declaration import Chapter, VariantSpec
from launchlab.measure.variant import VariantId
from launchlab.chapters.example_b_jobs import model

SCHEDULES = model.SCHEDULES             # ("separate", "fused", "queue")
SUBMISSIONS = ("stream", "graph")
KERNELS = model.KERNELS
# Kernel nodes and other nodes each schedule's captured graph must hold: the queue's other node is the
# MEMSET that zeroes its counter, so the reset is part of every timed replay.
GRAPH_NODES = {"separate": (2, 0), "fused": (1, 0), "queue": (1, 1)}
STREAM_SUBMISSIONS = {"separate": 2, "fused": 1, "queue": 2}   # host submissions of one stream invocation
LABELS = {"separate": "two kernels", "fused": "fused kernel", "queue": "persistent queue"}
DECLARED_SM_COUNT = 132                 # H100 SXM and H200: 597 jobs
# Logical bytes per job: x read, mid written and read back, y written (256 uint32 values each way) and the
# job's stage-A count; the queue adds one 4-byte atomic fetch-and-add per job.
JOB_BYTES_READ = 2 * 4 * model.VALUES_PER_JOB + 4
JOB_BYTES_WRITTEN = 2 * 4 * model.VALUES_PER_JOB
QUEUE_BYTES_PER_JOB = 4


@dataclasses.dataclass(frozen=True)
class Parameters:
    cases: str = "balanced,ragged"
    fixture_seed: int = 2026


def parse_cases(text: str) -> list[str]:
    cases = [c.strip() for c in str(text).split(",") if c.strip()]
    unknown = [c for c in cases if c not in model.CASES]
    if not cases or unknown or len(set(cases)) != len(cases):
        raise ValueError(f"cases must be distinct names among {model.CASES}, not {text!r}")
    return cases


def variant(schedule: str, case: str, submission: str) -> VariantId:
    return VariantId(schedule, case, submission)


def historical_name(vid: VariantId | str) -> str:
    """`separate_stream`, `queue_graph`, ...: the variant's name in headline keys (model.VARIANTS)."""
    vid = VariantId.parse(str(vid))
    return f"{vid.target}_{vid.submission}"


def label(vid: VariantId | str) -> str:
    vid = VariantId.parse(str(vid))
    return f"{LABELS[vid.target]}, {vid.submission}"


def logical_bytes(schedule: str, jobs: int) -> tuple[int, int]:
    extra = QUEUE_BYTES_PER_JOB if schedule == "queue" else 0
    return (JOB_BYTES_READ + extra) * jobs, (JOB_BYTES_WRITTEN + extra) * jobs


def timed_variants(parameters: Parameters) -> list[VariantId]:
    return [variant(schedule, case, submission) for case in parse_cases(parameters.cases) for schedule in SCHEDULES
            for submission in SUBMISSIONS]


def variants(parameters: Parameters) -> list[VariantSpec]:
    builders = {"separate": "SeparateJobs", "fused": "FusedJobs", "queue": "QueueJobs"}
    table = []
    for vid in timed_variants(parameters):
        builder = builders[vid.target] if vid.submission == "stream" else f"GraphReplay({builders[vid.target]})"
        oracle = "jobs.oracle (uint32, exact)" + (", and the counter = jobs + workers" if vid.target == "queue" else "")
        table.append(VariantSpec(vid, builder, oracle,
                                 *logical_bytes(vid.target, model.job_count(DECLARED_SM_COUNT))))
    return table


HOST_PATH = ("CuPy RawKernel launches from CPython on one non-blocking stream (two launches, one, or a "
             "cudaMemsetAsync of the queue counter then one launch); Graph.launch of the same work captured "
             "once into a CUDA graph, on the same stream")

CHAPTER = Chapter(stem="example_b_jobs", tag="exb", title="Example B: dependent jobs", host_path=HOST_PATH,
                  parameters=Parameters, expand=variants)

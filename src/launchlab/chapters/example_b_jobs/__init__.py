"""Appendix, Example B: jobs of two dependent stages (A, then B reading other threads' A values) run as two
kernels, as one kernel with a block barrier between the stages, or by one persistent worker per SM taking
jobs from an atomic counter; on the cases of `cases` (balanced and ragged stage-A work); from the stream or
replayed from a graph. Outputs are checked exactly against the affine-composition oracle (model.py).

VariantIds: `<row>.<case>.<submission>`, row `separate` (jobs_stage_a + jobs_stage_b), `fused` (jobs_fused)
or `queue` (a memset of the counter, then jobs_queue), case `balanced` or `ragged`, submission `stream` or
`graph`; e.g. `queue.ragged.graph`. Headline keys name a variant as `<row>_<submission>` with the case last:
`event_us.queue_graph.ragged`.

What a variant enters (OUTPUTS): `timing` (validated, timed warm, tables, figures, paired ratios), `trace`
(traced once in an instrumented build and held to its schedule's rules), `timeline` (the traces drawn job by
job: the graph replays of TIMELINE_CASE, else of the last case) and `sanitizer` (compute-sanitizer's child).
Every row is compared with BASELINE within rounds (`<row>_over_fused`), and each row's stream variant with its
graph replay (`stream_over_graph`).

The job count follows the device: 4 S + floor(S / 2) + 3 for S SMs (597 on 132). The variant table, made
without a device, states its bytes at DECLARED_SM_COUNT SMs; the run records the real count (`jobs`).
"""
from __future__ import annotations

import dataclasses

from launchlab.chapters.declaration import Chapter, Names, Oracle, Row, Variant
from launchlab.chapters.example_b_jobs import model
from launchlab.measure.variant import VariantId

SUBMISSIONS = ("stream", "graph")
OUTPUTS = ("timing", "trace", "sanitizer")
BASELINE = "fused"
TIMELINE_CASE = "ragged"
DECLARED_SM_COUNT = 132                 # H100 SXM and H200: 597 jobs
# Logical bytes per job: x read, mid written and read back, y written (256 uint32 values each way) and the
# job's stage-A count; the queue adds one 4-byte atomic fetch-and-add per job.
JOB_BYTES_READ = 2 * 4 * model.VALUES_PER_JOB + 4
JOB_BYTES_WRITTEN = 2 * 4 * model.VALUES_PER_JOB
QUEUE_BYTES_PER_JOB = 4


@dataclasses.dataclass(frozen=True)
class JobRow(Row):
    """A schedule of the jobs: its kernels (in launch order) and the memsets one invocation issues before them (the
    queue zeroes its counter, so the reset is part of every timed replay)."""
    memsets: int = 0

    @property
    def graph_nodes(self) -> tuple[int, int]:
        """(kernel nodes, other nodes) its captured graph must hold."""
        return len(self.kernels), self.memsets

    @property
    def stream_submissions(self) -> int:
        """Host submissions of one stream invocation."""
        return len(self.kernels) + self.memsets


@dataclasses.dataclass(frozen=True)
class Parameters:
    cases: Names = Names.parse("balanced,ragged")
    fixture_seed: int = 2026


def job_bytes(extra_per_job: int = 0):
    """A row's logical bytes per call at the declared job count (the run's count follows its SMs)."""
    jobs = model.job_count(DECLARED_SM_COUNT)
    return lambda case: ((JOB_BYTES_READ + extra_per_job) * jobs, (JOB_BYTES_WRITTEN + extra_per_job) * jobs)


def make_separate(context, case: str):
    from launchlab.chapters.example_b_jobs.device import SeparateJobs

    return SeparateJobs(context.built, context.problem(case), context.shared_bytes)


def make_fused(context, case: str):
    from launchlab.chapters.example_b_jobs.device import FusedJobs

    return FusedJobs(context.built, context.problem(case), context.shared_bytes)


def make_queue(context, case: str):
    from launchlab.chapters.example_b_jobs.device import QueueJobs

    return QueueJobs(context.built, context.problem(case), context.shared_bytes, context.workers)


# The oracle composes the affine maps of a case's iteration table: function(x, a_iterations, b_iterations).
EXACT = Oracle("jobs.oracle (uint32, exact)", model.oracle)
COUNTED = Oracle("jobs.oracle (uint32, exact), and the counter = jobs + workers", model.oracle)
SEPARATE = JobRow("separate", "two kernels", make_separate, EXACT, SUBMISSIONS, bytes=job_bytes(),
                  outputs=frozenset(OUTPUTS), kernels=model.KERNELS["separate"])
FUSED = JobRow("fused", "fused kernel", make_fused, EXACT, SUBMISSIONS, bytes=job_bytes(), outputs=frozenset(OUTPUTS),
               kernels=model.KERNELS["fused"])
QUEUE = JobRow("queue", "persistent queue", make_queue, COUNTED, SUBMISSIONS, bytes=job_bytes(QUEUE_BYTES_PER_JOB),
               outputs=frozenset(OUTPUTS), kernels=model.KERNELS["queue"], memsets=1)
ROWS = (SEPARATE, FUSED, QUEUE)
ROW = {row.name: row for row in ROWS}
# By VariantId target, from the rows: what each row launches, what its graph holds, what the host submits.
KERNELS = {row.name: row.kernels for row in ROWS}
GRAPH_NODES = {row.name: row.graph_nodes for row in ROWS}
STREAM_SUBMISSIONS = {row.name: row.stream_submissions for row in ROWS}


def timeline_case(cases) -> str:
    return TIMELINE_CASE if TIMELINE_CASE in cases else cases[-1]


def expand(parameters: Parameters) -> list[Variant]:
    """Every row on every case, from the stream and replayed from its graph; the timeline case's graph replays
    are also drawn."""
    unknown = [case for case in parameters.cases if case not in model.CASES]
    if unknown or not parameters.cases:
        raise ValueError(f"cases must be among {', '.join(model.CASES)}, not {parameters.cases.text()!r}")
    drawn = timeline_case(parameters.cases)
    return [Variant(VariantId(row.name, case, submission), row,
                    outputs=row.outputs | ({"timeline"} if (case, submission) == (drawn, "graph") else set()))
            for case in parameters.cases for row in ROWS for submission in row.submissions]


def historical_name(vid: VariantId | str) -> str:
    """`separate_stream`, `queue_graph`, ...: the variant's name in headline keys."""
    vid = VariantId.parse(str(vid))
    return f"{vid.target}_{vid.submission}"


def label(vid: VariantId | str) -> str:
    vid = VariantId.parse(str(vid))
    return f"{ROW[vid.target].label}, {vid.submission}"


HOST_PATH = ("CuPy RawKernel launches from CPython on one non-blocking stream (two launches, one, or a "
             "cudaMemsetAsync of the queue counter then one launch); Graph.launch of the same work captured "
             "once into a CUDA graph, on the same stream")

CHAPTER = Chapter(stem="example_b_jobs", tag="exb", title="Example B: dependent jobs", host_path=HOST_PATH,
                  parameters=Parameters, expand=expand)

"""The book's own claims (B01, ...) and our measurements beside audited C-claims, from accepted runs.

Each claim is declared once here: its statement, the chapter whose accepted run supports it,
the run files it rests on, the measured value (read from the run, never typed) and a test
that the run really supports it. `refresh_registry` rewrites evidence/claims/claims.yaml:
the C-claims keep their audited text and gain `measured`/`evidence` where a run measures
what they state; the B-claims are regenerated with the SHA-256 of each file as its run's
manifest sealed it. A claim its run no longer supports stops the refresh with its id.
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import yaml

from launchlab.claims import registry
from launchlab.store import evidence


@dataclasses.dataclass(frozen=True)
class RunView:
    """What a claim may read from a chapter's accepted run."""
    path: Path
    record: dict
    summaries: dict
    headline: dict

    @property
    def device(self) -> str:
        return self.record["device"]["name"]


@dataclasses.dataclass(frozen=True)
class Measured:
    value: Callable[[RunView], float]
    unit: str


@dataclasses.dataclass(frozen=True)
class BookClaim:
    id: str
    chapter: str
    section: str
    statement: str
    files: tuple[str, ...]
    holds: Callable[[RunView], bool]
    finding: str
    measured: Measured | None = None


@dataclasses.dataclass(frozen=True)
class AuditMeasurement:
    """Our value for a quantity an audited C-claim states."""
    id: str
    chapter: str
    files: tuple[str, ...]
    measured: Measured


def _summary(view: RunView, *keys):
    value = view.summaries
    for key in keys:
        value = value[key]
    return value


def _gaps_us(view: RunView, shape: str) -> float:
    kernels = view.summaries["timelines"][shape]["kernels"]
    return sum(k["gap_before_ns"] for k in kernels[1:]) / 1e3


BOOK_CLAIMS = (
    BookClaim("B01", "ordinary_launches", "Ordinary launches",
              "On this host a CuPy launch of an empty kernel costs the host more time than a native C++ launch of it.",
              ("headline.json", "samples/launch_cost.jsonl"),
              lambda v: v.headline["launch_us.cupy.empty"] > v.headline["launch_us.native.empty"],
              "Host enqueue time per launch, median of 21 rounds of 128 launches, CuPy RawKernel against "
              "cuLaunchKernel called from C++ on the same kernel and stream.",
              Measured(lambda v: v.headline["launch_us.cupy.empty"], "us per launch (CuPy, host enqueue)")),
    BookClaim("B02", "ordinary_launches", "Ordinary launches",
              "The four row-path kernels use no local memory.",
              ("builds/row_softmax/record.json", "builds/row_softmax/ptxas.log"),
              lambda v: all(r["local_bytes"] == 0 for r in json.loads(
                  (v.path / "builds/row_softmax/record.json").read_text())["resources_loaded"].values()),
              "Local bytes reported by the loaded binaries (CuPy kernel attributes), with ptxas's report of the "
              "same source and options."),
    BookClaim("B03", "ordinary_launches", "Ordinary launches",
              "In a traced invocation of the 128x8192 row path the GPU sits idle between the four kernels.",
              ("traces/128x8192.npz", "summaries.json"),
              lambda v: _gaps_us(v, "128x8192") > 0,
              "Sum of the three gaps between the last block end of one kernel and the first block start of the "
              "next (%globaltimer), from a separate instrumented build.",
              Measured(lambda v: _gaps_us(v, "128x8192"), "us of gaps in one traced invocation")),
    BookClaim("B04", "graphs", "CUDA Graphs",
              "Graph replay keeps the four kernel nodes of the row path.",
              ("graphs/row4.128x8192.dot", "graphs/nodes.json"),
              lambda v: v.headline["kernel_nodes.row4"] == 4,
              "Kernel nodes read from the DOT text CUDA printed for the captured graph, one per stream launch.",
              Measured(lambda v: v.headline["kernel_nodes.row4"], "kernel nodes")),
    BookClaim("B05", "graphs", "CUDA Graphs",
              "Graph replay keeps the three kernel nodes of the tiled path.",
              ("graphs/tiled3.balanced.dot", "graphs/tiled3.ragged.dot", "graphs/nodes.json"),
              lambda v: v.headline["kernel_nodes.tiled3"] == 3,
              "Kernel nodes read from the DOT text of both tiled graphs.",
              Measured(lambda v: v.headline["kernel_nodes.tiled3"], "kernel nodes")),
    BookClaim("B06", "graphs", "CUDA Graphs",
              "Replaying the 128x8192 row path as a graph takes less time per invocation than launching its four "
              "kernels from Python.",
              ("samples/timing.jsonl", "summaries.json"),
              lambda v: _summary(v, "stream_over_graph", "row4.128x8192", "event_us", "ci_low") > 1,
              "Median within-round ratio of event intervals per invocation, stream over graph; its 95% bootstrap "
              "interval lies above 1.",
              Measured(lambda v: v.headline["stream_over_graph.row4.128x8192"], "stream time / graph time")),
    BookClaim("B07", "graphs", "CUDA Graphs",
              "A replayed node of an empty kernel costs the GPU less time than launching that kernel from Python.",
              ("samples/timing.jsonl", "summaries.json"),
              lambda v: v.headline["graph_node_us.empty"] < _summary(v, "per_node", "stream.empty.1024", "event_us"),
              "Event interval per node of a 1024-node graph of empty kernels against event interval per launch of "
              "1024 Python launches.",
              Measured(lambda v: v.headline["graph_node_us.empty"], "us per node (event interval)")),
    BookClaim("B08", "fusion", "Fusion",
              "At 4096x4096 the fused RMS-scaled softmax takes at most 1.15 times as long as a device copy of the "
              "same bytes, with a warm L2.",
              ("headline.json", "samples/warm.jsonl"),
              lambda v: v.headline["fused_rms_over_copy.4096x4096.warm"] <= 1.15,
              "Median within-round ratio of event intervals, fused kernel over cudaMemcpyAsync of the matrix, "
              "measured in the same run.",
              Measured(lambda v: v.headline["fused_rms_over_copy.4096x4096.warm"], "fused time / copy time")),
    BookClaim("B09", "fusion", "Fusion",
              "The fused kernels use no local memory.",
              tuple(f"builds/{label}/record.json" for label in (
                  "fused_softmax_b1024_r4_u8_m1", "fused_softmax_b256_r4_u4_m5", "fused_softmax_b32_r4_u4_m32",
                  "fused_softmax_b32_r8_u4_m32", "fused_softmax_b512_r4_u8_m2")),
              lambda v: all(r["local_bytes"] == 0 for build in (v.path / "builds").glob("fused_softmax_*")
                            for r in json.loads((build / "record.json").read_text())["resources_loaded"].values()),
              "Local bytes of every compiled configuration of the fused kernel, as the loaded binaries report them."),
    BookClaim("B10", "fusion", "Fusion",
              "At 4096x4096 the fused kernel is faster than the four-kernel row path.",
              ("headline.json", "samples/warm.jsonl"),
              lambda v: v.headline["row4_over_fused_rms.4096x4096"] > 1,
              "Median within-round ratio of event intervals, row path over fused kernel, both launched from a stream.",
              Measured(lambda v: v.headline["row4_over_fused_rms.4096x4096"], "row-path time / fused time")),
    BookClaim("B11", "fusion", "Fusion",
              "At 4096x128 with a warm L2, cuDNN's softmax is not slower than the fused plain softmax.",
              ("headline.json", "samples/warm.jsonl"),
              lambda v: v.headline["cudnn_over_fused_plain.4096x128"] <= 1,
              "A loss of the fused kernel, kept: median within-round ratio of event intervals, cuDNN over fused.",
              Measured(lambda v: v.headline["cudnn_over_fused_plain.4096x128"], "cuDNN time / fused time")),
    BookClaim("B12", "megakernels", "Megakernels",
              "On this tiled softmax neither persistent kernel is faster than the three kernels replayed as a graph.",
              ("headline.json", "samples/timing.jsonl"),
              lambda v: all(v.headline[f"{variant}_over_graph3.{case}"] < 1
                            for variant in ("coop_stream", "coop_graph", "queue_stream", "queue_graph")
                            for case in ("balanced", "ragged")),
              "Median within-round ratios of event intervals, three-kernel graph over each persistent variant, "
              "on the balanced and the ragged case: all below 1.",
              Measured(lambda v: v.headline["queue_graph_over_graph3.ragged"],
                       "three-kernel graph time / queue graph time, ragged")),
    BookClaim("B13", "megakernels", "Megakernels",
              "The task-queue graph holds one memset node, its counter reset, beside its one kernel node.",
              ("graphs/queue_graph.balanced.dot", "graphs/queue_graph.ragged.dot", "graphs/nodes.json"),
              lambda v: all(v.summaries["nodes"][f"queue_graph.{case}"]["counts"] == {"kernel": 1, "other": 1}
                            for case in ("balanced", "ragged")),
              "Node records read from the DOT text CUDA printed for the captured queue graphs."),
    BookClaim("B14", "megakernels", "Megakernels",
              "In every traced variant each B task starts after all A tiles of its row and each C task after its "
              "row's B.",
              ("traces/checks.json",),
              lambda v: all(t["checks"]["b_after_its_row_a"] and t["checks"]["c_after_its_row_b"]
                            and t["checks"]["every_task_once"] for t in v.summaries["traces"].values()),
              "Trace checks over every task record (%globaltimer, task id, worker, %smid) of the instrumented runs."),
)

AUDIT_MEASUREMENTS = (
    AuditMeasurement("C12", "graphs", ("summaries.json", "samples/timing.jsonl"),
                     Measured(lambda v: v.headline["graph_node_us.empty"],
                              "us of device time per empty-kernel node in graph replay")),
    AuditMeasurement("C13", "graphs", ("summaries.json",),
                     Measured(lambda v: 100 * (1 - v.headline["graph_node_us.empty"]
                                               / _summary(v, "per_node", "native.empty.1024", "event_us")),
                              "% less device time per empty kernel: graph node against native stream launch")),
    AuditMeasurement("C24", "ordinary_launches", ("headline.json", "samples/launch_cost.jsonl"),
                     Measured(lambda v: v.headline["launch_us.native.empty"],
                              "us of host time per native launch of an empty kernel")),
    AuditMeasurement("C26", "ordinary_launches", ("run.json",),
                     Measured(lambda v: _idle_in_last_wave(512, v.record["device"]["sm_count"]),
                              "SMs idle in the last wave of 512 one-per-SM blocks on this GPU")),
    AuditMeasurement("C30", "ordinary_launches", ("headline.json",),
                     Measured(lambda v: 100 * v.headline["launch_us.cupy.empty"],
                              "us of host time for 100 CuPy launches of an empty kernel")),
    AuditMeasurement("C61", "fusion", ("summaries.json", "samples/warm.jsonl"),
                     Measured(lambda v: v.summaries["ratios"]["fused_rms_stream_over_graph"]["4096x4096"]["warm"]["median"],
                              "stream time / graph time of the one-kernel fused path at 4096x4096 (warm L2)")),
    AuditMeasurement("C35", "graphs", ("graphs/nodes.json",),
                     Measured(lambda v: v.headline["kernel_nodes.row4"] - 1,
                              "boundaries removed by fusing the row path's kernel nodes into one")),
)


def _idle_in_last_wave(blocks: int, sms: int) -> int:
    last = blocks % sms
    return 0 if last == 0 else sms - last


def run_view(chapter: str, root: Path = evidence.EVIDENCE_ROOT) -> RunView:
    path = evidence.accepted_run(chapter, root)
    read = lambda name: json.loads((path / name).read_text())  # noqa: E731
    return RunView(path, read("run.json"), read("summaries.json"), read("headline.json"))


def _evidence(view: RunView, files) -> list[dict]:
    manifest = json.loads((view.path / evidence.MANIFEST).read_text())["files"]
    repo = evidence.REPO_ROOT
    return [{"path": (view.path / name).relative_to(repo).as_posix(), "sha256": manifest[name]["sha256"]}
            for name in files]


def _measured(view: RunView, measured: Measured) -> dict:
    return {"value": round(float(measured.value(view)), 4), "unit": measured.unit, "device": view.device,
            "run_id": view.path.name}


def generated_records(records: list[dict], root: Path = evidence.EVIDENCE_ROOT) -> list[dict]:
    """The registry with B-claims and C-claim measurements regenerated from the accepted runs."""
    accepted = evidence.read_accepted(root)
    views = {chapter: run_view(chapter, root) for chapter in accepted}
    audit = {m.id: m for m in AUDIT_MEASUREMENTS if m.chapter in views}
    result = []
    for record in records:
        if record["id"].startswith("B"):
            continue
        record = {**record, "evidence": [], "measured": None}
        if record["id"] in audit:
            spec = audit[record["id"]]
            record["evidence"] = _evidence(views[spec.chapter], spec.files)
            record["measured"] = _measured(views[spec.chapter], spec.measured)
        result.append(record)
    for claim in BOOK_CLAIMS:
        if claim.chapter not in views:
            continue
        view = views[claim.chapter]
        if not claim.holds(view):
            raise ValueError(f"{claim.id}: run {view.path.name} no longer supports: {claim.statement}")
        result.append({"id": claim.id, "section": claim.section, "excerpt": claim.statement, "verdict": "retain",
                       "finding": claim.finding, "sources": [], "evidence": _evidence(view, claim.files),
                       "measured": _measured(view, claim.measured) if claim.measured else None})
    return result


HEADER = """# Claim-audit registry (SPEC section 6); read and validated by src/launchlab/claims.py.
# C01-C71: the claims of the audited X article. `section` and `excerpt` quote the article as the audit recorded
# it; `finding` is this book's own wording; `sources` are keys of sources.yaml.
# B01, B02, ...: the book's own claims, and `measured`/`evidence` of C-claims, are generated from the accepted
# runs by `python -m launchlab claims` (src/launchlab/book_claims.py); do not edit them by hand.
"""


def refresh_registry(repo_root: Path = evidence.REPO_ROOT) -> Path:
    """Rewrite claims.yaml and the chapter's downloads from the accepted runs."""
    path = Path(repo_root) / registry.CLAIMS_FILE
    records = yaml.safe_load(path.read_text(encoding="utf-8"))
    fresh = generated_records(records, Path(repo_root) / "evidence")
    sources = registry.load_sources(repo_root)
    claims = registry.validate_claims(fresh, sources)
    path.write_text(HEADER + yaml.safe_dump([_yaml_record(c) for c in claims], sort_keys=False, allow_unicode=True,
                                            width=118), encoding="utf-8")
    registry.write_downloads(claims, sources, repo_root)
    return path


def _yaml_record(claim: dict) -> dict:
    record = {key: claim[key] for key in ("id", "section", "excerpt", "verdict", "finding", "sources", "evidence")}
    if claim["measured"] is not None:
        record["measured"] = claim["measured"]
    return record

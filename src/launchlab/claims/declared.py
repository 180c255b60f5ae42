"""Every tie between a claim and an accepted run: the book's own claims, and our values beside C- and R-claims.

Adding a book claim is one `BookClaim(...)` in BOOK_CLAIMS (a ratio claim names its ratio records; the refresh
checks their whole intervals); adding a comparison is one `Beside(...)` in BESIDE. `python -m launchlab claims`
then regenerates evidence/claims/claims.yaml. Headline keys and summaries paths are those of the accepted runs;
an R-comparison naming keys that no accepted run has yet stays pending until one does.
"""
from __future__ import annotations

import json

from launchlab.claims.spec import (ARITHMETIC, COLD_RATIO, DEVICE_QUERY, EVENT_BATCH, EVENT_RATIO, GRAPH_DOT,
                                   HOST_ENQUEUE, ORACLE, TRACE, WARM_AND_COLD_RATIO, Beside,
                                   BookClaim, Ratio, Value)

FUSED_BUILDS = ("fused_softmax_b1024_r4_u8_m1", "fused_softmax_b256_r4_u4_m5", "fused_softmax_b32_r4_u4_m32",
                "fused_softmax_b32_r8_u4_m32", "fused_softmax_b512_r4_u8_m2")
PERSISTENT = ("coop_stream", "coop_graph", "queue_stream", "queue_graph")
TILED_CASES = ("balanced", "ragged")


def _no_local_memory(view, builds) -> bool:
    records = (json.loads((view.path / f"builds/{build}/record.json").read_text()) for build in builds)
    return all(kernel["local_bytes"] == 0 for record in records for kernel in record["resources_loaded"].values())


def _host_paced(view, variant: str) -> bool:
    """A batch whose host enqueue takes at least 90% of its event interval: the host, not the GPU, sets the pace."""
    record = view.summaries["per_node"][variant]
    return record["batch_enqueue_us"] >= 0.9 * record["event_us"]


def _device_paced_cold(view, variants) -> bool:
    return all(view.summaries["cold"][variant]["host_enqueue_exceeded_wait"] == 0 for variant in variants)


def _range_over_shapes(view, ratio: str) -> dict:
    """Lowest and highest median of a per-shape ratio, warm and cold, over every shape of the run."""
    by_shape = view.summaries["ratios"][ratio]
    result = {}
    for l2 in ("warm", "cold"):
        medians = [records[l2]["median"] for records in by_shape.values()]
        result[f"{l2}, lowest"], result[f"{l2}, highest"] = min(medians), max(medians)
    return result


def idle_in_last_wave(blocks: int, sms: int) -> int:
    """SMs without a block in the last wave when `blocks` blocks run one per SM on `sms` SMs."""
    last = blocks % sms
    return 0 if last == 0 else sms - last


def _ragged_iterations(jobs: int) -> dict:
    """Stage-A iterations summed over the jobs (protocol of Example B): every eighth job, index 0 included,
    takes 8,192 iterations and the rest 256; the balanced control gives every job 1,024."""
    long_jobs = (jobs + 7) // 8
    return {"balanced": 1024 * jobs, "ragged": 8192 * long_jobs + 256 * (jobs - long_jobs)}


ROW4_STREAM_OVER_GRAPH = Ratio(("stream_over_graph", "row4.128x8192", "event_us"), "above")
EMPTY_STREAM_OVER_GRAPH = Ratio(("stream_over_graph", "empty.1024", "event_us"), "above")
FUSED_OVER_COPY = Ratio(("ratios", "fused_rms_over_copy", "4096x4096", "warm"), "below", 1.15)
ROW4_OVER_FUSED = tuple(Ratio(("ratios", "row4_over_fused_rms", "4096x4096", l2), "above") for l2 in ("warm", "cold"))
CUDNN_OVER_FUSED_COLD = Ratio(("ratios", "cudnn_over_fused_plain", "4096x128", "cold"), "below")
GRAPH3_OVER_PERSISTENT = {(variant, case): Ratio(("over_graph3", f"{variant}.{case}"), "below")
                          for variant in PERSISTENT for case in TILED_CASES}

BOOK_CLAIMS = (
    BookClaim("B01", "ordinary_launches", "Ordinary launches",
              "On this host a CuPy launch of an empty kernel costs the host more time than a native C++ launch of it.",
              "Host enqueue time per launch, median of 21 rounds, CuPy RawKernel against cuLaunchKernel called from "
              "C++ on the same kernel and stream; a host cost, not a GPU one.",
              ("headline.json", "samples/timing.jsonl.gz"),
              holds=lambda v: (v.headline["enqueue_us_per_launch.empty.1x1.stream"]
                               > v.headline["enqueue_us_per_launch.empty.1x1.native"]),
              value=Value("µs of host enqueue per CuPy launch", HOST_ENQUEUE,
                          keys=("enqueue_us_per_launch.empty.1x1.stream",))),
    BookClaim("B02", "ordinary_launches", "Ordinary launches",
              "The four row-path kernels use no local memory.",
              "Local bytes reported by the loaded binaries (CuPy kernel attributes), with ptxas's report of the "
              "same source and options.",
              ("builds/row_softmax/record.json", "builds/row_softmax/ptxas.log"),
              holds=lambda v: _no_local_memory(v, ("row_softmax",))),
    BookClaim("B03", "ordinary_launches", "Ordinary launches",
              "In a traced invocation of the 128x8192 row path the GPU sits idle between the four kernels.",
              "Sum of the three gaps between the last block end of one kernel and the first block start of the "
              "next (%globaltimer), from a separate instrumented build.",
              ("traces/128x8192.npz", "summaries.json"),
              holds=lambda v: v.headline["trace_gaps_us.128x8192"] > 0,
              value=Value("µs of gaps in one traced invocation", TRACE, keys=("trace_gaps_us.128x8192",))),
    BookClaim("B04", "graphs", "CUDA Graphs",
              "Graph replay keeps the four kernel nodes of the row path.",
              "Kernel nodes read from the DOT text CUDA printed for the captured graph, one per stream launch.",
              ("graphs/row4.128x8192.dot", "graphs/nodes.json"),
              holds=lambda v: v.headline["kernel_nodes.row4"] == 4,
              value=Value("kernel nodes", GRAPH_DOT, keys=("kernel_nodes.row4",))),
    BookClaim("B05", "graphs", "CUDA Graphs",
              "Graph replay keeps the three kernel nodes of the tiled path.",
              "Kernel nodes read from the DOT text of both tiled graphs.",
              ("graphs/tiled3.balanced.dot", "graphs/tiled3.ragged.dot", "graphs/nodes.json"),
              holds=lambda v: v.headline["kernel_nodes.tiled3"] == 3,
              value=Value("kernel nodes", GRAPH_DOT, keys=("kernel_nodes.tiled3",))),
    BookClaim("B06", "graphs", "CUDA Graphs",
              "Replaying the 128x8192 row path as a graph takes less time per invocation than launching its four "
              "kernels from Python.",
              "Median within-round ratio of event intervals per invocation, stream over graph; its 95% bootstrap "
              "interval lies above 1.",
              ("samples/timing.jsonl", "summaries.json"),
              ratios=(ROW4_STREAM_OVER_GRAPH,),
              value=Value("stream time / graph time", EVENT_RATIO, ratio=ROW4_STREAM_OVER_GRAPH)),
    BookClaim("B07", "graphs", "CUDA Graphs",
              "Per empty kernel, replaying a 1024-node graph takes less time between CUDA events than launching "
              "the same 1024 kernels one by one from Python.",
              "Median within-round ratio of event intervals, Python launches over graph replay, with its 95% "
              "bootstrap interval above 1. The Python launches are paced by the host (their enqueue fills their "
              "event interval), so the ratio says how much faster a graph submits empty kernels, not what either "
              "path costs the GPU.",
              ("samples/timing.jsonl", "summaries.json"),
              ratios=(EMPTY_STREAM_OVER_GRAPH,),
              holds=lambda v: _host_paced(v, "stream.empty.1024"),
              value=Value("stream time / graph time, 1024 empty kernels", EVENT_RATIO, ratio=EMPTY_STREAM_OVER_GRAPH)),
    BookClaim("B08", "fusion", "Fusion",
              "At 4096x4096 the fused RMS-scaled softmax takes at most 1.15 times as long as a device copy of the "
              "same bytes, with a warm L2.",
              "Median within-round ratio of event intervals, fused kernel over cudaMemcpyAsync of the matrix, "
              "measured in the same run; its 95% bootstrap interval lies below 1.15.",
              ("headline.json", "samples/warm.jsonl", "summaries.json"),
              ratios=(FUSED_OVER_COPY,),
              value=Value("fused time / copy time", EVENT_RATIO, ratio=FUSED_OVER_COPY)),
    BookClaim("B09", "fusion", "Fusion",
              "The fused kernels use no local memory.",
              "Local bytes of every compiled configuration of the fused kernel, as the loaded binaries report them.",
              tuple(f"builds/{build}/record.json" for build in FUSED_BUILDS),
              holds=lambda v: _no_local_memory(v, FUSED_BUILDS)),
    BookClaim("B10", "fusion", "Fusion",
              "At 4096x4096 the fused kernel is faster than the four-kernel row path, with a warm and with a cold L2.",
              "Median within-round ratios, row path over fused kernel, both launched from a stream: event intervals "
              "of batches (warm) and single device-paced invocations after an L2 flush (cold); both 95% bootstrap "
              "intervals lie above 1.",
              ("headline.json", "samples/warm.jsonl", "samples/cold.jsonl", "summaries.json"),
              ratios=ROW4_OVER_FUSED,
              value=Value("row-path time / fused time, warm L2", EVENT_RATIO, ratio=ROW4_OVER_FUSED[0])),
    BookClaim("B11", "fusion", "Fusion",
              "At 4096x128 with a cold L2, cuDNN's softmax takes less time than the fused plain softmax.",
              "A loss of the fused kernel, kept. Median within-round ratio, cuDNN over fused, of single invocations "
              "after an L2 flush, each queued behind a GPU wait kernel so that the GPU and not the host sets the "
              "pace; its 95% bootstrap interval lies below 1.",
              ("headline.json", "samples/cold.jsonl", "summaries.json"),
              ratios=(CUDNN_OVER_FUSED_COLD,),
              holds=lambda v: _device_paced_cold(v, ("cudnn.stream.4096x128", "fused_plain.stream.4096x128")),
              value=Value("cuDNN time / fused time, cold L2", COLD_RATIO, ratio=CUDNN_OVER_FUSED_COLD)),
    BookClaim("B12", "megakernels", "Megakernels",
              "On this tiled softmax neither persistent kernel is faster than the three kernels replayed as a graph.",
              "Median within-round ratios of event intervals, three-kernel graph over each persistent variant "
              "(cooperative and queue, stream and graph), on the balanced and the ragged case: every 95% bootstrap "
              "interval lies below 1.",
              ("headline.json", "samples/timing.jsonl", "summaries.json"),
              ratios=tuple(GRAPH3_OVER_PERSISTENT.values()),
              value=Value("three-kernel graph time / queue-graph time, ragged", EVENT_RATIO,
                          ratio=GRAPH3_OVER_PERSISTENT["queue_graph", "ragged"])),
    BookClaim("B13", "megakernels", "Megakernels",
              "The task-queue graph holds one memset node, its counter reset, beside its one kernel node.",
              "Node records read from the DOT text CUDA printed for the captured queue graphs.",
              ("graphs/queue_graph.balanced.dot", "graphs/queue_graph.ragged.dot", "graphs/nodes.json"),
              holds=lambda v: all(v.summaries["nodes"][f"queue_graph.{case}"]["counts"] == {"kernel": 1, "other": 1}
                                  for case in TILED_CASES)),
    BookClaim("B14", "megakernels", "Megakernels",
              "In every traced variant each B task starts after all A tiles of its row and each C task after its "
              "row's B.",
              "Trace checks over every task record (%globaltimer, task id, worker, %smid) of the instrumented runs.",
              ("traces/checks.json",),
              holds=lambda v: all(t["checks"]["b_after_its_row_a"] and t["checks"]["c_after_its_row_b"]
                                  and t["checks"]["every_task_once"] for t in v.summaries["traces"].values())),
)

GRAPH_NODE = "graph_node_us.empty"
AUDIT_VALUES = (
    Beside("C12", "graphs", Value(
        "µs per empty-kernel node in graph replay", EVENT_BATCH, keys=(GRAPH_NODE,),
        note="Event interval of a replayed 1024-node graph of empty kernels per node; the replay enqueues in a "
             "small fraction of that time, so the GPU sets the pace, as for the article's graph figure."),
        ("headline.json", "summaries.json", "samples/timing.jsonl")),
    Beside("C13", "graphs", Value(
        "% less event interval per empty kernel, graph node against native stream launch", EVENT_BATCH,
        keys=(GRAPH_NODE,), basis="related",
        formula=lambda v, r: 100 * (1 - r[GRAPH_NODE] / v.summaries["per_node"]["native.empty.1024"]["event_us"]),
        note="The native stream side is paced by host enqueue, so this sets host submission against GPU time, "
             "not one device overhead against another as the article's 38% does."),
        ("headline.json", "summaries.json")),
    Beside("C24", "ordinary_launches", Value(
        "µs of host enqueue per native launch of an empty kernel", HOST_ENQUEUE,
        keys=("enqueue_us_per_launch.empty.1x1.native",), basis="related",
        note="Host time to submit one launch; the claim's range is scheduling overhead on the device, which this "
             "figure neither contains nor isolates."),
        ("headline.json", "samples/timing.jsonl.gz")),
    Beside("C26", "ordinary_launches", Value(
        "SMs idle in the last wave of 512 one-per-SM blocks, at this GPU's SM count", ARITHMETIC, basis="computed",
        formula=lambda v, r: idle_in_last_wave(512, v.record.device["sm_count"]),
        note="The claim's own arithmetic applied to the SM count our run recorded, under the same one-block-per-SM "
             "wave model; no kernel ran for it."),
        ("run.json",)),
    Beside("C30", "graphs", Value(
        "µs for 100 empty kernels in graph replay (100 × our per-node interval)", ARITHMETIC, keys=(GRAPH_NODE,),
        basis="computed", formula=lambda v, r: 100 * r[GRAPH_NODE],
        note="The article's formula, 100 kernels times a per-kernel figure, applied to our device-paced "
             "graph-replay figure (the counterpart of its 1.3 µs); an extrapolation, not a measured forward pass."),
        ("headline.json", "summaries.json")),
    Beside("C35", "graphs", Value(
        "boundaries removed if the row path's kernel nodes became one kernel (K − 1)", ARITHMETIC,
        keys=("kernel_nodes.row4",), basis="computed", formula=lambda v, r: r["kernel_nodes.row4"] - 1,
        note="The claim's K − 1 rule applied to the kernel nodes of our four-kernel row path; it counts our path's "
             "boundaries, not those of a Llama-1B forward pass."),
        ("headline.json", "graphs/nodes.json")),
    Beside("C61", "fusion", Value(
        "stream time / graph time of the one-kernel fused path, median per shape, over six shapes",
        WARM_AND_COLD_RATIO, formula=lambda v, r: _range_over_shapes(v, "fused_rms_stream_over_graph"),
        note="Warm ratios time batches of back-to-back launches, which the host paces at the smallest shapes; cold "
             "ratios time single invocations, which the GPU paces."),
        ("summaries.json", "samples/warm.jsonl", "samples/cold.jsonl")),
)

RECHECK_VALUES = (
    Beside("R01", "graphs", Value("kernel nodes in the captured row-path graph", GRAPH_DOT,
                                  keys=("kernel_nodes.row4",)), ("headline.json", "graphs/row4.128x8192.dot")),
    Beside("R03", "fusion", Value(
        "µs per cuDNN softmax in graph replay (event interval)", EVENT_BATCH,
        keys=("event_us.cudnn_graph.4096x4096", "event_us.cudnn_graph.4096x128"))),
    Beside("R14", "graphs", Value("kernel nodes in the captured graphs (row path, tiled path)", GRAPH_DOT,
                                  keys=("kernel_nodes.row4", "kernel_nodes.tiled3")),
           ("headline.json", "graphs/row4.128x8192.dot", "graphs/tiled3.ragged.dot")),
    Beside("R17", "fusion", Value(
        "cuDNN time / fused time, median per shape, over six shapes", WARM_AND_COLD_RATIO,
        formula=lambda v, r: _range_over_shapes(v, "cudnn_over_fused_plain"),
        note="Warm ratios time batches of back-to-back launches, which the host paces at the smallest shapes; cold "
             "ratios time single invocations, which the GPU paces."),
        ("summaries.json", "samples/warm.jsonl", "samples/cold.jsonl")),
    Beside("R20", "megakernels", Value(
        "B tasks of 128 starting before the last A task ends, cooperative kernel, ragged case (stream, graph)",
        TRACE, keys=("b_before_last_a.coop_stream.ragged", "b_before_last_a.coop_graph.ragged")),
        ("headline.json", "traces/checks.json")),
    Beside("R21", "megakernels", Value(
        "B tasks of 128 starting before the last A task ends, queue graph, ragged case", TRACE,
        keys=("b_before_last_a.queue_graph.ragged",),
        note="Counted in our queue graph's trace at the worker count of our run, which need not be the article's; "
             "the count depends on how many workers are free as A tasks finish."),
        ("headline.json", "traces/checks.json")),
    Beside("R27", "ordinary_launches", None, ("run.json",)),
    Beside("R37", "example_a_pointwise", Value(
        "exact output comparisons passed (Example A)", ORACLE, keys=("exact_checks",), basis="related",
        note="A count of exact comparisons with the CPU oracle that our run passed, where the article states that "
             "all of its stored outputs matched.")),
    Beside("R38", "example_a_pointwise", Value("kernel nodes in the captured graphs (three kernels, fused)", GRAPH_DOT,
                                               keys=("kernel_nodes.three", "kernel_nodes.fused"))),
    Beside("R40", "ordinary_launches", Value(
        "device properties (SMs, L2 MiB)", DEVICE_QUERY,
        formula=lambda v, r: {"SMs": v.record.device["sm_count"], "L2 MiB": v.record.device["l2_bytes"] / 2**20}),
        ("run.json",)),
    Beside("R44", "example_b_jobs", Value("jobs (4S + floor(S/2) + 3 at our SM count S)", ARITHMETIC, keys=("jobs",),
                                          basis="computed", note="The protocol's job-count rule evaluated at our "
                                          "GPU's SM count, as our run recorded it.")),
    Beside("R46", "example_b_jobs", Value("active blocks per SM reported by the occupancy API", DEVICE_QUERY,
                                          keys=("active_ctas_per_sm",))),
    Beside("R47", "example_b_jobs", Value(
        "jobs whose B stage starts before the last A ends, ragged case (separate graph, fused graph)", TRACE,
        keys=("early_b.separate_graph.ragged", "early_b.fused_graph.ragged"))),
    Beside("R48", "example_b_jobs", Value(
        "µs per invocation, ragged case (separate, fused, queue; stream)", EVENT_BATCH,
        keys=("event_us.separate_stream.ragged", "event_us.fused_stream.ragged", "event_us.queue_stream.ragged"),
        basis="related",
        note="CUDA-event intervals of our stream variants, not host completion medians like the article's, whose "
             "submission mode the recheck does not record.")),
    Beside("R49", "example_b_jobs", Value(
        "stage-A iterations summed over all jobs, before multiplying by 256 lanes", ARITHMETIC, keys=("jobs",),
        basis="computed", formula=lambda v, r: _ragged_iterations(r["jobs"]),
        note="The protocol's iteration rule applied to our run's job count; at 597 jobs it gives the article's "
             "totals.")),
    Beside("R50", "example_b_jobs", Value(
        "checks our Example B run passed (exact comparisons, trace checks)", ORACLE,
        keys=("exact_checks", "trace_checks"), basis="related",
        note="Our protocol sets its own numbers of fixtures and variants, so these counts need not equal the "
             "article's; they are the checks our run passed.")),
    Beside("R51", "ordinary_launches", None, ("validation.json",)),
)

BESIDE = AUDIT_VALUES + RECHECK_VALUES

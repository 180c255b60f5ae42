"""What the claim declarations read from runs: the tests of book claims' guards, the readings beside C- and
R-claims, and the interval records that book claims' bounds are set on beyond their ratios."""
from __future__ import annotations

import json

from launchlab.claims.spec import Edge

CASES = ("balanced", "ragged")                    # the tiled cases of chapters 2 and 4, the job cases of Example B
PERSISTENT = ("coop", "queue")                    # chapter 4's persistent kernels (VariantId targets)
SUBMISSIONS = ("stream", "graph")
EXAMPLE_A_SIZES = (256, 32768, 1048576, 16777216)  # Example A's element counts N (its Parameters.sizes)
EXAMPLE_A_PROFILED = 16777216                     # the N at which Nsight Compute read DRAM bytes
JOB_SCHEDULES = ("separate", "fused", "queue")    # Example B's schedules
MAIN_TRACES = tuple(f"{design}.{case}.{submission}" for design in ("tiled3", *PERSISTENT) for case in CASES
                    for submission in SUBMISSIONS)
SWEEP_TRACES = {per_sm: f"queue_wps{per_sm}.ragged.graph" for per_sm in (1, 8)}  # trace VariantIds
SWEEP_KEYS = {per_sm: f"queue_graph.ragged.wps{per_sm}" for per_sm in (1, 8)}      # their headline key forms
FUSION_FILES = ("headline.json", "samples/timing.jsonl.gz", "summaries.json")


# --- tests on runs -------------------------------------------------------------------------------------------------

def no_local_memory(view, builds) -> bool:
    records = (json.loads(view.file(f"builds/{build}/record.json").read_text()) for build in builds)
    return all(kernel["local_bytes"] == 0 for record in records for kernel in record["resources_loaded"].values())


def fused_builds(view) -> list[str]:
    """The builds of chapter 3's fused kernel: one per distinct configuration its shapes needed."""
    return sorted({config["module"] for config in view.summaries["configs"].values()})


def idle_between_kernels(view, shape: str) -> bool:
    """Every kernel of the traced row path starts after a gap: its first block starts after the previous
    kernel's last block ended."""
    kernels = view.summaries["timelines"][shape]["kernels"]
    return len(kernels) == 4 and all(kernel["gap_before_ns"] > 0 for kernel in kernels[1:])


def host_paced(view, variant: str) -> bool:
    """A batch whose host enqueue takes at least 90% of its event interval: the host, not the GPU, sets the pace."""
    record = view.summaries["per_node"][variant]
    return record["warm_batch.enqueue_us"]["median"] >= 0.9 * record["warm_batch.event_us"]["median"]


def device_paced_cold(view, variants) -> bool:
    return all(view.summaries["cold_pacing"][variant]["host_enqueue_exceeded_wait"] == 0 for variant in variants)


def device_paced_warm(view, shape: str) -> bool:
    """Every graph-of-32-calls batch at the shape was enqueued faster than the GPU ran it."""
    return view.headline[f"graph32_device_paced.{shape}"] is True


def enqueue_ratio_edge(view, numerator: str, denominator: str, label: str) -> dict[str, Edge]:
    """Host enqueue per launch, numerator over denominator within each round, with its bootstrap interval,
    recomputed from the raw samples: chapter 1 saves no interval for it."""
    from launchlab.measure import stats

    samples = view.jsonl("samples/timing.jsonl.gz")
    ratio = stats.paired_ratio(samples, numerator, denominator, "enqueue", "enqueue_us_per_launch")
    return {label: Edge(ratio, "above", 1.0)}


def range_over_shapes(view, table: tuple[str, ...]) -> dict:
    """Lowest and highest median of a per-shape ratio, warm and cold, over every shape of the run."""
    by_shape = view.summaries
    for key in table:
        by_shape = by_shape[key]
    result = {}
    for l2 in ("warm", "cold"):
        medians = [records[l2]["median"] for records in by_shape.values() if l2 in records]
        result[f"{l2}, lowest"], result[f"{l2}, highest"] = min(medians), max(medians)
    return result


def memset_nodes(view, relative: str) -> int:
    from launchlab.model import dot

    nodes = dot.parse_dot(view.file(relative).read_text())["nodes"].values()
    return sum(any("MEMSET" in line.upper() for line in node["label"]) for node in nodes)


def queue_graph_is_memset_and_kernel(view, case: str) -> bool:
    name = f"queue.{case}.graph"
    return (view.summaries["graphs"][name]["counts"] == {"kernel": 1, "other": 1}
            and memset_nodes(view, f"graphs/{name}.dot") == 1)


def at_full_occupancy(view) -> bool:
    """The main persistent variants ran every block the occupancy API allows (workers_per_sm 0)."""
    return int(view.record.parameters["workers_per_sm"]) == 0


def ordered_by_rows(view, traces) -> bool:
    checks = [view.summaries["traces"][name]["checks"] for name in traces]
    return all(c["every_task_once"] and c["b_after_its_row_a"] and c["c_after_its_row_b"] for c in checks)


def pdl_graphs_hold_their_edges(view) -> bool:
    """The PDL graphs hold programmatic edges and their controls none: the pair times what it says it times."""
    def programmatic(design: str, case: str) -> int | None:  # None: the driver gave no edge types
        return (view.summaries["graph_edges"][f"{design}.{case}.graph"] or {}).get("programmatic")

    return all((programmatic("pdl3", case) or 0) > 0 and programmatic("pdl3_off", case) == 0 for case in CASES)


def pointwise_graph_nodes(view) -> bool:
    graphs = view.summaries["graphs"]
    return (len(graphs) == 2 * len(EXAMPLE_A_SIZES)
            and all((g["kernel"], g["other"]) == ({"three": 3, "fused": 1}[name.split(".")[0]], 0)
                    for name, g in graphs.items()))


def pointwise_dram(view) -> dict:
    paths = view.summaries["dram"]["paths"]
    moved = {path: paths[path]["read_bytes"] + paths[path]["write_bytes"] for path in ("three", "fused")}
    return {"DRAM bytes, three kernels / fused": moved["three"] / moved["fused"],
            "DRAM / logical bytes, three kernels": paths["three"]["dram_over_logical"],
            "DRAM / logical bytes, fused": paths["fused"]["dram_over_logical"]}


def early_b(view, readings) -> dict:
    return {f"{schedule}, {case}": view.headline[f"early_b.{schedule}_graph.{case}"]
            for case in CASES for schedule in JOB_SCHEDULES}


def early_b_split(view) -> bool:
    """No early B start with two kernels; with the fused kernel and the queue, every job's but the one whose A
    ends last (the most there can be), in every graph trace."""
    jobs = view.headline["jobs"]
    early = early_b(view, {})
    return all(early[f"separate, {case}"] == 0 and early[f"fused, {case}"] == early[f"queue, {case}"] == jobs - 1
               for case in CASES) and view.headline["trace_checks"] == len(view.summaries["traces"])


def host_completion_medians(view, readings) -> dict:
    timing = view.summaries["timing"]
    return {f"{schedule}, {sub}": timing[f"{schedule}.ragged.{sub}"]["warm_single"]["complete_us"]["median"]
            for schedule in JOB_SCHEDULES for sub in SUBMISSIONS}


def idle_in_last_wave(blocks: int, sms: int) -> int:
    """SMs without a block in the last wave when `blocks` blocks run one per SM on `sms` SMs."""
    last = blocks % sms
    return 0 if last == 0 else sms - last


def ragged_iterations(jobs: int) -> dict:
    """Stage-A iterations summed over the jobs (protocol of Example B): every eighth job, index 0 included,
    takes 8,192 iterations and the rest 256; the balanced control gives every job 1,024."""
    long_jobs = (jobs + 7) // 8
    return {"balanced": 1024 * jobs, "ragged": 8192 * long_jobs + 256 * (jobs - long_jobs)}


def design_label(record: dict) -> dict:
    from launchlab.chapters.megakernels import label

    return {"design": label(record["variant"])}

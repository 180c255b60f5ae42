"""Synthetic runs of the two appendix examples, written as the runner writes them (RunWriter, RunRecord,
one sample file, validation.json), with made-up timings, DOT text, ncu output, sanitizer results and traces.

Tests of summaries, headlines and pages run on these: no GPU, no accepted run needed."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from launchlab.analysis import recompute
from launchlab.chapters import chapter
from launchlab.measure.protocol import FROZEN
from launchlab.runner import SAMPLES_FILE
from launchlab.store import evidence
from launchlab.store.record import RunRecord

DEVICE = {"name": "NVIDIA H200", "compute_capability": "9.0", "sm_count": 132, "l2_bytes": 62914560,
          "shared_bytes_per_block_optin": 232448, "shared_bytes_per_sm": 233472, "global_memory_bytes": 150109880320,
          "smi": {"name": "NVIDIA H200"}}
ENVIRONMENT = {"cpu_count": 16, "cpu_model": "Test CPU", "cuda_runtime_version": 13020, "cupy": "14.2.0",
               "driver": "580.0", "driver_api_version": 13000, "host": "test", "libraries": {}, "numpy": "2.0",
               "os": "Linux", "python": "3.12"}
SMI = {"smi": {"clocks.sm": "1980", "clocks.mem": "3201", "clocks.max.sm": "1980", "temperature.gpu": "40",
               "power.draw": "120"}}


def dot_chain(labels) -> str:
    """CUDA-style DOT of a linear graph; a label "MEMSET" makes a memset node."""
    nodes, edges = [], []
    for index, name in enumerate(labels):
        shape = "invtrapezium" if name == "MEMSET" else "octagon"
        extra = "\n(0,4)" if name == "MEMSET" else ""
        nodes.append(f'"graph_1_node_{index}"[style="solid" shape="{shape}" label="{index}\n{name}{extra}\n"];\n')
        if index:
            edges.append(f'"graph_1_node_{index - 1}" -> "graph_1_node_{index}";\n')
    return 'digraph dot {\nsubgraph cluster_1 {\nlabel="graph_1" graph[style="dashed"];\n' + "".join(nodes + edges) + "}\n}\n"


def warm_samples(costs: dict, large: set) -> list[dict]:
    """warm_single and warm_batch samples of every variant in every round: costs {vid: (event µs, complete µs)}."""
    generator = np.random.default_rng(3)
    samples = []
    for round_index in range(FROZEN.rounds):
        for position, (vid, (event_us, complete_us)) in enumerate(costs.items()):
            jitter = 1 + 0.02 * generator.standard_normal(3)
            base = {"round": round_index, "position": position, "variant": str(vid), "launches": 1}
            samples.append({**base, "measurement": "warm_single", "count": 1, "enqueue_ns": int(4000 * jitter[0]),
                            "complete_ns": int(complete_us * 1e3 * jitter[1]), "event_ms": None})
            count = FROZEN.large_batch if vid in large else FROZEN.batch
            samples.append({**base, "measurement": "warm_batch", "count": count,
                            "enqueue_ns": int(3000 * count * jitter[0]), "complete_ns": int(event_us * 1e3 * count * jitter[1]),
                            "event_ms": event_us * count * jitter[2] / 1e3})
    return samples


def output_check(vid, index: int, phase: str, elements: int) -> dict:
    return {"passed": True, "elements": elements, "failing_elements": 0, "exact": True, "variant": str(vid),
            "fixture": index, "phase": phase, "what": "output", "output_sha256": "0" * 64, "input_sha256": "1" * 64}


def structure_check(vid, phase: str, what: str, size: int) -> dict:
    return {"passed": True, "elements": size, "failing_elements": 0, "exact": True, "variant": str(vid),
            "fixture": None, "phase": phase, "what": what}


def sanitizer_result(tool: str, example: str, clean: bool = True) -> dict:
    return {"tool": tool, "example": example, "command": ["compute-sanitizer", "--tool", tool],
            "exit_code": 0 if clean else 1, "errors": 0 if clean else 2,
            "inner": {"example": example, "problem": "test problem", "checks": {"a": True, "b": True}, "passed": True},
            "tail": [f"========= ERROR SUMMARY: {0 if clean else 2} errors"], "error": None}


def finish(writer, stem: str, details: dict, samples: list, checks: list, seal: bool = False) -> Path:
    """run.json, samples and validation.json, then summaries and headline recomputed from them alone."""
    declared = chapter(stem)
    record = RunRecord(chapter=stem, run_id=writer.run_id, parameters=declared.defaults(), protocol=FROZEN.record(),
                       host_path=declared.host_path, device=DEVICE, environment=ENVIRONMENT, git_commit="abc1234",
                       source_tree_sha256="0" * 64,
                       states={"measurement0.warm.before": SMI, "measurement0.warm.after": SMI, "end": SMI},
                       clocks_dropped=False, validation={"verdict": "passed", "checks": len(checks)}, details=details)
    writer.write_jsonl(SAMPLES_FILE, samples)
    writer.write_json("validation.json", checks)
    writer.write_json("run.json", record.to_dict())
    summaries, headline = recompute(writer.path)
    writer.write_json("summaries.json", summaries)
    writer.write_json("headline.json", headline)
    if seal:
        evidence.seal(writer.path)
    return writer.path


# --------------------------------------------------------------------------- Example A
NCU_HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
              '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n')


def ncu_csv(n: int) -> str:
    """ncu --csv --print-units base lines: each three-kernel kernel reads and writes 4 N bytes (a little
    more read), the fused kernel the same."""
    lines = []
    for index, kernel in enumerate(("pw_add_one", "pw_square", "pw_halve", "pw_fused")):
        for metric, value in (("dram__bytes_read.sum", 4 * n + 65_536), ("dram__bytes_write.sum", 4 * n)):
            lines.append(f'"{index}","1","python","host","{kernel}(const float *, float *, unsigned long long)","1",'
                         f'"7","(256, 1, 1)","({n // 256}, 1, 1)","0","9.0","Command line profiler metrics",'
                         f'"{metric}","byte","{value:,}"\n')
    return NCU_HEADER + "".join(lines)


def example_a_run(root: Path, run_id: str = "20990101T000000Z-exa", ncu: str = "counters", seal: bool = False) -> Path:
    """A passed Example A run; ncu "counters" (both paths profiled), "error" (no permission) or "none" (no profile)."""
    from launchlab.chapters.example_a_pointwise import CHAPTER, Parameters, is_large, model, size_of

    parameters = Parameters()
    writer = evidence.RunWriter(run_id, root)
    costs, large, checks = {}, set(), []
    for variant in CHAPTER.variants(parameters):
        vid, n, kernels = variant.id, size_of(variant.id), variant.row.kernels
        launches = len(kernels) if vid.submission == "stream" else 1
        device = variant.logical_bytes / 4.0e6 + 2.0 * len(kernels)
        costs[vid] = (max(device, 3.5 * launches), device + 9.0 * launches)
        if is_large(vid):
            large.add(vid)
        if vid.submission == "graph":
            writer.write_text(f"graphs/{vid}.dot", dot_chain(kernels))
            checks.append(structure_check(vid, "graph nodes", "kernel and other nodes in the captured graph's DOT", 2))
    for index, phase in [(i, "before") for i in range(model.FIXTURES_BEFORE_TIMING)] + [(model.HELD_OUT_FIXTURE, "after")]:
        checks += [output_check(vid, index, phase, size_of(vid)) for vid in costs]
    writer.write_json("graphs/setup.json", {})
    writer.write_json("builds/pointwise/record.json", {"family": "pointwise", "options": ["--fmad=false"], "resources_loaded": {
        k: {"registers": 8, "shared_bytes": 0, "local_bytes": 0} for v in CHAPTER.variants(parameters) for k in v.row.kernels}})
    n = parameters.profile_size
    if ncu == "counters":
        writer.write_text(f"profiles/ncu_n{n}.csv", ncu_csv(n))
        writer.write_json(f"profiles/ncu_n{n}.json", {"command": ["ncu"], "returncode": 0, "error": None})
    elif ncu == "error":
        writer.write_text(f"profiles/ncu_n{n}.csv", "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission\n")
        writer.write_json(f"profiles/ncu_n{n}.json", {"command": ["ncu"], "returncode": 1, "error":
                          "ncu exited with status 1 and no counter values: ==ERROR== ERR_NVGPUCTRPERM"})
    for tool in ("memcheck", "racecheck"):
        writer.write_json(f"sanitizer/{tool}.json", sanitizer_result(tool, "pointwise"))
    details = {"sanitizer": {"executable": "compute-sanitizer", "clean": True, "error": None}}
    return finish(writer, "example_a_pointwise", details, warm_samples(costs, large), checks, seal)


# --------------------------------------------------------------------------- Example B
def simulated_trace(schedule: str, case: str, jobs: int, workers: int) -> dict:
    """A trace of the schedule from model.jobs.simulate, with made-up stage durations (ns per iteration)."""
    from launchlab.chapters.example_b_jobs import model

    a_ns = model.a_iterations(case, jobs) * 2.5
    b_ns = np.full(jobs, model.B_ITERATIONS * 2.5)
    trace = model.simulate(schedule, a_ns, b_ns, workers, gap_ns=2000)
    arrays = {name: np.rint(np.asarray(trace[name], dtype=float)).astype(np.int64) for name in model.TRACE_FIELDS}
    return {"written": np.ones(jobs, bool), **arrays}


def example_b_run(root: Path, run_id: str = "20990101T000000Z-exb", seal: bool = False) -> Path:
    from launchlab.chapters.example_b_jobs import CHAPTER, KERNELS, Parameters, model

    writer = evidence.RunWriter(run_id, root)
    sms = DEVICE["sm_count"]
    jobs = model.job_count(sms)
    costs, checks, occupancy = {}, [], {}
    for variant in CHAPTER.variants(Parameters()):
        vid, schedule, case = variant.id, variant.id.target, variant.id.case
        work = model.a_iterations(case, jobs).sum() * 2.5 / 1e3 / sms
        costs[vid] = (work + {"separate": 12, "fused": 8, "queue": 9}[schedule], work + 30)
        trace = simulated_trace(schedule, case, jobs, sms)
        writer.write_arrays(f"traces/{vid}.npz", workers=np.int64(sms if schedule == "queue" else jobs), **trace)
        result = model.check_trace(trace, jobs, schedule, sms if schedule == "queue" else None)
        checks.append({**structure_check(vid, "trace", f"trace rules of the {schedule} schedule",
                                         len(result["checks"])), "fixture": 0, "checks": result["checks"]})
        if vid.submission == "graph":
            labels = (("MEMSET",) if schedule == "queue" else ()) + KERNELS[schedule]
            writer.write_text(f"graphs/{vid}.dot", dot_chain(labels))
            checks.append(structure_check(vid, "graph nodes", "kernel, other and MEMSET nodes", 3))
        else:
            occupancy[str(vid)] = {"with_reservation": {k: 1 for k in KERNELS[schedule]},
                                   "without_reservation": {k: 8 for k in KERNELS[schedule]}}
            checks.append(structure_check(vid, "occupancy", "active CTAs per SM", len(KERNELS[schedule])))
        for index, phase in [(i, "before") for i in range(3)] + [(3, "after"), (0, "traced build")]:
            checks.append(output_check(vid, index, phase, jobs * 256))
            if schedule == "queue":
                checks.append({**output_check(vid, index, phase, 1), "what": "queue counter after the invocation"})
    writer.write_json("graphs/setup.json", {})
    for tool in ("memcheck", "racecheck"):
        writer.write_json(f"sanitizer/{tool}.json", sanitizer_result(tool, "jobs"))
    shared = {"shared_per_sm": 233472, "shared_per_block_optin": 232448,
              "dynamic_shared_bytes": model.reserved_shared_bytes(233472)}
    details = {"shared_memory": shared, "sm_count": sms, "jobs": jobs, "workers": sms, "occupancy": occupancy,
               "sanitizer": {"executable": "compute-sanitizer", "clean": True, "error": None}}
    return finish(writer, "example_b_jobs", details, warm_samples(costs, set()), checks, seal)


def parameters_of(stem: str) -> dict:
    return dataclasses.asdict(chapter(stem).parameters())

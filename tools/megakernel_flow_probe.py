"""Development sweep (GPU): the flow kernel's variants against the three-kernel graph on the tiled cases,
their hand-offs from traces, and the chain's contenders at k = 1, 4, 16. Prints tables; writes JSON to argv[1].
Every output is validated against the float64 oracle before it is timed."""
from __future__ import annotations

import json
import sys
import time
import traceback

import cupy
import numpy as np

from launchlab.chapters.megakernels import chain, chain_model, flow
from launchlab.chapters.megakernels.targets import fused_defines
from launchlab.gpu import build, device, probes
from launchlab.gpu.capture import capture
from launchlab.gpu.targets import TiledPath
from launchlab.model import oracles, timelines, workloads

OUT = sys.argv[1] if len(sys.argv) > 1 else "flow_probe.json"
RESULTS: dict = {}
STREAM = cupy.cuda.Stream(non_blocking=True)


def log(*a):
    print(*a, flush=True)


def graph_time(target, reps=300, warm=30):
    with STREAM:
        graph, _ = capture(target.invoke, STREAM)
        for _ in range(warm):
            graph.launch(STREAM)
        pairs = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(reps)]
        for a, b in pairs:
            a.record(STREAM)
            graph.launch(STREAM)
            b.record(STREAM)
        STREAM.synchronize()
    us = np.array([cupy.cuda.get_elapsed_time(a, b) * 1e3 for a, b in pairs])
    return {"median": float(np.median(us)), "p10": float(np.percentile(us, 10)), "p90": float(np.percentile(us, 90))}


def run_once(target):
    with STREAM:
        target.invoke()
        STREAM.synchronize()


def check_single(target, x, ref, row_offsets):
    target.poison()
    target.load(x)
    run_once(target)
    run_once(target)  # twice: self-resetting counters and rounds must hold across invocations
    out = target.output()
    result = oracles.compare(out, ref, oracles.RMS_SOFTMAX_TOLERANCE, row_offsets=row_offsets)
    return bool(result.get("ok", result.get("passed", False))), result


def handoff(arrays):
    """SM-idle gaps between consecutive tasks on each SM (union of busy [start, end]) and per-worker gaps."""
    sm, start, end, worker = arrays["sm"], arrays["start_ns"], arrays["end_ns"], arrays["worker"]
    gaps = []
    for s in np.unique(sm):
        idx = np.flatnonzero(sm == s)
        order = idx[np.argsort(start[idx])]
        busy_until = end[order[0]]
        for i in order[1:]:
            gaps.append(max(0, start[i] - busy_until))
            busy_until = max(busy_until, end[i])
    worker_gaps = []
    for w in np.unique(worker):
        idx = np.flatnonzero(worker == w)
        order = idx[np.argsort(start[idx])]
        worker_gaps += list(np.maximum(0, start[order[1:]] - end[order[:-1]]))
    gaps, worker_gaps = np.array(gaps) / 1e3, np.array(worker_gaps) / 1e3
    span = (end.max() - arrays["taken_ns"].min()) / 1e3
    return {"sm_idle_median_us": float(np.median(gaps)), "sm_idle_p90_us": float(np.percentile(gaps, 90)),
            "sm_idle_mean_us": float(gaps.mean()), "worker_gap_median_us": float(np.median(worker_gaps)) if len(worker_gaps) else None,
            "worker_gap_p90_us": float(np.percentile(worker_gaps, 90)) if len(worker_gaps) else None, "span_us": float(span),
            "task_us_median": float(np.median((end - start) / 1e3))}


def trace_flow(traced_module, target_factory, tasks):
    records = probes.attach_task_buffer(traced_module, tasks)
    target = target_factory()
    with STREAM:
        table = probes.collect_raw(records, target.invoke)
    return timelines.task_trace_arrays(table[:tasks * timelines.TASK_WORDS]), target


def main():
    t0 = time.time()
    limit = device.shared_limit()
    tiled = build.load_module("tiled_softmax")
    flow_module = build.load_module("megakernel_flow")
    flow_traced = build.load_module("megakernel_flow", {"LAUNCHLAB_TRACE": None})
    chain_flow = build.load_module("chain_flow")
    fused_chain = build.load_module("fused_softmax_chain", fused_defines(limit))
    log(f"built in {time.time() - t0:.1f} s", flow_module.resources(["flow_persistent"]),
        chain_flow.resources(["flow_persistent"]))
    for index, case in enumerate(("balanced", "ragged")):
        lengths = workloads.tiled_row_lengths(case)
        x = workloads.packed_fixture(2026, index, lengths)
        path = TiledPath(tiled, lengths)
        ref = oracles.rms_softmax_packed(x.astype(np.float64), path.row_offsets)
        res = RESULTS.setdefault(case, {"single": {}, "handoff": {}, "chain": {}})
        ok, _ = check_single(path, x, ref, path.row_offsets)
        base = graph_time(path)
        res["single"]["tiled3"] = {**base, "ok": ok}
        log(f"\n== {case}: tiled3 graph {base['median']:.2f} us ok={ok}")
        for fold in (1, 0):
            for relaxed, cooperative in ((0, 1), (0, 0), (1, 0)):
                label = f"flow fold={fold} relaxed={relaxed} coop={cooperative}"
                try:
                    target = flow.FlowPersistent(flow_module, path, 0, bool(fold), 0, bool(relaxed),
                                                 cooperative=bool(cooperative))
                    ok, _ = check_single(target, x, ref, path.row_offsets)
                    target.check_error()
                    t = graph_time(target)
                    res["single"][label] = {**t, "ok": ok, "consistent": target.counters_consistent()}
                    log(f"  {label:28s} {t['median']:7.2f} us  x{base['median'] / t['median']:.3f} ok={ok} "
                        f"workers={target.workers}")
                except Exception:
                    log("  FAILED", label)
                    traceback.print_exc()
        for fold in (1, 0):
            label = f"flow fold={fold}"
            try:
                tasks = 2 * path.tiles + path.rows
                arrays, traced = trace_flow(flow_traced, lambda: flow.FlowPersistent(flow_traced, path, 0, bool(fold)), tasks)
                h = handoff(arrays)
                h["traced_us"] = graph_time(traced)["median"]
                res["handoff"][label] = h
                log(f"  handoff {label:14s} " + " ".join(f"{k}={v:.2f}" for k, v in h.items() if v is not None))
            except Exception:
                log("  TRACE FAILED", label)
                traceback.print_exc()
        for k in (4, 16):
            buffers = flow.StageBuffers(lengths, k)
            refs = chain_model.chain_oracle(x, buffers.row_offsets, k)
            contenders = {"pdl3": lambda: chain.Pdl3Chain(chain_flow, buffers),
                          "fused": lambda: chain.FusedChain(fused_chain, buffers, limit),
                          **{f"flow fold={f} coop={c}": (lambda f=f, c=c: flow.FlowPersistent(
                              chain_flow, buffers, 0, bool(f), cooperative=bool(c))) for f in (0, 1) for c in (1, 0)}}
            row = {}
            for name, make in contenders.items():
                try:
                    target = make()
                    buffers.poison()
                    buffers.load(x)
                    run_once(target)
                    run_once(target)
                    errors = [chain_model.worst_relative_error(o, r) for o, r in zip(buffers.outputs(), refs)]
                    t = graph_time(target, reps=100)
                    row[name] = {**t, "worst_rel_error_per_stage": errors, "ok": max(errors) <= 1e-4}
                except Exception:
                    log("  CHAIN FAILED", case, k, name)
                    traceback.print_exc()
            res["chain"][f"k{k}"] = row
            pdl_t, fused_t = row.get("pdl3", {}).get("median"), row.get("fused", {}).get("median")
            log(f"  chain k={k}:")
            for name, r in row.items():
                log(f"    {name:24s} {r['median']:8.2f} us  vs pdl3 x{(pdl_t or np.nan) / r['median']:.3f}  vs fused "
                    f"x{(fused_t or np.nan) / r['median']:.3f}  maxerr={max(r['worst_rel_error_per_stage']):.2e} ok={r['ok']}")
        log(f"  elapsed {time.time() - t0:.1f} s")
    with open(OUT, "w") as f:
        json.dump(RESULTS, f, indent=1)
    log(f"done in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()

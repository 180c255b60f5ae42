"""Device check of the one-launch varlen design (kernels/varlen_softmax.cu) against the three-kernel graph and
chapter 3's fused row kernel, on the tiled cases, for a development run on a GPU host:

    python3 tools/gpu_varlen_check.py --out results/ [--cases balanced,ragged,loguniform,giant] [--rounds 9]
    compute-sanitizer --tool memcheck python3 tools/gpu_varlen_check.py --sanitize
                                     # small irregular rows, every tier, once from the stream and as a graph

Development evidence only (it never enters a run; the chapter measures the design with its frozen protocol).
Per case, on the case's one TiledPath: the three-kernel graph, the fused row kernel's graph, the varlen design's
chosen plan (graph and stream, and graph with a cooperative launch), and a sweep of its plans (every block
size and piece target the partition rule tries): each validated against the float64 oracle on fixtures 0-2
(poisoned outputs) before timing and on the held-out fixture after, its error words and counters checked; timed
warm (graph replays back to back between events) and cold (an L2 flush before each) with a shortened protocol;
speed-ups over the three-kernel graph paired within rounds. Writes varlen_check.json and prints a table.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

FIXTURE_SEED = 4242


def build_all():
    from launchlab.chapters.megakernels import targets, varlen
    from launchlab.gpu import build, device
    from launchlab.gpu.instruments import KERNELS as INSTRUMENTS

    limit = device.shared_limit()
    return {"tiled_softmax": build.load_module("tiled_softmax"),
            "fused_softmax": build.load_module("fused_softmax", targets.fused_defines(limit)),
            varlen.FAMILY: varlen.load(), "instruments": build.load_module("instruments")}, INSTRUMENTS, limit


def contenders(modules, case, limit, stream, sweep: bool) -> dict:
    """{name: (target, runner)}: runner is what is timed (a GraphReplay or the target itself)."""
    from launchlab.chapters.megakernels import targets, varlen
    from launchlab.gpu import device
    from launchlab.gpu.capture import GraphReplay
    from launchlab.model import varlen_partition as vp

    context = targets.Context(modules, shared_limit=limit)
    path = context.path(case)
    chosen = varlen.VarlenRows(modules[varlen.FAMILY], path)
    made = {"tiled3_graph": (path, GraphReplay(path, stream)),
            "fused_row_graph": None,
            "varlen_graph": (chosen, GraphReplay(chosen, stream)),
            "varlen_stream": (chosen, chosen)}
    fused = targets.make_fused_row(context, case)
    made["fused_row_graph"] = (fused, GraphReplay(fused, stream))
    cooperative = varlen.VarlenRows(modules[varlen.FAMILY], path, plan=chosen.layout, cooperative=True)
    made["varlen_coop_graph"] = (cooperative, GraphReplay(cooperative, stream))
    if sweep:
        slots, sms = chosen.capacity_by_threads, device.sm_count()
        for threads, capacity in sorted(slots.items()):
            for target in vp.piece_targets(path.lengths, threads, capacity, sms):
                try:  # a plan beyond one wave is refused (ValueError, NotCoResident)
                    swept = varlen.VarlenRows(modules[varlen.FAMILY], path,
                                              plan=vp.plan_for(path.lengths, threads, target, capacity, sms))
                except ValueError:
                    continue
                made[f"varlen_t{threads}_w{target}_graph"] = (swept, GraphReplay(swept, stream))
    return made


def validate(name, target, runner, fixture, row_offsets) -> dict:
    """`fixture`: (values, their float64 oracle)."""
    from launchlab.model import oracles

    values, reference = fixture
    if hasattr(target, "reset"):
        target.reset()
    result = oracles.compare(runner.compute(values), reference, oracles.RMS_SOFTMAX_TOLERANCE, row_offsets)
    out = {"passed": bool(result["passed"]), "failing": result["failing_elements"],
           "max_abs_error": result["max_abs_error"]}
    if hasattr(target, "words"):
        found, expected = target.words()
        out["words"] = [int(v) for v in found]
        out["passed"] &= bool((found == expected).all())
    return out


def variant_id(name: str, case: str):
    """'varlen_t256_w4096_graph' -> varlen-t256-w4096.<case>.graph"""
    from launchlab.measure.variant import VariantId

    target, submission = name.rsplit("_", 1)
    return VariantId(target.replace("_", "-"), case, submission)


def with_oracle(values, row_offsets):
    from launchlab.model import oracles

    return values, oracles.rms_softmax_packed(values, row_offsets)


def run_case(case, modules, instruments, limit, backend, protocol, sweep) -> dict:
    from launchlab.gpu import device
    from launchlab.gpu.instruments import ColdL2
    from launchlab.measure import protocol as measure, stats
    from launchlab.model import workloads

    made = contenders(modules, case, limit, backend.stream, sweep)
    path = made["tiled3_graph"][0]
    checks = {name: [] for name in made}
    for index in range(workloads.FIXTURES_BEFORE_TIMING):
        fixture = with_oracle(workloads.packed_fixture(FIXTURE_SEED, index, path.lengths), path.row_offsets)
        for name, (target, runner) in made.items():
            checks[name].append(validate(name, target, runner, fixture, path.row_offsets))
    ok = {name: all(c["passed"] for c in results) for name, results in checks.items()}
    ids = {str(variant_id(name, case)): name for name in made if ok[name]}
    timed = [measure.Measured(variant_id(name, case), made[name][1].invoke) for name in ids.values()]
    for name, results in checks.items():
        print(f"  {case} {name}: {'ok' if ok[name] else 'FAILED ' + json.dumps(results)[:600]}", flush=True)
    warm = measure.measure_warm(timed, backend, protocol)
    cold_l2 = ColdL2(modules["instruments"], device.identity()["l2_bytes"], device.sm_count(), protocol.cold_wait_ns)
    cold = measure.measure_cold([m for m in timed if m.id.submission == "graph"], backend, cold_l2.flush, protocol)
    held = with_oracle(workloads.packed_fixture(FIXTURE_SEED, workloads.HELD_OUT_FIXTURE, path.lengths),
                       path.row_offsets)
    for name, (target, runner) in made.items():
        if hasattr(target, "words"):  # after timing: a piece that gave up during it shows here
            found, expected = target.words()
            checks[name].append({"phase": "after timing", "words": [int(v) for v in found],
                                 "passed": bool((found == expected).all())})
        checks[name].append(validate(name, target, runner, held, path.row_offsets))
    summary = stats.summarize(warm + cold)
    base = str(variant_id("tiled3_graph", case)) if ok["tiled3_graph"] else None
    rows = {}
    for m in timed:
        vid, name = str(m.id), ids[str(m.id)]
        row = {"warm_us": summary[vid]["warm_batch"]["event_us"]["median"]}
        if base and vid != base:
            row["speedup_warm"] = stats.paired_ratio(warm, base, vid)
        if "cold" in summary[vid]:
            row["cold_us"] = summary[vid]["cold"]["event_us"]["median"]
            if base and vid != base:
                row["speedup_cold"] = stats.paired_ratio(cold, base, vid, measurement="cold")
        target = made[name][0]
        if hasattr(target, "layout"):
            row["plan"] = target.describe()
        rows[name] = row
    return {"case": case, "lengths": {"rows": int(len(path.lengths)), "elements": int(path.lengths.sum()),
                                      "longest": int(path.lengths.max())},
            "passed": {name: all(c["passed"] for c in results) for name, results in checks.items()},
            "checks": checks, "rows": rows}


def print_table(result) -> None:
    print(f"\n== {result['case']}: {result['lengths']}")
    print(f"{'contender':34s} {'ok':>3s} {'warm us':>8s} {'x graph3':>20s} {'cold us':>8s} {'x graph3 cold':>20s}"
          "  plan")
    for name, row in result["rows"].items():
        def ratio(key):
            r = row.get(key)
            return f"{r['median']:.2f} [{r['ci_low']:.2f},{r['ci_high']:.2f}]" if r else "-"
        plan = row.get("plan", {})
        plan_text = (f"t{plan['threads']} w{plan['piece_target']} grid {plan['grid']}/{plan['capacity']} "
                     f"split {plan['split_rows']}x<={plan['most_pieces']} packed {plan['packed_blocks']} "
                     f"pred {plan['predicted_us']}") if plan else ""
        cold = f"{row['cold_us']:8.2f}" if "cold_us" in row else "       -"
        passed = "ok" if result["passed"][name] else "NO"
        print(f"{name:34s} {passed:>3s} {row['warm_us']:8.2f} {ratio('speedup_warm'):>20s}"
              f" {cold} {ratio('speedup_cold'):>20s}  {plan_text}")
    failed = [name for name, passed in result["passed"].items() if not passed]
    if failed:
        print("FAILED:", failed, json.dumps({n: result["checks"][n] for n in failed})[:2000])


SANITIZE_ROWS = [1, 1023, 1025, 5000, 3, 2048, 70001, 4096, 777, 33, 512, 513]


def sanitize() -> int:
    """Small irregular rows under every plan kind (register pieces, streamed pieces, packed rows), each once
    from the stream and once as a graph replay, against the oracle; prints one line per run, non-zero on a
    failure."""
    from launchlab.chapters.megakernels import varlen
    from launchlab.gpu.backend import CupyBackend
    from launchlab.gpu.capture import GraphReplay
    from launchlab.model import varlen_partition as vp
    from launchlab.model import workloads

    backend, built = CupyBackend(), varlen.load()
    chosen = varlen.VarlenRows(built, SANITIZE_ROWS)
    plans = {"chosen": chosen.layout,
             "t256_w1024": vp.plan_for(SANITIZE_ROWS, 256, 1024, chosen.capacity_by_threads[256], chosen.layout.sms),
             "t512_streamed": vp.plan_for(SANITIZE_ROWS, 512, 1 << 20, chosen.capacity_by_threads[512],
                                          chosen.layout.sms)}
    status = 0
    fixture = with_oracle(workloads.packed_fixture(FIXTURE_SEED, 0, SANITIZE_ROWS), chosen.row_offsets)
    for name, plan in plans.items():
        target = varlen.VarlenRows(built, chosen.path, plan=plan)
        for submission, runner in (("stream", target), ("graph", GraphReplay(target, backend.stream))):
            result = validate(name, target, runner, fixture, chosen.row_offsets)
            print(f"sanitize {name} {submission}: {'ok' if result['passed'] else 'FAILED'} {result}", flush=True)
            status |= not result["passed"]
    return status


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--sanitize", action="store_true", help="small rows once each (under compute-sanitizer)")
    parser.add_argument("--cases", default="balanced,ragged,loguniform,giant")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--no-sweep", action="store_true")
    args = parser.parse_args(argv)
    if args.sanitize:
        return sanitize()
    if args.out is None:
        parser.error("--out is needed (or --sanitize)")
    from launchlab.gpu.backend import CupyBackend
    from launchlab.measure import protocol as measure

    args.out.mkdir(parents=True, exist_ok=True)
    backend = CupyBackend()
    start = time.perf_counter()
    modules, instruments, limit = build_all()
    print(f"built in {time.perf_counter() - start:.1f} s", flush=True)
    protocol = measure.MeasurementProtocol(warmups=5, rounds=args.rounds, batch=args.batch, cold_repeats=3)
    results, status = [], 0
    for case in args.cases.split(","):
        result = run_case(case, modules, instruments, limit, backend, protocol, not args.no_sweep)
        results.append(result)
        print_table(result)
        print(f"[{time.perf_counter() - start:.1f} s]", flush=True)
        status |= not all(result["passed"].values())
        (args.out / "varlen_check.json").write_text(json.dumps(results, indent=1, default=float))
    return int(status)


if __name__ == "__main__":
    sys.exit(main())

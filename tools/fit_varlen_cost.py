"""Fit the varlen partition rule's cost model (model/varlen_partition.PieceCost) to the plans a device check
measured (tools/gpu_varlen_check.py's varlen_check.json), and say which plan the fitted rule picks per case
against the one measured fastest:

    python3 tools/fit_varlen_cost.py evidence/development/varlen_check_batch1.json [--l2 warm|cold]

Every swept plan of every case is rebuilt from its (threads, piece target, co-resident blocks, SMs) and fitted
with its measured median time (`fit`, also what the tests call).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def measured_plans(results: list, l2: str = "warm") -> list[tuple]:
    """[(case, name, Plan, measured us)] of every swept varlen plan that passed its checks."""
    from launchlab.model import varlen_partition as vp
    from launchlab.model import workloads

    rows = []
    for result in results:
        lengths = workloads.tiled_row_lengths(result["case"])
        for name, row in result["rows"].items():
            plan = row.get("plan")
            if not name.startswith("varlen_t") or not plan or not result["passed"][name] or f"{l2}_us" not in row:
                continue
            rebuilt = vp.plan_for(lengths, plan["threads"], plan["piece_target"], plan["slots"], plan["sms"])
            rows.append((result["case"], name, rebuilt, row[f"{l2}_us"]))
    return rows


def fit(results: list, l2: str = "warm"):
    """(PieceCost, rms residual us, measured rows) of the swept plans in `results`."""
    from launchlab.model import varlen_partition as vp

    rows = measured_plans(results, l2)
    cost, residual = vp.fit_cost([plan for _, _, plan, _ in rows], [us for *_, us in rows])
    return cost, residual, rows


def main(argv=None) -> int:
    from launchlab.model import varlen_partition as vp
    from launchlab.model import workloads

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--l2", choices=("warm", "cold"), default="warm")
    args = parser.parse_args(argv)
    results = json.loads(args.results.read_text())
    cost, residual, rows = fit(results, args.l2)
    print(f"fitted ({args.l2}, {len(rows)} plans): {cost}; rms residual {residual:.3f} us")
    for result in results:
        case = result["case"]
        mine = [(name, plan, us) for c, name, plan, us in rows if c == case]
        if not mine:
            continue
        best = min(mine, key=lambda item: item[2])
        slots = {plan.threads: plan.slots for _, plan, _ in mine}
        chosen = vp.choose(workloads.tiled_row_lengths(case), slots, mine[0][1].sms, cost)
        measured = next((us for _, plan, us in mine if (plan.threads, plan.piece_target) ==
                         (chosen.threads, chosen.piece_target)), None)
        print(f"{case:11s} fastest measured {best[0]} {best[2]:.2f} us; the fitted rule picks t{chosen.threads} "
              f"w{chosen.piece_target} (predicted {chosen.predicted_us:.2f}, measured {measured})")
        for name, plan, us in sorted(mine, key=lambda item: item[2]):
            print(f"    {name:28s} measured {us:6.2f}  fitted {plan.predict(cost):6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

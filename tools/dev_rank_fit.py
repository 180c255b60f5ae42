"""Would fitting the cost model on the candidates' order pick better? (CPU only; a development check.)

The least-squares fit (model/fused_cost.fit) makes each prediction close to its measurement; the policy only needs
the fastest candidate at each shape to have the least prediction. This refits the designs' constants (the memory
system's held) on the least squares plus `weight` x a smooth pick regret: at each shape, the measured cost of each
offered candidate over the fastest one (log, warm and cold averaged, as plans.score mixes them), weighted by a
softmin of the predictions at temperature `tau`. As tau falls this is the regret of the model's pick.

Cross-validated: each split fits on a random half of a calibration's shapes and reports the hard pick regret (mean
log of pick over fastest) and the pick's figures on the other half, against the committed constants (FITTED).

  python tools/dev_rank_fit.py --out evidence/development/rank_fit.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tools"))

from fused_fit import load_calibration, median, observations  # noqa: E402

from launchlab.chapters.fusion import plans  # noqa: E402
from launchlab.model import fused_cost  # noqa: E402

CALIBRATION = ROOT / "evidence/development/fused_calibration_thin_builds.json.gz"
SETTINGS = ((1.0, 0.02), (10.0, 0.01), (30.0, 0.005))  # (weight, tau)


class Shapes:
    """The offered candidates measured in plain mode at each of a calibration's shapes, as one batch of cases."""

    def __init__(self, records, device):
        self.device = device
        items, self.groups = [], []
        for record in records:
            rows, cols = record["rows"], record["cols"]
            measured = {e["tag"]: e for e in record["fused"] if e["mode"] == "plain" and e.get("valid")}
            offered = [p for p in plans.candidates(rows, cols, device) if p["tag"] in measured]
            if not offered:
                continue
            first = len(items)
            for plan in offered:
                seen = fused_cost.geometry(plan, rows, cols, device)
                items += [(seen, rows, cols, "warm"), (seen, rows, cols, "cold")]
            timed = {l2: np.array([median(measured[p["tag"]][l2]) for p in offered]) for l2 in ("warm", "cold")}
            self.groups.append({"warm_at": np.arange(first, len(items), 2), "timed": timed, "offered": offered,
                                "shape": (rows, cols),
                                "copy": {l2: min(median(record["copy"][k][l2]) for k in record["copy"])
                                         for l2 in ("warm", "cold")},
                                "regret": 0.5 * sum(np.log(t / t.min()) for t in timed.values())})
        self.cases = fused_cost.Cases.of(items, int(device["sm_count"]))

    def scores(self, constants):
        """Per shape, the log of each candidate's plans.score (taken as the policy takes it, so that near ties
        fall the same way)."""
        predicted = fused_cost.times(self.cases, constants)
        return [np.log(plans.score({"warm": predicted[g["warm_at"]], "cold": predicted[g["warm_at"] + 1]}))
                for g in self.groups]

    def picks(self, constants) -> list[int]:
        """Per shape, the policy's candidate (plans.pick, on this batch's predictions)."""
        total = fused_cost.times(self.cases, constants)
        return [plans.pick(*g["shape"], self.device, [(plan, {"warm": total[at], "cold": total[at + 1]})
                                                      for plan, at in zip(g["offered"], g["warm_at"])], constants)
                for g in self.groups]

    def regret(self, constants, tau: float | None = None) -> float:
        """Mean regret of the policy's pick (tau None), or its softmin form."""
        if tau is None:
            return float(np.mean([g["regret"][k] for g, k in zip(self.groups, self.picks(constants))]))
        found = []
        for group, score in zip(self.groups, self.scores(constants)):
            weights = np.exp(-(score - score.min()) / tau)
            found.append(weights @ group["regret"] / weights.sum())
        return float(np.mean(found))

    def figures(self, constants) -> dict:
        """The pick's bandwidth geomean (copy >= 10 us) and latency median over the copy (us), warm and cold."""
        found = {}
        chosen = self.picks(constants)
        for l2 in ("warm", "cold"):
            ratios, over = [], []
            for group, k in zip(self.groups, chosen):
                pick, copy = group["timed"][l2][k], group["copy"][l2]
                (ratios if copy >= 10.0 else over).append(pick / copy if copy >= 10.0 else pick - copy)
            found[l2] = {"geomean": float(np.exp(np.mean(np.log(ratios)))), "latency_median_us": float(np.median(over))}
        return found


def refit(shapes: Shapes, observed, device, weight: float, tau: float, steps: int, rate: float = 0.02):
    """Adam on the logs of the designs' constants (finite-difference gradients), from FITTED, each kept within
    fused_cost.FIT_RANGE of its start."""
    names = fused_cost.Constants.names()
    free = [k for k, name in enumerate(names) if name not in fused_cost.MEMORY_CONSTANTS]
    cases = fused_cost.Cases.of([(fused_cost.geometry(p, r, c, device), r, c, l2) for p, r, c, l2, _ in observed],
                                int(device["sm_count"]))
    measured = np.log([us for *_, us in observed])
    base = np.log(fused_cost.FITTED.vector())

    def constants_at(x):
        full = base.copy()
        full[free] = x
        return fused_cost.Constants.from_vector(np.exp(full))

    def loss(x):
        k = constants_at(x)
        residuals = np.log(fused_cost.times(cases, k)) - measured
        return residuals @ residuals / residuals.size + weight * shapes.regret(k, tau)

    x = base[free].copy()
    low, high = x - np.log(fused_cost.FIT_RANGE), x + np.log(fused_cost.FIT_RANGE)
    first, second = np.zeros_like(x), np.zeros_like(x)
    for step in range(1, steps + 1):
        at = loss(x)
        gradient = np.array([(loss(x + 1e-4 * np.eye(x.size)[j]) - at) / 1e-4 for j in range(x.size)])
        first = 0.9 * first + 0.1 * gradient
        second = 0.999 * second + 0.001 * gradient ** 2
        x = np.clip(x - rate * (first / (1 - 0.9 ** step)) / (np.sqrt(second / (1 - 0.999 ** step)) + 1e-8), low, high)
    return constants_at(x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calibration", type=Path, default=CALIBRATION)
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.out.exists():
        sys.exit(f"{args.out} exists; give another --out (nothing is overwritten)")
    calibration = load_calibration(args.calibration)
    device, records = calibration["device"], calibration["shapes"]
    every = observations(calibration)
    found = []
    for split in range(args.splits):
        order = np.random.default_rng(100 + split).permutation(len(records))
        train = [records[k] for k in order[:len(records) // 2]]
        test = Shapes([records[k] for k in order[len(records) // 2:]], device)
        kept = {(r["rows"], r["cols"]) for r in train}
        observed = [o for o in every if (o[1], o[2]) in kept]
        fitting = Shapes(train, device)
        for weight, tau in SETTINGS:
            fitted = refit(fitting, observed, device, weight, tau, args.steps)
            row = {"split": split, "weight": weight, "tau": tau,
                   "train_regret": [fitting.regret(fused_cost.FITTED), fitting.regret(fitted)],
                   "test_regret": [test.regret(fused_cost.FITTED), test.regret(fitted)],
                   "test_figures": [test.figures(fused_cost.FITTED), test.figures(fitted)]}
            print(json.dumps(row), flush=True)
            found.append(row)
    args.out.write_text(json.dumps({"calibration": args.calibration.name, "steps": args.steps, "splits": found},
                                   indent=1) + "\n")


if __name__ == "__main__":
    main()

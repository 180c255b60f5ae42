"""Whether overlapping a row's exchange with the next row's loads rescues the plane's worst points, for the page's
account of its misses.

A development probe (tools/dev_pcluster.py, kernels in tools/dev_pcluster.cu) timed on an H200 a persistent design
in which a grid of as many thread-block clusters as the GPU holds walks the rows, each block requesting its slice of
the cluster's next row into a second shared-memory buffer before it reduces, exchanges and writes the row it holds,
beside the launch policy's pick at the same shape and the copy ceiling. Its variants (cluster width, threads a block,
blocks an SM) were checked against the float64 oracle before and after timing. The result is committed as
evidence/development/pcluster_probe.json; this module reads it: per shape the fastest valid variant over the pick,
and the range of that ratio over the shapes.
"""
from __future__ import annotations

import json
from pathlib import Path

from launchlab.chapters.fusion import L2_STATES
from launchlab.chapters.fusion.page_format import ratio_number, shape_label
from launchlab.store.evidence import REPO_ROOT

PIPELINED_PROBE = REPO_ROOT / "evidence" / "development" / "pcluster_probe.json"


def load(path: Path = PIPELINED_PROBE) -> dict:
    """The probe's result file; a clear error where it is missing or no shape has a valid variant and a timed pick."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: the pipelined-cluster probe's result is missing (tools/dev_pcluster.py makes it)")
    data = json.loads(path.read_text())
    if not over_pick(data):
        raise ValueError(f"{path}: no shape has both a timed pick and a valid variant")
    return data


def over_pick(data: dict) -> dict:
    """{"<rows>x<cols>": {l2: fastest valid variant's time / the pick's}} for the shapes where both were timed."""
    found = {}
    for shape in data.get("shapes", []):
        valid = [v for v in shape.get("variants", []) if v.get("valid")]
        pick = shape.get("pick", {})
        if valid and all(l2 in pick for l2 in L2_STATES):
            found[f"{shape['rows']}x{shape['cols']}"] = {l2: min(v[l2] for v in valid) / pick[l2] for l2 in L2_STATES}
    return found


def _span(values) -> str:
    low, high = min(values), max(values)
    return ratio_number(low) if ratio_number(low) == ratio_number(high) else f"{ratio_number(low)}–{ratio_number(high)}"


def pipelined_values(path: Path = PIPELINED_PROBE) -> dict:
    """Glued strings: the GPU, how many shapes and variants, how many outputs were valid, whether the fastest variant
    ever beat the pick, and per L2 state the range of its time over the pick's (with the shape where it came
    closest)."""
    data = load(path)
    ratios = over_pick(data)
    variants = [v for shape in data["shapes"] for v in shape.get("variants", [])]
    device = data.get("device")
    values = {"pipelined_device": device.get("name", "n/a") if isinstance(device, dict) else str(device or "n/a"),
              "pipelined_shapes": str(len(data["shapes"])), "pipelined_compared": str(len(ratios)),
              "pipelined_variants": str(len(variants)),
              "pipelined_valid": str(sum(1 for v in variants if v.get("valid")))}
    faster = sum(1 for r in ratios.values() if min(r.values()) < 1.0)
    values["pipelined_verdict"] = ("it was never faster than the pick" if not faster else
                                   f"it was faster than the pick at {faster} of {len(ratios)} shapes in one L2 state")
    for l2 in L2_STATES:
        values[f"pipelined_over_pick_{l2}"] = _span([r[l2] for r in ratios.values()])
        closest = min(ratios, key=lambda shape: ratios[shape][l2])
        values[f"pipelined_closest_{l2}"] = f"{shape_label(closest)} ({ratio_number(ratios[closest][l2])})"
    return values

"""Whether overlapping a row's exchange with the next row's loads rescues the plane's worst points, for the page's
account of its misses.

A development probe (tools/dev_pcluster.py, kernels in tools/dev_pcluster.cu) timed on an H200 a persistent design
in which a grid of as many thread-block clusters as the GPU holds walks the rows, each block requesting its slice of
the cluster's next row into a second shared-memory buffer before it reduces, exchanges and writes the row it holds,
beside the launch policy's pick at the same shape and the copy ceiling. Its variants (cluster width, threads a block,
blocks an SM) were checked against the float64 oracle before and after timing. The result is committed as
evidence/development/pcluster_probe.json; this module reads it: per shape the fastest valid variant over the pick,
and the range of that ratio over the shapes; and from a second run with three and four buffers a block, how the
fastest deeper variant compared with the fastest of two buffers.

Three later probes of the same kind (`later_probe_values`): lagged split rows (tools/dev_lag.py, lag_probe.json: a
block writes a piece of a row one or more grid steps after it read it, reading its x again from the L2), the split
design's exchange on a pipelined grid schedule (tools/dev_gpipe.py, gpipe_probe.json), and that schedule with nothing
reduced (tools/dev_pipeline_floor.py, pipeline_floor.json: each variant's time over the copy ceiling).
"""
from __future__ import annotations

import json
from pathlib import Path

from launchlab.chapters.fusion import L2_STATES
from launchlab.chapters.fusion.page_format import ratio_number, ratio_span, shape_label
from launchlab.chapters.fusion.probe_file import read_probe
from launchlab.present.replicas import counted
from launchlab.store.evidence import REPO_ROOT

PIPELINED_PROBE = REPO_ROOT / "evidence" / "development" / "pcluster_probe.json"
# the same probe with more buffers a block (--depths 2,3,4): loads two or three rows ahead instead of one
DEPTH_PROBE = REPO_ROOT / "evidence" / "development" / "pcluster_depth_probe.json"


LAG_PROBE = REPO_ROOT / "evidence" / "development" / "lag_probe.json"
GPIPE_PROBE = REPO_ROOT / "evidence" / "development" / "gpipe_probe.json"
SCHEDULE_FLOOR = REPO_ROOT / "evidence" / "development" / "pipeline_floor.json"
CEILINGS = ("memcpy", "copy_vec4")  # the copy ceiling's own entries in a floor probe's ratios, not variants


def load(path: Path = PIPELINED_PROBE, maker: str = "tools/dev_pcluster.py") -> dict:
    """A probe's result file; a clear error where it is missing or no shape has a valid variant and a timed pick."""
    return read_probe(path, "the probe's result", maker, over_pick, "no shape has both a timed pick and a valid variant")


def over_pick(data: dict) -> dict:
    """{"<rows>x<cols>": {l2: fastest valid variant's time / the pick's}} for the shapes where both were timed."""
    found = {}
    for shape in data.get("shapes", []):
        valid = [v for v in shape.get("variants", []) if v.get("valid")]
        pick = shape.get("pick", {})
        if valid and all(l2 in pick for l2 in L2_STATES):
            found[f"{shape['rows']}x{shape['cols']}"] = {l2: min(v[l2] for v in valid) / pick[l2] for l2 in L2_STATES}
    return found


def deeper_over_two(data: dict) -> dict:
    """{"<rows>x<cols>": {l2: fastest valid variant of more than two buffers / fastest of two}} where both ran."""
    found = {}
    for shape in data.get("shapes", []):
        valid = [v for v in shape.get("variants", []) if v.get("valid")]
        two = [v for v in valid if v.get("depth", 2) == 2]
        deeper = [v for v in valid if v.get("depth", 2) > 2]
        if two and deeper:
            found[f"{shape['rows']}x{shape['cols']}"] = {l2: min(v[l2] for v in deeper) / min(v[l2] for v in two)
                                                         for l2 in L2_STATES}
    return found


def pipelined_values(path: Path = PIPELINED_PROBE, depth_path: Path = DEPTH_PROBE) -> dict:
    """Glued strings: the GPU, how many shapes and variants, how many outputs were valid, whether the fastest variant
    ever beat the pick, per L2 state the range of its time over the pick's (with the shape where it came closest),
    and from the run with more buffers the range of its fastest deeper variant over the fastest of two buffers
    (both L2 states) and whether any of its variants beat the pick ("n/a" where that run's file is absent)."""
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
                                   f"it was faster than the pick at {faster} of {len(ratios)} shapes in an L2 state")
    depth = json.loads(Path(depth_path).read_text()) if Path(depth_path).exists() else {}
    deeper = deeper_over_two(depth)
    values["pipelined_deeper_shapes"] = str(len(deeper))
    values["pipelined_deeper"] = ratio_span([r[l2] for r in deeper.values() for l2 in L2_STATES]) if deeper else "n/a"
    beaten = sum(1 for r in over_pick(depth).values() if min(r.values()) < 1.0)
    values["pipelined_deeper_verdict"] = ("no variant of that run beat the pick either" if not beaten else
                                          f"variants of that run beat the pick at {counted(beaten, 'shape')}")
    for l2 in L2_STATES:
        values[f"pipelined_over_pick_{l2}"] = ratio_span([r[l2] for r in ratios.values()])
        closest = min(ratios, key=lambda shape: ratios[shape][l2])
        values[f"pipelined_closest_{l2}"] = f"{shape_label(closest)} ({ratio_number(ratios[closest][l2])})"
    return values


def schedule_floor(data: dict) -> dict:
    """{"<rows>x<cols>": {l2: the fastest variant's time over the copy ceiling}} of a pipeline-floor result."""
    found = {}
    for shape in data.get("shapes", []):
        variants = {name: ratios for name, ratios in shape.get("over_copy", {}).items() if name not in CEILINGS}
        if variants:
            found[f"{shape['rows']}x{shape['cols']}"] = {l2: min(r[l2] for r in variants.values()) for l2 in L2_STATES}
    return found


def later_probe_values(lag_path: Path = LAG_PROBE, gpipe_path: Path = GPIPE_PROBE,
                       floor_path: Path = SCHEDULE_FLOOR) -> dict:
    """Glued strings of the later probes: for the lagged rows ("lagged_*") and the pipelined split exchange
    ("gpipe_*"), how many shapes and valid variants, whether the fastest ever beat the pick, and per L2 state the
    range of its time over the pick's; for the schedule with nothing reduced ("schedule_floor_*"), how many shapes
    and per L2 state the range of its fastest variant's time over the copy, with the shape where it came closest."""
    values = {}
    for name, path, maker in (("lagged", lag_path, "tools/dev_lag.py"), ("gpipe", gpipe_path, "tools/dev_gpipe.py")):
        data = load(path, maker)
        ratios = over_pick(data)
        variants = [v for shape in data["shapes"] for v in shape.get("variants", [])]
        values[f"{name}_compared"] = str(len(ratios))
        values[f"{name}_valid"] = f"{sum(1 for v in variants if v.get('valid'))} of {len(variants)}"
        faster = sum(1 for r in ratios.values() if min(r.values()) < 1.0)
        values[f"{name}_verdict"] = ("never faster than the pick" if not faster else
                                     f"faster than the pick at {counted(faster, 'shape')} in an L2 state")
        for l2 in L2_STATES:
            values[f"{name}_over_pick_{l2}"] = ratio_span([r[l2] for r in ratios.values()])
    if not Path(floor_path).exists():
        raise FileNotFoundError(f"{floor_path}: the probe's result is missing (tools/dev_pipeline_floor.py makes it)")
    floor = schedule_floor(json.loads(Path(floor_path).read_text()))
    if not floor:
        raise ValueError(f"{floor_path}: no shape has a variant")
    values["schedule_floor_shapes"] = str(len(floor))
    for l2 in L2_STATES:
        values[f"schedule_floor_{l2}"] = ratio_span([r[l2] for r in floor.values()])
        closest = min(floor, key=lambda shape: floor[shape][l2])
        values[f"schedule_floor_closest_{l2}"] = f"{shape_label(closest)} ({ratio_number(floor[closest][l2])})"
    return values

"""What a read phase kept apart from a write phase costs by itself, for the page's account of the plane's misses.

A development probe (tools/dev_phase_floor.py, kernels in tools/dev_phase_floor.cu) timed, at a few sizes of x on
an H200, one wave of blocks that copy their part of x through shared memory: "phased_local" kernels, where each
block writes as soon as its own reads have landed, and "phased_grid" kernels, where every block first waits at a
grid-wide barrier for the slowest block's reads, as the blocks of a row spread over the whole GPU must before they
know its statistics; and "group<k>" kernels, where groups of k blocks wait for one another through a counter in
global memory ("group2": each block waits for one partner only). None reduces or exchanges anything. Its result is
committed as
evidence/development/phase_floor.json; this module reads it: per size, the faster block shape of each kind over
the copy ceiling, and their ranges over the sizes.
"""
from __future__ import annotations

from pathlib import Path

from launchlab.chapters.fusion import L2_STATES
from launchlab.chapters.fusion.page_format import ratio_span
from launchlab.chapters.fusion.probe_file import read_probe
from launchlab.store.evidence import REPO_ROOT

PHASE_FLOOR = REPO_ROOT / "evidence" / "development" / "phase_floor.json"
# kind: the probe's names that measure it (a kind measured with several block shapes takes the fastest)
KINDS = {"phased_local": ("phased_local_",), "phased_pair": ("group2",), "phased_grid": ("phased_grid_",)}


def load(path: Path = PHASE_FLOOR) -> dict:
    """The probe's result file; a clear error where it is missing or holds no size with every kind measured."""
    return read_probe(path, "the phase-floor probe's result", "tools/dev_phase_floor.py", floors,
                      f"no size has a measurement of each of {', '.join(KINDS)}")


def floors(data: dict) -> dict:
    """{size in MB: {kind: {l2: ratio to the copy}}} with, per kind, the faster of its block shapes (the lower of
    warm and cold each), for the sizes where every kind was measured."""
    found = {}
    for size, entry in data.get("sizes", {}).items():
        over = entry.get("over_copy", {})
        best = {}
        for kind, names in KINDS.items():
            shapes = [ratios for name, ratios in over.items()
                      if any(name == n or (n.endswith("_") and name.startswith(n)) for n in names)]
            if shapes:
                best[kind] = {l2: min(ratios[l2] for ratios in shapes) for l2 in L2_STATES}
        if len(best) == len(KINDS):
            found[int(size)] = best
    return dict(sorted(found.items()))


def phase_floor_values(path: Path = PHASE_FLOOR) -> dict:
    """Glued strings: the sizes ("4–28"), the GPU, and per kind and L2 state the range of its ratio to the copy."""
    data = load(path)
    by_size = floors(data)
    sizes = list(by_size)
    values = {"phase_floor_sizes_mb": f"{sizes[0]}–{sizes[-1]}" if len(sizes) > 1 else str(sizes[0]),
              "phase_floor_device": data.get("device", {}).get("name", "n/a")}
    for kind in KINDS:
        short = kind.split("_")[1]
        for l2 in L2_STATES:
            values[f"phase_floor_{short}_{l2}"] = ratio_span([by_size[s][kind][l2] for s in sizes])
    return values

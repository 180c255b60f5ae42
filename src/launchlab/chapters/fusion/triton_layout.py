"""Why the Triton kernel wins where it does, for the page's account of the libraries.

A development probe (tools/dev_triton_gap.py, its own kernel in tools/dev_triton_gap.cu) timed, at shapes drawn in
the region where the chapter's Triton kernel beat fused plain (hundreds to thousands of rows of a few hundred to
1,600 floats, one block per row), the Triton kernel beside the row kernel's registers-only builds and variants of them.
One variant gives the row kernel Triton's layout: thread t holds floats t, t + block, ... as 4-byte loads, so a
warp's load covers one 128-byte line, where the chapter's builds hold 16-byte chunks and a warp's load covers four.
Its result is committed as evidence/development/triton_gap_h100.json; this module reads it: per shape and L2 state
the fastest build of Triton's layout over the fastest of the chapter's ("base"), split into the shapes where the
layout gained and where it lost, how often Triton beat the chapter's fastest build, and Triton over the fastest
build of its layout there.
"""
from __future__ import annotations

from pathlib import Path

from launchlab.chapters.fusion import L2_STATES
from launchlab.chapters.fusion.page_format import ratio_span
from launchlab.chapters.fusion.probe_file import read_probe
from launchlab.store.evidence import REPO_ROOT

TRITON_LAYOUT = REPO_ROOT / "evidence" / "development" / "triton_gap_h100.json"
LAYOUT, CHUNKED = "scalar", "base"  # the probe's names of the two layouts


def load(path: Path = TRITON_LAYOUT) -> dict:
    """The probe's result file; a clear error where it is missing or no shape has both layouts and Triton."""
    return read_probe(path, "the Triton-layout probe's result", "tools/dev_triton_gap.py", comparisons,
                      f"no shape has a valid timing of Triton, the {CHUNKED} builds and the {LAYOUT} builds")


def comparisons(data: dict) -> list[dict]:
    """Per shape where all three were timed validly: {rows, cols, layout: {l2: fastest LAYOUT / fastest CHUNKED},
    triton: {l2: Triton / fastest CHUNKED}, triton_over_layout: {l2: Triton / fastest LAYOUT}}."""
    found = []
    for shape in data.get("shapes", []):
        valid = [v for v in shape.get("variants", []) if v.get("valid")]
        fastest = {}
        for kind in (LAYOUT, CHUNKED, "triton"):
            times = [v for v in valid if v.get("variant") == kind]
            if times and all(l2 in v for v in times for l2 in L2_STATES):
                fastest[kind] = {l2: min(v[l2] for v in times) for l2 in L2_STATES}
        if len(fastest) == 3:
            found.append({"rows": shape["rows"], "cols": shape["cols"],
                          "layout": {l2: fastest[LAYOUT][l2] / fastest[CHUNKED][l2] for l2 in L2_STATES},
                          "triton": {l2: fastest["triton"][l2] / fastest[CHUNKED][l2] for l2 in L2_STATES},
                          "triton_over_layout": {l2: fastest["triton"][l2] / fastest[LAYOUT][l2] for l2 in L2_STATES}})
    return found


def _cols_span(points: list[dict]) -> str:
    low, high = min(p["cols"] for p in points), max(p["cols"] for p in points)
    return f"{low:,}" if low == high else f"{low:,}–{high:,}"


def triton_layout_values(path: Path = TRITON_LAYOUT) -> dict:
    """Glued strings: the GPU, the shapes, and, warm, the layout's ratio and row lengths where it gained and where it
    lost ("n/a" for a side with no shape), its range cold, the shapes where Triton beat the chapter's fastest build
    warm and Triton over the fastest build of its layout at those ("n/a" where there are none)."""
    data = load(path)
    points = comparisons(data)
    values = {"triton_layout_device": data.get("device", "n/a"), "triton_layout_shapes": str(len(points)),
              "triton_layout_rows": f"{min(p['rows'] for p in points):,}–{max(p['rows'] for p in points):,}",
              "triton_layout_cold": ratio_span([p["layout"]["cold"] for p in points]),
              "triton_layout_triton_wins_warm": str(sum(p["triton"]["warm"] < 1 for p in points))}
    wins = [p["triton_over_layout"]["warm"] for p in points if p["triton"]["warm"] < 1]
    values["triton_layout_against_layout_warm"] = ratio_span(wins) if wins else "n/a"
    for side, keep in (("gain", lambda r: r < 1), ("loss", lambda r: r >= 1)):
        chosen = [p for p in points if keep(p["layout"]["warm"])]
        values[f"triton_layout_{side}_warm"] = ratio_span([p["layout"]["warm"] for p in chosen]) if chosen else "n/a"
        values[f"triton_layout_{side}_cols"] = _cols_span(chosen) if chosen else "n/a"
    return values

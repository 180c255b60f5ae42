"""Chapter 3's random plane in words and tables: the glued values the prose uses, the targets table, the per-point
table of the data page (with its CSV of raw numbers), and the interactive map (an inline SVG whose points carry
their figures as hover titles, enhanced by book/_static/planemap.js where scripts run)."""
from __future__ import annotations

import math

from launchlab.chapters.fusion import L2_STATES, LIBRARIES, label
from launchlab.chapters.fusion.page_format import (design_label, fmt, listing, page_table, percent, ratio_number,
                                                   shape_label, verdict_text)
from launchlab.chapters.fusion.page_model import leaning_text
from launchlab.chapters.fusion.page_plane import best_library_ratio, copy_ratio, plane_of
from launchlab.chapters.fusion.plane import BANDWIDTH_COPY_US, PLANE_SEED
from launchlab.present.replicas import joined, replicates_of, replicates_subject

WORST_SHOWN = 3
STATISTIC_WORDS = {"geomean": "geometric mean", "p90": "p90", "max": "max", "median": "median", "share": "share",
                   "min": "smallest"}


def _statistic(entry: dict | None, which: str, unit: str = "") -> tuple[str, str]:
    """(value, "[low–high]") of a bootstrapped statistic for the prose; ("n/a", "(no interval)") where it is absent."""
    found = (entry or {}).get(which)
    if not found:
        return "n/a", "(no interval)"
    return f"{found['value']:.2f}{unit}", f"[{found['ci_low']:.2f}–{found['ci_high']:.2f}]"


def summary_values(plane: dict, l2: str) -> dict:
    """The plane's statistics in one L2 state, formatted: plane_<name>_<l2> (and _ci, _at)."""
    s, values = plane.get(l2), {}
    if not s:
        return values
    for key, short in (("fused_plain_over_copy", "plain"), ("fused_rms_over_copy", "rms")):
        for which in ("geomean", "p90"):
            values[f"plane_{short}_{which}_{l2}"], values[f"plane_{short}_{which}_{l2}_ci"] = _statistic(s[key], which)
        worst = s[key].get("max")
        values[f"plane_{short}_max_{l2}"] = "n/a" if not worst else ratio_number(worst["value"])
        values[f"plane_{short}_max_{l2}_at"] = "n/a" if not worst else shape_label(worst["shape"])
    for which in ("median", "p90"):
        values[f"plane_minus_{which}_{l2}"], values[f"plane_minus_{which}_{l2}_ci"] = _statistic(
            s["fused_plain_minus_copy_us"], which)
    floor = s["floor"]["max"]
    values[f"plane_floor_max_{l2}"] = "n/a" if not floor else ratio_number(floor["value"])
    values[f"plane_floor_max_{l2}_at"] = "n/a" if not floor else shape_label(floor["shape"])
    values[f"plane_bandwidth_points_{l2}"] = str(s["regimes"]["bandwidth"])
    values[f"plane_latency_points_{l2}"] = str(s["regimes"]["latency"])
    for lib in LIBRARIES:
        entry = s["libraries"][lib]
        values[f"plane_{lib}_faster_{l2}"] = ("no" if not entry["points"] else
                                             f"{entry['fused_faster']} of {entry['points']}")
        values[f"plane_{lib}_worst_{l2}"] = "n/a" if not entry["points"] else ratio_number(entry["worst"]["value"])
        values[f"plane_{lib}_worst_{l2}_at"] = "n/a" if not entry["points"] else shape_label(entry["worst"]["shape"])
    model = s["model"]
    values[f"plane_model_{l2}"] = ("not run: the run's plans carry no prediction" if not model["points"] else
                                   f"{percent(model['median'])} at the median and {percent(model['p90'])} at p90 "
                                   f"over {model['points']} points (worst {percent(model['worst']['value'])} at "
                                   f"{shape_label(model['worst']['shape'])})")
    copies = s["copies"]
    values[f"plane_copy_kernel_ceiling_{l2}"] = str(copies["ceiling"].get("copy4", 0))
    slower = copies.get("slower_over_ceiling")
    values[f"plane_slower_copy_max_{l2}"] = "n/a" if not slower else ratio_number(slower["max"]["value"])
    values[f"plane_slower_copy_max_{l2}_at"] = "n/a" if not slower else shape_label(slower["max"]["shape"])
    return values


SUBJECTS = {"fused_plain_over_copy": "fused plain ÷ copy", "fused_rms_over_copy": "fused RMS ÷ copy",
            "fused_plain_minus_copy_us": "the time added in the latency regime", "floor": "the floor class's ratio",
            "model": "the model's error"}
STATISTIC_PROSE = {"geomean": "geometric mean", "p90": "p90", "max": "worst point", "median": "median"}


def _subject(target: dict) -> tuple[str, str | None]:
    """(what a target is about, its statistic) in the prose's words; a library's targets have no statistic."""
    key = target["key"]
    if key.startswith("faster_than."):
        return f"the share of points faster than {label(key.split('.')[1])}", None
    if key.startswith("worst_library_ratio."):
        return f"the smallest {label(key.split('.')[1])} ÷ fused plain", None
    return SUBJECTS.get(key, key), STATISTIC_PROSE.get(target["statistic"], target["statistic"])


def target_verdicts(plane: dict) -> str:
    """Which declared plane targets held warm and cold, warm only or cold only, and which missed in both, in words
    (the data page's table gives each figure beside its threshold)."""
    met: dict[tuple, dict[str, bool | None]] = {}
    for target in plane.get("targets", []):
        met.setdefault(_subject(target), {})[target["l2"]] = target["met"]
    groups: dict[str, dict[str, list]] = {}
    for (subject, statistic), by_l2 in met.items():
        warm, cold = by_l2.get("warm"), by_l2.get("cold")
        verdict = ("not measured" if warm is None and cold is None else "met warm and cold" if warm and cold else
                   "met warm only" if warm else "met cold only" if cold else "missed warm and cold")
        groups.setdefault(verdict, {}).setdefault(subject, []).append(statistic)
    order = ("met warm and cold", "met warm only", "met cold only", "missed warm and cold", "not measured")
    parts = []
    for verdict in (v for v in order if v in groups):
        items = [subject if statistics == [None] else f"{subject} ({listing([s for s in statistics if s])})"
                 for subject, statistics in groups[verdict].items()]
        parts.append(f"{verdict[0].upper()}{verdict[1:]}: {listing(items)}.")
    return " ".join(parts) if parts else "This run declared no plane targets."


def targets_met(plane: dict, l2: str) -> str:
    """"6 of 15": of the plane's measured targets in one L2 state, how many this run met."""
    measured = [t for t in plane.get("targets", []) if t["l2"] == l2 and t["met"] is not None]
    if not measured:
        return "none (no target could be measured)"
    return f"{sum(1 for t in measured if t['met'])} of {len(measured)}"


def library_counts(plane: dict, l2: str) -> str:
    """One sentence: at how many points fused plain was faster than each library that ran (interval above 1), with
    the ties and losses where there were any."""
    s = plane.get(l2) or {}
    found = []
    for lib in LIBRARIES:
        entry = (s.get("libraries") or {}).get(lib)
        if not entry or not entry["points"]:
            continue
        rest = [f"{n} {word}" for n, word in ((entry["ties"], "tied"), (entry["fused_slower"], "slower")) if n]
        found.append(f"{label(lib)} at {entry['fused_faster']} of {entry['points']} points"
                     + (f" ({', '.join(rest)})" if rest else ""))
    if not found:
        return f"{l2.capitalize()}, no library ran at the plane's points."
    return f"{l2.capitalize()}, fused plain was faster than {listing(found)}."


def target_name(target: dict) -> str:
    key = target["key"]
    if key.startswith("faster_than."):
        return f"faster than {label(key.split('.')[1])} (share of points)"
    if key.startswith("worst_library_ratio."):
        return f"{label(key.split('.')[1])} ÷ fused plain, smallest"
    words = {"fused_plain_over_copy": "fused plain ÷ copy", "fused_rms_over_copy": "fused RMS ÷ copy",
             "fused_plain_minus_copy_us": "fused plain − copy (µs)", "floor": "floor class, fused plain ÷ copy",
             "model": "model error"}[key]
    return f"{words}, {STATISTIC_WORDS[target['statistic']]}"


def _in_percent(target: dict) -> bool:
    """A share of points and the model's error read as percentages."""
    return target["key"].startswith("faster_than.") or target["key"] == "model"


def _number(target: dict, value: float) -> str:
    """A target's figure for the table: a share or an error in percent (a no-break space keeps "%" beside its
    number), else a ratio."""
    return percent(value) if _in_percent(target) else f"{value:.2f}"


def _measured(target: dict) -> str:
    return _number(target, target["measured"]) + (f" (at {shape_label(target['shape'])})" if target.get("shape") else "")


def _threshold(target: dict) -> str:
    return f"{target['sense']} {_number(target, target['threshold'])}"


def worst_points(plane: dict, l2: str, count: int = WORST_SHOWN) -> str:
    """The `count` points farthest above the copy (by ratio in the bandwidth regime, by µs in the latency regime),
    with their design and, for the floor class, why it is there."""
    found = []
    for p in plane["points"]:
        if p["regime"].get(l2) == "bandwidth" and copy_ratio(p, l2) is not None:
            found.append((copy_ratio(p, l2) - 1, f"{shape_label(p['shape'])} ({design_label(p['design'])}"
                          f", {ratio_number(copy_ratio(p, l2))}× the copy's {fmt(p['ceiling'][l2]['us'])} µs"
                          + (f"; floor class: {p['floor']}" if p["floor"] else "") + ")"))
        elif l2 in p["minus_copy_us"]:
            found.append((p["minus_copy_us"][l2] / BANDWIDTH_COPY_US,
                          f"{shape_label(p['shape'])} ({design_label(p['design'])}, "
                          f"{fmt(p['minus_copy_us'][l2])} µs over the copy's {fmt(p['ceiling'][l2]['us'])} µs, "
                          f"{ratio_number(copy_ratio(p, l2))}×)" if copy_ratio(p, l2) is not None else
                          f"{shape_label(p['shape'])} ({design_label(p['design'])}, "
                          f"{fmt(p['minus_copy_us'][l2])} µs over the copy's {fmt(p['ceiling'][l2]['us'])} µs)"))
    found.sort(key=lambda item: -item[0])
    return listing([text for _, text in found[:count]])


# The plane's figures a replicate is compared on: headline key (per L2 state), words, unit.
REPLICATED = (("plane.fused_plain_over_copy.geomean", "the bandwidth regime's geometric mean of fused plain ÷ copy", ""),
              ("plane.fused_plain_minus_copy_us.median", "the latency regime's median time added", " µs"),
              ("plane.worst_library_ratio.cudnn", "the smallest cuDNN ÷ fused plain ratio", ""))


def replicate_sentence(run, brief: bool = False) -> str:
    """How the plane's main figures came out in this run's replicates (same chapter, re-executed), warm and cold,
    and the largest change between runs; brief: the largest change alone (the chapter; the data page gives each
    figure). A run without replicates says its variation was not measured."""
    others = replicates_of(run)
    if not others:
        return "This run has no replicate, so how much the plane's figures vary between runs was not measured."
    parts, changes = [], []
    for key, words, unit in REPLICATED:
        here = [run.headline.get(f"{key}.{l2}") for l2 in L2_STATES]
        found = [[r.headline.get(f"{key}.{l2}") for r in others] for l2 in L2_STATES]
        if any(v is None for v in here) or any(v is None for values in found for v in values):
            continue
        shown = [joined([f"{v:.2f}{unit}" for v in values]) for values in found]
        parts.append(f"{words} at {shown[0]} warm and {shown[1]} cold ({here[0]:.2f}{unit} and {here[1]:.2f}{unit} "
                     "here)")
        changes += [(abs(v / h - 1.0), words, l2) for h, values, l2 in zip(here, found, L2_STATES) for v in values if h]
    if not parts:
        return "This run's replicates hold none of the plane's figures."
    who = replicates_subject(len(others))
    ids = joined([r.run_id for r in others])
    largest, words, l2 = max(changes)
    if brief:
        return (f"{who}, {ids}, moved the plane's main figures by at most {percent(largest, 1)}, in {words} "
                f"({l2} L2).")
    return (f"{who}, {ids}, measured {joined(parts)}. The largest "
            f"change between the runs was {percent(largest, 1)}, in {words} ({l2} L2).")


def plane_values(run) -> dict:
    """Every glued name of the plane's prose; "n/a" where this run has no plane."""
    plane = plane_of(run)
    values = {"plane_points": str(len(plane["points"])), "plane_rounds": str(plane.get("rounds") or "n/a"),
              "plane_seed": str(run.record.parameters.get("plane_seed", PLANE_SEED)),
              "plane_floor_points": str(sum(1 for p in plane["points"] if p["floor"])),
              "plane_bandwidth_us": f"{BANDWIDTH_COPY_US:g}",
              "plane_designs": listing([f"{design_label(d)} to {n} {'point' if n == 1 else 'points'}" if i == 0 else
                                        f"{design_label(d)} to {n}"
                                        for i, (d, n) in enumerate(_design_counts(plane).items())]),
              "plane_replicates": replicate_sentence(run, brief=True),
              "plane_replicates_full": replicate_sentence(run), "plane_model_leaning": leaning_text(plane),
              "plane_skipped": skipped_sentence(run), "plane_target_verdicts": target_verdicts(plane)}
    for l2 in L2_STATES:
        values.update(summary_values(plane, l2))
        values[f"plane_targets_{l2}"] = targets_met(plane, l2)
        values[f"plane_library_counts_{l2}"] = library_counts(plane, l2)
        values[f"plane_worst_{l2}"] = worst_points(plane, l2) if plane["points"] else "n/a"
    return values


def _design_counts(plane: dict) -> dict:
    counts = {}
    for p in plane["points"]:
        counts[p["design"]] = counts.get(p["design"], 0) + 1
    return counts


def plane_default_names() -> list[str]:
    """The names plane_values gives a run with a plane: a run without one gets them as "n/a"."""
    names = []
    for l2 in L2_STATES:
        for short in ("plain", "rms"):
            names += [f"plane_{short}_{w}_{l2}{x}" for w in ("geomean", "p90") for x in ("", "_ci")]
            names += [f"plane_{short}_max_{l2}", f"plane_{short}_max_{l2}_at"]
        names += [f"plane_minus_{w}_{l2}{x}" for w in ("median", "p90") for x in ("", "_ci")]
        names += [f"plane_floor_max_{l2}", f"plane_floor_max_{l2}_at", f"plane_bandwidth_points_{l2}",
                  f"plane_latency_points_{l2}", f"plane_model_{l2}", f"plane_copy_kernel_ceiling_{l2}",
                  f"plane_slower_copy_max_{l2}", f"plane_slower_copy_max_{l2}_at"]
        for lib in LIBRARIES:
            names += [f"plane_{lib}_faster_{l2}", f"plane_{lib}_worst_{l2}", f"plane_{lib}_worst_{l2}_at"]
    return names


# ---------------------------------------------------------------- tables
def plane_targets_table(run):
    """The declared plane targets, warm and cold: threshold, this run's figure, where, verdict."""
    rows = [{"target": target_name(t), "L2": t["l2"], "threshold": _threshold(t),
             "measured": "n/a" if t["measured"] is None else _measured(t), "verdict": verdict_text(t["met"]).replace(
                 "library absent", "not run")} for t in plane_of(run).get("targets", [])]
    rows = rows or [{"target": "this run has no random plane", "L2": "n/a"}]
    return page_table(rows, index=["target", "L2"], caption="The plane's declared targets",
                      note="Bandwidth regime: the copy ceiling takes at least 10 µs; latency regime: less. The max "
                           "targets leave out the floor class, which has its own.")


DESIGN_SHORT = {"narrow": "narrow rows", "row": "block per row", "cluster": "cluster per row", "split": "split rows"}


def plane_rows(run) -> list[dict]:
    """One row per plane point: its design, the fused kernels' ratios to the copy ceiling and fused plain's to the
    fastest library that ran, warm and cold, and the libraries that did not run there with the reason (the times
    and predictions of every point are in the run's summaries.json, under "plane")."""
    rows = []
    for p in plane_of(run)["points"]:
        row = {"shape": shape_label(p["shape"]), "design": DESIGN_SHORT.get(p["design"], p["design"])}
        for l2 in L2_STATES:
            row[f"plain ÷ copy {l2}"] = p["ratios"].get("fused_plain_over_copy", {}).get(l2)
            row[f"RMS ÷ copy {l2}"] = p["ratios"].get("fused_rms_over_copy", {}).get(l2)
        for l2 in L2_STATES:
            best = best_library_ratio(p, l2)
            row[f"plain ÷ best library {l2}"] = best
        if any(q.get("skipped") for q in plane_of(run)["points"]):   # the column only where some library was skipped
            row["libraries not run"] = "; ".join(f"{label(lib)}: {why}" for lib, why in p["skipped"].items()) or "—"
        rows.append(row)
    return rows


def skipped_sentence(run) -> str:
    """Whether every library ran at every plane point, or where the table says why one did not."""
    if any(p.get("skipped") for p in plane_of(run)["points"]):
        return "A library that did not run at a point is named in the last column, with the reason."
    return "Every library ran at every point."


def plane_table(run):
    """Every plane point (the data page; its CSV holds the raw numbers)."""
    rows = plane_rows(run) or [{"shape": "this run has no random plane"}]
    return page_table(rows, index=["shape"], caption="Every point of the plane",
                      formats={f"plain ÷ best library {l2}": "ratio" for l2 in L2_STATES},
                      note="Device time per call over the copy ceiling's: warm L2 from a graph of many calls, cold L2 "
                           "from one call after the flush; ratios paired per round, median [95 % interval]. Fused "
                           "plain ÷ best library: over the fastest library that ran at the point, from the medians "
                           "(below 1, fused plain was faster). Each point's times and predictions are in the run's "
                           "summaries.json.",
                      csv="fusion-plane",
                      max_rows=20)


# ---------------------------------------------------------------- the interactive map
def _colour(ratio: float | None) -> str:
    """The map's colour of a ratio (the static map's colour map), on a log scale saturating at RATIO_SPAN's end."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    from launchlab.chapters.fusion.page_plane import CMAP, RATIO_SPAN

    if ratio is None:
        return "#cccccc"
    scaled = 0.5 + 0.5 * max(-1.0, min(1.0, math.log(ratio) / math.log(RATIO_SPAN[1])))
    return to_hex(colormaps[CMAP](scaled))


def map_points(run) -> list[dict]:
    """What the interactive map shows per point and L2 state: position, colour and the hover text."""
    found = []
    for p in plane_of(run)["points"]:
        states = {}
        for l2 in L2_STATES:
            plain, rms, library = copy_ratio(p, l2), copy_ratio(p, l2, "fused_rms_over_copy"), best_library_ratio(p, l2)
            text = (f"{shape_label(p['shape'])} · {design_label(p['design'])} · {l2} L2\n"
                    f"fused plain ÷ copy {'n/a' if plain is None else ratio_number(plain)}, fused RMS ÷ copy "
                    f"{'n/a' if rms is None else ratio_number(rms)}, fused plain ÷ best library "
                    f"{'n/a' if library is None else ratio_number(library)}")
            states[f"{l2} L2"] = {"colour": _colour(plain), "text": text}
        found.append({"x": p["cols"], "y": p["rows"], "states": states})
    return found


def interactive_map(run, script: str | None = None) -> str:
    """The plane as a hover map (present/hovermap.py): log row length across, log rows up, one circle per point
    coloured by fused plain ÷ copy, warm and cold L2 switched by book/_static/planemap.js. The static map is the
    fallback."""
    from launchlab.present import hovermap

    points = map_points(run)
    if not points:
        return "<p>No plane in this run.</p>"
    from launchlab.chapters.fusion.page_plane import RATIO_SPAN

    span = RATIO_SPAN[1]
    # five stops evenly spaced on the log scale follow the colour map; the middle and the ends carry labels
    key = [(f"{ratio:g}×" if k in (0, 2, 4) else "", _colour(ratio))
           for k, ratio in enumerate((1 / span, span ** -0.5, 1.0, span ** 0.5, span))]
    return hovermap.html(points, "row length (floats, log scale)", "rows (log scale)",
                         tuple(f"{l2} L2" for l2 in L2_STATES),
                         intro=f"Hover over a point for its shape, design and ratios. Colour: fused plain ÷ copy "
                               f"ceiling, purple below 1, white at 1, orange above (log scale, saturating at {span:g}× "
                               "either way).",
                         label="Interactive map of fused plain over copy on the plane", script=script, key=key)

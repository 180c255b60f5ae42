"""Chapter 4's page on the flow kernel, hand-offs and the chain: values, tables and the chain's figure, formatted
from the findings summary.py computed (findings.py); nothing here decides a verdict the summaries do not hold."""
from __future__ import annotations

import numpy as np

from launchlab.chapters.megakernels import DESIGN
from launchlab.chapters.megakernels.findings import CHAIN_MEGAKERNEL, CHAIN_PDL, HANDOFF_TARGET_US, SPEEDUP_TARGETS
from launchlab.chapters.megakernels.page_tables import _places, _us
from launchlab.chapters.megakernels.page_words import ratio_words
from launchlab.measure.variant import VariantId


def _beats(ratio: dict) -> str:
    """'beats', 'loses to' or 'ties with', by the chapter's one rule (page_words.standing): a median within 2 % of
    1 is a tie whatever its interval, otherwise the 95 % interval decides (an interval holding 1 is a tie)."""
    from launchlab.chapters.megakernels.page_words import standing

    return {"faster": "beats", "slower": "loses to"}.get(standing(ratio), "ties with")


def _design_name(variant: str) -> str:
    from launchlab.chapters.megakernels.page_words import name

    return name(variant.split(".")[0])


def flow_values(run) -> dict:
    """Glued values: the best tiled persistent design per case and its target, hand-offs before (the dependency
    kernel) and after (the flow kernels), the trace writes' cost, the chain's verdicts."""
    s, values = run.summaries, {}
    for case, best in s.get("best_tiled_persistent", {}).items():
        name = VariantId.parse(best["variant"]).target
        values[f"tiled_best_{case}"] = DESIGN[name].label
        threshold = SPEEDUP_TARGETS.get(f"best_tiled_persistent.{case}", 1.0)
        values[f"tiled_best_ratio_{case}"] = ratio_words(best, threshold)
        values[f"tiled_best_verdict_{case}"] = _beats(best)
        target = s.get("targets", {}).get(f"best_tiled_persistent.{case}")
        if target:
            values[f"tiled_target_{case}"] = "met" if target["met"] else "missed"
    values["tiled_target"] = f"{SPEEDUP_TARGETS['best_tiled_persistent.balanced']:.2f}×"
    values["handoff_target"] = f"{HANDOFF_TARGET_US:g} µs"
    for variant, gaps in s.get("handoff", {}).items():
        design, case, _ = variant.split(".")
        values[f"handoff_{design}_{case}"] = _us(gaps["sm"]["median"])
        values[f"handoff_p90_{design}_{case}"] = _us(gaps["sm"]["p90"])
        values[f"worker_gap_{design}_{case}"] = _us(gaps["worker"]["median"])
    for variant, cost in s.get("trace_cost", {}).items():
        design, case, _ = variant.split(".")
        values[f"trace_cost_{design}_{case}"] = f"{cost['cost_us']:.2f}"
        values[f"trace_cost_share_{design}_{case}"] = f"{100 * cost['cost_fraction']:.0f} %"
    negative = [(variant, cost) for variant, cost in s.get("trace_cost", {}).items() if cost["cost_us"] < 0]
    values["negative_trace_cost_sentence"] = "Every trace cost is positive: the probes slow each kernel." if not negative else (
        "A negative trace cost means the traced build replayed faster than the timed one: "
        + "; ".join(f"the {_design_name(v)} on the {v.split('.')[1]} case by {-c['cost_us']:.2f} µs" for v, c in negative)
        + ". The probes change the compiled kernel as well as adding stores, and this run does not show why that "
        "build ran faster there; the traces' times are those of the instrumented kernels, never the timed ones.")
    values.update(chain_values(s))
    from launchlab.chapters.megakernels import CHAPTER, chain_model

    values["chain_stages_run"] = ", ".join(str(k) for k in sorted(set(CHAPTER.parameters_of(run.record).chain_stages)))
    values["chain_rtol"] = f"{chain_model.CHAIN_TOLERANCE.rtol:g}"
    values["chain_max_stages"] = str(chain_model.MAX_STAGES)
    launched = run.record.details.get("design_launches", {})
    flow = next((fact for vid, fact in launched.items() if vid.startswith("flow.")), None)
    if flow and "resident_blocks_per_sm" in flow:
        values["flow_workers_per_sm"] = str(flow["resident_blocks_per_sm"])
    return values


def chain_values(s: dict) -> dict:
    values = {}
    for suffix in ("", "_cold"):
        for case, k in s.get(f"megakernel_pays_at_k{suffix}", {}).items():
            values[f"pays_at_k{suffix}_{case}"] = f"k = {k}" if k else "at no k measured"
    for case, by_k in s.get("chain", {}).items():
        for k, contenders in by_k.items():
            mega = contenders.get(CHAIN_MEGAKERNEL, {})
            for key, other in (("vs_pdl", "pdl"), ("vs_fused", "fused")):
                if key in mega:
                    values[f"chain_{other}_{case}_{k}"] = ratio_words(mega[key])
                    values[f"chain_{other}_verdict_{case}_{k}"] = _beats(mega[key])
    values["chain_sentence"] = chain_sentence(s)
    values["chain_brief"] = chain_brief(s)
    return values


def chain_brief(s: dict) -> str:
    """Per case, in a clause: where the whole-chain megakernel pays by the page's rule, and at the longest chain how
    it stands against the chained fused row kernel where it does not beat it ('level with it', 'it stays faster')."""
    parts = []
    for case in s.get("chain", {}):
        k = pays_at(s, case)
        longest, mega = at_longest(s, case)
        fused = mega.get("vs_fused")
        stand = {"loses to": "the chained fused row kernel stays faster",
                 "ties with": "it runs level with the chained fused row kernel"}.get(_beats(fused) if fused else "")
        parts.append(f"on the {case} case it pays {f'from k = {k}' if k else 'at no k measured'}"
                     + (f" ({stand} at k = {longest[1:]})" if stand else ""))
    return "; ".join(parts) if parts else "this run has no chain"


def at_longest(s: dict, case: str) -> tuple[str, dict]:
    """The longest chain measured for a case ("k16") and the whole-chain megakernel's ratios there."""
    longest = max(s["chain"][case], key=lambda key: int(key[1:]))
    return longest, s["chain"][case][longest].get(CHAIN_MEGAKERNEL, {})


def pays_at(s: dict, case: str, suffix: str = "") -> int | None:
    """The least stage count k at which the whole-chain megakernel beats both the PDL graph and the chained fused
    row kernel by the page's rule (_beats), or None."""
    paying = [int(k[1:]) for k, contenders in s.get(f"chain{suffix}", s.get("chain", {})).get(case, {}).items()
              if all(_beats(contenders.get(CHAIN_MEGAKERNEL, {}).get(key, {"median": 1.0, "ci_low": 1.0, "ci_high": 1.0}))
                     == "beats" for key in ("vs_pdl", "vs_fused"))]
    return min(paying) if paying else None


def chain_sentence(s: dict) -> str:
    """Per case, where the whole-chain megakernel pays (warm and cold said once where they agree), and at the
    longest chain what it beats and what it does not, with the declared k = 16 target beside the PDL ratio."""
    parts = []
    for case, by_interval in s.get("megakernel_pays_at_k", {}).items():
        k, cold, by_interval = pays_at(s, case), pays_at(s, case, "_cold"), by_interval or None   # 0: at no k
        where = f"pays from k = {k}" if k else "pays at none of the k measured"
        if cold != k:
            where += f" warm and {'from k = ' + str(cold) if cold else 'at none'} cold"
        else:
            where += ", warm and cold"
        if by_interval != k:   # the run's summary reads the intervals alone; the page also counts a tie
            where += (f" (by the 95 % intervals alone it pays {'from k = ' + str(by_interval) if by_interval else 'at none'}"
                      ", but a margin under 2 % is a tie here)")
        longest, mega = at_longest(s, case)
        target = s.get("targets", {}).get(f"chain_{longest}_vs_pdl.{case}")
        detail = ""
        if "vs_pdl" in mega and "vs_fused" in mega:
            pdl = ratio_words(mega["vs_pdl"], target["target"] if target else 1.0)
            aim = (f", {'reaching' if target['met'] else 'short of'} the {target['target']:.2f}× target" if target
                   else "")
            fused = {"beats": "ahead of", "loses to": "behind", "ties with": "level with"}[_beats(mega["vs_fused"])]
            detail = (f": at k = {longest[1:]} it runs {pdl} as fast as the PDL graph{aim}, and is {fused} the "
                      f"chained fused row kernel ({ratio_words(mega['vs_fused'])})")
        parts.append(f"on the {case} case the whole-chain megakernel {where}{detail}")
    if not parts:
        return "This run has no chain."
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "."


def handoff_table(run):
    """Per persistent design and case: SM-idle gaps (median, p90) measured and in the model's replay, the gaps per
    worker, and the trace writes' cost (µs)."""
    import pandas as pd

    s, rows = run.summaries, []
    for variant, gaps in s.get("handoff", {}).items():
        vid = VariantId.parse(variant)
        cost = s.get("trace_cost", {}).get(variant)
        model_sm, model_worker = gaps.get("model_sm") or {}, gaps.get("model_worker") or {}
        rows.append({"case": vid.case, "design": DESIGN[vid.target].label,
                     "SM idle, median (µs)": _us(gaps["sm"]["median"]), "SM idle, p90 (µs)": _us(gaps["sm"]["p90"]),
                     "model SM idle, median / p90 (µs)": (f"{_us(model_sm['median'])} / {_us(model_sm['p90'])}"
                                                          if model_sm else "—"),
                     "worker gap, median (µs)": _us(gaps["worker"]["median"]),
                     "model worker gap (µs)": _us(model_worker["median"]) if model_worker else "—",
                     "trace cost (µs)": f"{cost['cost_us']:.2f}" if cost else "—"})
    return pd.DataFrame(rows).set_index(["case", "design"]) if rows else pd.DataFrame()


def chain_table(run):
    """Per case, k and contender: warm and cold time, and the speed-ups over the PDL graph and the chained fused
    row kernel (median [95 % interval])."""
    import pandas as pd

    from launchlab.present import tables

    s, rows = run.summaries, []
    places = {key: max((_places(ratios[key]) for by_k in s.get("chain", {}).values() for contenders in by_k.values()
                        for ratios in contenders.values() if key in ratios), default=2) for key in ("vs_pdl", "vs_fused")}

    def cell(ratios: dict, key: str) -> str:
        return tables.median_with_band(ratios[key], tables.CI, digits=places[key]) if key in ratios else "1"

    for case, by_k in s.get("chain", {}).items():
        for k in sorted(by_k, key=lambda key: int(key[1:])):
            for name, ratios in by_k[k].items():
                vid = f"{name}_{k}.{case}.graph"
                timing = s["timing"].get(vid, {})
                cold = timing.get("cold", {}).get("event_us")
                rows.append({"case": case, "k": int(k[1:]), "contender": DESIGN[name].label,
                             "warm (µs)": f"{timing['warm_batch']['event_us']['median']:.1f}",
                             "cold (µs)": f"{cold['median']:.1f}" if cold else "—",
                             "vs PDL graph (×)": cell(ratios, "vs_pdl"), "vs chained fused (×)": cell(ratios, "vs_fused")})
    return pd.DataFrame(rows).set_index(["case", "k", "contender"]) if rows else pd.DataFrame()


def target_words(name: str) -> str:
    """A target's summary path in words: 'best_one_launch.ragged' -> 'best one-launch design, ragged case'."""
    from launchlab.chapters.megakernels.page_words import name as design_name

    kind, _, rest = name.partition(".")
    if kind == "handoff":
        design, case, _ = rest.split(".")
        return f"SM idle between tasks, {design_name(design)}, {case} case"
    words = {"best_one_launch": "best one-launch design", "best_tiled_persistent": "best persistent kernel",
             "chain_k16_vs_pdl": "chain of 16 stages, megakernel over the PDL graph"}
    return f"{words.get(kind, kind.replace('_', ' '))}, {rest} case"


def targets_table(run):
    """The issue's benchmark targets: value, threshold, met or missed (a speed-up counts only with its whole
    interval at or above the threshold)."""
    import pandas as pd

    rows = []
    for name, target in run.summaries.get("targets", {}).items():
        value = (f"{target['value']:.2f}× [low {target['ci_low']:.2f}]" if "ci_low" in target
                 else f"{target['value']:.2f} µs")
        threshold = f"≥ {target['target']:.2f}×" if "ci_low" in target else f"≤ {target['target']:g} µs"
        rows.append({"target": target_words(name), "value": value, "threshold": threshold,
                     "verdict": "met" if target["met"] else "missed"})
    return pd.DataFrame(rows).set_index("target") if rows else pd.DataFrame()


def handoff_figure(run):
    """Per persistent design and case, the gaps between a worker's consecutive tasks: measured (box p25–p75,
    whiskers p10–p90, dot the median) beside the schedule model's replay (hollow marks at the same quantiles)."""
    from launchlab.present import figures

    from launchlab.chapters.megakernels.page_tables import cases as tiled_cases

    handoffs = run.summaries["handoff"]
    cases = [case for case in tiled_cases(run) if any(VariantId.parse(v).case == case for v in handoffs)]
    fig, axes = figures.figure(1, len(cases), height=3.4, layout="constrained")
    for column, case in enumerate(cases):
        ax = axes[0, column]
        mine = [(VariantId.parse(v).target, gaps) for v, gaps in handoffs.items() if VariantId.parse(v).case == case]
        for row, (name, gaps) in enumerate(mine):
            for offset, quantiles, style in ((-0.15, gaps["worker"], "measured"), (0.15, gaps["model_worker"], "model")):
                if not quantiles:
                    continue
                y = row + offset
                hollow = style == "model"
                colour = figures.COLOURS[1 if hollow else 0]
                ax.plot([quantiles["p10"] / 1e3, quantiles["p90"] / 1e3], [y, y], color=colour, linewidth=1)
                ax.plot([quantiles["p25"] / 1e3, quantiles["p75"] / 1e3], [y, y], color=colour, linewidth=5,
                        alpha=0.5)
                ax.plot(quantiles["median"] / 1e3, y, "o", color=colour, markerfacecolor="white" if hollow else colour,
                        label=(f"{style} (median, p25–p75, p10–p90)" if row == 0 else None))
        ax.set_yticks(range(len(mine)), [DESIGN[name].label for name, _ in mine])
        ax.invert_yaxis()
        ax.set_xlabel("gap between a worker's tasks (µs)")
        ax.set_title(f"{case} case")
        ax.grid(axis="x", alpha=0.3)
        if column:
            ax.set_yticklabels([])
    figures.legend(fig, "below")  # the panels share their series
    return figures.describe(fig, (
        f"Box plot, one panel per case ({', '.join(cases)}), one row per persistent design: the gap between a "
        f"worker's consecutive tasks in its traced graph run (median, p25 to p75, p10 to p90), beside the same "
        f"quantiles of its schedule model replaying the trace's task durations."))


def chain_figure(run):
    """Speed-up over the PDL graph of 3 kernels a stage against the stage count k, per contender, one panel per case
    (medians, 95 % bootstrap intervals; dashed: as fast)."""
    from launchlab.present import figures

    chain = run.summaries["chain"]
    cases = list(chain)
    fig, axes = figures.figure(1, len(cases), height=3.6, layout="constrained")
    for column, case in enumerate(cases):
        ax = axes[0, column]
        ks = sorted(int(k[1:]) for k in chain[case])
        names = [name for name in chain[case][f"k{ks[0]}"] if name != CHAIN_PDL]
        for index, name in enumerate(names):
            ratios = [chain[case][f"k{k}"][name]["vs_pdl"] for k in ks]
            median = np.array([r["median"] for r in ratios])
            spread = [median - [r["ci_low"] for r in ratios], np.array([r["ci_high"] for r in ratios]) - median]
            ax.errorbar(ks, median, yerr=spread, fmt=figures.MARKERS[index % len(figures.MARKERS)] + "-",
                        color=figures.COLOURS[index % len(figures.COLOURS)], label=DESIGN[name].label)
        ax.axhline(1.0, color="black", linestyle="--", linewidth=0.8, gid=figures.REFERENCE_GID,
                   label="PDL graph, 3 kernels a stage (1×)")
        ax.set_xscale("log", base=2)
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.set_xlabel("stages k")
        ax.set_title(f"{case} case")
        ax.grid(alpha=0.3)
        if column == 0:
            ax.set_ylabel("speed-up over the PDL graph, warm (×)")
    figures.legend(fig, "below")  # the panels share their series
    return figures.describe(fig, (
        f"Line chart, one panel per case ({', '.join(cases)}): for each chain contender its speed-up over the "
        f"graph of 3 kernels a stage with PDL against the number of stages k (log scale), medians with 95 % bootstrap "
        f"intervals; a dashed line at 1×."))


"""Example B's answer: which schedule was faster in each case, from the paired ratios and their verdicts, why two
kernels beat the fused kernel where they do (from the traced timelines in the summaries), and what stays
unexplained."""
from __future__ import annotations

import numpy as np

from launchlab.chapters.example_b_jobs import CHAPTER
from launchlab.present import tables
from launchlab.present.replicas import counted, joined, replicates_of

NAMES = {"separate": "the two kernels", "queue": "the persistent queue"}


def _ratio(run, key: str) -> dict:
    return run.summaries["ratios"][key]


def cases(run) -> list[str]:
    return list(CHAPTER.parameters_of(run.record).cases)


def _over_fused(run, row: str, case: str) -> str:
    return f"{_ratio(run, f'{row}_over_fused.graph.{case}')['median']:.2f}"


def fastest(run, case: str) -> str | None:
    """The schedule whose graph replay was faster than each other one, from the verdicts of each schedule against
    the fused kernel ("fused", a row of NAMES, or None where no schedule beat every other)."""
    verdicts = {row: run.summaries["verdicts"][f"{row}_over_fused.graph.{case}"] for row in NAMES}
    if all(verdict == "above" for verdict in verdicts.values()):
        return "fused"
    below = [row for row, verdict in verdicts.items() if verdict == "below"]
    others = [verdicts[row] for row in NAMES if row not in below]
    return below[0] if len(below) == 1 and all(verdict == "above" for verdict in others) else None


def case_answer(run, case: str) -> str:
    """One sentence: the case's fastest schedule replayed from graphs, and each schedule's time over the fused
    kernel's."""
    winner = fastest(run, case)
    if winner == "fused":
        return (f"In the {case} case the fused kernel was the fastest: "
                + joined([f"{NAMES[row]} took {_over_fused(run, row, case)} times its time" for row in NAMES]) + ".")
    if winner:
        others = [row for row in NAMES if row != winner]
        verb = "were" if winner == "separate" else "was"
        return (f"In the {case} case {NAMES[winner]} {verb} the fastest, at {_over_fused(run, winner, case)} times "
                "the fused kernel's time, and " + joined([f"{NAMES[row]} took {_over_fused(run, row, case)} times"
                                                          for row in others]) + " the fused kernel's time.")
    return (f"In the {case} case no schedule was faster than both others: "
            + joined([f"{NAMES[row]} took {_over_fused(run, row, case)} times the fused kernel's time"
                      for row in NAMES]) + ".")


def schedule_answer(run) -> str:
    """Per case, replayed from graphs: the fastest schedule, then each schedule against the fused kernel."""
    return "Replayed from graphs, the answer depends on the jobs. " + " ".join(case_answer(run, c) for c in cases(run))


def widest_gap(run) -> float:
    """The largest gap between a case's slowest and fastest schedule (slowest / fastest − 1), over the cases and
    the two submissions, from the medians of the event interval per call."""
    timing = run.summaries["timing"]
    gaps = []
    for case in cases(run):
        for submission in ("graph", "stream"):
            medians = [timing[f"{row}.{case}.{submission}"]["warm_batch"]["event_us"]["median"]
                       for row in ("separate", "fused", "queue") if f"{row}.{case}.{submission}" in timing]
            if len(medians) > 1:
                gaps.append(max(medians) / min(medians) - 1)
    return max(gaps)


def size_answer(run) -> str:
    """How large the differences are, and what a graph changed."""
    ratios = run.summaries["ratios"]
    replay = [abs(r["median"] - 1) for k, r in ratios.items() if k.startswith("stream_over_graph")]
    shortest = min(m["warm_batch"]["event_us"]["median"] for m in run.summaries["timing"].values())
    return (f"The slowest schedule of a case took at most {widest_gap(run) * 100:.1f} % longer than the fastest, and "
            f"replaying from a graph changed no variant's event interval per call by more than "
            f"{max(replay) * 100:.1f} %: an invocation is one or two launches of {shortest:.0f} µs of work or more, "
            "so a few µs of launching hardly shows.")


def _timeline(run, name: str) -> dict | None:
    timeline = run.summaries["timelines"].get(name)
    if timeline is None:
        return None
    a0, a1 = np.array(timeline["a_start_ns"], float), np.array(timeline["a_end_ns"], float)
    b0, b1 = np.array(timeline["b_start_ns"], float), np.array(timeline["b_end_ns"], float)
    origin, a_time = a0.min(), a1 - a0
    heavy = a_time > 2 * np.median(a_time)
    return {"last_heavy_start": (a0[heavy].max() - origin) / 1e3 if heavy.any() else None,
            "heavy_a": float(np.median(a_time[heavy])) / 1e3 if heavy.any() else None,
            "light_a": float(np.median(a_time[~heavy])) / 1e3, "b": float(np.median(b1 - b0)) / 1e3,
            "a_end": (a1.max() - origin) / 1e3, "b_phase": (b1.max() - b0.min()) / 1e3, "end": (b1.max() - origin) / 1e3}


def ragged_explanation(run) -> str:
    """Why two kernels beat the fused kernel on ragged jobs, from the traced graph replays, where they did."""
    key = "separate_over_fused.graph.ragged"
    if run.summaries["verdicts"].get(key) != "below":
        return "The traces of the figure below show where each job of the ragged case ran under each schedule."
    separate, fused = _timeline(run, "separate.ragged.graph"), _timeline(run, "fused.ragged.graph")
    if not (separate and fused and separate["last_heavy_start"] is not None and fused["last_heavy_start"] is not None):
        return ("Why two kernels beat the fused kernel on ragged jobs is not explained by this run: it traced no "
                "ragged graph replay of both schedules to show where the jobs ran.")
    us = tables.fmt_sig
    return (
        "Why two kernels beat the fused kernel on ragged jobs shows in the traces of the figure below: the block "
        "scheduler hands out jobs in order as SMs come free. In the two-kernel schedule every block ahead of "
        f"the last heavy job holds its SM only for a light stage A ({us(separate['light_a'])} µs), so that job started "
        f"at {us(separate['last_heavy_start'])} µs, the stage-A kernel ended at {us(separate['a_end'])} µs and all stage B "
        f"blocks followed in {us(separate['b_phase'])} µs, ending at {us(separate['end'])} µs. In the fused kernel "
        f"each light job also runs its stage B ({us(fused['b'])} µs) before its SM comes free, so the last heavy job "
        f"started only at {us(fused['last_heavy_start'])} µs and, with its {us(fused['heavy_a'])} µs stage A and its "
        f"stage B, ended the invocation at {us(fused['end'])} µs.")


def unexplained(run) -> str:
    """The small effects these runs do not explain, each with what would settle it."""
    sentences = []
    queue = [f"{_ratio(run, f'queue_over_fused.graph.{case}')['median']:.2f}" for case in cases(run)
             if run.summaries["verdicts"].get(f"queue_over_fused.graph.{case}") == "above"]
    if queue:
        sentences.append(
            f"The queue's lag behind the fused kernel ({joined(queue)} times its time) is not explained by these "
            "runs: its counter reset (a memset node) and one atomic fetch per job are the candidates, and timing the "
            "queue with the counter reset inside the kernel, or without the reset, would tell them apart.")
    faster_stream = [case for case in cases(run)
                     if run.summaries["verdicts"].get(f"stream_over_graph.fused.{case}") == "below"]
    if faster_stream:
        worst = min(_ratio(run, f"stream_over_graph.fused.{case}")["median"] for case in faster_stream)
        sentences.append(
            f"The fused kernel launched from the stream was faster than its own graph replay in the "
            f"{joined(faster_stream)} case{'s' if len(faster_stream) > 1 else ''}, by at most "
            f"{(1 - worst) * 100:.1f} %; these runs do not explain it, and tracing when the first block of each starts "
            "after its start event would show whether the graph's launch is the slower one.")
    return " ".join(sentences)


SCHEDULE_NAMES = {"fused": "the fused kernel", **NAMES}
EARLY_B = "early_b."  # headline keys early_b.<schedule>_<submission>.<case>: jobs starting stage B early


def early_b_label(key: str) -> str:
    """'early_b.queue_graph.balanced' -> "the persistent queue's balanced graph replay"."""
    variant, case = key[len(EARLY_B):].split(".")
    schedule, submission = variant.rsplit("_", 1)
    return f"{SCHEDULE_NAMES[schedule]}'s {case} {'graph replay' if submission == 'graph' else 'stream launch'}"


def early_b_changes(run, replicas) -> str:
    """How far the traced counts of early B starts moved in the replicates, in a sentence ("" if none moved)."""
    keys = [key for key in sorted(run.headline) if key.startswith(EARLY_B)]
    moved = {key: max(abs(r.headline[key] - run.headline[key]) for r in replicas if key in r.headline) for key in keys}
    changed = [key for key in keys if moved[key]]
    if not changed:
        return ""
    largest = max(changed, key=moved.get)
    return (f"The traced counts of jobs starting stage B early did not all repeat: {len(changed)} of the "
            f"{len(keys)} traces' counts differed in a replicate, by at most {moved[largest]} of "
            f"{run.headline['jobs']} jobs ({early_b_label(largest)}: {run.headline[largest]} here, "
            f"{joined([str(r.headline.get(largest)) for r in replicas])} in the replicates).")


def claims_broken_by(run, replicas) -> dict[str, list[str]]:
    """{claim id: [replicate run ids]} of the book's claims the claim registry under the run's evidence root
    records as broken by one of `replicas`."""
    import yaml

    path = run.path.parents[1] / "claims" / "claims.yaml"
    ids = {r.run_id for r in replicas}
    records = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else []
    return {record["id"]: [item["run_id"] for item in record["broken_by"] if item["run_id"] in ids]
            for record in records or [] if any(item["run_id"] in ids for item in record.get("broken_by") or [])}


def spread_answer(run) -> str:
    """Whether the replicates found the same schedule ratios, the same traced counts, and the claims they break."""
    from launchlab.claims.site import claim_link

    replicas = replicates_of(run)
    if not replicas:
        return "This run has no replicate, so how much these ratios vary between runs was not measured."
    keys = [k for k in run.summaries["ratios"] if not k.startswith("stream_over_graph")]
    moved = max(abs(r.summaries["ratios"][k]["median"] / run.summaries["ratios"][k]["median"] - 1)
                for r in replicas for k in keys if k in r.summaries["ratios"])
    same = all(r.summaries["verdicts"].get(k) == run.summaries["verdicts"][k] for r in replicas for k in keys)
    text = (f"In this run's {counted(len(replicas), 'replicate')} no schedule ratio moved by more than "
            f"{moved * 100:.1f} %, and " + ("every schedule verdict was the same." if same else
                                            "some verdicts differed; the data page lists this run's."))
    changes = early_b_changes(run, replicas)
    text += f" {changes}" if changes else ""
    for claim_id, breakers in claims_broken_by(run, replicas).items():
        who = ("Both replicates break" if len(breakers) == 2 == len(replicas) else
               f"{counted(len(breakers), 'replicate').capitalize()} {'breaks' if len(breakers) == 1 else 'break'}")
        text += (f' {who} the book\'s claim <a href="{claim_link(claim_id)}">{claim_id}</a> as stated, so the claim '
                 "audit restates it with their values.")
    return text


def answer_values(run) -> dict:
    return {"schedule_answer": schedule_answer(run), "size_answer": size_answer(run),
            "ragged_explanation": ragged_explanation(run), "unexplained": unexplained(run),
            "spread_answer": spread_answer(run)}

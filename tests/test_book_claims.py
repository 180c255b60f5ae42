"""The claims tied to accepted runs (launchlab.claims.book and .declared): generated, guarded, never stale,
never dropped while a chapter awaits re-execution, and declared against the chapters' current summary layouts."""
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from launchlab.analysis import open_run
from launchlab.claims import book, bounds, declared, registry
from launchlab.claims.spec import ARITHMETIC, EVENT_RATIO, Beside, BookClaim, Decided, Edge, Ratio, Value
from launchlab.store import evidence, replicates
from launchlab.store.record import RecordError, RunRecord
from launchlab.store.runs import Run


@pytest.fixture(scope="module")
def by_id():
    return {claim["id"]: claim for claim in registry.load_claims()}


def test_registry_matches_a_fresh_generation_from_the_accepted_runs():
    on_disk = yaml.safe_load((evidence.REPO_ROOT / registry.CLAIMS_FILE).read_text())
    fresh = book.generated_records(on_disk)
    normal = lambda records: registry.validate_claims(records, registry.load_sources())  # noqa: E731
    assert normal(on_disk) == normal(fresh), "run `python -m launchlab claims` after accepting a run"


def current_chapters() -> set[str]:
    """The chapters whose accepted run the current run record reads."""
    current = set()
    for chapter in evidence.read_accepted():
        try:
            RunRecord.read(evidence.accepted_run(chapter))
        except RecordError:
            continue
        current.add(chapter)
    return current


def test_every_declared_book_claim_is_in_the_registry_supported_or_pending(by_id):
    """Never dropped: a claim of a chapter with a current accepted run is retained with its evidence; any other
    is pending, naming its chapter and everything it will read."""
    assert [claim.id for claim in declared.BOOK_CLAIMS] == [claim_id for claim_id in by_id if claim_id.startswith("B")]
    current = current_chapters()
    for claim in declared.BOOK_CLAIMS:
        record = by_id[claim.id]
        if claim.chapter in current:
            assert record["verdict"] in ("retain", "restated") and record["evidence"] and record["awaits"] is None, claim.id
            assert (record["verdict"] == "restated") == bool(record.get("broken_by")), claim.id
        else:
            assert record["verdict"] == registry.PENDING and not record["evidence"] and not record["our_value"]
            assert record["awaits"] == {"chapter": claim.chapter, "keys": [book.shown(r) for r in claim.reads()]}
    assert registry.check_evidence_links() == []


def test_book_claim_ids_run_in_order_without_gaps():
    ids = [claim.id for claim in declared.BOOK_CLAIMS]
    assert ids == [f"B{n:02d}" for n in range(1, len(ids) + 1)]


def test_every_comparison_names_a_claim_of_the_registry(by_id):
    assert {spec.id for spec in declared.BESIDE} <= set(by_id)
    assert len({spec.id for spec in declared.BESIDE}) == len(declared.BESIDE)


# --- the interval guard ------------------------------------------------------------------------------------------

def fake_view(tmp_path: Path, median: float, low: float, high: float) -> Run:
    record = {"median": median, "ci_low": low, "ci_high": high}
    return Run(tmp_path, SimpleNamespace(device_name="GPU", device={"name": "GPU"}), {"ratios": {"x_over_y": record}},
               {})


def ratio_claim(side="above") -> BookClaim:
    ratio = Ratio(("ratios", "x_over_y"), side)
    return BookClaim("B99", "chapter", "Section", "x takes longer than y.", "A ratio.", (), ratios=(ratio,),
                     value=Value("x / y", EVENT_RATIO, ratio=ratio), pacing="device")


def test_a_ratio_claim_holds_only_while_its_whole_interval_is_on_the_claimed_side(tmp_path):
    book.check_guard(ratio_claim(), fake_view(tmp_path, 1.2, 1.05, 1.3))
    with pytest.raises(ValueError, match=r"^B99: run .* no longer supports: .*interval \[0\.95, 1\.3\]"):
        book.check_guard(ratio_claim(), fake_view(tmp_path, 1.2, 0.95, 1.3))  # the median alone would pass
    with pytest.raises(ValueError, match="claimed below 1"):
        book.check_guard(ratio_claim("below"), fake_view(tmp_path, 0.9, 0.8, 1.01))


def test_a_ratio_value_carries_its_interval(tmp_path):
    value = book.our_value(fake_view(tmp_path, 1.2, 1.05, 1.3), ratio_claim().value)
    assert (value["value"], value["interval"], value["basis"]) == (1.2, [1.05, 1.3], "measured")


def test_every_ratio_book_claim_records_the_interval_its_guard_checks(by_id):
    for claim in declared.BOOK_CLAIMS:
        if (claim.ratios or claim.decided) and by_id[claim.id]["verdict"] == "retain":
            assert by_id[claim.id]["our_value"]["interval"], claim.id


def test_every_ratio_claim_states_a_side_and_a_question_only_where_the_run_decides():
    for claim in declared.BOOK_CLAIMS:
        assert all(ratio.side in ("above", "below") for ratio in claim.ratios)
        if claim.decided or "{" in claim.statement:
            assert claim.ratios == () and (claim.decided or claim.question), claim.id


def test_a_book_claim_needs_a_guard():
    with pytest.raises(ValueError, match="needs a guard"):
        BookClaim("B99", "chapter", "Section", "statement", "finding", ())


def test_a_claim_that_reads_intervals_declares_its_pacing_and_only_such_a_claim():
    ratio = Ratio(("ratios", "x_over_y"), "above")
    with pytest.raises(ValueError, match="^B99: a claim that states a bound declares its pacing"):
        BookClaim("B99", "chapter", "Section", "statement", "finding", (), ratios=(ratio,))
    with pytest.raises(ValueError, match="^B99: pacing picks a bound's margin"):
        BookClaim("B99", "chapter", "Section", "statement", "finding", (), holds=lambda v: True, pacing="host")


def test_a_measurement_names_labels_of_its_value_and_says_what_it_asks(tmp_path):
    with pytest.raises(ValueError, match="needs a question"):
        BookClaim("B99", "chapter", "Section", "x changed by {x} µs.", "f", (), holds=lambda v: True)
    claim = BookClaim("B99", "chapter", "Section", "x changed by {x} µs and y by {y} µs.", "f", (),
                      holds=lambda v: True, question="How much did x change?", pacing="device",
                      value=Value("µs", EVENT_RATIO, intervals=(("x", ("d", "x")), ("y", ("d", "y")))))
    view = Run(tmp_path, SimpleNamespace(device_name="GPU"), {"d": {
        "x": {"median": -0.0123, "ci_low": -0.0201, "ci_high": -0.0031},
        "y": {"median": 12.34, "ci_low": 11.9, "ci_high": 12.8}}}, {})
    ours = book.our_value(view, claim.value)
    assert ours["interval"] == {"x": [-0.0201, -0.0031], "y": [11.9, 12.8]}
    assert book.statement_of(claim, view, ours) == ("x changed by -0.0123 [-0.0201, -0.0031] µs and y by "
                                                   "12.3 [11.9, 12.8] µs.")
    assert claim.pending_statement() == "How much did x change?"


@pytest.mark.parametrize("low, high, wording", [(1.1, 1.3, "x is faster than y."), (0.7, 0.9, "x is slower."),
                                                (0.9, 1.1, "x over y is 1.00 [0.90, 1.10].")])
def test_a_decided_claim_takes_the_side_its_whole_interval_lies_on(tmp_path, low, high, wording):
    decided = Decided(("r",), above="{name} is faster than y.", below="{name} is slower.",
                      neither="{name} over y is {median} [{ci_low}, {ci_high}].")
    claim = BookClaim("B99", "chapter", "Section", "Is x faster than y?", "f", (), decided=decided, pacing="device")
    view = Run(tmp_path, SimpleNamespace(device_name="GPU"),
               {"r": {"median": 1.0, "ci_low": low, "ci_high": high, "name": "x"}}, {})
    assert book.statement_of(claim, view, None) == wording


def test_a_computed_or_related_value_needs_its_note():
    with pytest.raises(ValueError, match="needs a note"):
        Value("unit", ARITHMETIC, basis="computed")


# --- comparisons beside C- and R-claims ---------------------------------------------------------------------------

def bare(claim_id: str) -> dict:
    return {"id": claim_id, "section": "s", "excerpt": "e", "verdict": "retain", "finding": "f", "sources": ["graphs"],
            "evidence": [], "our_value": None, "awaits": None}


def test_an_r_comparison_waits_for_its_chapter_and_keys(tmp_path):
    spec = Beside("R99", "example_b_jobs", Value("jobs", ARITHMETIC, keys=("jobs",), basis="computed", note="n."))
    assert book.beside_record(bare("R99"), spec, {})["awaits"] == {"chapter": "example_b_jobs", "keys": ["jobs"]}
    view = fake_view(tmp_path, 1, 1, 1)
    assert book.beside_record(bare("R99"), spec, {"example_b_jobs": view})["awaits"]["keys"] == ["jobs"]


def test_a_c_comparison_of_a_chapter_without_a_current_run_waits_instead_of_vanishing():
    spec = Beside("C99", "fusion", Value("ratio", EVENT_RATIO, needs=(("ratios", "graph", "x_over_y"),)))
    awaits = book.beside_record(bare("C99"), spec, {})["awaits"]
    assert awaits == {"chapter": "fusion", "keys": ["ratios/graph/x_over_y"]}


def test_a_c_comparison_whose_keys_vanished_stops_the_refresh(tmp_path):
    spec = Beside("C99", "graphs", Value("nodes", ARITHMETIC, keys=("gone",), basis="computed", note="n."))
    with pytest.raises(ValueError, match="^C99: run .* has no headline keys"):
        book.beside_record(bare("C99"), spec, {"graphs": fake_view(tmp_path, 1, 1, 1)})


def test_values_are_labelled_by_what_they_measure(by_id):
    specs = {spec.id: spec for spec in declared.BESIDE}
    basis = {claim_id: specs[claim_id].value.basis for claim_id in ("C12", "C13", "C24", "C26", "C30", "C35", "C61",
                                                                   "R03", "R21", "R48")}
    assert basis == {"C12": "measured", "C13": "related", "C24": "related", "C26": "computed", "C30": "computed",
                     "C35": "computed", "C61": "measured", "R03": "related", "R21": "measured", "R48": "related"}
    for claim in by_id.values():
        if claim["our_value"]:
            assert claim["our_value"]["basis"] == specs[claim["id"]].value.basis if claim["id"] in specs else True
        if claim["our_value"] and claim["our_value"]["basis"] != "measured":
            assert claim["our_value"]["note"].count(". ") == 0, claim["id"]  # one sentence


def test_b11_and_b07_rest_on_what_they_say(by_id):
    b11 = next(claim for claim in declared.BOOK_CLAIMS if claim.id == "B11")
    assert [ratio.path[-1] for ratio in b11.ratios] == ["cold"] and "cold" in b11.statement
    b07 = next(claim for claim in declared.BOOK_CLAIMS if claim.id == "B07")
    assert "GPU" not in b07.statement and "paced by the host" in b07.finding


def test_named_rechecks_are_set_against_our_runs():
    specs = {spec.id: spec for spec in declared.BESIDE}
    # the article's 126 of 128 was counted with one worker block per SM; our worker-count sweep stands beside it
    assert specs["R21"].value.keys == ("b_before_last_a.queue_graph.ragged.wps1",
                                       "b_before_last_a.queue_graph.ragged.wps8")
    # its graph-replay cuDNN figures, beside our device time per call with a warm L2
    assert specs["R03"].value.keys == ("device_us_per_call.cudnn.4096x4096.warm",
                                       "device_us_per_call.cudnn.4096x128.warm")
    assert {specs[claim_id].chapter for claim_id in ("R37", "R38", "R44", "R46", "R47", "R48", "R49", "R50")} == {
        "example_a_pointwise", "example_b_jobs"}


def test_appendix_rechecks_carry_our_values_beside_the_articles(by_id):
    """Examples A and B have current accepted runs: their comparisons hold values now, not promises."""
    if not {"example_a_pointwise", "example_b_jobs"} <= current_chapters():
        pytest.skip("the appendix runs are not of the current run-record schema")
    for claim_id in ("R37", "R38", "R44", "R46", "R47", "R48", "R49", "R50"):
        assert by_id[claim_id]["our_value"] and by_id[claim_id]["evidence"], claim_id
    early = by_id["R47"]["our_value"]["value"]
    assert early["separate, ragged"] == 0 and early["fused, ragged"] == by_id["R44"]["our_value"]["value"] - 1
    assert len(by_id["R48"]["our_value"]["value"]) == 6  # the article's three medians beside all six of ours
    assert by_id["R49"]["our_value"]["value"] == {"balanced": 611_328, "ragged": 748_032}


def test_iteration_totals_reproduce_the_protocols_figures():
    assert declared.ragged_iterations(597) == {"balanced": 611_328, "ragged": 748_032}


def test_idle_sms_in_last_wave():
    assert declared.idle_in_last_wave(512, 148) == 80  # the audited B200 example: 512 mod 148 = 68
    assert declared.idle_in_last_wave(512, 132) == 16
    assert declared.idle_in_last_wave(264, 132) == 0


# --- the pending chapters, against their current summary layouts ---------------------------------------------------

def old_schema_root(tmp_path: Path) -> Path:
    """An evidence root whose accepted fusion run has a run.json of the old schema (no environment field)."""
    run = tmp_path / "runs" / "20261129T133054Z-ch03"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"chapter": "fusion", "run_id": run.name}))
    (tmp_path / "accepted.json").write_text(json.dumps({"fusion": run.name}))
    return tmp_path


def test_an_old_schema_run_leaves_its_claims_pending_and_says_why(tmp_path):
    views, pending = book.accepted_views(old_schema_root(tmp_path))
    assert views == {} and "pending re-execution" in pending["fusion"] and "environment" in pending["fusion"]
    records = book.generated_records([], tmp_path, views)
    fusion = [claim.id for claim in declared.BOOK_CLAIMS if claim.chapter == "fusion"]
    by_id = {record["id"]: record for record in records}
    assert all(by_id[claim_id]["verdict"] == "pending" and by_id[claim_id]["awaits"]["chapter"] == "fusion"
               for claim_id in fusion)
    assert registry.validate_claims(records, registry.load_sources())  # pending B-claims are valid records


def test_a_current_run_lacking_a_declared_key_stops_the_refresh_naming_the_claim(tmp_path):
    claim = next(claim for claim in declared.BOOK_CLAIMS if claim.id == "B06")
    with pytest.raises(ValueError, match="^B06: run .* has no .*stream_over_graph/row4.128x8192.graph/event"):
        book.book_record(claim, fake_view(tmp_path, 1, 1, 1))


def reads_and_records(view: Run, chapter: str) -> dict:
    """{claim id: what its declaration misses in `view`}, over the B-claims and comparisons of `chapter`."""
    missing = {claim.id: book.missing_reads(view, claim.reads()) for claim in declared.BOOK_CLAIMS
               if claim.chapter == chapter}
    missing.update({spec.id: book.missing_reads(view, spec.value.reads() if spec.value else [])
                    for spec in declared.BESIDE if spec.chapter == chapter})
    return missing


def test_fusion_declarations_follow_its_summary_layout(tmp_path):
    """On a synthetic run of the current fusion chapter, everything the claims read exists, and every claim whose
    guard the made-up timings pass becomes a record (its files sealed in the run)."""
    from fusion_fakes import write_synthetic_run

    path = write_synthetic_run(tmp_path, absent=None)  # every library timed: B27 reads torch at every sweep point
    evidence.seal(path)
    view = open_run(path)
    missing = reads_and_records(view, "fusion")
    # B28 reads the worst bandwidth-regime point outside the floor class, which a small synthetic plane need not have
    bandwidth = all(view.summaries["plane"][l2]["fused_plain_over_copy"].get("max") is not None for l2 in ("warm", "cold"))
    expected = dict.fromkeys(missing, [])
    if not bandwidth:
        expected["B28"] = [f"plane.fused_plain_over_copy.max.{l2}" for l2 in ("warm", "cold")]
    assert missing == expected
    made = [book.book_record(claim, view) for claim in declared.BOOK_CLAIMS
            if claim.chapter == "fusion" and claim.id not in ("B11", "B28")]  # synthetic: cuDNN slower, fused near the copy
    assert all(record["evidence"] for record in made)
    specs = {spec.id: spec for spec in declared.BESIDE}
    c61 = book.beside_record(bare("C61"), specs["C61"], {"fusion": view})["our_value"]["value"]
    assert set(c61) == {"warm, lowest", "warm, highest", "cold, lowest", "cold, highest"}
    r03 = book.beside_record(bare("R03"), specs["R03"], {"fusion": view})["our_value"]
    assert set(r03["value"]) == {"4096x4096", "4096x128"} and r03["basis"] == "related"


@pytest.mark.slow
def test_megakernel_declarations_follow_its_summary_layout(tmp_path):
    """The same on a simulated run of the current megakernels chapter (every design, the worker sweep)."""
    test_megakernels = pytest.importorskip("test_megakernels")
    patch = test_megakernels.simulated_gpu.__wrapped__()
    device = next(patch)
    try:
        view = open_run(test_megakernels.execute_simulated(tmp_path, device))
    finally:
        next(patch, None)
    assert reads_and_records(view, "megakernels") == dict.fromkeys(reads_and_records(view, "megakernels"), [])
    made = {claim.id: book.book_record(claim, view) for claim in declared.BOOK_CLAIMS if claim.chapter == "megakernels"}
    assert all(record["evidence"] for record in made.values())
    assert "{" not in made["B25"]["excerpt"] and "µs per kernel boundary" in made["B25"]["excerpt"]
    assert "{" not in made["B26"]["excerpt"]


# --- bounds, frozen, and every run of a chapter --------------------------------------------------------------------

def bounded_claim(claim_id="B99", side="above", version=1, statement="x takes longer than y.") -> BookClaim:
    ratio = Ratio(("ratios", "x_over_y"), side)
    return BookClaim(claim_id, "chapter", "Section", statement, "A ratio.", (), ratios=(ratio,),
                     value=Value("x / y", EVENT_RATIO, ratio=ratio), pacing="device", version=version)


def named_view(tmp_path: Path, run_id: str, median: float, low: float, high: float) -> Run:
    view = fake_view(tmp_path / run_id, median, low, high)
    (tmp_path / run_id).mkdir(parents=True, exist_ok=True)
    (tmp_path / run_id / evidence.MANIFEST).write_text(json.dumps({"files": {}}))
    return view


@pytest.mark.parametrize("edge, side, floor, expected", [
    ({"ci_low": 2.0, "ci_high": 2.2}, "above", 1.0, 2.0 * (1 - bounds.DEVICE_MARGIN)),
    ({"ci_low": 1.01, "ci_high": 1.2}, "above", 1.0, 1.0),       # never looser than the claim's words
    ({"ci_low": 0.8, "ci_high": 0.9}, "below", 1.0, 0.9 * (1 + bounds.DEVICE_MARGIN)),
    ({"ci_low": -0.5, "ci_high": 0.25}, "within", None, [-0.5 * (1 + bounds.DEVICE_MARGIN),
                                                         0.25 * (1 + bounds.DEVICE_MARGIN)]),
])
def test_a_bound_is_the_interval_edge_moved_outward_by_the_margin(edge, side, floor, expected):
    bound = bounds.bound_of(Edge({"median": 0, **edge}, side, floor), bounds.DEVICE_MARGIN)
    assert bound == pytest.approx(expected, rel=1e-3)
    low, high = edge["ci_low"], edge["ci_high"]
    if side == "above":
        assert bound < low
    elif side == "below":
        assert bound > high
    else:
        assert bound[0] < low and bound[1] > high


def test_host_paced_figures_get_the_wider_margin():
    assert bounds.MARGINS == {"device": bounds.DEVICE_MARGIN, "host": bounds.HOST_MARGIN}
    assert bounds.DEVICE_MARGIN < bounds.HOST_MARGIN


def test_a_bound_is_frozen_until_the_declaration_raises_its_version(tmp_path):
    claim = bounded_claim()
    first, problems = bounds.frozen([claim], {"chapter": named_view(tmp_path, "A", 1.5, 1.4, 1.6)}, {})
    assert not problems and first["B99"]["bounds"]["ratios/x_over_y"]["bound"] == pytest.approx(1.358)
    later = {"chapter": named_view(tmp_path, "B", 3.0, 2.9, 3.1)}
    kept, problems = bounds.frozen([claim], later, first)
    assert kept == first and not problems  # a later run never re-fits it
    renewed, _ = bounds.frozen([bounded_claim(version=2)], later, first)
    assert renewed["B99"]["run_id"] == "B" and renewed["B99"]["version"] == 2
    _, problems = bounds.frozen([bounded_claim(statement="x is slower than y.")], later, first)
    assert problems == ["B99: its statement changed since its bound was set; raise its version to set a new bound "
                        "for the new words"]


def test_a_claim_states_its_bound_and_its_pacing(tmp_path):
    claim = bounded_claim()
    view = named_view(tmp_path, "A", 1.5, 1.4, 1.6)
    entry = bounds.set_bound(claim, view)
    record = book.book_record(claim, view, entry)
    assert record["verdict"] == "retain" and "device-paced" in record["excerpt"]
    assert "x / y above 1.358" in record["excerpt"]


def test_a_replicate_that_breaks_the_bound_restates_the_claim_with_both_values(tmp_path):
    claim = bounded_claim()
    accepted = named_view(tmp_path, "20261130T000000Z-ch02", 1.5, 1.4, 1.6)
    entry = bounds.set_bound(claim, accepted)
    keeps = named_view(tmp_path, "20261201T000000Z-ch02", 1.45, 1.37, 1.55)
    breaks = named_view(tmp_path, "20261202T000000Z-ch02", 1.3, 1.2, 1.4)
    record = book.book_record(claim, accepted, entry, [keeps, breaks])
    assert record["verdict"] == registry.RESTATED and record["our_value"]["value"] == 1.5  # never re-fitted
    assert [item["run_id"] for item in record["broken_by"]] == ["20261202T000000Z-ch02"]
    assert record["broken_by"][0]["value"] == 1.3 and "stated above 1.358" in record["broken_by"][0]["reason"]
    assert "Restated: run 20261202T000000Z-ch02" in record["finding"] and "1.50 [1.40, 1.60]" in record["finding"]
    sealed = [{"path": f"evidence/runs/{accepted.run_id}/headline.json", "sha256": "0" * 64}]
    assert registry.validate_claims([{**record, "evidence": sealed}], registry.load_sources())


def test_every_failure_of_every_accepted_run_is_listed_at_once(tmp_path, monkeypatch):
    claims = (bounded_claim("B98"), bounded_claim("B99", side="below"))
    monkeypatch.setattr(declared, "BOOK_CLAIMS", claims)
    view = named_view(tmp_path, "A", 1.5, 1.4, 1.6)
    stored = {"B98": {**bounds.set_bound(claims[0], view), "bounds": {"ratios/x_over_y": {
        "name": "x / y", "side": "above", "edge": 1.7, "bound": 1.65}}}}
    with pytest.raises(ValueError) as raised:
        book.generated_records([], tmp_path, {"chapter": view}, {}, bounds.frozen(claims, {"chapter": view}, stored))
    lines = str(raised.value).splitlines()
    assert lines[0] == "2 book claim problem(s):"
    assert lines[1].startswith("B98: run A no longer supports") and "stated above 1.650" in lines[1]
    assert lines[2].startswith("B99: run A no longer supports") and "claimed below 1" in lines[2]


def test_replicates_are_read_from_their_file_which_may_be_absent(tmp_path):
    assert replicates.read_replicates(tmp_path) == {}
    (tmp_path / "replicates.json").write_text(json.dumps({"20261130T093346Z-ch02": ["20261201T000000Z-ch02"]}))
    assert replicates.read_replicates(tmp_path) == {"20261130T093346Z-ch02": ["20261201T000000Z-ch02"]}
    (tmp_path / "replicates.json").write_text(json.dumps({"20261130T093346Z-ch02": "20261201T000000Z-ch02"}))
    with pytest.raises(evidence.EvidenceError, match="replicates.json: must map each accepted run id to a list"):
        replicates.read_replicates(tmp_path)
    assert json.loads((evidence.REPO_ROOT / "evidence" / "replicates.json").read_text()) is not None


def test_a_refresh_of_another_evidence_root_writes_under_its_claims_folder_only(tmp_path):
    """An evidence root holding chapter 1's accepted run alone: its claims and bounds are written there, the
    book's downloads are left as they were, and the chapters without a run are reported."""
    downloads = evidence.REPO_ROOT / "book" / "_static" / "claims"
    before = {path: path.stat().st_mtime_ns for path in downloads.glob("claims.*")}
    run_id = evidence.read_accepted()["ordinary_launches"]
    shutil.copytree(evidence.accepted_run("ordinary_launches"), tmp_path / "runs" / run_id)
    shutil.copytree(evidence.REPO_ROOT / "evidence" / "claims", tmp_path / "claims",
                    ignore=shutil.ignore_patterns("bounds.yaml"))
    (tmp_path / "accepted.json").write_text(json.dumps({"ordinary_launches": run_id}))
    lines = []
    path = book.refresh_registry(root=tmp_path, report=lines.append)
    assert path == tmp_path / "claims" / "claims.yaml"
    assert sorted(p.name for p in (tmp_path / "claims").iterdir()) == ["bounds.yaml", "claims.yaml", "sources.yaml"]
    assert list(bounds.read_bounds(tmp_path)) == ["B01"]  # chapter 1's one bounded claim, set from its run
    assert {path: path.stat().st_mtime_ns for path in downloads.glob("claims.*")} == before
    assert any(line.startswith("claims: fusion: no accepted run") for line in lines)


def test_every_bounded_claim_states_its_frozen_bound_and_says_what_paced_it(by_id):
    stored = bounds.read_bounds(evidence.REPO_ROOT / "evidence")
    for claim in declared.BOOK_CLAIMS:
        record = by_id[claim.id]
        if not claim.bounded() or record["verdict"] == registry.PENDING:
            assert "Stated bound" not in record["excerpt"], claim.id
            continue
        assert stored[claim.id]["version"] == claim.version and stored[claim.id]["pacing"] == claim.pacing
        held = (evidence.REPO_ROOT / "evidence" / "runs" / stored[claim.id]["run_id"]).is_dir()
        assert bounds.sentence(stored[claim.id], held) in record["excerpt"]
        assert (f"{claim.pacing}-paced") in record["excerpt"], claim.id
        assert ("kept in the git history" in record["excerpt"]) != held, claim.id  # a reader is never sent to
        assert "speedup_vs" not in record["excerpt"], claim.id                     # a missing folder or a key


def test_a_bound_reads_in_words_and_says_what_a_run_must_do_to_keep_it():
    entry = {"pacing": "device", "margin": 0.03, "run_id": "20270101T000000Z-ch04", "bounds": {
        "speedup_vs_graph3/coop.ragged.graph": {"name": "speedup_vs_graph3/coop.ragged.graph", "side": "below",
                                                "bound": 0.9345},
        "b": {"name": "balanced", "side": "within", "bound": [0.3276, 0.4905]}}}
    text = bounds.sentence(entry, held=False)
    assert "three-kernel graph time / cooperative-graph time, ragged, its 95% interval below 0.9345" in text
    assert "balanced, its median between 0.3276 and 0.4905" in text
    assert "kept in the git history" in text and "kept in the git history" not in bounds.sentence(entry)
    del entry["bounds"]["b"]
    assert "whole 95% interval of each figure lies on the stated side" in bounds.sentence(entry)
    assert {claim.id for claim in declared.BOOK_CLAIMS if claim.pacing == "host"} == {"B01", "B06", "B07", "B12"}

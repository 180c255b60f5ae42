"""The claims tied to accepted runs (launchlab.claims.book and .declared): generated, guarded, never stale."""
from pathlib import Path

import pytest
from types import SimpleNamespace

from launchlab.store.runs import Run
import yaml

from launchlab.claims import book, declared, registry
from launchlab.claims.spec import ARITHMETIC, EVENT_RATIO, Beside, BookClaim, Ratio, Value
from launchlab.store import evidence


@pytest.fixture(scope="module")
def by_id():
    return {claim["id"]: claim for claim in registry.load_claims()}


def test_registry_matches_a_fresh_generation_from_the_accepted_runs():
    on_disk = yaml.safe_load((evidence.REPO_ROOT / registry.CLAIMS_FILE).read_text())
    fresh = book.generated_records(on_disk)
    normal = lambda records: registry.validate_claims(records, registry.load_sources())  # noqa: E731
    assert normal(on_disk) == normal(fresh), "run `python -m launchlab claims` after accepting a run"


def test_every_accepted_chapter_contributes_its_book_claims_with_links(by_id):
    accepted = set(evidence.read_accepted())
    declared_here = [claim.id for claim in declared.BOOK_CLAIMS if claim.chapter in accepted]
    assert sorted(declared_here) == sorted(claim_id for claim_id in by_id if claim_id.startswith("B"))
    assert all(by_id[claim_id]["evidence"] for claim_id in declared_here)
    assert registry.check_evidence_links() == []


def test_every_comparison_names_a_claim_of_the_registry(by_id):
    assert {spec.id for spec in declared.BESIDE} <= set(by_id)
    assert len({spec.id for spec in declared.BESIDE}) == len(declared.BESIDE)


# --- the interval guard ------------------------------------------------------------------------------------------

def fake_view(tmp_path: Path, median: float, low: float, high: float) -> Run:
    record = {"median": median, "ci_low": low, "ci_high": high}
    return Run(tmp_path, SimpleNamespace(device_name="GPU", device={"name": "GPU"}), {"ratios": {"x_over_y": record}}, {})


def ratio_claim(side="above") -> BookClaim:
    ratio = Ratio(("ratios", "x_over_y"), side)
    return BookClaim("B99", "chapter", "Section", "x takes longer than y.", "A ratio.", (), ratios=(ratio,),
                     value=Value("x / y", EVENT_RATIO, ratio=ratio))


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
        if claim.ratios and claim.id in by_id:
            assert by_id[claim.id]["our_value"]["interval"], claim.id


def test_a_book_claim_needs_a_guard():
    with pytest.raises(ValueError, match="needs a guard"):
        BookClaim("B99", "chapter", "Section", "statement", "finding", ())


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


def test_a_c_comparison_whose_keys_vanished_stops_the_refresh(tmp_path):
    spec = Beside("C99", "graphs", Value("nodes", ARITHMETIC, keys=("gone",), basis="computed", note="n."))
    with pytest.raises(ValueError, match="^C99: run .* has no headline keys"):
        book.beside_record(bare("C99"), spec, {"graphs": fake_view(tmp_path, 1, 1, 1)})


def test_values_are_labelled_by_what_they_measure(by_id):
    basis = {claim_id: by_id[claim_id]["our_value"]["basis"] for claim_id in ("C12", "C13", "C24", "C26", "C30",
                                                                             "C35", "C61")}
    assert basis == {"C12": "measured", "C13": "related", "C24": "related", "C26": "computed", "C30": "computed",
                     "C35": "computed", "C61": "measured"}
    for claim in by_id.values():
        if claim["our_value"] and claim["our_value"]["basis"] != "measured":
            assert claim["our_value"]["note"].count(". ") == 0, claim["id"]  # one sentence


def test_c61_spans_every_shape_warm_and_cold(by_id):
    assert set(by_id["C61"]["our_value"]["value"]) == {"warm, lowest", "warm, highest", "cold, lowest",
                                                       "cold, highest"}


def test_b11_and_b07_rest_on_what_they_say(by_id):
    b11 = next(claim for claim in declared.BOOK_CLAIMS if claim.id == "B11")
    assert [ratio.path[-1] for ratio in b11.ratios] == ["cold"] and "cold" in b11.statement
    b07 = next(claim for claim in declared.BOOK_CLAIMS if claim.id == "B07")
    assert "GPU" not in b07.statement and "paced by the host" in b07.finding


def test_named_rechecks_are_set_against_our_runs():
    specs = {spec.id: spec for spec in declared.BESIDE}
    assert specs["R21"].value.keys[0].startswith("b_before_last_a.queue_graph")  # the article's 126 of 128
    assert all("cudnn_graph" in key for key in specs["R03"].value.keys)  # its graph-replay cuDNN figures
    assert {specs[claim_id].chapter for claim_id in ("R38", "R44", "R46", "R47", "R48", "R49", "R50")} == {
        "example_a_pointwise", "example_b_jobs"}


def test_iteration_totals_reproduce_the_protocols_figures():
    assert declared._ragged_iterations(597) == {"balanced": 611_328, "ragged": 748_032}


def test_idle_sms_in_last_wave():
    assert declared.idle_in_last_wave(512, 148) == 80  # the audited B200 example: 512 mod 148 = 68
    assert declared.idle_in_last_wave(512, 132) == 16
    assert declared.idle_in_last_wave(264, 132) == 0

"""The book's own claims and our C-claim measurements: generated from accepted runs, never stale."""
import yaml

from launchlab.claims import book as book_claims
from launchlab.claims import registry as claims
from launchlab.store import evidence


def test_registry_matches_a_fresh_generation_from_the_accepted_runs():
    on_disk = yaml.safe_load((evidence.REPO_ROOT / claims.CLAIMS_FILE).read_text())
    fresh = book_claims.generated_records(on_disk)
    normal = lambda records: claims.validate_claims(records, claims.load_sources())  # noqa: E731
    assert normal(on_disk) == normal(fresh), "run `python -m launchlab claims` after accepting a run"


def test_every_accepted_chapter_contributes_book_claims_with_links():
    registry = claims.load_claims()
    book = [c for c in registry if c["id"].startswith("B")]
    chapters = {spec.chapter for spec in book_claims.BOOK_CLAIMS}
    assert chapters <= set(evidence.read_accepted())
    assert len(book) == len(book_claims.BOOK_CLAIMS)
    assert all(c["evidence"] for c in book)
    assert claims.check_evidence_links() == []


def test_idle_sms_in_last_wave():
    assert book_claims._idle_in_last_wave(512, 148) == 80  # the audited B200 example: 512 mod 148 = 68
    assert book_claims._idle_in_last_wave(512, 132) == 16
    assert book_claims._idle_in_last_wave(264, 132) == 0


def test_measured_c_claims_are_shown_beside_their_excerpts():
    frame = claims.measurements_frame(claims.load_claims())
    expected = {m.id for m in book_claims.AUDIT_MEASUREMENTS if m.chapter in evidence.read_accepted()}
    assert set(frame.index) == expected
    assert {"C12", "C13", "C24", "C26", "C30", "C35"} <= expected
    assert (frame["device"] != "").all() and frame["run"].str.match(r"\d{8}T\d{6}Z-").all()

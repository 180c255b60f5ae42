"""A chapter's runs on another GPU model: listed apart from replicates, every book claim of the chapter read again on
them, each verdict with its reason, and the page's answer counted from the verdicts."""
import json
import re
import shutil
from types import SimpleNamespace

import pytest

from launchlab.claims import declared, other_gpus
from launchlab.claims.other_gpus import Carried
from launchlab.pages import other_gpus as page
from launchlab.store import evidence, replicates
from test_replicates import as_if_on, scratch_store

H200 = SimpleNamespace(device="NVIDIA H200", summaries={})
H100 = SimpleNamespace(device="NVIDIA H100 80GB HBM3", summaries={"cold_pacing": {}})
CLAIMS = {claim.id: claim for claim in declared.BOOK_CLAIMS}


def carried(claim_id, ratios=(), test=False, bound=(), bounded=True):
    return Carried(CLAIMS[claim_id], H200, H100, tuple(ratios), test, tuple(bound), bounded)


@pytest.fixture
def store(tmp_path):
    """Graphs' accepted run, and a copy of it standing in for the same chapter run on an H100 (listed)."""
    root, accepted_id, other_id = scratch_store(tmp_path)
    shutil.copytree(evidence.EVIDENCE_ROOT / "claims", root / "claims")
    as_if_on(root / "runs" / other_id, "NVIDIA H100 80GB HBM3")
    replicates.record_other_gpu(accepted_id, other_id, root)
    return root, accepted_id, other_id


def test_a_run_with_the_accepted_runs_figures_keeps_every_claim_of_its_chapter(store):
    root, accepted_id, other_id = store
    items = other_gpus.carried_claims(root)
    assert sorted(item.claim.id for item in items) == sorted(c.id for c in declared.BOOK_CLAIMS if c.chapter == "graphs")
    assert {item.other.run_id for item in items} == {other_id}
    assert all(item.verdict in (other_gpus.HOLDS, other_gpus.SAME_ANSWER, other_gpus.MEASURED) for item in items)
    assert page.verdict_counts(items).endswith("None is contradicted there.")
    html = other_gpus.carried_table_html(items)
    assert "On the H200" in html and "On the H100 80GB HBM3" in html and 'class="restated"' not in html


def test_a_listed_run_of_another_chapter_is_an_error(store):
    root, accepted_id, _ = store
    stray = evidence.read_accepted()["ordinary_launches"]
    shutil.copytree(evidence.run_dir(stray), root / "runs" / stray)
    (root / replicates.OTHER_GPUS_FILE).write_text(json.dumps({accepted_id: [stray]}))  # edited by hand
    with pytest.raises(ValueError, match=f"{stray} is listed beside {accepted_id} .* a run of ordinary_launches"):
        other_gpus.carried_claims(root)


def test_each_part_of_a_claim_that_fails_gives_its_own_verdict_and_reason():
    assert carried("B10").verdict == other_gpus.HOLDS
    assert other_gpus.why(carried("B10")) == "Its ratios, its test and the bound set on the H200 all hold."
    assert other_gpus.why(carried("B09", bounded=False)) == "Its test holds."
    failed = carried("B10", ratios=["warm is 0.9 [0.8, 0.95], not above 1"])
    assert failed.verdict == other_gpus.FAILS and other_gpus.why(failed) == "warm is 0.9 [0.8, 0.95], not above 1."
    undecided = carried("B21", test=True, bound=["warm is 1.034 [1.034, 1.034], stated above 1.138"])
    assert undecided.verdict == other_gpus.TEST_FAILS
    assert other_gpus.why(undecided).startswith("This run fails the claim's test. Its ratios lie on the stated side.")
    assert "It also misses the bound set on the H200: warm is 1.034" in other_gpus.why(undecided)
    outside = carried("B08", bound=["fused time / copy time is 1.1 [1.09, 1.11], stated below 1.062"])
    assert outside.verdict == other_gpus.OUTSIDE_BOUND
    assert other_gpus.why(outside).startswith("Its ratios lie on the stated side, but its figures fall outside")
    measured = carried("B28", bounded=False)
    assert measured.verdict == other_gpus.MEASURED and measured.statement == CLAIMS["B28"].question


def test_a_cold_ratio_names_the_single_calls_whose_pacing_it_needs():
    assert other_gpus.cold_variants(CLAIMS["B10"]) == {"row4.4096x4096.stream", "fused_rms.4096x4096.stream"}
    assert other_gpus.cold_variants(CLAIMS["B08"]) == set()


def test_the_answer_counts_every_verdict_in_words():
    items = [carried("B08"), carried("B11"), carried("B28", bounded=False), carried("B10", test=True)]
    assert page.verdict_counts(items) == ("Of their 4 claims, 2 hold there or give the same answer, 1 is a "
                                          "measurement taken again and 1 is undecided (B10), because the run fails a "
                                          "condition its figures need. None is contradicted there.")
    broken = [carried("B08", ratios=["x"]), carried("B11", ratios=["y"])]
    assert page.verdict_counts(broken) == "Of their 2 claims, 2 do not hold (B08 and B11)."
    with pytest.raises(ValueError, match="no accepted run has a run on another GPU model"):
        page.page_values([])


def test_the_committed_h100_runs_are_listed_apart_from_the_replicates():
    listed, copies = replicates.read_other_gpus(), replicates.read_replicates()
    assert listed and not set(run for runs in listed.values() for run in runs) & set(r for rs in copies.values() for r in rs)
    items = other_gpus.carried_claims()
    assert {item.claim.chapter for item in items} <= set(evidence.read_accepted())
    assert all(item.other.device != item.accepted.device for item in items)
    values = page.page_values(items)
    assert set(values) >= {"other_counts", "other_plane", "other_pacing"} and all(values.values())
    counts = [item.value(item.other) for item in items if item.claim.id == "B26"]  # task counts, no interval
    assert counts and all(re.fullmatch(r"1 block per SM \d+; 8 blocks per SM \d+", text) for text in counts)


def test_the_pacing_sentence_counts_each_hosts_cold_samples():
    def run(device, paced):
        return SimpleNamespace(device=device, summaries={"cold_pacing": {
            "a.1x1.stream": {"host_enqueue_exceeded_wait": paced, "samples": 21},
            "b.1x1.stream": {"host_enqueue_exceeded_wait": 0, "samples": 63}}})
    text = page.pacing_sentence(run("NVIDIA H200", 0), run("NVIDIA H100 80GB HBM3", 3), undecided=1)
    assert "With the H100 80GB HBM3, the host paced 3 of the fusion run's 84 cold samples" in text
    assert "with the H200, 0 of 84." in text and text.endswith("That is why one claim is undecided there.")
    assert page.pacing_sentence(run("NVIDIA H200", 0), run("NVIDIA H100 80GB HBM3", 0), undecided=0).endswith("0 of 84.")


def test_the_parts_read_again_are_named_in_the_book_s_order_and_all_of_them_said_so():
    items = other_gpus.carried_claims()
    chapters = page.page_values(items)["other_chapters"]
    order = list(dict.fromkeys(claim.section.split(":")[0] for claim in declared.BOOK_CLAIMS))
    named = [part for part in order if part in chapters]
    assert [chapters.index(part) for part in named] == sorted(chapters.index(part) for part in named)
    total = len(evidence.read_accepted())
    assert chapters.startswith("all ") == (len(named) == total)
    # one part fewer: counted, not "all"
    fewer = page.page_values([item for item in items if item.claim.chapter != "ordinary_launches"])["other_chapters"]
    assert fewer.startswith("five of its six parts (")


def test_the_claims_come_in_the_order_the_book_declares_them():
    order = {claim.id: k for k, claim in enumerate(declared.BOOK_CLAIMS)}
    ranks = [order[item.claim.id] for item in other_gpus.carried_claims()]
    assert ranks == sorted(ranks)

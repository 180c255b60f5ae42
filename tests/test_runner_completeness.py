"""The runner fails a run whose declared variant was neither measured nor skipped with a reason, naming it."""
import types

import pytest

from launchlab import runner
from launchlab.chapters import chapter


class Writer:
    path = "nowhere"

    def __init__(self):
        self.written = {}

    def write_json(self, name, value):
        self.written[name] = value


def session_with(samples, skipped):
    declared = chapter("ordinary_launches")
    record = types.SimpleNamespace(validation=None, to_dict=lambda: {"validation": record.validation})
    return types.SimpleNamespace(chapter=declared, parameters=declared.parameters(), samples=samples,
                                 skipped=skipped, record=record, writer=Writer())


def test_a_declared_variant_neither_measured_nor_skipped_fails_the_run_by_name():
    ids = [str(v.id) for v in chapter("ordinary_launches").variants()]
    session = session_with([{"variant": i} for i in ids[1:]], {})
    with pytest.raises(runner.IncompleteRun, match=ids[0].replace(".", r"\.")):
        runner.Session.require_complete(session)
    assert session.record.validation["missing_variants"] == [ids[0]]
    assert session.writer.written["run.json"]["validation"]["verdict"] == "failed"


def test_measured_or_skipped_with_a_reason_completes_and_a_skip_needs_a_reason():
    ids = [str(v.id) for v in chapter("ordinary_launches").variants()]
    runner.Session.require_complete(session_with([{"variant": i} for i in ids[1:]], {ids[0]: "no C++ compiler"}))
    with pytest.raises(ValueError, match="needs a reason"):
        runner.Session.skip(types.SimpleNamespace(skipped={}), ids[0], "")

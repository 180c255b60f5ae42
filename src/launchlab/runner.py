"""One runner for the skeleton every chapter's GPU run shares.

    execute(chapter, run_id, parameters)

makes a `Session` (the run record: device, environment, provenance, protocol), hands it to the
chapter's `run.run(session)`, which builds, validates before, measures and validates after through
the session, then writes the verdict, the samples and the record, and finally the summaries and
headline computed from those raw files alone, exactly as evidence mode recomputes them.

A failed validation writes the checks and a failed verdict, then stops the run (ValidationFailed).
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from launchlab.measure import protocol as measurement
from launchlab.model import oracles
from launchlab.store import evidence, provenance
from launchlab.store.record import RunRecord

SAMPLES_FILE = "samples/timing.jsonl.gz"


class ValidationFailed(RuntimeError):
    """A target disagreed with its oracle; the run is written with verdict 'failed' and never timed further."""


class IncompleteRun(RuntimeError):
    """A declared variant went missing from the run: neither measured nor skipped with a reason."""


class Session:
    """What a chapter's run.py works through: builds, checks, measurements, notes, files."""

    def __init__(self, chapter, writer: evidence.RunWriter, parameters, protocol=measurement.FROZEN,
                 backend=None, device=None):
        """`backend` (the protocol's TimingBackend) and `device` (identity(), environment(), state()) default to
        the GPU's; tests pass stand-ins."""
        if device is None:
            from launchlab.gpu import device
        if backend is None:
            from launchlab.gpu.backend import CupyBackend

            backend = CupyBackend()
        self.chapter, self.writer, self.parameters, self.protocol = chapter, writer, parameters, protocol
        self.backend, self.device = backend, device
        self.record = RunRecord(
            chapter=chapter.stem, run_id=writer.run_id, parameters=chapter.recorded_parameters(parameters),
            protocol=protocol.record(), host_path=chapter.host_path, device=device.identity(),
            environment=device.environment(), git_commit=provenance.git_commit(),
            source_tree_sha256=provenance.source_tree_sha256(), states={"before_build": device.state()})
        self.checks: list[dict] = []
        self.samples: list[dict] = []
        self.skipped: dict[str, str] = {}
        self.builds: dict[str, dict] = {}
        self.phase_seconds: dict[str, float] = {}
        self._phase_start = time.perf_counter()

    # ------------------------------------------------------------------ builds
    def build(self, label: str, family: str, kernels, defines: dict | None = None, **module_options):
        """Compile kernels/<family>.cu and save its build record (options, resources, PTX, SASS)."""
        from launchlab.gpu import build

        built = build.load_module(family, defines, **module_options)
        self.builds[label] = build.save_build(self.writer, label, built, kernels)
        return built

    @property
    def local_memory_free(self) -> bool:
        return all(r["local_bytes"] == 0 for b in self.builds.values() for r in b["resources_loaded"].values())

    # ------------------------------------------------------------------ validation
    def check(self, labels: dict, output: np.ndarray, reference: np.ndarray, tolerance=None,
              row_offsets=None, inputs: np.ndarray | None = None) -> dict:
        """Compare one output with its oracle (exactly where `tolerance` is None) and keep the result.

        Inputs and outputs are kept as SHA-256 hashes that the fixtures' seeds regenerate."""
        if tolerance is None:
            result = oracles.compare_exact(output, reference)
        elif row_offsets is None and np.ndim(output) == 2:
            result = oracles.compare_by_row_blocks(output, reference, tolerance)
        else:
            result = oracles.compare(output, reference, tolerance, row_offsets)
        result.update(labels)
        result["output_sha256"] = evidence.sha256_array(output)
        if inputs is not None:
            result["input_sha256"] = evidence.sha256_array(inputs)
        self.checks.append(result)
        return result

    def add_check(self, labels: dict, result: dict) -> dict:
        """Keep a check made elsewhere (e.g. compared on the device), with its labels."""
        result = {**result, **labels}
        self.checks.append(result)
        return result

    def require_passed(self, phase: str) -> None:
        """Stop the run, written as failed, if any check so far failed."""
        failing = [c for c in self.checks if not c["passed"]]
        if failing:
            self.record.validation = {"verdict": "failed", "reason": f"validation failed ({phase})",
                                      "failing_checks": len(failing), "checks": len(self.checks)}
            self.writer.write_json("validation.json", self.checks)
            self.writer.write_json("run.json", self.record.to_dict())
            raise ValidationFailed(f"validation failed ({phase}): see {self.writer.path / 'validation.json'}")

    # ------------------------------------------------------------------ measurement
    def measure(self, kind: str, variants, flush=None) -> list[dict]:
        """One named measurement (warm, cold or enqueue) of the frozen protocol, with the device state
        read before and after it. Its samples join the run's one sample file."""
        if kind == "warm":
            run = lambda: measurement.measure_warm(variants, self.backend, self.protocol)  # noqa: E731
        elif kind == "cold":
            if flush is None:
                raise ValueError("a cold measurement needs the L2 flush")
            run = lambda: measurement.measure_cold(variants, self.backend, flush, self.protocol)  # noqa: E731
        elif kind == "enqueue":
            run = lambda: measurement.measure_enqueue(variants, self.backend, self.protocol)  # noqa: E731
        else:
            raise ValueError(f"unknown measurement {kind!r}: warm, cold or enqueue")
        index = sum(1 for key in self.record.states if key.startswith("measurement")) // 2
        self.record.states[f"measurement{index}.{kind}.before"] = self.device.state()
        samples = run()
        self.record.states[f"measurement{index}.{kind}.after"] = self.device.state()
        self.samples += samples
        return samples

    def skip(self, variant, reason: str) -> None:
        """A declared variant this run cannot measure (a missing requirement, a library that failed its
        oracle), with the reason the run records."""
        if not reason:
            raise ValueError(f"skipping {variant} needs a reason")
        self.skipped[str(variant)] = reason

    def skip_all(self, reason: str, target: str, case: str | None = None) -> None:
        """Skip every declared variant of a row (on one case, or on all)."""
        for variant in self.chapter.variants(self.parameters):
            if variant.id.target == target and case in (None, variant.id.case):
                self.skip(variant.id, reason)

    def require_complete(self) -> None:
        """Every declared variant was measured or skipped with its reason; otherwise the run fails, naming them."""
        measured = {sample["variant"] for sample in self.samples}
        missing = [str(v.id) for v in self.chapter.variants(self.parameters)
                   if str(v.id) not in measured and not self.skipped.get(str(v.id))]
        if missing:
            self.record.validation = {"verdict": "failed", "reason": "declared variants neither measured nor skipped",
                                      "missing_variants": missing}
            self.writer.write_json("run.json", self.record.to_dict())
            raise IncompleteRun(f"{len(missing)} declared variant(s) neither measured nor skipped: "
                                f"{', '.join(missing[:8])}{' ...' if len(missing) > 8 else ''}")

    # ------------------------------------------------------------------ record
    def phase(self, name: str) -> None:
        """Close a phase of the run: its wall time is printed and kept in run.json's details."""
        now = time.perf_counter()
        self.phase_seconds[name] = round(now - self._phase_start, 3)
        self._phase_start = now
        print(f"{self.chapter.stem}: {name} took {self.phase_seconds[name]:.1f} s", flush=True)

    def note(self, key: str, value) -> None:
        """A chapter-specific fact for run.json's `details`."""
        self.record.details[key] = value

    def library(self, name: str, version: str | None) -> None:
        self.record.environment["libraries"][name] = version

    def finish(self) -> None:
        """Verdict, device state at the end, samples, checks and the record."""
        from launchlab.gpu.device import clocks_dropped

        self.require_passed("end of run")
        self.require_complete()
        if self.skipped:
            self.record.details["skipped_variants"] = self.skipped
        self.record.states["end"] = self.device.state()
        readings = [v for k, v in self.record.states.items() if k.startswith("measurement")]
        if readings:
            self.record.clocks_dropped = clocks_dropped(readings[0], readings[-1])
        self.record.details.setdefault("local_memory_free", self.local_memory_free)
        if self.phase_seconds:
            self.record.details["phase_seconds"] = self.phase_seconds
        self.record.validation = {"verdict": "passed", "checks": len(self.checks)}
        if self.samples:
            self.writer.write_jsonl(SAMPLES_FILE, self.samples)
        self.writer.write_json("validation.json", self.checks)
        self.writer.write_json("run.json", self.record.to_dict())


def execute(chapter, run_id: str, parameters) -> Path:
    """Run a chapter on the GPU into a new run directory; return its path (not yet sealed)."""
    from launchlab.store.runs import summarize

    writer = evidence.RunWriter(run_id)
    session = Session(chapter, writer, parameters)
    chapter.run.run(session)
    session.finish()
    summaries, headline = summarize(writer.path, chapter.summary)
    writer.write_json("summaries.json", summaries)
    writer.write_json("headline.json", headline)
    return writer.path

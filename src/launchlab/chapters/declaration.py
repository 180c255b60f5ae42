"""What a chapter declares, and what runs: its typed parameters and its rows.

A chapter package `launchlab.chapters.<stem>` holds:

  * `__init__.py`  the declaration: `CHAPTER = Chapter(...)`, its `Parameters` dataclass and its rows. A `Row`
                   is one contender or design: how to make its Target (a callable), its oracle (a function),
                   its submissions, its logical bytes, how its figures are paced, which outputs it enters and
                   what it requires. `expand(parameters)` crosses the rows with the chapter's cases and
                   submissions into `Variant`s, one per VariantId;
  * `run.py`       the GPU side only: `run(session)` iterates the expanded variants, makes, validates and
                   measures them through the session, and skips (with the reason) what the GPU cannot run;
  * `summary.py`   NumPy only: `summarize(run_dir, record)` and `headline(summaries)`, findings included;
  * `page.py`      formats what the summaries hold: tables, figures and glued values for the notebook.

At the end of a run the runner checks that every declared variant was measured or skipped with its reason,
so a row cannot silently go missing. A variant that reuses an existing kernel is one more row.
"""
from __future__ import annotations

import dataclasses
import importlib
import typing
from collections.abc import Callable

from launchlab.measure.variant import VariantId

PACINGS = ("device", "host")
L2_STATES = ("warm", "cold")


# --------------------------------------------------------------------------- typed parameter values
class Shapes(tuple):
    """Matrix shapes, written `4096x128,128x65536`; rows and columns positive."""

    @classmethod
    def parse(cls, value) -> "Shapes":
        if isinstance(value, str):
            items = [item.strip() for item in value.split(",") if item.strip()]
            shapes = []
            for item in items:
                try:
                    rows, cols = (int(part) for part in item.lower().split("x"))
                except ValueError:
                    raise ValueError(f"{item!r} is not a shape ROWSxCOLS") from None
                shapes.append((rows, cols))
        else:
            shapes = [tuple(int(v) for v in shape) for shape in value]
        if any(len(shape) != 2 or min(shape) < 1 for shape in shapes):
            raise ValueError(f"{value!r}: every shape needs positive rows and columns")
        return cls(shapes)

    def text(self) -> str:
        return ",".join(f"{rows}x{cols}" for rows, cols in self)


class Names(tuple):
    """Names, written `cudnn,torch`; empty for none."""

    @classmethod
    def parse(cls, value) -> "Names":
        items = value.split(",") if isinstance(value, str) else list(value)
        return cls(dict.fromkeys(str(item).strip() for item in items if str(item).strip()))

    def text(self) -> str:
        return ",".join(self)


class Counts(tuple):
    """Positive integers, written `1,4,16`; empty for none."""

    @classmethod
    def parse(cls, value) -> "Counts":
        items = [v for v in value.split(",") if v.strip()] if isinstance(value, str) else list(value)
        try:
            counts = [int(v) for v in items]
        except ValueError:
            raise ValueError(f"{value!r} is not a comma-separated list of integers") from None
        if any(v < 1 for v in counts):
            raise ValueError(f"{value!r}: counts must be positive")
        return cls(counts)

    def text(self) -> str:
        return ",".join(str(v) for v in self)


TEXT_TYPES = (Shapes, Names, Counts)


def parse_value(kind, value):
    """One parameter value as its declared type; a bool accepts true/false words."""
    if kind in TEXT_TYPES:
        return kind.parse(value)
    if kind is bool and isinstance(value, str):
        if value.lower() in ("true", "1", "yes"):
            return True
        if value.lower() in ("false", "0", "no"):
            return False
        raise ValueError(f"{value!r} is not true or false")
    if isinstance(value, kind):
        return value
    if kind is int and isinstance(value, float) and value != int(value):
        raise ValueError(f"{value!r} is not a whole number")
    return kind(value)


def recorded_value(value):
    """A typed value as run.json keeps it: shapes, names and counts as their text."""
    return value.text() if isinstance(value, TEXT_TYPES) else value


# --------------------------------------------------------------------------- rows and variants
@dataclasses.dataclass(frozen=True)
class Requires:
    """What a row needs of the GPU or the host; `missing` says what is absent, in words."""
    compute_capability: tuple[int, int] = (0, 0)
    clusters: bool = False
    pdl: bool = False
    library: str | None = None

    def missing(self, device: dict, libraries: typing.Mapping[str, bool] | None = None) -> str | None:
        have = tuple(int(v) for v in str(device.get("compute_capability", "0.0")).split("."))
        needed = max(self.compute_capability, (9, 0) if self.clusters or self.pdl else (0, 0))
        if have < needed:
            what = "thread-block clusters" if self.clusters else "programmatic dependent launch" if self.pdl else "it"
            return (f"needs compute capability {needed[0]}.{needed[1]} for {what}; "
                    f"this GPU has {device.get('compute_capability')}")
        if self.library and libraries is not None and not libraries.get(self.library, False):
            return f"{self.library} is not installed"
        return None

    def text(self) -> str:
        parts = []
        if self.compute_capability != (0, 0):
            parts.append(f"sm_{self.compute_capability[0]}{self.compute_capability[1]}")
        parts += [name for name, flag in (("clusters", self.clusters), ("pdl", self.pdl)) if flag]
        if self.library:
            parts.append(self.library)
        return "+".join(parts) or "-"


@dataclasses.dataclass(frozen=True)
class Oracle:
    """The reference a row's output is checked against: `function(x)` in float64 (None: the row writes no
    output), within `tolerance` (None: exactly)."""
    name: str
    function: Callable | None = None
    tolerance: object = None


def default_pacing(submission: str, l2: str) -> str:
    """Graph replays and cold single calls (issued after a GPU-side wait) give device time; warm stream
    batches are paced by the host that submits them."""
    return "device" if submission.startswith("graph") or l2 == "cold" else "host"


@dataclasses.dataclass(frozen=True)
class Row:
    """One contender or design of a chapter."""
    name: str                                  # the VariantId target
    label: str                                 # how tables and figures name it
    make: Callable                             # the chapter's run context and case -> Target
    oracle: Oracle
    submissions: tuple[str, ...]
    bytes: Callable                            # case -> (logical bytes read, written) per call
    l2: tuple[str, ...] = ("warm",)
    outputs: frozenset = frozenset({"table"})  # which of the chapter's outputs it enters
    requires: Requires = Requires()
    pacing: Callable = default_pacing          # (submission, l2) -> "device" | "host"
    kernels: tuple[str, ...] = ()              # the kernels one call launches, in order (its graph's kernel nodes)
    cases: Callable | None = None              # parameters -> [(case, calls per invocation)], where the chapter asks
    outputs_at: Callable | None = None         # (parameters, case, submission) -> outputs there (empty: not run); None: `outputs`


@dataclasses.dataclass(frozen=True)
class Variant:
    """One measured thing: a row on a case under a submission, with its logical bytes per invocation."""
    id: VariantId
    row: Row
    calls: int = 1                             # calls of the row in one invocation (a graph of many calls)
    outputs: frozenset | None = None           # None: the row's
    l2: tuple[str, ...] | None = None          # None: the row's

    @property
    def bytes_read(self) -> int:
        return self.calls * self.row.bytes(self.id.case)[0]

    @property
    def bytes_written(self) -> int:
        return self.calls * self.row.bytes(self.id.case)[1]

    @property
    def logical_bytes(self) -> int:
        return self.bytes_read + self.bytes_written

    @property
    def enters(self) -> frozenset:
        return self.row.outputs if self.outputs is None else self.outputs

    @property
    def l2_states(self) -> tuple[str, ...]:
        return self.row.l2 if self.l2 is None else self.l2

    def pacing(self, l2: str = "warm") -> str:
        return self.row.pacing(self.id.submission, l2)

    def snapshot(self) -> str:
        """One line of the committed table a test diffs: a deleted or changed row shows."""
        pacings = ",".join(f"{l2}:{self.pacing(l2)}" for l2 in self.l2_states)
        return " | ".join([str(self.id), self.row.label, self.row.oracle.name, str(self.bytes_read),
                           str(self.bytes_written), pacings, ",".join(sorted(self.enters)),
                           self.row.requires.text()])


def expand_rows(rows, parameters) -> list[Variant]:
    """Each row on its cases (`row.cases(parameters)`), under each of its submissions, entering what its
    `outputs_at` says there; a (case, submission) where it enters nothing is not declared."""
    variants = []
    for row in rows:
        if row.cases is None:
            raise ValueError(f"row {row.name!r} declares no cases")
        for case, calls in row.cases(parameters):
            for submission in row.submissions:
                outputs = None if row.outputs_at is None else frozenset(row.outputs_at(parameters, case, submission))
                if outputs is None or outputs:
                    variants.append(Variant(VariantId(row.name, case, submission), row, calls=calls, outputs=outputs))
    return variants


# --------------------------------------------------------------------------- the chapter
@dataclasses.dataclass(frozen=True)
class Chapter:
    stem: str
    tag: str
    title: str
    host_path: str
    parameters: type                     # a dataclass whose fields are the notebook's parameters
    expand: typing.Callable              # parameters -> list[Variant]

    def _module(self, name: str):
        return importlib.import_module(f"launchlab.chapters.{self.stem}.{name}")

    @property
    def run(self):
        return self._module("run")

    @property
    def summary(self):
        return self._module("summary")

    @property
    def page(self):
        return self._module("page")

    def defaults(self) -> dict:
        """The default parameters as a notebook's parameters cell writes them."""
        return self.recorded_parameters(self.parameters())

    def parameters_of(self, record) -> object:
        """The typed parameters a saved run was made with."""
        return self.parse_parameters(record.parameters)

    def parse_parameters(self, given: dict):
        """The typed parameters from notebook, command-line or run.json values; an unknown name or a value
        of the wrong kind is an error that names it."""
        fields = {f.name: f for f in dataclasses.fields(self.parameters)}
        unknown = sorted(set(given) - set(fields))
        if unknown:
            raise ValueError(f"unknown parameter(s) for {self.stem}: {', '.join(unknown)} "
                             f"(known: {', '.join(sorted(fields))})")
        hints = typing.get_type_hints(self.parameters)
        values = {}
        for name, value in given.items():
            try:
                values[name] = parse_value(hints[name], value)
            except (TypeError, ValueError) as problem:
                raise ValueError(f"parameter {name} of {self.stem} must be {getattr(hints[name], '__name__', hints[name])}: {problem}") from None
        return self.parameters(**values)

    def recorded_parameters(self, parameters) -> dict:
        """The parameters as run.json keeps them (plain JSON values)."""
        return {f.name: recorded_value(getattr(parameters, f.name)) for f in dataclasses.fields(parameters)}

    def variants(self, parameters=None) -> list[Variant]:
        variants = self.expand(parameters if parameters is not None else self.parameters())
        ids = [str(v.id) for v in variants]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(f"{self.stem} declares these variants twice: {', '.join(repeated)}")
        return variants

    def snapshot(self, parameters=None) -> str:
        return "\n".join(v.snapshot() for v in self.variants(parameters)) + "\n"


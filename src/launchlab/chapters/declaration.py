"""What a chapter declares: its stem and tag, typed parameters with defaults, and its variant table.

A chapter package `launchlab.chapters.<stem>` holds:

  * `__init__.py`  the declaration: `CHAPTER = Chapter(...)`, the parameters dataclass and the
                   variant table (id, the target it launches, its oracle, logical bytes read and written);
  * `run.py`       the GPU side only: `run(session)` builds, validates, measures through the runner;
  * `summary.py`   NumPy only: `summarize(run_dir, record)` and `headline(summaries)`;
  * `page.py`      tables, figures and glued values for the notebook.

Adding a variant is one row in the table; adding an experiment is a declaration plus a kernel.
"""
from __future__ import annotations

import dataclasses
import importlib
import typing

from launchlab.measure.variant import VariantId


@dataclasses.dataclass(frozen=True)
class VariantSpec:
    """One row of a chapter's variant table."""
    id: VariantId
    target: str          # the class or builder that makes it, as the page names it
    oracle: str          # the reference it is validated against
    bytes_read: int      # logical bytes one invocation must read ...
    bytes_written: int   # ... and write, if each array is touched as often as the algorithm says

    @property
    def logical_bytes(self) -> int:
        return self.bytes_read + self.bytes_written


@dataclasses.dataclass(frozen=True)
class Chapter:
    stem: str
    tag: str
    title: str
    host_path: str
    parameters: type                     # a dataclass whose fields are the notebook's parameters
    variants: typing.Callable            # parameters -> list[VariantSpec]

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
        return dataclasses.asdict(self.parameters())

    def parse_parameters(self, given: dict):
        """The typed parameters from notebook or command-line values; an unknown name is an error."""
        fields = {f.name: f for f in dataclasses.fields(self.parameters)}
        unknown = sorted(set(given) - set(fields))
        if unknown:
            raise ValueError(f"unknown parameter(s) for {self.stem}: {', '.join(unknown)} "
                             f"(known: {', '.join(sorted(fields))})")
        hints = typing.get_type_hints(self.parameters)
        values = {}
        for name, value in given.items():
            kind = hints[name]
            try:
                values[name] = kind(value) if not isinstance(value, kind) else value
            except (TypeError, ValueError):
                raise ValueError(f"parameter {name} of {self.stem} must be {kind.__name__}, not {value!r}") from None
        return self.parameters(**values)

    def variant_table(self, parameters=None) -> list[VariantSpec]:
        return self.variants(parameters or self.parameters())

"""VariantId: the one name of a measured thing, in samples, summaries, headline keys and tables.

Its string form is `<target>.<case>.<submission>`:

  * target      what is launched: `row4`, `fused_rms`, `tiled3`, `copy`, `cudnn`, `queue`, ...
  * case        the data it runs on: a shape `4096x1024`, a named case `balanced`, a size `n1048576`
  * submission  how one invocation reaches the GPU: `stream` (launches from Python), `graph`
                (replay of a captured graph), `native` (launches from the C++ loop), ...

No part contains a dot, so the three parts always read back unambiguously.
"""
from __future__ import annotations

import dataclasses
import re

PART = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclasses.dataclass(frozen=True, order=True)
class VariantId:
    target: str
    case: str
    submission: str = "stream"

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, str) or not PART.match(value):
                raise ValueError(f"variant {field.name} {value!r} must be letters, digits, '_' or '-' (no dots)")

    def __str__(self) -> str:
        return f"{self.target}.{self.case}.{self.submission}"

    @classmethod
    def parse(cls, text: str) -> "VariantId":
        parts = str(text).split(".")
        if len(parts) != 3:
            raise ValueError(f"variant id {text!r} is not of the form <target>.<case>.<submission>")
        return cls(*parts)

    def with_submission(self, submission: str) -> "VariantId":
        return dataclasses.replace(self, submission=submission)

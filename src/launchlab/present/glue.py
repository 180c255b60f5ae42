"""Helpers for chapter pages: glue formatted values for the prose."""
from __future__ import annotations


def glue_values(values: dict) -> None:
    """Glue each value as Markdown, for `{glue:md}` in the chapter's prose."""
    from IPython.display import Markdown
    from myst_nb import glue

    for name, text in values.items():
        glue(name, Markdown(str(text)), display=False)


CHECK_LABELS = ("workload", "shape", "phase", "fixture")
CHECK_RESULTS = ("passed", "failing_elements", "max_abs_error", "relative_l2_error")


def validation_table(run):
    """Every oracle check of a run (validation.json): what was checked, verdict and error."""
    import json

    import pandas as pd

    frame = pd.DataFrame(json.loads((run.path / "validation.json").read_text()))
    labels = [column for column in CHECK_LABELS if column in frame]
    return frame[labels + list(CHECK_RESULTS)].set_index(labels)

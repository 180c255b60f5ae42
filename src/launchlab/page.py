"""Helpers for chapter pages: glue formatted values for the prose."""
from __future__ import annotations


def glue_values(values: dict) -> None:
    """Glue each value as Markdown, for `{glue:md}` in the chapter's prose."""
    from IPython.display import Markdown
    from myst_nb import glue

    for name, text in values.items():
        glue(name, Markdown(str(text)), display=False)

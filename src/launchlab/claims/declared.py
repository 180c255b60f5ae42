"""Every tie between a claim and an accepted run, in one import surface: the book's own claims (BOOK_CLAIMS, in
`declared_book`) and our values beside C- and R-claims (BESIDE, in `declared_beside`), with the readings on runs
they share (`readings`).

Adding a book claim is one `BookClaim(...)` in BOOK_CLAIMS; adding a comparison is one `Beside(...)` in BESIDE.
`python -m launchlab claims` then regenerates evidence/claims/claims.yaml. A chapter whose accepted run predates
the current run record leaves its claims pending, each naming what it will read.
"""
from __future__ import annotations

from launchlab.claims.declared_beside import AUDIT_VALUES, BESIDE, RECHECK_VALUES
from launchlab.claims.declared_book import BOOK_CLAIMS
from launchlab.claims.readings import idle_in_last_wave, ragged_iterations

__all__ = ["AUDIT_VALUES", "BESIDE", "BOOK_CLAIMS", "RECHECK_VALUES", "idle_in_last_wave", "ragged_iterations"]

"""The grader's named mistakes of E10.4's Part 5b, the rank-limited general score.

A student's copy of the course (``course-handout``) leaves out every exercise's ``hidden.py``
(:func:`course_utils.tools.solutions.ships`): there, :mod:`course_utils.checks.e10_4` checks
Part 5b against the library's general score with ``W = U V`` and names no mistake of the product
itself. The grader runs from the course's repository, where this module is.
"""

from __future__ import annotations

import torch

__all__ = ["low_rank_slips"]

_MIXED_UP = ("with a source as long as the rank (3 and 3) your energies mix up positions and "
             "coordinates: the keys are (batch, src_len, rank) and the query (batch, rank); one "
             "energy per source position is the keys times the query as a column")


def low_rank_slips(state: torch.Tensor, outputs: torch.Tensor, U: torch.Tensor,
                   V: torch.Tensor) -> list[tuple[torch.Tensor, str]]:
    """The energies of a product over the wrong axis (which keeps the shape only when the
    source is as long as the rank), with its hint; none for other sizes."""
    keys = outputs @ V.T  # (batch, src_len, rank)
    query = (U.T @ state.T).T  # (batch, rank)
    if keys.shape[1] != keys.shape[2]:
        return []
    return [(torch.einsum("br,brt->bt", query, keys), _MIXED_UP)]

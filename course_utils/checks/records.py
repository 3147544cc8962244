"""Records: what a check cell keeps of the student's own run, saved with the notebook, for the
grader to judge from the submitted file.

Most parts are judged by calling the student's function again under the grader. A part about
the student's own *trained model* cannot be: the grader re-runs the notebook at smoke-test
scale in a temporary folder, where that model is not. For such a part the check cell shows a
**record** of what the student's model did (E10.3: the chosen sentence, its tokens, the German
the model wrote and its attention matrix), a small JSON document under :data:`RECORD_MIME` in
the cell's output. Jupyter saves it with the notebook. The grader reads it from the submitted
file before running anything (:func:`records_in`) and judges the part on it
(:meth:`Check.judge <course_utils.checks.framework.Check.judge>` inside :func:`submitted`); the
smoke-scale re-run never replaces it. In the notebook the same body judges the record that the
cell has just made (:func:`current`).

A record is data the student hands in, like a written answer: the judge reads it strictly and
scores a missing or malformed one 0, saying to run the cell with the student's own model and
save the notebook.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["RECORD_CHARS", "RECORD_MIME", "current", "records_in", "show_record", "submitted"]

#: The MIME type of a record in a cell's output (a JSON object: exercise, part, record).
RECORD_MIME = "application/vnd.course-record+json"

#: Characters of one record, at most, as JSON: more is not a record of one sentence.
RECORD_CHARS = 200_000

#: The records this kernel's check cells made: ``(exercise, part) -> record``.
_MADE: dict[tuple[str, str], object] = {}

#: Under the grader: the records read from the submitted file (``part -> record``); None in a
#: notebook. A context variable: the grader judges several submissions at once in threads.
_SUBMITTED: ContextVar[Mapping[str, object] | None] = ContextVar("course_records", default=None)


def show_record(exercise: str, part: str, record: object) -> None:
    """Show ``record`` in the running cell's output, where the notebook saves it, and keep it
    as this kernel's record of ``part``. ``record`` is plain JSON data (kept as it reads back)."""
    text = json.dumps(record, ensure_ascii=False, allow_nan=False)
    if len(text) > RECORD_CHARS:
        raise ValueError(f"a record of {len(text):,} characters is more than the "
                         f"{RECORD_CHARS:,} a part may keep")
    _MADE[(exercise, part)] = json.loads(text)
    _display({RECORD_MIME: {"exercise": exercise, "part": part, "record": json.loads(text)},
              "text/plain": f"(the record of {exercise} {part}, saved with the notebook: the "
                            "grader judges this part on it)"})


def _display(bundle: dict) -> None:
    """Show ``bundle`` (MIME type -> data) as the running cell's output."""
    try:
        from IPython.display import display
    except ImportError:  # outside IPython there is no output to save it in
        return
    display(bundle, raw=True)


def current(exercise: str, part: str) -> object | None:
    """The record a check judges: under the grader, the one saved in the submitted file (None
    when it has none); in a notebook, the one this kernel's check cell made last."""
    submitted_records = _SUBMITTED.get()
    if submitted_records is not None:
        return submitted_records.get(part)
    return _MADE.get((exercise, part))


@contextmanager
def submitted(records: Mapping[str, object]) -> Iterator[None]:
    """Judge on ``records`` (``part -> record``, read from a submitted file) inside the block,
    in this thread only."""
    token = _SUBMITTED.set(dict(records))
    try:
        yield
    finally:
        _SUBMITTED.reset(token)


def records_in(notebook: object, exercise: str) -> dict[str, object]:
    """Each part's record in a notebook's saved outputs (the notebook as JSON data): the last
    one of each part of ``exercise``, as saved, unchecked (the judge reads it strictly).
    Anything that is not a record of this exercise is passed over."""
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    found: dict[str, object] = {}
    for cell in cells if isinstance(cells, list) else []:
        outputs = cell.get("outputs") if isinstance(cell, dict) else None
        for output in outputs if isinstance(outputs, list) else []:
            data = output.get("data") if isinstance(output, dict) else None
            document = data.get(RECORD_MIME) if isinstance(data, dict) else None
            if isinstance(document, str):  # a front end that saved the JSON as text
                try:
                    document = json.loads(document[:RECORD_CHARS + 1000])
                except ValueError:
                    continue
            if not isinstance(document, dict) or document.get("exercise") != exercise:
                continue
            part = document.get("part")
            if isinstance(part, str) and len(part) <= 100:
                found[part] = document.get("record")
    return found

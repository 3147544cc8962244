"""Under ``course-grade``, E10.3's finds are judged on the run the student handed in: the grader
reads each find's record from the submitted notebook before running it (the smoke-scale re-run
has no E10.2 model and never replaces the record), and judges it on the grader's criteria. The
worked solution keeps full marks; the untouched exercise scores 0; a notebook saved without the
records, with a record that does not read, or with one of another sentence scores 0 for that
part, saying to run the check cell with the student's own model and save the notebook. One
batch."""

import html

import nbformat
from helpers import ROOT, calibrated_limits

from course_utils.checks import get_exercise, notebook_of
from course_utils.checks.records import RECORD_MIME
from course_utils.tools.grading import grade_folder

LIMITS = calibrated_limits(cell_seconds=120, total_seconds=500)
PARTS = ("monotonic", "reordering", "many-to-one")


def _solution() -> nbformat.NotebookNode:
    return nbformat.read(notebook_of("E10.3", ROOT / "solutions"), as_version=4)


def _records(notebook: nbformat.NotebookNode) -> dict:
    """part -> (the output that holds its record, the record)."""
    found = {}
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            document = output.get("data", {}).get(RECORD_MIME)
            if document:
                found[document["part"]] = (output, document["record"])
    return found


def test_finds_are_judged_on_the_record_saved_in_the_submission(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    nbformat.write(_solution(), subs / "honest.ipynb")
    (subs / "untouched.ipynb").write_bytes(notebook_of("E10.3", ROOT / "exercises").read_bytes())

    unsaved = _solution()  # run, but saved before the check cells ran: no record at all
    for cell in unsaved.cells:
        cell["outputs"] = [o for o in cell.get("outputs", []) if RECORD_MIME not in
                           o.get("data", {})]
    nbformat.write(unsaved, subs / "unsaved.ipynb")

    forged = _solution()  # a hand-edited record, and a record of another sentence
    output, record = _records(forged)["monotonic"]
    record["weights"][0] = [1.0] * len(record["weights"][0])
    (cell,) = [c for c in forged.cells if c.source.startswith("def reordering_example")]
    cell.source = 'def reordering_example():\n    return "a dog runs ."'
    nbformat.write(forged, subs / "forged.ipynb")

    results = {r.student: r for r in grade_folder("E10.3", subs, tmp_path / "out",
                                                  limits=LIMITS, progress=False)}
    exercise = get_exercise("E10.3")
    honest = results["honest"]
    assert honest.status == "graded", honest.notes
    assert honest.points == {p: c.points for p, c in exercise.checks.items()}, honest.messages
    assert all(honest.messages[p].startswith("found: ") for p in PARTS)

    assert results["untouched"].total() == 0
    assert all("not implemented" in m for m in results["untouched"].messages.values())

    unsaved = results["unsaved"]
    assert unsaved.total() == 0, unsaved.messages
    for part in PARTS:
        assert "no record" in unsaved.messages[part] and "save the notebook" in \
            unsaved.messages[part], unsaved.messages[part]

    forged = results["forged"]
    assert forged.points == {"monotonic": 0, "reordering": 0, "many-to-one": 2}, forged.messages
    assert "cannot be read" in forged.messages["monotonic"]
    assert "sum to 1" in forged.messages["monotonic"]
    assert "another sentence" in forged.messages["reordering"]

    page = (tmp_path / "out" / "answers.html").read_text(encoding="utf-8")
    record = _records(_solution())["reordering"][1]
    assert "Judged on each student's own run" in page and record["sentence"] in page
    assert " ".join(record["output_tokens"]) in page
    assert html.escape(honest.messages["reordering"]) in page

"""The instructor's loop, as the issue walked it: grade, type the written marks into
``marks.csv``, a late submission arrives, grade again (the whole folder, ``--only``,
``--no-reuse``, a sharded run and its merge): every mark and comment survives byte for byte, the
totals include them, the feedback shows them, and a changed answer is flagged.

Two notebooks are graded once for the module (alice: the worked solution, 8 automatic points;
bob: the untouched handout, 0); each test works on a copy of that output, whose cache makes a
regrade of an unchanged notebook free."""

import csv
import io
import shutil
import tempfile
from pathlib import Path

import nbformat
import pytest
from helpers import ROOT, calibrated_limits
from nbformat.v4 import new_code_cell

from course_utils.tools.grading import main
from course_utils.tools.grading.marks import CHANGED, COLUMNS, MARKED, NEEDS_MARKING
from course_utils.tools.grading.sandbox import detect

SOLUTION = ROOT / "solutions" / "E10.1-attention-by-hand.ipynb"
HANDOUT = ROOT / "exercises" / "E10.1-attention-by-hand.ipynb"
LIMITS = calibrated_limits(cell_seconds=20, total_seconds=120)
OPTIONS = ["--quiet", "--no-calibrate", "--cell-timeout", str(LIMITS.cell_seconds),
           "--total-timeout", str(LIMITS.total_seconds), "--memory-mb", str(LIMITS.memory_mb)]

#: What the instructor types: (student, question) -> (points, comment); commas, quotes and a
#: line break in the comments, as real comments have them.
MARKS = {("alice", "predict"): ("1", "Right, and said before computing."),
         ("alice", "why"): ("2", 'Clear: "largest in both coordinates".\nWell argued.'),
         ("bob", "predict"): ("0", "Not h_1: compare the energies."),
         ("bob", "why"): ("1", "Half right; which term grows?")}


def submission(base, predict, why):
    notebook = nbformat.read(base, as_version=4)
    for cell in notebook.cells:
        name = cell.metadata.get("course", {}).get("manual")
        if name:
            cell.source = {"predict": predict, "why": why}[name]
    return notebook


def grade(subs, out, *more):
    assert main(["E10.1", str(subs), "--out", str(out), *OPTIONS, *more]) == 0


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("loop")
    subs = folder / "subs"
    subs.mkdir()
    nbformat.write(submission(SOLUTION, "h_3.", "Its key is the largest in both coordinates, "
                              "so tanh of the sum is largest for it."), subs / "alice.ipynb")
    nbformat.write(submission(HANDOUT, "h_1.", "Because the query points that way."),
                   subs / "bob.ipynb")
    grade(subs, folder / "grades")
    return folder


@pytest.fixture
def run(first_run, tmp_path):
    """A copy of the first run's submissions and output (its cache included)."""
    shutil.copytree(first_run / "subs", tmp_path / "subs")
    shutil.copytree(first_run / "grades", tmp_path / "grades")
    return tmp_path


def table(path):
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"))))


def by_student(path):
    return {row["student"]: row for row in table(path)}


def type_marks(path):
    """The instructor opens marks.csv in a spreadsheet, types the marks, adds a column of
    their own and saves: every cell quoted, CRLF line endings, a byte-order mark."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    writer.writerow([*COLUMNS, "second reader"])
    for row in table(path):
        points, comment = MARKS.get((row["student"], row["question"]), ("", ""))
        writer.writerow([*(row[c] for c in COLUMNS[:2]), points, row["max"], comment,
                         *(row[c] for c in COLUMNS[5:]), "JS"])
    path.write_bytes(("\ufeff" + buffer.getvalue()).encode())
    return path.read_bytes()


def test_the_first_run_writes_marks_csv_and_every_answer_needs_marking(first_run):
    grades = by_student(first_run / "grades" / "grades.csv")
    assert (grades["alice"]["total"], grades["alice"]["max"]) == ("8", "11")
    assert grades["alice"]["status"] == NEEDS_MARKING and grades["alice"]["why (manual)"] == ""
    assert [(r["student"], r["question"], r["points"]) for r in table(
        first_run / "grades" / "marks.csv")] == [
        ("alice", "predict", ""), ("alice", "why", ""), ("bob", "predict", ""), ("bob", "why", "")]


def test_marks_survive_a_late_submission_and_every_kind_of_regrade(run, capsys):
    marks = run / "grades" / "marks.csv"
    typed = type_marks(marks)
    nbformat.write(submission(HANDOUT, "h_3", "The last key is the biggest."),
                   run / "subs" / "carol.ipynb")
    grade(run / "subs", run / "grades")  # the late one is graded, the others reused
    after = marks.read_bytes()
    assert after.startswith(typed)  # every byte the instructor saved, then carol's rows
    assert [r["student"] for r in table(marks)] == ["alice"] * 2 + ["bob"] * 2 + ["carol"] * 2
    assert "written answers: 4 of 6 marked" in capsys.readouterr().out

    def check():
        assert marks.read_bytes() == after
        grades = by_student(run / "grades" / "grades.csv")
        assert [grades["alice"][k] for k in ("predict (manual)", "why (manual)", "total",
                                              "status", "written")] == [
            "1", "2", "11", "graded", MARKED]
        assert [grades["bob"][k] for k in ("predict (manual)", "why (manual)", "total")] == [
            "0", "1", "1"]
        assert [grades["carol"][k] for k in ("why (manual)", "status", "written")] == [
            "", NEEDS_MARKING, f"{NEEDS_MARKING}: predict, why"]
        feedback = (run / "grades" / "feedback" / "alice.md").read_text()
        assert "| why | 2 / 2 | marked by your instructor: Clear: \"largest in both " \
               "coordinates\". Well argued. |" in feedback
        assert "Total: **11 / 11**" in feedback
        assert "not marked yet" in (run / "grades" / "feedback" / "carol.md").read_text()
        assert "Half right; which term grows?" in (run / "grades" / "answers.html").read_text()

    check()
    grade(run / "subs", run / "grades", "--only", "alice")
    check()
    grade(run / "subs", run / "grades", "--no-reuse")
    check()


def test_a_sharded_run_and_its_merge_read_the_same_marks_and_equal_the_unsharded(run):
    typed = type_marks(run / "grades" / "marks.csv")
    grade(run / "subs", run / "grades")  # unsharded, every notebook reused
    merged = run / "all"
    merged.mkdir()
    (merged / "marks.csv").write_bytes(typed)  # the one file the shards and the merge read
    for k in (1, 2):  # each shard reuses the first run's cache: no notebook runs again
        shutil.copytree(run / "grades" / ".cache", run / f"shard-{k}" / ".cache")
        grade(run / "subs", run / f"shard-{k}", "--shard", f"{k}/2",
              "--marks", str(merged / "marks.csv"))
        assert not (run / f"shard-{k}" / "marks.csv").exists()
    assert (merged / "marks.csv").read_bytes() == typed  # shards read it, never write it
    assert by_student(run / "shard-1" / "grades.csv")["alice"]["total"] == "11"
    assert main(["merge", str(run / "shard-1"), str(run / "shard-2"), "--out",
                 str(merged)]) == 0
    for name in ("grades.csv", "marks.csv", "feedback/alice.md", "feedback/bob.html"):
        assert (merged / name).read_bytes() == (run / "grades" / name).read_bytes(), name


def test_a_resubmission_with_a_changed_answer_is_flagged_an_unchanged_one_is_not(run, capsys):
    marks = run / "grades" / "marks.csv"
    type_marks(marks)
    nbformat.write(submission(SOLUTION, "h_3.", "On second thought: the query decides."),
                   run / "subs" / "alice.ipynb")  # why changed, predict as it was
    grade(run / "subs", run / "grades")
    out = capsys.readouterr().out
    assert f"{CHANGED}: 1 (alice (why))" in out
    grades = by_student(run / "grades" / "grades.csv")
    assert (grades["alice"]["why (manual)"], grades["alice"]["total"]) == ("2", "11")  # kept
    assert grades["alice"]["written"] == f"{CHANGED}: why"
    assert grades["bob"]["written"] == MARKED
    flags = {(r["student"], r["question"]): r["flag"] for r in table(marks)}
    assert flags == {("alice", "predict"): "", ("alice", "why"): CHANGED,
                     ("bob", "predict"): "", ("bob", "why"): ""}
    assert [r["points"] for r in table(marks)] == ["1", "2", "0", "1"]
    page = (run / "grades" / "answers.html").read_text()
    assert page.count(CHANGED) == 2  # the row of alice's answer, and the question's count
    assert "before your answer last changed" in (
        run / "grades" / "feedback" / "alice.md").read_text()


@pytest.mark.skipif(detect() is None, reason="this machine does not allow user namespaces")
def test_a_marks_file_outside_the_output_folder_is_hidden_from_submissions(run):
    """Classmates' marks and comments are no submission's to read, wherever the file lies
    (outside /tmp here, which the sandbox replaces anyway)."""
    folder = Path(tempfile.mkdtemp(prefix=".test-marks-", dir=ROOT))
    try:
        elsewhere = folder / "marks.csv"
        shutil.copy(run / "grades" / "marks.csv", elsewhere)
        spy = submission(SOLUTION, "h_3.", "Mine.")
        spy.cells.insert(1, new_code_cell(
            "import pathlib\n"
            f"raise RuntimeError('spy: ' + repr(pathlib.Path({str(elsewhere)!r}).exists()))"))
        nbformat.write(spy, run / "subs" / "mallory.ipynb")
        grade(run / "subs", run / "grades", "--sandbox", "unshare", "--marks", str(elsewhere))
        notes = by_student(run / "grades" / "grades.csv")["mallory"]["notes"]
        assert "spy: False" in notes, notes
        assert [r["student"] for r in table(elsewhere)][-2:] == ["mallory", "mallory"]
    finally:
        shutil.rmtree(folder)

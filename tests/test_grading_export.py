"""``course-grade export``: the gradebook, written marks included, in the import formats of
Canvas and Moodle and as a plain ``student,score`` CSV, its students mapped to the LMS through
the instructor's roster; nobody in the gradebook or the roster is dropped without being listed.

The samples below are written from each system's documentation (the layouts its own export
writes and its import reads); the exports are checked against their layouts. No kernel runs:
the gradebook is made from results given by hand."""

import csv
import io
import re

import pytest

from course_utils.tools.grading import GradeResult, GradingLimits, main
from course_utils.tools.grading.shards import write_outputs

#: Canvas, "How do I import grades in the Gradebook?" (Canvas Instructor Guide) and the CSV
#: that Gradebook > Export writes: the columns Student, ID, SIS User ID, SIS Login ID, Section,
#: then one column per assignment, "Name (assignment id)"; Canvas matches each row to a student
#: by ID, SIS User ID or SIS Login ID. The second row, "Points Possible", is optional.
CANVAS_SAMPLE = """\
Student,ID,SIS User ID,SIS Login ID,Section,Assignment 1 (12345)
    Points Possible,,,,,10
"Doe, Jane",2145,S0001,jdoe,Section A,8
"""

#: Moodle, "Grade import" (docs.moodle.org, CSV file): one column identifies the user and is
#: mapped under "Identify user" to ID number (useridnumber), Username or Email address
#: (useremail); each grade column is mapped to a grade item under "Grade item mappings". The
#: user columns are named as Moodle's own grade export (plain text file) names them.
MOODLE_SAMPLE = """\
First name,Last name,ID number,Email address,Assignment 1
Jane,Doe,S0001,jdoe@example.edu,8
"""

#: The plain form Gradescope and most others take: the student's LMS id and the score.
PLAIN_SAMPLE = """\
student,score
jdoe@example.edu,8
"""

ROSTER = """\
submission,Student,ID,SIS User ID,SIS Login ID,Section,First name,Last name,ID number,Email address
alice,"Liddell, Alice",101,S101,aliddell,A,Alice,Liddell,S101,alice@example.edu
bob,"Dylan, Bob",102,S102,bdylan,A,Bob,Dylan,S102,bob@example.edu
carol,"King, Carol",103,S103,cking,B,Carol,King,S103,carol@example.edu
"""


def rows(text):
    return list(csv.reader(io.StringIO(text)))


@pytest.fixture
def gradebook(tmp_path):
    """alice 8 automatic points and both written answers marked (1 + 2), bob 0 and (0 + 1),
    carol 5 and none marked yet."""
    out = tmp_path / "grades"
    results = [GradeResult(s, "graded", points={"energies": p},
                           answers={"predict": f"{s}'s guess", "why": f"{s}'s reason"})
               for s, p in (("alice", 8.0), ("bob", 0.0), ("carol", 5.0))]
    write_outputs(out, "E10.1", results, GradingLimits())
    marks = (out / "marks.csv").read_text()
    for student, question, points in (("alice", "predict", 1), ("alice", "why", 2),
                                      ("bob", "predict", 0), ("bob", "why", 1)):
        marks = marks.replace(f"{student},{question},,", f"{student},{question},{points},")
    (out / "marks.csv").write_text(marks)
    (tmp_path / "roster.csv").write_text(ROSTER)
    return out


def export(gradebook, fmt, *more):
    target = gradebook.parent / f"{fmt}.csv"
    status = main(["export", str(gradebook), "--roster", str(gradebook.parent / "roster.csv"),
                   "--format", fmt, "--out", str(target), *more])
    return status, (target.read_text() if target.exists() else None)


def test_canvas_export_has_canvas_columns_and_points_possible_row(gradebook, capsys):
    status, text = export(gradebook, "canvas", "--assignment-id", "4711")
    assert status == 0
    sample, made = rows(CANVAS_SAMPLE), rows(text)
    assert made[0][:5] == sample[0][:5]  # the identity columns, in Canvas's order
    assert re.fullmatch(r".+ \((\d+)\)", sample[0][5]) and made[0][5] == "E10.1 (4711)"
    assert len(made[0]) == len(sample[0])
    assert made[1][0] == sample[1][0] and made[1][1:5] == sample[1][1:5] == [""] * 4
    assert made[1][5] == "11"  # points possible: automatic and written
    assert {r[0]: r[1:] for r in made[2:]} == {
        "Liddell, Alice": ["101", "S101", "aliddell", "A", "11"],
        "Dylan, Bob": ["102", "S102", "bdylan", "A", "1"]}  # carol: not all marked, left out
    assert "written answers not all marked: NOT in the file (--partial exports the points so " \
           "far): carol" in capsys.readouterr().err


def test_moodle_export_has_a_user_column_to_map_and_a_grade_column(gradebook):
    status, text = export(gradebook, "moodle", "--assignment", "Attention by hand")
    assert status == 0
    sample, made = rows(MOODLE_SAMPLE), rows(text)
    # the roster's user columns, named and ordered as Moodle's export names them (the roster has
    # no Username), then the grade column
    assert made[0][:-1] == sample[0][:-1] and made[0][-1] == "Attention by hand"
    assert [r[-1] for r in made[1:]] == ["11", "1"]
    assert all(len(r) == len(made[0]) for r in made)


def test_plain_export_is_student_and_score(gradebook):
    status, text = export(gradebook, "plain", "--partial")
    assert status == 0
    assert rows(text)[0] == rows(PLAIN_SAMPLE)[0]
    assert rows(text)[1:] == [["alice@example.edu", "11"], ["bob@example.edu", "1"],
                              ["carol@example.edu", "5"]]  # --partial: the points so far


def test_roster_mismatches_are_listed_never_dropped_silently(gradebook, capsys):
    (gradebook.parent / "roster.csv").write_text(
        ROSTER.replace("bob,", "robert,", 1) + "dan,Dan,104,S104,dan,B,Dan,Dee,S104,d@x.edu\n")
    status, text = export(gradebook, "canvas")
    err = capsys.readouterr().err
    assert status == 1  # a graded student cannot reach the LMS
    assert "in the gradebook but not in the roster, so NOT in the file" in err and "bob" in err
    assert re.search(r"in the roster but not in the gradebook.*: robert, dan", err)
    assert "Dylan" not in text and "Dan" not in text


def test_the_export_reads_the_marks_as_they_are_now(gradebook):
    marks = gradebook / "marks.csv"
    marks.write_text(marks.read_text().replace("carol,predict,,", "carol,predict,1,").replace(
        "carol,why,,", "carol,why,2,"))  # marked after the last run, not graded again
    assert rows(export(gradebook, "plain")[1])[3] == ["carol@example.edu", "8"]  # all marked
    marks.write_text(marks.read_text().replace("carol,why,2,", "carol,why,5,"))
    assert export(gradebook, "moodle") == (2, None)


@pytest.mark.parametrize("roster, message", [
    ("Student,ID\nAlice,101\n", "row 1: no column 'submission'"),
    (ROSTER + "alice,Again,109,,,,,,,\n", "row 5, column submission: 'alice' again"),
    ("submission,Section\nalice,A\nbob,A\ncarol,B\n", "needs a column that identifies"),
    (ROSTER.replace(",101,S101,aliddell,", ",,,,"), "'alice' has no ID or SIS User ID"),
    (ROSTER.replace(",102,S102,bdylan,", ",101,S101,aliddell,"), "the same ID / SIS User"),
])
def test_a_roster_that_cannot_map_the_students_is_an_error_and_nothing_is_written(
        gradebook, capsys, roster, message):
    (gradebook.parent / "roster.csv").write_text(roster)
    assert export(gradebook, "canvas") == (2, None)
    assert message in capsys.readouterr().err


def test_a_shard_is_not_exported(tmp_path, capsys):
    write_outputs(tmp_path / "shard-1", "E10.1", [GradeResult("a", "graded")], GradingLimits(),
                  (1, 2))
    (tmp_path / "roster.csv").write_text(ROSTER)
    assert main(["export", str(tmp_path / "shard-1"), "--roster", str(tmp_path / "roster.csv"),
                 "--format", "plain", "--out", str(tmp_path / "x.csv")]) == 2
    assert "export the folder `course-grade merge` wrote" in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists() and not (tmp_path / "shard-1" / "marks.csv").exists()

"""The written answers' marks live in ``marks.csv``: the grader adds rows, keeps its own cells up
to date and never changes a cell the instructor wrote; a file that is not right stops every
run with the file, row and column named, and nothing is written. No kernel runs here: the
results are made by hand (``tests/test_grading_marks_loop.py`` grades real notebooks)."""

import csv
import io
import json

import mistune
import pytest
from test_grading_reports import HOSTILE, tags_of

from course_utils.checks import get_exercise
from course_utils.tools.grading import GradeResult, main, write_feedback, write_gradebook
from course_utils.tools.grading.answers import write_answers_page
from course_utils.tools.grading.marks import (
    CHANGED,
    COLUMNS,
    MARKED,
    NEEDS_MARKING,
    NO_ANSWER,
    NO_SUBMISSION,
    Mark,
    Marking,
    MarksError,
    fingerprint,
    read_marks,
    reconcile,
    save_marks,
)
from course_utils.tools.grading.shards import write_outputs
from course_utils.tools.grading.spreadsheet import parse

EXERCISE = get_exercise("E10.1")  # written: predict (1 point), why (2 points); 11 in all
ANSWERS = {"alice": {"predict": "h_3 wins.", "why": "Its key is the largest in both axes."},
           "bob": {"predict": "h_1.", "why": "Because the query points that way."}}


def results(answers=ANSWERS, status="graded"):
    return [GradeResult(student, status, points={"energies": 2.0, "softmax": 2.0},
                        answers=dict(texts)) for student, texts in answers.items()]


def settle(path, answers=ANSWERS, present=None):
    """One run's work on the marks file: read, reconcile, save; returns the marking."""
    found = read_marks(path, EXERCISE, present or set(answers))
    marking, text = reconcile(found, EXERCISE, results(answers))
    save_marks(found, text)
    return marking


def rows(path):
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"))))


def typed(path, marks):
    """The instructor types ``{(student, question): (points, comment)}`` as a spreadsheet saves
    it: every cell quoted, CRLF line endings, a byte-order mark, an extra column of their own."""
    table = rows(path)
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    writer.writerow([*COLUMNS, "tutor"])
    for row in table:
        points, comment = marks.get((row["student"], row["question"]), ("", ""))
        writer.writerow([row["student"], row["question"], points, row["max"], comment,
                         row["fingerprint"], row["flag"], "Sam"])
    path.write_bytes(("\ufeff" + buffer.getvalue()).encode())


def test_the_first_run_writes_a_row_per_student_and_written_question(tmp_path):
    path = tmp_path / "marks.csv"
    marking = settle(path)
    assert [(r["student"], r["question"], r["points"], r["max"]) for r in rows(path)] == [
        ("alice", "predict", "", "1"), ("alice", "why", "", "2"),
        ("bob", "predict", "", "1"), ("bob", "why", "", "2")]
    assert rows(path)[0]["fingerprint"] == fingerprint("h_3 wins.")
    assert marking.in_state("alice", NEEDS_MARKING) == ["predict", "why"]
    assert settle(path) == marking and path.read_bytes() == path.read_bytes()  # idempotent


def test_a_late_student_adds_rows_and_every_byte_the_instructor_saved_stays(tmp_path):
    path = tmp_path / "marks.csv"
    settle(path)
    typed(path, {("alice", "predict"): ("1", 'Right; "h_3" named.\nGood.'),
                 ("alice", "why"): ("2", "Clear, and, complete"),
                 ("bob", "predict"): ("0", ""), ("bob", "why"): ("1", "Half: which axis?")})
    before = path.read_bytes()
    late = {**ANSWERS, "carol": {"predict": "h_3", "why": ""}}
    marking = settle(path, late)
    after = path.read_bytes()
    assert after.startswith(before)  # appended, nothing before it touched
    added = after[len(before):].decode()  # in the file's own line endings and column order
    assert added == (f"carol,predict,,1,,{fingerprint('h_3')},,\r\n"
                     f"carol,why,,2,,{NO_ANSWER},,\r\n")
    assert [r["student"] for r in rows(path)][-2:] == ["carol", "carol"]
    assert rows(path)[-1]["fingerprint"] == NO_ANSWER and rows(path)[-1]["tutor"] == ""
    assert marking.total(results(late)[0]) == 4 + 3 and marking.written("bob") == 1
    assert marking.mark("alice", "predict").comment == 'Right; "h_3" named.\nGood.'
    assert marking.in_state("carol", NEEDS_MARKING) == ["predict", "why"]


def test_a_changed_answer_keeps_its_mark_and_is_flagged_an_unchanged_one_is_not(tmp_path):
    path = tmp_path / "marks.csv"
    settle(path)
    typed(path, {("alice", "predict"): ("1", "ok"), ("alice", "why"): ("2", "ok")})
    before = path.read_bytes()
    changed = {**ANSWERS, "alice": {"predict": "h_3  wins.\n",  # whitespace only: the same
                                    "why": "Now I think the query decides."}}
    marking = settle(path, changed)
    assert marking.mark("alice", "why") == Mark(2.0, "ok", CHANGED)
    assert marking.mark("alice", "predict").state == MARKED
    assert marking.summary_of("alice") == f"{CHANGED}: why"
    assert marking.as_record(["alice", "bob"])["changed"] == {"alice": ["why"]}
    # only the grader's flag cell of that one row changed; every other byte is as it was
    old, new = before.decode().split("\r\n"), path.read_bytes().decode().split("\r\n")
    differ = [(a, b) for a, b in zip(old, new) if a != b]
    assert len(old) == len(new) and len(differ) == 1
    assert differ[0][1] == differ[0][0].replace(',"",', f',{CHANGED},', 1)
    # re-read, and the fingerprint cell emptied: the mark now stands for the new answer
    path.write_bytes(path.read_bytes().replace(
        f'"{fingerprint(ANSWERS["alice"]["why"])}",{CHANGED}'.encode(), b'"",'))
    marking = settle(path, changed)
    assert marking.mark("alice", "why").state == MARKED
    assert rows(path)[1]["fingerprint"] == fingerprint(changed["alice"]["why"])
    assert rows(path)[1]["flag"] == ""


def test_until_it_is_marked_a_rows_fingerprint_follows_the_answer(tmp_path):
    path = tmp_path / "marks.csv"
    settle(path)
    newer = {**ANSWERS, "bob": {"predict": "h_3 after all.", "why": ANSWERS["bob"]["why"]}}
    marking = settle(path, newer)
    assert rows(path)[2]["fingerprint"] == fingerprint("h_3 after all.")
    assert marking.mark("bob", "predict").state == NEEDS_MARKING  # not "changed": unmarked


def test_a_withdrawn_students_rows_are_kept_and_flagged_not_deleted(tmp_path):
    path = tmp_path / "marks.csv"
    settle(path)
    typed(path, {("bob", "why"): ("1", "kept")})
    (tmp_path / "results.json").write_text(json.dumps(
        {"results": [{"student": "alice"}, {"student": "bob"}]}))  # the last gradebook's
    alone = {"alice": ANSWERS["alice"]}
    marking = settle(path, alone, present={"alice"})
    assert marking.absent == ("bob",)
    assert [r["flag"] for r in rows(path) if r["student"] == "bob"] == [NO_SUBMISSION] * 2
    assert [r["points"] for r in rows(path) if r["student"] == "bob"] == ["", "1"]
    (tmp_path / "results.json").unlink()  # a later run knows bob by the grader's flag
    assert settle(path, alone, present={"alice"}).absent == ("bob",)
    marking = settle(path)  # bob hands in again: his mark is back, the flag gone
    assert marking.mark("bob", "why").points == 1 and rows(path)[3]["flag"] == ""


def test_a_semicolon_file_with_decimal_commas_is_read_and_kept_as_it_is(tmp_path):
    path = tmp_path / "marks.csv"
    path.write_text(f"{';'.join(COLUMNS)}\nalice;why;1,5;2;fine;;\n")
    marking = settle(path)
    assert marking.mark("alice", "why").points == 1.5
    text = path.read_text()
    assert text.startswith(f"{';'.join(COLUMNS)}\nalice;why;1,5;2;fine;")
    assert "\nalice;predict;;1;;sha256:" in text and "\r" not in text


def test_a_student_id_a_spreadsheet_would_run_as_a_formula_stays_text(tmp_path):
    path = tmp_path / "marks.csv"
    answers = {"=HYPERLINK(x)": {"predict": "a", "why": "b"}}
    settle(path, answers)
    assert rows(path)[0]["student"] == "'=HYPERLINK(x)"
    text = path.read_text().replace(",,1,,", ",1,1,,", 1)
    path.write_text(text)
    assert settle(path, answers).mark("=HYPERLINK(x)", "predict").points == 1


def test_empty_rows_and_notes_in_a_column_of_the_instructors_are_left_alone(tmp_path):
    path = tmp_path / "marks.csv"
    text = (",".join([*COLUMNS, "notes"]) + "\n,,,,,,,\nalice,why,2,2,,,,\n"
            ",,,,,,,ask Sam about bob\n")
    path.write_text(text)
    settle(path)
    assert path.read_text().startswith(text.replace("alice,why,2,2,,,", "alice,why,2,2,,"
                                                    + fingerprint(ANSWERS["alice"]["why"]) + ","))


def test_short_rows_get_the_grader_cells_they_lack(tmp_path):
    path = tmp_path / "marks.csv"
    path.write_text(",".join(COLUMNS) + "\nalice,why,2\n")  # typed by hand, three cells
    marking = settle(path)
    assert marking.mark("alice", "why").state == MARKED
    assert path.read_text().splitlines()[1] == (  # as far as the last cell it writes
        f"alice,why,2,2,,{fingerprint(ANSWERS['alice']['why'])}")


BAD = [
    ("alice,why,3,2,,,", "row 2, column points: 3 is above the maximum 2 for 'why'"),
    ("alice,why,-1,2,,,", "row 2, column points: -1 is negative"),
    ("alice,why,two,2,,,", "row 2, column points: 'two' is not a number"),
    ("alice,why,nan,2,,,", "row 2, column points: 'nan' is not a number"),
    ("alice,why,inf,2,,,", "row 2, column points: 'inf' is not a number"),
    ("alcie,why,1,2,,,", "row 2, column student: 'alcie' has no submission (did you mean "
                         "'alice'?)"),
    (",why,1,2,,,", "row 2, column student: empty"),
    ("alice,how,1,2,,,", "row 2, column question: 'how' is not a written question of E10.1"),
    ("alice,why,1,2,,,\nalice,why,2,2,,,", "row 3, column question: a second row for 'alice' "
                                           "and 'why' (the first is row 2)"),
    ('alice,why,1,2,"unclosed,,', "row 2: a quoted cell is never closed"),
]


@pytest.mark.parametrize("line, message", BAD, ids=[m.split(": ", 1)[1][:30] for _, m in BAD])
def test_a_marks_file_that_is_not_right_names_file_row_and_column(tmp_path, line, message):
    path = tmp_path / "marks.csv"
    path.write_text(",".join(COLUMNS) + "\n" + line + "\n")
    with pytest.raises(MarksError) as raised:
        read_marks(path, EXERCISE, set(ANSWERS))
    assert str(raised.value).startswith(f"{path}, {message}"), str(raised.value)


def test_a_header_without_the_graders_columns_or_not_utf8_is_refused(tmp_path):
    path = tmp_path / "marks.csv"
    path.write_text("student,question,points\nalice,why,1\n")
    with pytest.raises(MarksError, match=r"row 1: .* missing max, comment, fingerprint, flag"):
        read_marks(path, EXERCISE, set(ANSWERS))
    path.write_bytes(",".join(COLUMNS).encode() + b"\nalice,why,1,2,caf\xe9,,\n")
    with pytest.raises(MarksError, match="not UTF-8 text"):
        read_marks(path, EXERCISE, set(ANSWERS))


def test_every_mistake_is_listed_at_once(tmp_path):
    path = tmp_path / "marks.csv"
    path.write_text(",".join(COLUMNS) + "\nalice,why,3,2,,,\nbob,predict,x,1,,,\n")
    with pytest.raises(MarksError) as raised:
        read_marks(path, EXERCISE, set(ANSWERS))
    assert [line.split(", column")[0] for line in str(raised.value).splitlines()] == [
        f"{path}, row 2", f"{path}, row 3"]


def test_a_file_saved_by_someone_else_meanwhile_is_not_overwritten(tmp_path):
    path = tmp_path / "marks.csv"
    settle(path)
    found = read_marks(path, EXERCISE, set(ANSWERS) | {"carol"})
    _, text = reconcile(found, EXERCISE, results({**ANSWERS, "carol": {}}))
    path.write_bytes(path.read_bytes().replace(b"alice,why,,", b"alice,why,2,"))  # saved now
    saved = path.read_bytes()
    with pytest.raises(MarksError, match="was changed while"):
        save_marks(found, text)
    assert path.read_bytes() == saved and not list(tmp_path.glob(".marks.csv.*"))


def test_the_gradebook_has_the_marks_in_its_columns_and_total(tmp_path):
    path = tmp_path / "marks.csv"
    settle(path)
    typed(path, {("alice", "predict"): ("1", ""), ("alice", "why"): ("2", ""),
                 ("bob", "why"): ("1", "")})
    graded = results()
    graded[1].status = "timeout"  # a notebook that timed out says so, marked or not
    found = read_marks(path, EXERCISE, set(ANSWERS))
    marking, _ = reconcile(found, EXERCISE, graded)
    write_gradebook(tmp_path / "grades.csv", EXERCISE, graded, marking)
    alice, bob = rows(tmp_path / "grades.csv")
    assert (alice["predict (manual)"], alice["why (manual)"], alice["total"], alice["max"],
            alice["status"], alice["written"]) == ("1", "2", "7", "11", "graded", MARKED)
    assert (bob["predict (manual)"], bob["why (manual)"], bob["total"], bob["status"],
            bob["written"]) == ("", "1", "5", "timeout", f"{NEEDS_MARKING}: predict")
    graded[1].status = "graded"
    write_gradebook(tmp_path / "grades.csv", EXERCISE, graded, marking)
    assert rows(tmp_path / "grades.csv")[1]["status"] == NEEDS_MARKING


def test_the_feedback_shows_each_mark_and_comment_escaped_or_not_marked_yet(tmp_path):
    hostile = " ".join(HOSTILE[:6])
    marking = Marking({"predict": 1.0, "why": 2.0},
                      {("alice", "why"): Mark(1.5, hostile, MARKED)})
    [alice, _] = results()
    write_feedback(tmp_path, EXERCISE, alice, marking)
    markdown = (tmp_path / "alice.md").read_text()
    assert "| why | 1.5 / 2 | marked by your instructor: " in markdown
    assert "| predict | - / 1 | not marked yet" in markdown
    assert "Written answers: **1.5 / 3 (1 of 2 marked, the others not yet)**" in markdown
    assert "Total: **5.5 / 11 so far**" in markdown
    rendered = mistune.create_markdown(escape=False, plugins=["table"])(markdown)
    assert not any(attrs for _, attrs in tags_of(rendered)) and "<" not in markdown
    page = (tmp_path / "alice.html").read_text()
    assert not any(attrs for tag, attrs in tags_of(page) if tag != "meta")
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_the_answers_page_shows_the_marks_with_what_is_left_to_mark_first(tmp_path):
    path = tmp_path / "marks.csv"
    settle(path)
    typed(path, {("alice", "why"): ("2", "<b>bold</b> claim"), ("bob", "why"): ("1", ""),
                 ("alice", "predict"): ("1", "")})
    changed = {**ANSWERS, "bob": {**ANSWERS["bob"], "why": "Something else now."}}
    found = read_marks(path, EXERCISE, set(ANSWERS))
    marking, _ = reconcile(found, EXERCISE, results(changed))
    write_answers_page(tmp_path, EXERCISE, results(changed), marking=marking)
    page = (tmp_path / "answers.html").read_text()
    predict, why = page.index("<h2>predict"), page.index("<h2>why")
    assert predict < why  # predict still has an answer to mark (bob's), so it comes first
    assert page.index("<th scope='row'>bob</th>", predict) < page.index(
        "<th scope='row'>alice</th>", predict)  # bob's is not marked: first
    assert "1 of 2 answers marked." in page and f"2 of 2 answers marked, 1 of them {CHANGED}" \
        in page
    assert f"1 / 2<br><strong>{CHANGED}</strong>" in page
    assert "&lt;b&gt;bold&lt;/b&gt; claim" in page and "<b>bold</b>" not in page


def test_bad_marks_stop_the_run_before_anything_is_graded_or_written(tmp_path, capsys):
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    (subs / "alice.ipynb").write_text("not even a notebook")
    out.mkdir()
    (out / "marks.csv").write_text(",".join(COLUMNS) + "\nalice,why,3,2,,,\r\n")
    before = (out / "marks.csv").read_bytes()
    assert main(["E10.1", str(subs), "--out", str(out), "--quiet", "--no-calibrate"]) == 2
    err = capsys.readouterr().err
    assert f"error: {out / 'marks.csv'}, row 2, column points: 3 is above the maximum 2 " \
           "for 'why'" in err and "nothing was written" in err
    assert sorted(p.name for p in out.iterdir()) == ["marks.csv"]  # no cache, no gradebook
    assert (out / "marks.csv").read_bytes() == before


def test_a_merge_with_bad_marks_writes_nothing(tmp_path, capsys):
    from course_utils.tools.grading import GradingLimits

    for k in (1, 2):
        write_outputs(tmp_path / f"shard-{k}", "E10.1", results(
            {s: a for i, (s, a) in enumerate(ANSWERS.items()) if i == k - 1}),
            GradingLimits(), (k, 2))
    assert not (tmp_path / "shard-1" / "marks.csv").exists()  # a shard never writes marks
    merged = tmp_path / "merged"
    merged.mkdir()
    (merged / "marks.csv").write_text(",".join(COLUMNS) + "\nbob,predict,abc,1,,,\n")
    assert main(["merge", str(tmp_path / "shard-1"), str(tmp_path / "shard-2"), "--out",
                 str(merged)]) == 2
    assert "row 2, column points: 'abc' is not a number" in capsys.readouterr().err
    assert sorted(p.name for p in merged.iterdir()) == ["marks.csv"]


def test_parse_keeps_each_cells_place():
    sheet = parse('a,"b ""q"", c"\r\n"x\ny",,z\r\n', ("a",))
    assert [row.cells for row in sheet.rows] == [("a", 'b "q", c'), ("x\ny", "", "z")]
    assert sheet.newline == "\r\n"
    assert sheet.edited({(2, 1): "new, value"}, [["p", "q"]]) == (
        'a,"b ""q"", c"\r\n"x\ny","new, value",z\r\np,q\r\n')

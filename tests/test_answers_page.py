"""The written answers side by side: every student's answer to each written question on one
page, with an answer that repeats a lecture notebook or another student's answer flagged and
the overlap shown. Tested on a seeded class: one copies a sentence of notebook 1, two share a
passage, one quotes the question, one writes their own, one leaves the stub."""

import html
import json
import re

import nbformat
import pytest
from helpers import ROOT, calibrated_limits

from course_utils.checks import get_exercise
from course_utils.tools.exercise_format import ANSWER_STUB
from course_utils.tools.grading import grade_folder
from course_utils.tools.grading.answers import (
    RUN,
    lecture_sources,
    write_answers_page,
    written_answers,
)
from course_utils.tools.grading.results import GradeResult
from course_utils.tools.word_runs import runs_of

EXERCISE = get_exercise("E10.1")
HANDOUT = ROOT / "exercises" / "E10.1-attention-by-hand.ipynb"

OWN = ("The third key is bigger than the other two in both coordinates, so whatever the "
       "decoder asks, its energy comes out on top; the query just moves the gaps around.")
SHARED = ("tanh keeps growing as its input grows, which means a key that dominates "
          "coordinate by coordinate can never lose to another key here")


def notebook_sentence() -> tuple[str, str]:
    """A passage of notebook 1's prose (twelve words the handout does not hold), and its cell."""
    _, handout = lecture_sources(EXERCISE)
    notebook = nbformat.read(ROOT / "notebooks" / "01_bottleneck_and_attention_by_hand.ipynb",
                             as_version=4)
    for cell in notebook.cells:
        words = list(re.finditer(r"[A-Za-z]+", cell.source))
        if cell.cell_type == "markdown" and len(words) > 40:
            passage = cell.source[words[20].start():words[32].end()]
            if not runs_of(passage, RUN) & handout:
                return passage, cell.id
    raise AssertionError("no passage of notebook 1 to copy")


def submission(predict: str, why: str) -> nbformat.NotebookNode:
    notebook = nbformat.read(HANDOUT, as_version=4)
    for cell in notebook.cells:
        name = cell.metadata.get("course", {}).get("manual")
        if name:
            cell.source = {"predict": predict, "why": why}[name]
    return notebook


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("answers")
    copied, cell = notebook_sentence()
    prompt = EXERCISE.manual["why"].prompt
    class_ = {
        "ada": submission("h_3, because it is the largest key.", OWN),
        "bob": submission("I think h_3 wins.", f"Additive attention here: {copied}."),
        "cem": submission("h_1 maybe.", f"My view: {SHARED}, and similarity plays no part."),
        "dov": submission("h_3.", f"As I see it, {SHARED}; so the largest key wins."),
        "eve": submission("h_2, <script>alert(1)</script>", f"{prompt} Large keys win."),
        "fay": submission(ANSWER_STUB, ANSWER_STUB),
    }
    results = []
    for student, notebook in class_.items():
        path = folder / f"{student}.ipynb"
        nbformat.write(notebook, path)
        results.append(GradeResult(student, "graded", answers=written_answers(path, EXERCISE)))
    flags = write_answers_page(folder, EXERCISE, results)
    return folder, results, flags, copied, cell


def test_each_submissions_answers_are_read_from_its_marked_cells(seeded):
    _, results, *_ = seeded
    answers = {r.student: r.answers for r in results}
    assert answers["ada"] == {"predict": "h_3, because it is the largest key.", "why": OWN}
    assert answers["fay"] == {"predict": "", "why": ""}  # the stub is no answer


def test_a_sentence_of_a_lecture_notebook_is_flagged_with_the_overlap(seeded):
    _, _, flags, copied, cell = seeded
    (flag,) = [f for f in flags if f.student == "bob"]
    assert flag.question == "why"
    assert flag.source == f"lecture notebook 01_bottleneck_and_attention_by_hand.ipynb, cell {cell}"
    assert flag.passages == (copied,)


def test_a_passage_two_students_share_flags_both(seeded):
    _, _, flags, *_ = seeded
    shared = {(f.student, f.source): f.passages for f in flags if f.student in ("cem", "dov")}
    assert set(shared) == {("cem", "dov's answer"), ("dov", "cem's answer")}
    for passages in shared.values():
        assert len(passages) == 1 and SHARED in passages[0]


def test_own_words_and_the_quoted_question_are_not_flagged(seeded):
    _, _, flags, *_ = seeded
    assert {f.student for f in flags} == {"bob", "cem", "dov"}


def test_the_page_sets_the_answers_side_by_side_escaped_and_marked(seeded):
    folder, _, _, copied, _ = seeded
    page = (folder / "answers.html").read_text()
    assert page.startswith("<!doctype html><html lang='en'>") and "<main>" in page
    assert page.count("<caption>") == len(EXERCISE.manual) == 2
    for student in ("ada", "bob", "cem", "dov", "eve", "fay"):
        assert page.count(f"<th scope='row'>{student}</th>") == 2
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert f"<mark>{html.escape(copied)}</mark>" in page
    assert "3 of 6 answers flagged" in page and "0 of 6 answers flagged" in page
    assert page.count("<em>no answer</em>") == 2


def test_flags_need_a_run_of_words_not_a_shared_phrase(tmp_path):
    words = SHARED.split()
    for length, flagged in ((RUN - 1, False), (RUN, True)):
        short = " ".join(words[:length])
        results = [GradeResult("a", "graded", answers={"why": f"First, {short}. Then mine."}),
                   GradeResult("b", "graded", answers={"why": f"Also {short}, and others."})]
        flags = write_answers_page(tmp_path, EXERCISE, results)
        assert bool(flags) is flagged, (length, flags)


def test_course_grade_writes_the_page_and_results_json_keeps_the_answers(tmp_path):
    copied, _ = notebook_sentence()
    subs = tmp_path / "subs"
    subs.mkdir()
    nbformat.write(submission("h_3.", f"Here: {copied}"), subs / "ann.ipynb")
    nbformat.write(submission("h_1.", OWN), subs / "ben.ipynb")
    grade_folder("E10.1", subs, tmp_path / "out", progress=False,
                 limits=calibrated_limits(cell_seconds=30, total_seconds=120))
    page = (tmp_path / "out" / "answers.html").read_text()
    assert "1 of 2 answers flagged" in page and copied in page
    record = json.loads((tmp_path / "out" / "results.json").read_text())
    assert {r["student"]: r["answers"]["why"] for r in record["results"]} == {
        "ann": f"Here: {copied}", "ben": OWN}

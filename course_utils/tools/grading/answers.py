"""The written answers side by side, for the instructor who grades them: ``answers.html``.

The checks grade code; the written questions are graded by hand, and a copied answer is easy to
miss one notebook at a time. :func:`written_answers` reads each submission's answer to each
written question (the Markdown cell the exercise marks ``course: {manual: NAME}``; the
stub left as it was counts as no answer). :func:`write_answers_page` writes one page per
exercise: for each question, every student's answer in one table, one row per student, and a
flag on an answer that repeats a run of :data:`RUN` words or more (lower-cased, punctuation and
formula markup left out) of a lecture notebook's prose, of the worked solution's answer, or of
another student's answer, with the repeated words marked and the passages quoted. Words that
the exercise's own handout holds (its questions, which an answer may quote) do not count.
Beside each answer, its mark and the instructor's comment (:mod:`.marks`); the questions and
answers left to mark come first.
"""

from __future__ import annotations

import html
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from course_utils.files import COURSE_FOLDER, write_text_atomically
from course_utils.tools.exercise_format import ANSWER_STUB
from course_utils.tools.grading.marks import CHANGED, MARKED, NEEDS_MARKING, Mark, Marking
from course_utils.tools.grading.results import GradeResult, cut
from course_utils.tools.solutions import without_markers
from course_utils.tools.word_runs import Word, runs, runs_of, words

__all__ = ["ANSWER_CHARS", "RUN", "Flag", "Source", "flags_of", "lecture_sources",
           "write_answers_page", "written_answers"]

#: Words in a row that an answer must share with another text to be flagged
#: (:mod:`course_utils.tools.word_runs`): eight words rarely coincide by chance, and most
#: sentences are longer.
RUN = 8

#: Characters of one answer kept (a student's essay makes no megabyte page).
ANSWER_CHARS = 6000


def written_answers(path: Path, exercise: Any, limit: int | None = ANSWER_CHARS
                    ) -> dict[str, str]:
    """Each written question of ``exercise`` -> the submission's answer at ``path`` ('' when
    it is missing, unmarked or the stub), cut to ``limit`` characters (``None``: whole). A file
    that is not a notebook has none."""
    try:
        cells = json.loads(Path(path).read_bytes().decode("utf-8-sig")).get("cells")
    except (OSError, ValueError, AttributeError):
        return {}
    texts: dict[str, list[str]] = defaultdict(list)
    for cell in cells if isinstance(cells, list) else []:
        metadata = cell.get("metadata") if isinstance(cell, dict) else None
        course = metadata.get("course") if isinstance(metadata, dict) else None
        name = course.get("manual") if isinstance(course, dict) else None
        if cell.get("cell_type") == "markdown" and isinstance(name, str) and (
                name in exercise.manual):
            source = cell.get("source", "")
            text = "".join(source) if isinstance(source, list) else str(source)
            if text.strip() and text.strip() != ANSWER_STUB:
                texts[name].append(text.strip())
    whole = {name: "\n\n".join(texts[name]) for name in exercise.manual}
    return whole if limit is None else {name: cut(text, limit) for name, text in whole.items()}


@dataclass(frozen=True)
class Source:
    """A text an answer may repeat: a label for the page, and its words."""

    label: str
    text: str
    words: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "words", tuple(w.text for w in words(self.text)))


@dataclass(frozen=True)
class Flag:
    """An answer that repeats another text: which, and the repeated passages (the answer's
    own words, as written)."""

    student: str
    question: str
    source: str
    passages: tuple[str, ...]


def _notebook_texts(path: Path, manual_only: bool = False) -> list[tuple[str, str]]:
    """(cell id, text) of a notebook's Markdown cells (only the marked written answers with
    ``manual_only``); none when it cannot be read."""
    try:
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError, AttributeError):
        return []
    found = []
    for index, cell in enumerate(cells):
        if cell.get("cell_type") != "markdown":
            continue
        if manual_only and "manual" not in cell.get("metadata", {}).get("course", {}):
            continue
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        found.append((str(cell.get("id", index)), without_markers(text)))
    return found


def lecture_sources(exercise: Any, course: Path = COURSE_FOLDER) -> tuple[list[Source], set]:
    """What an answer must not repeat (each lecture notebook's Markdown cells, the exercise's
    worked answers), and the runs of words the handout's own exercise holds (which an answer
    may quote)."""
    sources = [Source(f"lecture notebook {path.name}, cell {cell}", text)
               for path in sorted((course / "notebooks").glob("*.ipynb"))
               for cell, text in _notebook_texts(path)]
    for path in sorted((course / "solutions").glob(f"{exercise.id}-*.ipynb")):
        sources += [Source(f"the worked solution, cell {cell}", text)
                    for cell, text in _notebook_texts(path, manual_only=True)]
    handout: set = set()
    for path in sorted((course / "exercises").glob(f"{exercise.id}-*.ipynb")):
        for _, text in _notebook_texts(path):
            handout |= runs_of(text, RUN)
    for question in exercise.manual.values():
        handout |= runs_of(question.prompt, RUN)
    return sources, handout


def flags_of(exercise: Any, answers: dict[str, dict[str, str]], sources: list[Source],
             handout: set) -> dict[tuple[str, str], list[Flag]]:
    """(student, question) -> what that answer repeats: the sources first, then other
    students' answers (runs the sources hold are not counted twice)."""
    found: dict[tuple[str, str], list[Flag]] = defaultdict(list)
    by_run: dict[tuple[str, ...], str] = {}
    for source in sources:
        for run in runs(source.words, RUN) - handout:
            by_run.setdefault(run, source.label)
    for question in exercise.manual:
        whose: dict[tuple[str, ...], set[str]] = defaultdict(set)
        read = {student: words(texts.get(question, "")) for student, texts in answers.items()}
        for student, mine in read.items():
            for run in runs([w.text for w in mine], RUN) - handout:
                whose[run].add(student)
        for student, mine in read.items():
            shared: dict[str, list[int]] = defaultdict(list)  # source -> first word of runs
            for i in range(len(mine) - RUN + 1):
                run = tuple(w.text for w in mine[i:i + RUN])
                if run in handout:
                    continue
                if run in by_run:
                    shared[by_run[run]].append(i)
                else:
                    for other in sorted(whose[run] - {student}):
                        shared[f"{other}'s answer"].append(i)
            text = answers[student].get(question, "")
            for origin, starts in shared.items():
                found[(student, question)].append(Flag(
                    student, question, origin, tuple(text[a:b] for a, b in
                                                     _passages(mine, starts))))
    return found


def _passages(read: list[Word], starts: list[int]) -> list[tuple[int, int]]:
    """Character spans of the runs of :data:`RUN` words starting at ``starts``, merged."""
    spans: list[tuple[int, int]] = []
    for start in sorted(starts):
        a, b = read[start].start, read[start + RUN - 1].end
        if spans and a <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(b, spans[-1][1]))
        else:
            spans.append((a, b))
    return spans


def write_answers_page(out: Path, exercise: Any, results: list[GradeResult],
                       course: Path = COURSE_FOLDER, marking: Marking | None = None) -> list[Flag]:
    """``out/answers.html``: each written question with every student's answer beside the
    others', and the answers that repeat a lecture notebook, the worked solution or another
    student flagged, with the overlap shown; beside each answer its mark and comment from
    ``marking`` (:mod:`.marks`), the answers left to mark first. Returns the flags."""
    answers = {r.student: {str(k): str(v) for k, v in r.answers.items()}
               if isinstance(r.answers, dict) else {} for r in results}
    sources, handout = lecture_sources(exercise, course)
    flags = flags_of(exercise, answers, sources, handout)
    write_text_atomically(Path(out) / "answers.html", _page(
        exercise, answers, flags, bool(sources), marking or Marking.unmarked(exercise),
        _picks(exercise, results)))
    return [flag for found in flags.values() for flag in found]


def _marked(text: str, flags: list[Flag]) -> str:
    """``text`` escaped, with every repeated passage in ``<mark>``."""
    spans = sorted((text.index(p), text.index(p) + len(p)) for f in flags for p in f.passages
                   if p in text)
    out, at = [], 0
    for a, b in spans:
        a = max(a, at)
        if a >= b:
            continue
        out += [html.escape(text[at:a]), "<mark>", html.escape(text[a:b]), "</mark>"]
        at = b
    return "".join([*out, html.escape(text[at:])])


#: The order of the answers on the page: what is left to do first.
_ORDER = {NEEDS_MARKING: 0, CHANGED: 1, MARKED: 2}


def _mark_cell(mark: Mark, maximum: float) -> str:
    e = html.escape
    given = "<strong>not marked</strong>" if mark.points is None else \
        f"{mark.points:g} / {maximum:g}"
    changed = f"<br><strong>{CHANGED}</strong>" if mark.state == CHANGED else ""
    comment = f"<br>{e(mark.comment)}" if mark.comment else ""
    return f"<td class='mark'>{given}{changed}{comment}</td>"


def _picks(exercise: Any, results: list[GradeResult]) -> str:
    """The parts judged on a record of each student's own run (:mod:`.judge`): what each
    student handed in, with the points and the message it got; '' for an exercise without."""
    parts = [name for name, check in exercise.checks.items()
             if getattr(check, "record", None) is not None]
    if not parts:
        return ""
    e = html.escape
    rows = "".join(
        f"<tr><th scope='row'>{e(r.student)}</th><td>{e(part)}</td>"
        f"<td class='answer'>{e(r.picks.get(part, '')) or '<em>no record</em>'}</td>"
        f"<td class='mark'>{r.points.get(part, 0.0):g} / {exercise.checks[part].points:g}"
        f"<br>{e(r.messages.get(part, ''))}</td></tr>"
        for r in sorted(results, key=lambda r: r.student) for part in parts)
    return ("<section><h2>Judged on each student's own run</h2><p>These parts are judged on "
            "the record each student's notebook saved of their own model's run (the grader "
            "never has that model): the sentence handed in and what the model wrote, with the "
            "points and the check's message.</p><table><caption>What each student handed in "
            "for the parts judged on a record</caption><tr><th scope='col'>student</th>"
            "<th scope='col'>part</th><th scope='col'>sentence -&gt; the model's output</th>"
            "<th scope='col'>points and message</th></tr>" + rows + "</table></section>")


def _page(exercise: Any, answers: dict[str, dict[str, str]],
          flags: dict[tuple[str, str], list[Flag]], found_lectures: bool,
          marking: Marking, picks: str = "") -> str:
    e = html.escape
    sections = []
    # the questions with answers left to mark first, each in the exercise's order
    questions = sorted(exercise.manual.items(), key=lambda item: all(
        marking.mark(s, item[0]).state == MARKED for s in answers))
    for name, question in questions:
        rows = []
        for student in sorted(answers, key=lambda s: (_ORDER[marking.mark(s, name).state], s)):
            text = answers[student].get(name, "")
            mine = flags.get((student, name), [])
            said = "".join(f"<li>repeats {e(f.source)}: "
                           + "; ".join(f"&ldquo;{e(p)}&rdquo;" for p in f.passages) + "</li>"
                           for f in mine)
            rows.append(
                f"<tr id='{e(name)}-{e(student)}'><th scope='row'>{e(student)}</th>"
                f"<td class='answer'>{_marked(text, mine) if text else '<em>no answer</em>'}"
                f"</td>{_mark_cell(marking.mark(student, name), question.points)}"
                f"<td>{f'<strong>flagged</strong><ul>{said}</ul>' if mine else 'no'}"
                "</td></tr>")
        count = sum(bool(flags.get((s, name))) for s in answers)
        states = [marking.mark(s, name).state for s in answers]
        changed = states.count(CHANGED)
        sections.append(
            f"<section><h2>{e(name)} ({question.points:g} "
            f"point{'' if question.points == 1 else 's'})</h2>"
            f"<p class='prompt'>{e(question.prompt)}</p>"
            f"<p>{len(states) - states.count(NEEDS_MARKING)} of {len(answers)} answers marked"
            + (f", {changed} of them {CHANGED}" if changed else "") + ".</p>"
            f"<p>{count} of {len(answers)} answers flagged.</p>"
            f"<table><caption>Answers to {e(name)}, one row per student, those left to mark "
            "first</caption>"
            "<tr><th scope='col'>student</th><th scope='col'>answer (repeated words marked)"
            "</th><th scope='col'>mark and comment</th><th scope='col'>repeats another text?"
            "</th></tr>" + "".join(rows) + "</table></section>")
    note = "" if found_lectures else (
        "<p><strong>The lecture notebooks were not found</strong> beside the course package: "
        "answers were compared with each other only.</p>")
    return ("<!doctype html><html lang='en'><meta charset='utf-8'>"
            f"<title>{e(exercise.id)}: written answers side by side</title>"
            "<style>body{font-family:sans-serif;max-width:70em;margin:2em auto}"
            "td,th{border:1px solid #ccc;padding:.3em .6em;vertical-align:top;text-align:left}"
            "table{border-collapse:collapse}td.answer{white-space:pre-wrap}"
            "td.mark{min-width:8em}"
            "caption{text-align:left;font-style:italic}mark{background:#ffe08a}"
            ".prompt{font-style:italic}</style>"
            f"<main><h1>{e(exercise.id)}: written answers side by side</h1>"
            f"<p>{len(answers)} submissions. Marks and comments are those of "
            f"<code>{e(marking.file)}</code> when this page was written: type them there "
            "and grade again to see them here. An answer is flagged when it shares a run of "
            f"{RUN} words or more (lower-cased; punctuation and formula markup left out) with a "
            "lecture notebook, the worked solution or another student's answer; words the "
            "exercise itself holds do not count. Repeated words are marked and quoted.</p>"
            + note + "".join(sections) + picks + "</main></html>")

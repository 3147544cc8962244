"""What the grader writes is safe to open, whatever a student's code printed or raised.

A student controls their file name (the id), their errors (the notes) and, through what their
functions return, parts of the checks' messages. Feedback is opened by students and
instructors in a browser or a Markdown viewer: no text of a student may become HTML, a link, an
image or a table cell there. The Markdown is rendered here as Jupyter and GitHub render it
(CommonMark with tables, raw HTML allowed) and the HTML page parsed, with the same hostile texts.
"""

import json
from html.parser import HTMLParser

import mistune
import nbformat
import pytest
from helpers import ROOT

from course_utils.checks import get_exercise
from course_utils.tools.grading import GradeResult, read_notebook, write_feedback

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<a href='javascript:alert(1)'>click</a>",
    "[click me](javascript:alert(1))",
    "![tracker](http://example.invalid/pixel.png)",
    "<http://example.invalid/autolink>",
    "a | b | c",
    "first line\nsecond | line\n\n| x | y |\n|---|---|",
    "<!-- an unclosed comment",
    "&lt;script&gt;alert(1)&lt;/script&gt;",
    "`<img src=x onerror=alert(2)>`",
    "\\<script>escaped?\\</script>",
]


class Tags(HTMLParser):
    """The tags and attributes of an HTML text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def tags_of(html_text: str) -> list[tuple[str, dict]]:
    parser = Tags()
    parser.feed(html_text)
    return parser.tags


def hostile_result() -> GradeResult:
    exercise = get_exercise("E10.1")
    names = list(exercise.checks)
    messages = {name: HOSTILE[i % len(HOSTILE)] for i, name in enumerate(names)}
    return GradeResult(student="x<img src=y onerror=alert(3)>", status="graded",
                       points=dict.fromkeys(names, 0.0), messages=messages, notes=HOSTILE)


@pytest.fixture(scope="module")
def feedback(tmp_path_factory):
    folder = tmp_path_factory.mktemp("feedback")
    result = hostile_result()
    write_feedback(folder, get_exercise("E10.1"), result)
    return folder, result


ALLOWED_MARKDOWN_TAGS = {"h1", "h2", "p", "strong", "em", "code", "br", "table", "thead",
                         "tbody", "tr", "th", "td", "ul", "li"}


def test_no_student_text_becomes_html_a_link_or_an_image_in_the_markdown(feedback):
    folder, result = feedback
    markdown = (folder / f"{result.student}.md").read_text()
    rendered = mistune.create_markdown(escape=False, plugins=["table"])(markdown)
    tags = tags_of(rendered)
    assert {tag for tag, _ in tags} <= ALLOWED_MARKDOWN_TAGS, rendered
    assert not any(attrs for _, attrs in tags), "no attribute (href, src, onerror) at all"
    assert "<!--" not in rendered
    # whatever the renderer: the file holds no "<" at all, so no tag can start in it (a
    # backslash before "<" is an escape in CommonMark, but not in every Markdown)
    assert "<" not in markdown


def test_a_newline_or_a_bar_in_a_message_never_breaks_the_feedback_table(feedback):
    folder, result = feedback
    markdown = (folder / f"{result.student}.md").read_text()
    rendered = mistune.create_markdown(escape=False, plugins=["table"])(markdown)
    rows = [tag for tag, _ in tags_of(rendered) if tag == "tr"]
    exercise = get_exercise("E10.1")
    assert len(rows) == 1 + len(exercise.checks) + len(exercise.manual)
    cells = [tag for tag, _ in tags_of(rendered) if tag in ("td", "th")]
    assert len(cells) == 3 * len(rows)


def test_the_student_reads_their_own_text_back(feedback):
    """Neutralised, not deleted: what the student's code said is still there to read."""
    folder, result = feedback
    markdown = (folder / f"{result.student}.md").read_text()
    rendered = mistune.create_markdown(escape=False, plugins=["table"])(markdown)
    text = rendered.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").replace(
        "&quot;", '"').replace("&#x27;", "'")
    for words in ("alert(1)", "onerror=alert(1)", "javascript:alert(1)", "a | b | c"):
        assert words in text


def test_the_html_page_escapes_the_same_texts(feedback):
    folder, result = feedback
    page = (folder / f"{result.student}.html").read_text()
    tags = {tag for tag, _ in tags_of(page)}
    assert tags <= {"meta", "title", "style", "h1", "h2", "p", "code", "br", "b", "table",
                    "tr", "th", "td", "ul", "li"}
    assert not any(attrs for tag, attrs in tags_of(page) if tag != "meta")


def test_a_notebook_saved_by_an_older_jupyter_is_upgraded_and_read():
    solution = ROOT / "solutions" / "E10.1-attention-by-hand.ipynb"
    old = nbformat.convert(nbformat.read(solution, as_version=4), 3)
    raw = nbformat.writes(old, version=3).encode()
    assert json.loads(raw)["nbformat"] == 3
    notebook, notes = read_notebook(raw, "E10.1")
    assert notebook.nbformat == 4
    sources = [c.source for c in notebook.cells if c.cell_type == "code"]
    assert any("def compute_energies" in s for s in sources)
    assert any("nbformat 3" in note for note in notes)


@pytest.mark.parametrize("raw, why", [
    (b"", "not JSON"),
    (b"[1, 2]", "not a notebook"),
    (b'{"nbformat": 4, "metadata": {}}', "not a notebook"),
    (b'{"nbformat": 3, "worksheets": 7}', "not a notebook"),
    (b'{"nbformat": 2, "worksheets": [{"cells": []}]}', "not a notebook"),
])
def test_what_is_not_a_notebook_is_refused_with_the_reason(raw, why):
    with pytest.raises(ValueError, match=why):
        read_notebook(raw, "E10.1")

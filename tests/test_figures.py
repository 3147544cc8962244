"""Every figure says what it shows (issue 28): a description of at least eight words in the
metadata of the cell that draws it, which the course site puts in the image's ``alt``."""

import base64
import io
import re
import shutil
from html.parser import HTMLParser

import matplotlib.pyplot as plt
import nbformat
import pytest
from helpers import ROOT

from course_utils.tools import book
from course_utils.tools.figures import (
    ALT_KEYS,
    MIN_WORDS,
    alt_problem,
    figure_alt,
    figures,
    main,
    set_figure_alt,
)

DESCRIBED = sorted([*(ROOT / "notebooks").glob("*.ipynb"), *(ROOT / "solutions").glob("*.ipynb")])
GOOD = ("Line plot of recall against sentence length: recall falls from one to about "
        "0.2 as sentences grow from 1 to 30 tokens.")


def png() -> str:
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.plot([0, 1], [1, 0])
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode()


def figure_cell(source: str = "plot()") -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.outputs = [nbformat.v4.new_output(
        "display_data", data={"image/png": png(), "text/plain": "<Figure size 100x100 with 1 Axes>"})]
    return cell


@pytest.mark.parametrize("notebook", DESCRIBED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_figure_has_a_description_of_what_it_shows(notebook):
    problems = [f"cell {f.cell}: {f.problem}" for f in figures(notebook) if f.problem]
    assert not problems, (f"{notebook.name}: {len(problems)} figure cell(s) without a "
                          f"description (metadata {'.'.join(ALT_KEYS)}):\n" + "\n".join(problems))


@pytest.mark.parametrize("text, problem", [
    (None, "no description"),
    ("  ", "no description"),
    ("<Figure size 640x480 with 1 Axes>", "placeholder"),
    ("../_images/3f2a9c0d1e4b5a6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c.png",
     "file name"),
    ("loss_curves.png shows both models", "file name"),
    ("Attention heatmap of one sentence", "5 words"),
])
def test_a_file_name_a_placeholder_or_a_few_words_are_no_description(text, problem):
    assert problem in alt_problem(text)


def test_a_sentence_that_says_what_the_figure_shows_is_one():
    assert alt_problem(GOOD) is None
    assert len(GOOD.split()) >= MIN_WORDS


def test_the_description_lives_where_the_site_reads_it_and_survives_a_save(tmp_path):
    cell = figure_cell()
    cell.metadata["mystnb"] = {"image": {"width": "80%"}}
    set_figure_alt(cell, GOOD)
    assert cell.metadata["mystnb"]["image"] == {"width": "80%", "alt": GOOD}
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A"), cell,
                                               figure_cell()])
    nbformat.write(notebook, tmp_path / "n.ipynb")
    listed = figures(tmp_path / "n.ipynb")
    assert [(f.cell, f.images, f.alt) for f in listed] == [(1, 1, GOOD), (2, 1, None)]
    assert figure_alt(nbformat.read(tmp_path / "n.ipynb", as_version=4).cells[1]) == GOOD


def test_setting_a_poor_description_is_refused_with_what_was_given():
    with pytest.raises(ValueError, match="at least 8 words; got 2 words"):
        set_figure_alt(figure_cell(), "a heatmap")


def test_the_command_lists_each_figure_and_fails_the_check_where_one_is_missing(tmp_path, capsys):
    described = figure_cell()
    set_figure_alt(described, GOOD)
    nbformat.write(nbformat.v4.new_notebook(cells=[described, figure_cell()]), tmp_path / "n.ipynb")
    assert main([str(tmp_path / "n.ipynb")]) == 0
    assert main(["--check", str(tmp_path / "n.ipynb")]) == 1
    out = capsys.readouterr().out
    assert f"cell 0: {GOOD!r}" in out and "cell 1: MISSING (no description)" in out


class Images(HTMLParser):
    def __init__(self, text: str):
        super().__init__()
        self.alts: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        if tag == "img" and "_images/" in dict(attrs).get("src", ""):
            self.alts.append(dict(attrs).get("alt"))


@pytest.mark.skipif(bool(book.missing_packages()), reason="the book extra is not installed")
def test_the_site_gives_each_figure_its_cells_description_as_alt(tmp_path):
    course = tmp_path / "course"
    (course / "notebooks").mkdir(parents=True)
    shutil.copy2(ROOT / "README.md", course / "README.md")
    described = figure_cell("plot_recall()")
    set_figure_alt(described, GOOD)
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Figures"), described, figure_cell("plot_other()")])
    nbformat.write(notebook, course / "notebooks" / "figures.ipynb")
    site = book.build_book(tmp_path / "html", course=course)
    page = (site / "notebooks" / "figures.html").read_text(encoding="utf-8")
    alts = Images(page).alts
    assert alts == [GOOD, book.NO_DESCRIPTION], alts
    assert not re.search(r'alt="[^"]*\.png"', page), "a figure's alt is its file name"

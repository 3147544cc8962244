"""The lecture's "your turn" cells (notebooks 2 and 3): the student writes the attention module's
forward, the decoder's step and its teacher-forcing pass from the equations and the shapes.

- no cell or output before a "your turn" cell shows the code it asks for (the worked lines,
  whitespace and names normalised), and no cell holds a worked version at all;
- untouched, the notebooks fall back to the library's pieces and say so;
- with the worked code in the cells, every check passes and notebook 3's model, the student's
  classes, equals the library's to the last bit.
"""

from __future__ import annotations

import keyword
import re

import nbformat
import pytest

from course_utils.checks.worked import WORKED
from tests.helpers import ROOT

NOTEBOOKS = ("notebooks/02_bahdanau_attention_in_pytorch.ipynb", "notebooks/03_reversal_task.ipynb")
#: A worked line this short (after normalising) says too little to be a give-away:
#: ``return N , N`` appears in any Python.
MIN_TOKENS = 7
TOKEN = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d*)?|\S")


def normalise(line: str) -> str:
    """A line's tokens with comments dropped and every name but an attribute (after ``.``) and a
    keyword replaced by ``N``: a copy with other variable names or spacing normalises alike."""
    line = line.split("#", 1)[0]
    out: list[str] = []
    for token in TOKEN.findall(line):
        is_name = token[0].isalpha() or token[0] == "_"
        if is_name and not keyword.iskeyword(token) and not (out and out[-1] == "."):
            token = "N"
        out.append(token)
    return " ".join(out)


def your_turn_cells(nb: nbformat.NotebookNode) -> list[tuple[int, str]]:
    return [(index, cell.metadata["course"]["worked"]) for index, cell in enumerate(nb.cells)
            if "your-turn" in cell.metadata.get("tags", [])]


def shown_lines(cell: nbformat.NotebookNode) -> list[str]:
    """A code cell's source lines and the text of its outputs."""
    lines = cell.source.splitlines()
    for output in cell.get("outputs", []):
        text = output.get("text") or output.get("data", {}).get("text/plain", "")
        lines += ("".join(text) if isinstance(text, list) else text).splitlines()
    return lines


def give_aways(nb: nbformat.NotebookNode) -> list[str]:
    """Each worked line found in a code cell or output before the cell that asks for it."""
    found = []
    for index, piece in your_turn_cells(nb):
        earlier = {normalise(line) for cell in nb.cells[:index] if cell.cell_type == "code"
                   for line in shown_lines(cell)}
        for line in WORKED[piece].code.splitlines():
            key = normalise(line)
            if len(key.split()) >= MIN_TOKENS and key in earlier:
                found.append(f"{piece}: {line.strip()}")
    return found


def with_worked(source: str, piece: str) -> str:
    """A your-turn cell with its unwritten method replaced by the worked one."""
    code = WORKED[piece].code
    method = re.search(r"def (\w+)\(", code).group(1)  # type: ignore[union-attr]
    return source.split(f"    def {method}(")[0] + code


def read(path: str) -> nbformat.NotebookNode:
    return nbformat.read(ROOT / path, as_version=4)


@pytest.mark.parametrize("path", NOTEBOOKS)
def test_no_cell_before_a_your_turn_cell_shows_its_code(path):
    nb = read(path)
    assert your_turn_cells(nb), f"{path} has no cell tagged your-turn"
    assert give_aways(nb) == []


def test_the_search_finds_a_renamed_copy_pasted_before_the_cell():
    nb = read(NOTEBOOKS[0])
    index, piece = your_turn_cells(nb)[0]
    copy = WORKED[piece].code.replace("energies", "scores").replace("    ", "  ")
    nb.cells.insert(1, nbformat.v4.new_code_cell(copy))
    assert any("energies" in line for line in give_aways(nb))


@pytest.mark.parametrize("path", NOTEBOOKS)
def test_no_cell_holds_a_worked_version(path):
    for cell in read(path).cells:
        assert "hide-input" not in cell.metadata.get("tags", [])
        if cell.cell_type == "code" and "your-turn" not in cell.metadata.get("tags", []):
            for piece in WORKED.values():
                body = [normalise(line) for line in piece.code.splitlines()[1:]]
                assert not set(body) - {""} <= {normalise(x) for x in cell.source.splitlines()}


def test_every_worked_piece_is_asked_for_once():
    asked = [piece for path in NOTEBOOKS for _, piece in your_turn_cells(read(path))]
    assert sorted(asked) == sorted(WORKED)


def test_the_committed_notebooks_show_the_untouched_state():
    """The committed outputs are those of a student who has not written anything yet: each check
    says the library's piece is used, and no worked version was printed."""
    for path in NOTEBOOKS:
        text = "\n".join(line for cell in read(path).cells if cell.cell_type == "code"
                         for line in shown_lines(cell))
        assert "is not written yet" in text
        assert "Until yours passes, the cells below use" in text
        assert "A worked " not in text


def run_with_worked(path: str, tmp_path) -> nbformat.NotebookNode:
    from nbclient import NotebookClient

    nb = read(path)
    for index, piece in your_turn_cells(nb):
        nb.cells[index].source = with_worked(nb.cells[index].source, piece)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    return nb


def outputs_of(nb: nbformat.NotebookNode) -> str:
    return "\n".join(line for cell in nb.cells if cell.cell_type == "code"
                     for line in shown_lines(cell))


def test_notebook_2_with_the_worked_forward_uses_it(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_QUICK", "1")
    text = outputs_of(run_with_worked(NOTEBOOKS[0], tmp_path))
    assert "✓ MyBahdanauAttention" in text and "The cells below use yours." in text
    assert "weights agree to 1e-12: True" in text


def test_notebook_3_trains_the_worked_decoder_and_it_equals_the_library(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_QUICK", "1")
    monkeypatch.setenv("COURSE_RUNS_DIR", str(tmp_path / "runs"))
    text = outputs_of(run_with_worked(NOTEBOOKS[1], tmp_path))
    assert "✓ Decoder.step" in text and "✓ TeacherForcing.forward" in text
    assert "logits identical: True | attention weights identical: True" in text

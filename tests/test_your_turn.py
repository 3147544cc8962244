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
    return run_with(read(path), tmp_path)


def outputs_of(nb: nbformat.NotebookNode) -> str:
    return "\n".join(line for cell in nb.cells if cell.cell_type == "code"
                     for line in shown_lines(cell))


@pytest.fixture(scope="module")
def lecture_with_worked(tmp_path_factory):
    """Notebook 2, then notebook 3, with the worked code in their "your turn" cells, in one copy
    of the course (one runs folder), at smoke scale; notebook 3 ends with a cell that reports
    its trained model's attention class and where it came from."""
    import json

    from _pytest.monkeypatch import MonkeyPatch

    from course_utils.checks.cells import cell_digest

    folder = tmp_path_factory.mktemp("lecture")
    patch = MonkeyPatch()
    patch.setenv("COURSE_QUICK", "1")
    patch.setenv("COURSE_RUNS_DIR", str(folder / "runs"))
    try:
        two = run_with_worked(NOTEBOOKS[0], folder)
        three = read(NOTEBOOKS[1])
        three.cells.append(nbformat.v4.new_code_cell(
            "import json\nfrom course_utils.checks.yours import origin\n"
            "attention = model.decoder.attention\n"
            "print('REPORT' + json.dumps({'class': type(attention).__name__, "
            "'origin': origin(type(attention)), 'yours': list(model.decoder.yours), "
            "'trained': len(history.epoch)}))"))
        three = run_with(three, folder)
    finally:
        patch.undo()
    asked = [two.cells[i].source for i, piece in your_turn_cells(two) if piece == "attention"]
    report = json.loads("{" + outputs_of(three).split("REPORT{", 1)[1].splitlines()[0])
    return outputs_of(two), outputs_of(three), report, cell_digest(asked[0])


def run_with(nb: nbformat.NotebookNode, folder) -> nbformat.NotebookNode:
    from nbclient import NotebookClient

    for index, piece in your_turn_cells(nb):
        nb.cells[index].source = with_worked(nb.cells[index].source, piece)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute()
    return nb


def test_notebook_2_with_the_worked_forward_uses_it_and_keeps_it(lecture_with_worked):
    text = lecture_with_worked[0]
    assert "✓ MyBahdanauAttention" in text and "The cells below use yours." in text
    assert "Kept for the later notebooks:" in text and "yours/attention.py" in text
    assert "weights agree to 1e-12: True" in text


def test_notebook_3_trains_the_students_attention_from_notebook_2(lecture_with_worked):
    text, report, digest = lecture_with_worked[1:]
    assert "✓ Decoder.step" in text and "✓ TeacherForcing.forward" in text
    assert "attention: your MyBahdanauAttention from notebook 2" in text
    assert report["class"] == "MyBahdanauAttention" and report["trained"] >= 1
    assert report["origin"]["piece"] == "attention"
    assert report["origin"]["cell"] == digest  # the very cell notebook 2 ran
    assert report["yours"] == ["MyBahdanauAttention", "Decoder.step", "TeacherForcing.forward"]
    assert "your pieces compared: MyBahdanauAttention, Decoder.step, TeacherForcing.forward" in text
    assert "logits identical: True | attention weights identical: True" in text


# ------------------------------------------------ derived, not dictated: the order is the student's

#: The pieces a decoder's step and teacher-forcing pass call, named in notebook 3's interface.
INTERFACE = ("prepare", "initial_state", "embed", "cell", "attention", "predict", "step")


def calls_in_code(code: str) -> list[str]:
    """The interface's methods the worked code calls on ``self``, in the order it calls them."""
    import ast

    tree = ast.parse(code.replace("\n    ", "\n").strip())
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Attribute) and node.func.attr in INTERFACE
             and isinstance(node.func.value, ast.Name) and node.func.value.id == "self"]
    return [c.func.attr for c in sorted(calls, key=lambda c: (c.lineno, c.col_offset))]  # type: ignore[attr-defined]


def calls_in_prose(text: str) -> list[str]:
    """The interface's methods a Markdown text names as calls (``self.step(...)``, ``step(``,
    `` `prepare` ``), in the order it names them."""
    pattern = r"(?:self\.)?\b(" + "|".join(INTERFACE) + r")\b(?=\(|`)"
    return re.findall(pattern, text)


def is_subsequence(short: list[str], long: list[str]) -> bool:
    it = iter(long)
    return all(name in it for name in short)


def recipes(nb: nbformat.NotebookNode) -> list[str]:
    """Each Markdown cell whose named calls hold a worked piece's calls, in its order."""
    found = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        named = calls_in_prose(cell.source)
        for piece in ("step", "teacher forcing"):
            worked = calls_in_code(WORKED[piece].code)
            if len(worked) >= 2 and is_subsequence(worked, named):
                found.append(f"{cell.get('id')}: {piece} {worked} in {named}")
    return found


def test_notebook_3_gives_the_interface_not_the_order_of_the_calls():
    assert calls_in_code(WORKED["step"].code) == ["attention", "cell"]
    assert calls_in_code(WORKED["teacher forcing"].code) == [
        "prepare", "embed", "initial_state", "step", "predict"]
    assert recipes(read(NOTEBOOKS[1])) == []


def test_a_recipe_in_the_prose_is_found():
    nb = read(NOTEBOOKS[1])
    nb.cells.append(nbformat.v4.new_markdown_cell(
        "Prepare the memory with `self.prepare(...)`, embed the target with `self.embed(...)`, "
        "start from `self.initial_state(summary)`, call `self.step(...)` at each position and "
        "`self.predict(...)` once."))
    nb.cells.append(nbformat.v4.new_markdown_cell(
        "First `self.attention(s_prev, ...)`, then `self.cell(...)`."))
    assert len(recipes(nb)) == 2

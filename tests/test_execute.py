"""course-execute and the day plan's timer: real runs of tiny notebooks in a fresh kernel."""

import nbformat
import nbformat.v4 as nbf
import pytest
from nbclient.exceptions import CellExecutionError

from course_utils.execute import main, run_notebook


def _write(path, *sources):
    notebook = nbf.new_notebook(cells=[nbf.new_code_cell(s) for s in sources])
    nbformat.write(notebook, path)
    return path.read_text()


def test_run_times_every_cell_and_saves_a_progress_bar_as_its_last_line(tmp_path):
    path = tmp_path / "nb.ipynb"
    _write(path, "import time\ntime.sleep(0.3)",
           "import sys\nfor k in range(50):\n    sys.stderr.write(f'\\rbar {k + 1}/50')\n"
           "sys.stderr.write('\\n')")
    run = run_notebook(path)
    assert run.cell_seconds[0] >= 0.3 and run.seconds >= sum(run.cell_seconds) * 0.9
    saved = nbformat.read(path, as_version=4)
    text = "".join(o.get("text", "") for o in saved.cells[1].outputs)
    assert "bar 50/50" in text
    assert "bar 1/50" not in text  # stored as JupyterLab shows it: the final state only


def test_run_without_save_leaves_the_file_alone(tmp_path):
    path = tmp_path / "nb.ipynb"
    before = _write(path, "print('hello')")
    run = run_notebook(path, save=False)
    assert run.notebook.cells[0].outputs[0]["text"] == "hello\n"
    assert path.read_text() == before


def test_a_failing_cell_changes_nothing_and_is_reported(tmp_path, capsys):
    path = tmp_path / "nb.ipynb"
    before = _write(path, "print('fine')", "raise ValueError('broken on purpose')")
    with pytest.raises(CellExecutionError):
        run_notebook(path)
    assert path.read_text() == before
    assert main([str(path)]) == 1
    assert "stopped at a failing cell; the file is unchanged" in capsys.readouterr().err
    assert path.read_text() == before


def test_a_missing_notebook_is_named(tmp_path, capsys):
    assert main([str(tmp_path / "nope.ipynb")]) == 2
    assert "no notebook at" in capsys.readouterr().err

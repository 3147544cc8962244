"""course-execute and the day plan's timer: real runs of tiny notebooks in a fresh kernel."""

import platform
import re

import nbformat
import nbformat.v4 as nbf
import numpy as np
import pytest
import torch
from nbclient.exceptions import CellExecutionError

from course_utils.tools.execute import (
    BUILT_WITH_KEYS,
    built_with,
    describe_build,
    main,
    run_notebook,
)


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


@pytest.mark.parametrize("quick", ["1", None])
def test_a_saved_notebook_records_what_built_it_as_its_kernel_reports(tmp_path, monkeypatch,
                                                                      quick):
    if quick:
        monkeypatch.setenv("COURSE_QUICK", quick)
    else:
        monkeypatch.delenv("COURSE_QUICK", raising=False)
    path = tmp_path / "nb.ipynb"
    _write(path, "x = 1", "print(x + 1)")
    run = run_notebook(path)
    saved = nbformat.read(path, as_version=4)
    # the question asked of the kernel leaves no cell, output or count behind
    assert len(saved.cells) == len(run.cell_seconds) == 2
    assert [c.execution_count for c in saved.cells] == [1, 2]
    assert saved.cells[1].outputs[0]["text"] == "2\n"
    record = built_with(saved)
    assert set(record) == set(BUILT_WITH_KEYS)
    # the kernel is this Python's (the test's environment): the same builds
    assert record["torch"] == torch.__version__ and record["numpy"] == np.__version__
    assert record["python"] == platform.python_version()
    assert record["cuda"] == torch.version.cuda
    assert record["device"] == (torch.cuda.get_device_name(0) if torch.cuda.is_available()
                                else "cpu")
    assert record["scale"] == ("quick" if quick else "real")
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", record["date"])
    assert built_with(run.notebook) == record


def test_the_record_is_read_as_one_sentence():
    record = {"torch": "2.13.0+cpu", "cuda": None, "device": "cpu", "numpy": "2.4.6",
              "python": "3.11.7", "scale": "real", "date": "2026-11-23"}
    assert describe_build(record) == (
        "Outputs from a real-configuration run on 2026-11-23 with PyTorch 2.13.0+cpu on the "
        "CPU (NumPy 2.4.6, Python 3.11.7).")
    gpu = dict(record, torch="2.14.1+cu130", cuda="13.0", device="NVIDIA H100 80GB HBM3",
               scale="quick")
    assert describe_build(gpu).startswith(
        "Outputs from a smoke-test run on 2026-11-23 with PyTorch 2.14.1+cu130 on NVIDIA H100")
    assert built_with(nbf.new_notebook()) is None


def test_a_kernel_that_cannot_say_what_it_runs_on_leaves_the_file_alone(tmp_path):
    path = tmp_path / "nb.ipynb"
    before = _write(path, "import os, sys\nsys.stdout = open(os.devnull, 'w')")
    with pytest.raises(RuntimeError, match="did not say what it runs on"):
        run_notebook(path)
    assert path.read_text() == before
    assert main([str(path)]) == 1
    assert path.read_text() == before

"""The project keeps its promises: one dependency list, one kernel, current docs, real outputs."""

import os
import re
import subprocess
import sys
import tomllib

import nbformat
import pytest
from helpers import ROOT

from course_utils.tools.colab import is_setup_cell
from course_utils.tools.execute import built_with
from course_utils.tools.kernel import KERNEL_NAME

# conda-forge names that differ from PyPI's
CONDA_TO_PYPI = {"pytorch": "torch"}
NOT_PACKAGES = {"python", "pip"}

LECTURES = sorted((ROOT / "notebooks").glob("*.ipynb"))
SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))
EXERCISES = sorted((ROOT / "exercises").glob("*.ipynb"))
ALL_NOTEBOOKS = LECTURES + SOLUTIONS + EXERCISES


def split_requirement(text: str) -> tuple[str, str]:
    name, spec = re.match(r"\s*([A-Za-z0-9_.\-]+)\s*(.*)", text).groups()
    return name.lower().replace("_", "-"), spec.replace(" ", "")


def pyproject_dependencies(extras: tuple[str, ...] = ("lab",)) -> dict[str, str]:
    """The dependencies, and those of ``extras``: what the lessons import (the core, which Colab
    installs) and the lab's (``lab``: JupyterLab, the kernel, widgets, the notebook tools)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    listed = [*project["dependencies"],
              *(r for extra in extras for r in project["optional-dependencies"][extra])]
    return dict(split_requirement(r) for r in listed)


def conda_dependencies() -> dict[str, str]:
    """environment.yml's packages, those of its ``pip:`` list (not on conda-forge) included."""
    deps, inside = {}, False
    for line in (ROOT / "environment.yml").read_text().splitlines():
        item = re.match(r"(  |      )- (.+)", line)
        if line.startswith("dependencies:"):
            inside = True
        elif inside and item and item.group(2).strip() != "pip:":
            name, spec = split_requirement(item.group(2).split("#")[0])
            if name not in NOT_PACKAGES:
                deps[CONDA_TO_PYPI.get(name, name)] = spec
        elif inside and line.strip() and not line.startswith(" "):
            inside = False
    return deps


def test_environment_yml_and_pyproject_list_the_same_dependencies():
    # the conda environment is the students' (and Binder's): what the notebooks need and the
    # lab (the core and the lab extra); the test and book extras come from PyPI when course.py
    # test / book --no-venv need them
    pip, conda = pyproject_dependencies(), conda_dependencies()
    assert set(pip) == set(conda), (
        f"only in pyproject.toml: {sorted(set(pip) - set(conda))}; "
        f"only in environment.yml: {sorted(set(conda) - set(pip))}"
    )
    assert pip == conda, "version bounds differ"


def test_the_extras_are_not_in_the_students_environment():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert set(extras) == {"lab", "test", "book"}
    for name, listed in extras.items():
        if name == "lab":
            continue
        found = set(dict(split_requirement(r) for r in listed)) & (
            set(conda_dependencies()) | set(pyproject_dependencies()))
        assert not found, f"the {name} extra's {sorted(found)} would be installed for students"


def test_the_core_is_what_the_lessons_import_and_leaves_the_lab_out():
    """The core dependencies are what Colab installs (tests/test_colab.py): nothing of the lab,
    so that Colab's own Jupyter, widgets and kernel are never replaced."""
    core = pyproject_dependencies(extras=())
    lab = set(pyproject_dependencies()) - set(core)
    assert lab == {"jupyterlab", "ipykernel", "ipywidgets", "nbclient", "nbformat"}
    assert set(core) == {"torch", "numpy", "matplotlib", "seaborn", "sacrebleu", "sacremoses",
                         "tqdm"}


def test_python_versions_agree():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert f"python{project['requires-python']}" in (ROOT / "environment.yml").read_text()


def test_no_torchtext_and_no_spacy_models():
    names = set(pyproject_dependencies())
    assert not names & {"torchtext", "spacy"}


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_test_markers_are_cell_tags_not_lines_students_read(path):
    """nbval's markers live in cell tags (``nbval-check-output``), where a student does not
    read them, not as a ``# NBVAL_...`` comment heading the cell."""
    notebook = nbformat.read(path, as_version=4)
    marked = [i for i, c in enumerate(notebook.cells)
              if c.cell_type == "code" and "NBVAL_" in c.source]
    assert not marked, f"cells {marked} carry an nbval comment: use the cell's tags"


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_notebook_uses_the_course_kernel(path):
    assert nbformat.read(path, as_version=4).metadata.kernelspec.name == KERNEL_NAME


@pytest.mark.parametrize("path", LECTURES + SOLUTIONS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_lecture_and_solution_notebooks_carry_outputs_of_a_real_run(path):
    notebook = nbformat.read(path, as_version=4)
    code = [c for c in notebook.cells if c.cell_type == "code" and c.source.strip()]
    if is_setup_cell(code[0]) and code[0].execution_count is None:
        # the setup cell, added after the last full run, not run (nbval refuses an unrun cell
        # with outputs): the rest ran top to bottom in one go; the next full run numbers it 1
        assert code[0].outputs == []
        code = code[1:]
    assert all(c.execution_count is not None for c in code), "re-run the whole notebook"
    counts = [c.execution_count for c in code]
    assert counts == list(range(1, len(code) + 1)), "cells were not run top to bottom in one go"
    for cell in code:
        assert not any(o.output_type == "error" for o in cell.outputs), cell.source[:80]
        text = "".join(o.get("text", "") for o in cell.outputs)
        assert "smoke-test scale" not in text, "committed outputs must come from the real run"


#: A progress bar's line as tqdm prints it: "desc:  40%|████      | 10/25 [...]".
BAR = re.compile(r"(\d+)%\|[^|]*\| *(\d+)/(\d+) \[")


@pytest.mark.parametrize("path", LECTURES + SOLUTIONS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_saved_progress_bar_is_one_finished_line(path):
    """A bar saved as a widget keeps only its first state (0%), and a bar's every refresh kept
    as a line fills the page: each saved bar is the one line it finished on."""
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        for output in cell.outputs:
            text = output.get("text") or output.get("data", {}).get("text/plain", "")
            for line in "".join(text).splitlines():
                if (bar := BAR.search(line.rsplit("\r", 1)[-1])) and "\r" not in line:
                    done, total = int(bar[2]), int(bar[3])
                    assert done == total, f"a bar saved before it finished: {line[:80]!r}"
                else:
                    assert not BAR.search(line), f"a bar saved with its refreshes: {line[:80]!r}"


@pytest.mark.parametrize("path", LECTURES + SOLUTIONS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_committed_outputs_record_the_pytorch_that_built_them(path):
    record = built_with(nbformat.read(path, as_version=4))
    assert record, "no course.built_with record: re-run it with course-execute"
    assert record["torch"] and record["scale"] == "real", record


@pytest.mark.parametrize("path", EXERCISES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_exercises_carry_no_build_record(path):
    assert built_with(nbformat.read(path, as_version=4)) is None, "regenerate with course-exercises"


#: A PyTorch build named in prose ("2.13.0+cpu", "cu130", "the CPU build of PyTorch 2.13").
BUILD_NAME = re.compile(r"\b\d+\.\d+\.\d+\+(cpu|cu\d+)|\bcu1\d\d\b|PyTorch \d+\.\d+")


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_prose_depends_on_the_build(path):
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "markdown":
            found = BUILD_NAME.search(cell.source)
            assert not found, f"prose names a PyTorch build: {found.group(0)!r}"


def test_readme_quickstart_has_two_commands_and_ci_runs_the_test_one():
    readme = (ROOT / "README.md").read_text()
    quickstart = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    block = quickstart.split("```", 2)[1]
    commands = [line for line in block.splitlines()[1:] if line.strip()]
    assert len(commands) == 2, commands
    test_command = next(c for c in commands if "test" in c)
    assert test_command.strip() in (ROOT / ".ci" / "run").read_text()


@pytest.mark.parametrize("path", LECTURES + EXERCISES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_readme_table_of_contents_lists_every_notebook(path):
    readme = (ROOT / "README.md").read_text()
    assert f"{path.parent.name}/{path.name}" in readme


def test_ruff_is_clean():
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", str(ROOT)],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_type_checker_is_clean():
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", os.devnull],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]

"""course-grade: no submission can crash the grader, hang it, or make it lose rows."""

import csv
import math
import shutil

import nbformat
import pytest
from helpers import ROOT, calibrated_limits
from nbformat.v4 import new_code_cell

from course_utils.tools.grading import grade_folder, main

SOLUTION = ROOT / "solutions" / "E10.1-attention-by-hand.ipynb"
EXERCISE = ROOT / "exercises" / "E10.1-attention-by-hand.ipynb"
# a cell of the solution (its imports) takes about 2 s alone; with the tests of another
# pytest-xdist worker beside it, several times that
LIMITS = calibrated_limits(cell_seconds=15, total_seconds=120)


def with_cell(source, at=0):
    notebook = nbformat.read(SOLUTION, as_version=4)
    notebook.cells.insert(at, new_code_cell(source))
    return notebook


def edited(replace_from, replace_to):
    notebook = nbformat.read(SOLUTION, as_version=4)
    for cell in notebook.cells:
        cell.source = cell.source.replace(replace_from, replace_to)
    return notebook


def deleted_and_reordered():
    notebook = nbformat.read(SOLUTION, as_version=4)
    notebook.cells = [c for c in notebook.cells if "def compute_context" not in c.source][::-1]
    return notebook


SUBMISSIONS = {
    "good": lambda: nbformat.read(SOLUTION, as_version=4),
    "untouched": lambda: nbformat.read(EXERCISE, as_version=4),
    "syntax_error": lambda: with_cell("def broken(:\n    pass"),
    "raises_at_top": lambda: with_cell("raise RuntimeError('boom')"),
    "loops_forever": lambda: with_cell("while True:\n    pass"),
    "sys_exit": lambda: with_cell("import sys\nsys.exit(3)"),
    "os_exit": lambda: with_cell("import os\nos._exit(1)"),
    "memory_bomb": lambda: with_cell(
        # np.empty reserves memory without touching it: the limit is reached at once,
        # however busy the machine is
        "import numpy as np\nchunks = []\nwhile True:\n"
        "    chunks.append(np.empty(1_000_000_000, dtype=np.uint8))"),
    "prints_megabytes": lambda: with_cell("print('x' * 20_000_000)"),
    "deleted_and_reordered": deleted_and_reordered,
    "renamed": lambda: edited("def compute_energies(", "def my_energies("),
    "wrong_types": lambda: edited("return np.tanh(query[:, None, :] + keys) @ v ", "return 'abc' "),
    "shows_its_environment": lambda: with_cell(
        "import os\nraise RuntimeError('scale ' + os.environ.get('COURSE_QUICK', '-') + ' runs '"
        " + os.environ.get('COURSE_RUNS_DIR', '-'))"),
}

# student -> (status, automatic points)
EXPECTED = {
    "good": ("graded", 8),
    "untouched": ("graded", 0),
    "syntax_error": ("graded", 8),
    "raises_at_top": ("graded", 8),
    "loops_forever": ("timeout", 8),
    "sys_exit": ("graded", 8),
    "os_exit": ("crashed", 0),
    "prints_megabytes": ("graded", 8),
    "deleted_and_reordered": ("graded", 7),
    "renamed": ("graded", 4),
    "wrong_types": ("graded", 4),
    "shows_its_environment": ("graded", 8),
    "not_json": ("not a notebook", 0),
    "empty": ("not a notebook", 0),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("submissions")
    for student, make in SUBMISSIONS.items():
        nbformat.write(make(), folder / f"{student}.ipynb")
    (folder / "not_json.ipynb").write_text("this is not a notebook {")
    (folder / "empty.ipynb").write_text("")
    out = tmp_path_factory.mktemp("grades")
    results = grade_folder("E10.1", folder, out, jobs=2, limits=LIMITS, progress=False)
    return folder, out, {r.student: r for r in results}


def test_every_submission_gets_exactly_one_row(graded):
    folder, out, results = graded
    with open(out / "grades.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert sorted(r["student"] for r in rows) == sorted(p.stem for p in folder.iterdir())
    assert set(rows[0]) >= {"energies", "softmax", "context", "most_attended", "why (manual)",
                            "total", "max", "status"}
    assert all(r["why (manual)"] == "" and r["max"] == "11" for r in rows)


@pytest.mark.parametrize("student", sorted(EXPECTED))
def test_status_and_points(graded, student):
    _, _, results = graded
    status, points = EXPECTED[student]
    assert (results[student].status, results[student].total()) == (status, points), (
        results[student].notes)


def test_memory_bomb_is_stopped_by_the_memory_limit(graded):
    result = graded[2]["memory_bomb"]
    assert result.status == "memory", result.notes
    assert any("memory" in note for note in result.notes)


def test_messages_help_the_student(graded):
    _, out, results = graded
    assert "not implemented yet" in results["untouched"].messages["energies"]
    assert "`compute_energies` is not defined" in results["renamed"].messages["energies"]
    assert "must return numbers; got a str" in results["wrong_types"].messages["energies"]
    assert any("SyntaxError" in n for n in results["syntax_error"].notes)
    limit = math.ceil(LIMITS.cell_seconds)  # whole seconds, stretched on a busy machine
    assert any(f"ran longer than {limit} s" in n for n in results["loops_forever"].notes)
    assert any("kernel died" in n for n in results["os_exit"].notes)
    feedback = (out / "feedback" / "renamed.md").read_text()
    assert "`compute_energies` is not defined" in feedback and "graded by your instructor" in feedback
    assert (out / "feedback" / "renamed.html").read_text().startswith("<!doctype html>")
    assert (out / "histogram.png").read_bytes()[:4] == b"\x89PNG"


def test_grading_again_reuses_unchanged_results_and_only_regrades(graded):
    folder, out, results = graded
    before = (out / "grades.csv").read_text()
    again = {r.student: r for r in grade_folder("E10.1", folder, out, limits=LIMITS,
                                                progress=False)}
    assert (out / "grades.csv").read_text() == before  # idempotent
    from course_utils.tools.grading import REUSED

    # honest grades are reused; a timeout, a crash or a memory stop is always tried again
    assert all((again[s].seconds == results[s].seconds) == (results[s].status in REUSED)
               for s in results)
    # the third run on three of them (so the timeout and crashes are not tried a third time),
    # with this gradebook's cache: one forced, one changed, one unchanged
    few, few_out = folder.parent / f"{folder.name}-few", out.parent / f"{out.name}-few"
    few.mkdir()
    for student in ("good", "renamed"):
        shutil.copy(folder / f"{student}.ipynb", few)
    nbformat.write(nbformat.read(SOLUTION, as_version=4), few / "untouched.ipynb")
    shutil.copytree(out / ".cache", few_out / ".cache")
    third = {r.student: r for r in grade_folder("E10.1", few, few_out, only=["good"],
                                                limits=LIMITS, progress=False)}
    assert third["good"].seconds != results["good"].seconds  # forced
    assert third["untouched"].total() == 8  # changed, so regraded
    assert third["renamed"].seconds == results["renamed"].seconds  # unchanged, reused


def test_submissions_run_at_smoke_scale_and_save_into_their_own_folder(graded):
    # E10.2 trains two models: under the grader that is the smoke-test run, in seconds, and
    # nothing a notebook saves lands in the course's runs folder.
    _, _, results = graded
    note = next(n for n in results["shows_its_environment"].notes if "scale" in n)
    assert "scale 1 runs " in note and "course-grade-" in note and note.endswith("/runs")


def test_bad_arguments_are_clear_errors(tmp_path, capsys):
    assert main(["E10.1", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    assert "no submissions folder" in capsys.readouterr().err
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "amy.ipynb").write_bytes(SOLUTION.read_bytes())
    assert main(["E10.1", str(tmp_path / "subs"), "--out", str(tmp_path / "o"),
                 "--only", "zed"]) == 2
    assert "no submission: ['zed']" in capsys.readouterr().err
    assert main(["E99", str(tmp_path / "subs")]) == 2
    assert "unknown exercise 'E99'" in capsys.readouterr().err


def test_the_reuse_key_covers_every_module_the_checks_can_call(tmp_path, monkeypatch):
    import shutil

    from course_utils.tools.grading import cache

    package = tmp_path / "course_utils"
    shutil.copytree(cache.PACKAGE_DIR, package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(cache, "PACKAGE_DIR", package)
    before = cache.submission_digest(SOLUTION, "E10.3")
    assert cache.submission_digest(SOLUTION, "E10.3") == before  # stable
    with open(package / "alignment.py", "a") as handle:  # not a check module, but called
        handle.write("\n# changed\n")
    assert cache.submission_digest(SOLUTION, "E10.3") != before


def test_the_histogram_leaves_matplotlib_as_it_found_it(tmp_path, monkeypatch):
    import matplotlib
    import matplotlib.pyplot as plt

    from course_utils.checks import get_exercise
    from course_utils.tools.grading import GradeResult, write_histogram

    def no_switch(*args, **kwargs):
        raise AssertionError("the grader switched matplotlib's backend")

    monkeypatch.setattr(matplotlib, "use", no_switch)
    open_figures = plt.get_fignums()
    results = [GradeResult("a", "graded", points={"x": 3.0}), GradeResult("b", "graded")]
    write_histogram(tmp_path / "h.png", get_exercise("E10.1"), results)
    assert (tmp_path / "h.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plt.get_fignums() == open_figures  # no pyplot figure left behind


def test_killing_a_worker_works_where_process_groups_cannot_be_signalled(monkeypatch):
    import subprocess
    import sys

    from course_utils.tools.grading import supervise

    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    monkeypatch.delattr(supervise.os, "killpg")
    supervise.kill_group(process)
    assert process.returncode is not None  # stopped, not silently left running


def test_the_summary_counts_notebooks_whose_cells_raised(graded):
    from course_utils.tools.grading import summary

    _, _, results = graded
    text = summary("E10.1", list(results.values()))
    raised = sum(1 for r in results.values()
                 if r.status == "graded" and any(" raised " in n for n in r.notes))
    assert raised > 0 and f"cells that raised an error: {raised}" in text


def test_a_kernel_that_never_starts_is_the_graders_error_and_is_retried(tmp_path, monkeypatch):
    """A kernel that does not come up (a busy machine, a cold disk) ran none of the student's
    code: the submission is not 'crashed', and the next run grades it again."""
    import nbclient

    from course_utils.tools.grading import worker
    from course_utils.tools.grading.cache import REUSED

    async def slow_start(self, **_):
        raise RuntimeError("Kernel didn't respond in 120 seconds")

    monkeypatch.setattr(nbclient.NotebookClient, "async_start_new_kernel_client", slow_start)
    for name in ("HOME", "JUPYTER_RUNTIME_DIR", "MPLCONFIGDIR", "IPYTHONDIR", "JUPYTER_PATH",
                 "COURSE_RUNS_DIR"):
        monkeypatch.setenv(name, str(tmp_path))  # restored after: the worker sets its own
    monkeypatch.chdir(tmp_path)
    report = worker.run_notebook(str(SOLUTION), "E10.1", 60, report=lambda line: None)
    assert report["status"] == "grader error" and report["status"] not in REUSED
    assert any("the kernel did not start" in note for note in report["notes"]), report
    assert worker.NotebookRun(nbformat.read(SOLUTION, as_version=4), "E10.1", 60, 0, [],
                              print).failed(RuntimeError("x"))["status"] == "grader error"


def test_the_grader_tries_a_notebook_whose_kernel_never_started_once_more(tmp_path, monkeypatch):
    from course_utils.tools.grading import batch
    from course_utils.tools.grading.results import NO_KERNEL, GradeResult

    calls = []

    def flaky(path, *_):
        calls.append(path)
        if len(calls) == 1:
            return GradeResult("x", "grader error", notes=[f"{NO_KERNEL}, so nothing ran"])
        return GradeResult("x", "graded", points={"energies": 1.0})

    monkeypatch.setattr(batch, "grade_one", flaky)
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "amy.ipynb").write_bytes(SOLUTION.read_bytes())
    [result] = grade_folder("E10.1", tmp_path / "subs", tmp_path / "out", progress=False,
                            calibrate=False)
    assert len(calls) == 2 and result.status == "graded"


def test_the_worker_imports_neither_pytorch_nor_the_checks():
    """One worker per submission: what it imports, every submission pays. The grader tells it
    the parts (so it never imports the checks, nor PyTorch with them), and the tools go without
    rfc3987_syntax, whose import alone takes over a second."""
    import subprocess
    import sys

    code = ("import sys, course_utils.tools.grading.worker, nbclient, nbformat\n"
            "print(sorted(m for m in ('torch', 'course_utils.checks.e10_1', 'rfc3987_syntax')"
            " if sys.modules.get(m) is not None))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"
    from course_utils.tools.grading.worker import exercise_parts

    assert exercise_parts("E10.1")[0] == ("energies", "compute_energies")

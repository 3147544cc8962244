"""course-grade against hostile and odd submissions: the sandbox (where this machine allows
user namespaces), the intake of real class folders, and a cache that cannot be forged."""

import csv
import json
import os
import signal
import subprocess
import sys
import time

import nbformat
import pytest
from helpers import ROOT, calibrated_limits, workers_of
from nbformat.v4 import new_code_cell

from course_utils.checks import get_exercise
from course_utils.tools.grading import collect, grade_folder, main
from course_utils.tools.grading.sandbox import detect

SOLUTION = ROOT / "solutions" / "E10.1-attention-by-hand.ipynb"
LIMITS = calibrated_limits(cell_seconds=20, total_seconds=90)
needs_sandbox = pytest.mark.skipif(detect() is None,
                                   reason="this machine does not allow user namespaces")


def solution_with(source: str) -> nbformat.NotebookNode:
    notebook = nbformat.read(SOLUTION, as_version=4)
    notebook.cells.insert(1, new_code_cell(source))
    return notebook


def rows(out):
    with open(out / "grades.csv", newline="") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


@needs_sandbox
def test_the_sandbox_protects_classmates_the_gradebook_and_the_instructor(tmp_path,
                                                                          monkeypatch):
    subs, out = tmp_path / "subs", tmp_path / "grades"
    subs.mkdir()
    nbformat.write(nbformat.read(SOLUTION, as_version=4), subs / "victim.ipynb")
    victim = (subs / "victim.ipynb").read_bytes()
    out.mkdir()
    (out / "grades.csv").write_text("old gradebook\n")
    monkeypatch.setenv("INSTRUCTOR_TOKEN", "s3cret")
    attack = f"""
import os, subprocess, pathlib
done = []
for target in [{str(subs / 'victim.ipynb')!r}, {str(out / 'grades.csv')!r},
               {str(out / '.cache' / 'victim.json')!r}, {str(ROOT / 'README.md')!r}]:
    try:
        pathlib.Path(target).write_text('overwritten')
        done.append('wrote ' + target)
    except OSError as error:
        pass
# a detached process that outlives the kernel, unless the PID namespace ends it
subprocess.Popen(['sleep', '417'], start_new_session=True)
raise RuntimeError('attack: ' + repr(done) + ' token=' + repr(os.environ.get('INSTRUCTOR_TOKEN'))
                   + ' listing=' + repr(os.path.exists({str(subs)!r}) and os.listdir({str(subs)!r})))
"""
    nbformat.write(solution_with(attack), subs / "mallory.ipynb")
    results = {r.student: r for r in grade_folder("E10.1", subs, out, limits=LIMITS,
                                                  progress=False, sandbox="unshare")}
    note = next(n for n in results["mallory"].notes if "attack" in n)
    assert "attack: []" in note  # nothing could be written
    assert "token=None" in note  # no instructor variables
    # classmates' work is out of sight: hidden (an empty folder), or under the private /tmp
    assert "listing=[]" in note or "listing=False" in note
    assert (subs / "victim.ipynb").read_bytes() == victim
    assert results["victim"].total() == 8 and results["mallory"].total() == 8
    assert rows(out)["victim"]["total"] == "8"
    assert "sleep 417" not in subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True,
                                             text=True).stdout  # nothing left running


@needs_sandbox
def test_a_sandboxed_submission_has_no_network_and_its_own_tmp(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    (tmp_path / "marker").write_text("the instructor's /tmp")
    probe = f"""
import os, socket
try:
    socket.create_connection(('1.1.1.1', 53), timeout=2)
    net = 'open'
except OSError as error:
    net = 'closed'
raise RuntimeError('probe net=' + net + ' tmp=' + repr(os.path.exists({str(tmp_path / 'marker')!r})))
"""
    nbformat.write(solution_with(probe), subs / "probe.ipynb")
    result = grade_folder("E10.1", subs, tmp_path / "out", limits=LIMITS, progress=False,
                          sandbox="unshare")[0]
    note = next(n for n in result.notes if "probe" in n)
    assert "net=closed" in note and "tmp=False" in note
    assert result.total() == 8


def test_intake_takes_notebooks_and_per_student_folders_and_lists_the_rest(tmp_path):
    subs = tmp_path / "subs"
    (subs / "bob").mkdir(parents=True)
    (subs / "carol").mkdir()
    (subs / "erin").mkdir()
    for path in [subs / "alice.ipynb", subs / "bob" / "E10.1.ipynb",
                 subs / "erin" / "a.ipynb", subs / "erin" / "b.ipynb"]:
        path.write_bytes(SOLUTION.read_bytes())
    (subs / "README.md").write_text("hand-in instructions")
    (subs / "alice.pdf").write_text("%PDF")
    intake = collect(subs)
    assert intake.submissions == {"alice": subs / "alice.ipynb",
                                  "bob": subs / "bob" / "E10.1.ipynb"}
    ignored = {p.name: why for p, why in intake.ignored}
    assert set(ignored) == {"README.md", "alice.pdf", "carol", "erin"}
    assert "2 notebooks in one student's folder" in ignored["erin"]
    (subs / "alice").mkdir()
    (subs / "alice" / "mine.ipynb").write_bytes(SOLUTION.read_bytes())
    with pytest.raises(ValueError, match="same student id \\(alice"):
        collect(subs)


def test_an_empty_folder_is_an_error_not_an_empty_gradebook(tmp_path, capsys):
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "notes.txt").write_text("x")
    assert main(["E10.1", str(tmp_path / "subs"), "--out", str(tmp_path / "o"),
                 "--sandbox", "none"]) == 2
    assert "no notebooks (*.ipynb)" in capsys.readouterr().err


def test_files_jupyter_opens_are_graded_and_ids_cannot_become_formulas(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "=HYPERLINK(1).ipynb").write_bytes(b"\xef\xbb\xbf" + SOLUTION.read_bytes())
    data = json.loads(SOLUTION.read_text())
    for cell in data["cells"]:
        cell.pop("execution_count", None)
        cell.pop("outputs", None) if cell["cell_type"] == "code" else None
        cell.pop("id", None)
    (subs / "lenient.ipynb").write_text(json.dumps(data))
    other = json.loads((ROOT / "solutions" / "E10.2-vanilla-vs-attention.ipynb").read_text())
    (subs / "wrong_exercise.ipynb").write_text(json.dumps(other))
    # saved by an older Jupyter: nbformat 3, cells inside a worksheet
    nbformat.write(nbformat.convert(nbformat.read(SOLUTION, as_version=4), 3),
                   subs / "old_jupyter.ipynb", version=3)
    assert '"worksheets"' in (subs / "old_jupyter.ipynb").read_text()
    results = {r.student: r for r in grade_folder("E10.1", subs, tmp_path / "out",
                                                  limits=LIMITS, progress=False)}
    assert results["=HYPERLINK(1)"].total() == 8 and results["lenient"].total() == 8
    assert results["old_jupyter"].status == "graded" and results["old_jupyter"].total() == 8
    assert any("nbformat 3" in n for n in results["old_jupyter"].notes)
    assert any("does not follow the notebook format" in n for n in results["lenient"].notes)
    assert any("looks like a submission for E10.2" in n
               for n in results["wrong_exercise"].notes)
    text = (tmp_path / "out" / "grades.csv").read_text()
    assert "\n'=HYPERLINK(1)," in text  # shown as text by a spreadsheet


def test_the_cache_keeps_only_honest_grades_under_the_same_limits(tmp_path):
    """Reused: an unchanged submission graded under the same limits. Not reused: other limits,
    or an entry not signed by this course (a timeout is never reused either:
    test_grading.py::test_grading_again_reuses_unchanged_results_and_only_regrades)."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    nbformat.write(nbformat.read(SOLUTION, as_version=4), subs / "good.ipynb")
    nbformat.write(nbformat.read(ROOT / "exercises" / SOLUTION.name, as_version=4),
                   subs / "untouched.ipynb")

    def grade(cell_seconds):
        limits = calibrated_limits(cell_seconds=cell_seconds, total_seconds=90)
        return {r.student: r for r in grade_folder("E10.1", subs, out, limits=limits,
                                                   progress=False)}

    first = grade(10)
    assert first["good"].total() == 8 and first["untouched"].total() == 0
    second = grade(10)
    assert all(second[s].seconds == first[s].seconds for s in first)  # reused
    third = grade(11)
    assert all(third[s].seconds != second[s].seconds for s in first)  # other limits: regraded
    # a forged cache entry (full marks, unsigned or signed with another key) is not trusted
    entry = json.loads((out / ".cache" / "untouched.json").read_text())
    entry["result"]["points"] = {"energies": 3, "softmax": 2, "context": 2, "most_attended": 1}
    (out / ".cache" / "untouched.json").write_text(json.dumps(entry))
    fourth = grade(11)
    assert fourth["untouched"].total() == 0 and fourth["untouched"].seconds != third[
        "untouched"].seconds
    assert fourth["good"].seconds == third["good"].seconds  # its own entry is still good


def test_feedback_escapes_what_the_student_controls_and_cuts_long_messages(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    nbformat.write(solution_with("raise RuntimeError('<script>x</script> | **bold** ' + "
                                 "'y' * 5_000_000)"), subs / "loud.ipynb")
    result = grade_folder("E10.1", subs, tmp_path / "out", limits=LIMITS, progress=False)[0]
    md = (tmp_path / "out" / "feedback" / "loud.md").read_text()
    assert len(md) < 10_000 and result.total() == 8
    assert "<" not in md and "&lt;script&gt;" in md  # no HTML from the student
    assert "x&lt;/script&gt; \\| **bold**" in md  # nor an extra table cell


def test_ctrl_c_stops_at_once_and_leaves_the_gradebook_alone(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    for name in ("a", "b", "c", "d"):
        nbformat.write(solution_with("import time\ntime.sleep(60)"), subs / f"{name}.ipynb")
    out.mkdir()
    (out / "grades.csv").write_text("the earlier gradebook\n")
    # this run's temporary copies go here, so its workers are told apart from those of tests
    # running beside it (pytest-xdist): a worker's command line names its copy
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "course_utils.tools.grading", "E10.1", str(subs), "--out", str(out),
         "--quiet", "--jobs", "1", "--cell-timeout", "120"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TMPDIR": str(tmp)})
    time.sleep(6)  # the first notebook is running
    def workers() -> list[str]:
        return [line for line in workers_of(tmp) if "course_utils.tools.grading.worker" in line]

    assert workers(), "no worker of this run was seen running"
    start = time.perf_counter()
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert time.perf_counter() - start < 5
    assert process.returncode == 130 and "interrupted" in err
    assert (out / "grades.csv").read_text() == "the earlier gradebook\n"
    # killed, not waited for: on a busy machine a killed process may take a moment to go
    deadline = time.perf_counter() + 15
    while True:
        gone = not workers()
        if gone or time.perf_counter() > deadline:
            break
        time.sleep(0.5)
    assert gone, "a worker outlived Ctrl-C"
    assert not os.path.exists(out / "feedback")


def test_the_grading_benchmark_runs_and_writes_its_table(tmp_path):
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_grading.py"),
                             "--copies", "2", "--out", str(tmp_path / "b.md")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    text = (tmp_path / "b.md").read_text()
    assert "## Grading submissions" in text and "bare kernel" in text
    if detect():
        assert "The sandbox adds" in text


def test_a_function_that_hangs_only_under_its_check_costs_that_part_only(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    # the notebook's own cells have run by then; under the checks `softmax` loops on every
    # input of three or more (every case of winner's check has at least three keys)
    hang = nbformat.read(SOLUTION, as_version=4)
    hang.cells.append(new_code_cell("_softmax = softmax\n"
                                    "def softmax(energies, mask):\n"
                                    "    import numpy as np\n"
                                    "    if np.asarray(energies).size >= 3:\n"
                                    "        while True:\n"
                                    "            pass\n"
                                    "    return _softmax(energies, mask)\n"))
    hang.cells.append(new_code_cell("import sys\nsys.exit(0)"))  # SystemExit at the end too
    nbformat.write(hang, subs / "hangs.ipynb")
    limits = calibrated_limits(cell_seconds=10, total_seconds=120)
    result = grade_folder("E10.1", subs, tmp_path / "out", limits=limits, progress=False)[0]
    assert result.points["softmax"] == 0
    assert result.points["winner"] == 0  # the worked winner calls the same softmax
    assert result.total() == 8 - 2 - 1  # every other part keeps its points
    assert "time limit" in result.messages["softmax"]
    assert any("part 'softmax'" in n and "`softmax`" in n for n in result.notes)


def test_points_from_the_kernel_are_never_taken_and_unknown_parts_ignored():
    from course_utils.tools.grading import PART, GradeResult, add_parts

    result = GradeResult("x", "graded")
    add_parts(result, "E10.1", [
        PART + json.dumps({"name": "energies", "probe": {"points": 4000, "calls": []}}),
        PART + json.dumps({"name": "softmax", "probe": {"points": 2, "message": "correct"}}),
        PART + json.dumps({"name": "context", "points": 2, "message": "ok"}),
        PART + json.dumps({"name": "bonus", "probe": {"points": 99}}),
        "@@COURSE-GRADE@@ not a part", PART + "{broken",
    ], seed=1)
    assert result.points == {"energies": 0.0, "softmax": 0.0, "context": 0.0}


def test_points_a_kernel_claims_are_never_taken():
    from course_utils.tools.grading import PART, GradeResult, add_parts

    result = GradeResult("x", "graded")
    add_parts(result, "E10.2", [
        PART + json.dumps({"name": "bleu_curve", "probe": {"points": 4000, "message": "ok"}}),
        PART + json.dumps({"name": "vanilla_context", "probe": {"points": float("nan")}}),
        PART + json.dumps({"name": "plot_bleu_curves", "probe": {"points": -5}}),
        PART + json.dumps({"name": "made_up", "probe": {"points": 5}}),
    ], seed=1)
    assert result.points == {"bleu_curve": 0.0, "vanilla_context": 0.0,
                             "plot_bleu_curves": 0.0}


def test_the_grader_judges_raw_results_on_fresh_inputs():
    import numpy as np

    from course_utils.checks import get_exercise

    def compute_energies(S, H, W_s, W_h, v):
        return np.tanh((S @ W_s.T)[:, None, :] + H @ W_h.T) @ v

    check = get_exercise("E10.1").checks["energies"]
    raw = json.loads(json.dumps(check.probe(compute_energies, 12345)))
    assert "points" not in raw  # the kernel sends results, not a verdict
    assert check.judge(raw, 12345).points == 3
    assert check.judge(raw, 54321).points == 0  # results for other inputs are worth nothing
    raw["calls"][1]["result"]["v"][0][0] += 1  # one forged number on the fresh inputs
    assert check.judge(raw, 12345).points == 1
    raw["calls"][0]["result"] = {"t": "array", "kind": "float", "shape": [3], "v": ["1", 2, 3]}
    assert check.judge(raw, 12345).points == 0


#: Cells that forge marks in the kernel, added to the untouched E10.1 exercise: each must end
#: at the honest score, 0.
FORGERIES = {
    "replaces_the_checks": (
        "import course_utils.checks as c, course_utils.checks.probes as p\n"
        "c.Check.probe = lambda self, fn, seed: {'points': 4000, 'message': 'ok', 'calls': []}\n"
        "c.Check.__call__ = lambda self, fn: c.CheckResult(self.exercise, self.name, 4000,\n"
        "                                                  self.points, 'correct')\n"
        "c.Check.judge = lambda self, raw, seed: c.CheckResult(self.exercise, self.name, 4000,\n"
        "                                                      self.points, 'correct')\n"
        "p.decode = lambda data, depth=0: 'forged'\n"),
    "patches_numpy": (
        "import numpy as np\n"
        "np.allclose = lambda *a, **k: True\n"
        "np.isclose = lambda a, b, *r, **k: np.ones(np.shape(a), dtype=bool)\n"
        "np.array_equal = lambda *a, **k: True\n"
        "def compute_energies(S, H, W_s, W_h, v): return np.zeros(H.shape[:2])\n"
        "def softmax(e, mask): return np.full(e.shape, 1 / e.shape[1])\n"
        "def compute_context(w, H): return H.mean(axis=1)\n"
        "def most_attended(w): return np.ones(len(w), dtype=int)\n"),
    "reads_the_checks_frames": (
        "import sys, numpy as np\n"
        "def _expected(default):\n"
        "    frame = sys._getframe(1)\n"
        "    while frame is not None:\n"
        "        if 'expected' in frame.f_locals:\n"
        "            return frame.f_locals['expected']\n"
        "        frame = frame.f_back\n"
        "    return default\n"
        "def compute_energies(S, H, W_s, W_h, v): return _expected(np.zeros(H.shape[:2]))\n"
        "def softmax(e, mask): return _expected(np.zeros(e.shape))\n"
        "def compute_context(w, H): return _expected(np.zeros((len(H), H.shape[2])))\n"
        "def most_attended(w): return _expected(np.zeros(len(w), dtype=int))\n"),
    "lazy_result": (  # read as numbers only once the check has computed its answer
        "import sys\n"
        "class Lazy:\n"
        "    def detach(self): return self\n"
        "    def cpu(self): return self\n"
        "    def numpy(self):\n"
        "        frame = sys._getframe(1)\n"
        "        while frame is not None and 'expected' not in frame.f_locals:\n"
        "            frame = frame.f_back\n"
        "        return frame.f_locals['expected'] if frame is not None else 0.0\n"
        "def compute_energies(S, H, W_s, W_h, v): return Lazy()\n"),
}


def test_forged_marks_end_at_the_honest_score(tmp_path):
    from course_utils.checks import get_exercise

    subs = tmp_path / "subs"
    subs.mkdir()
    for name, source in FORGERIES.items():
        notebook = nbformat.read(ROOT / "exercises" / "E10.1-attention-by-hand.ipynb",
                                 as_version=4)
        notebook.cells.append(new_code_cell(source))
        nbformat.write(notebook, subs / f"{name}.ipynb")
    # in the kernel, the lazy result fools the student-facing check...
    namespace: dict = {}
    exec(FORGERIES["lazy_result"], namespace)
    assert get_exercise("E10.1").checks["energies"](namespace["compute_energies"]).passed
    # ...and none of them fools the grader
    results = grade_folder("E10.1", subs, tmp_path / "out", limits=LIMITS, progress=False)
    for result in results:
        assert result.status == "graded", (result.student, result.notes)
        assert result.total() == 0, (result.student, result.points, result.messages)


@pytest.mark.parametrize("sandbox", [None, pytest.param("unshare", marks=needs_sandbox)])
def test_lines_written_to_the_workers_stdout_are_not_results(tmp_path, sandbox):
    from course_utils.tools.grading import MARKER, PART

    forged = json.dumps({"name": "energies", "points": 3, "message": "forged"})
    subs = tmp_path / "subs"
    subs.mkdir()
    notebook = nbformat.read(ROOT / "exercises" / "E10.1-attention-by-hand.ipynb",
                             as_version=4)
    notebook.cells.append(new_code_cell(
        "import os, sys, json\n"
        f"for fd in (1, 2):\n"
        f"    os.write(fd, ({PART!r} + {forged!r} + '\\n').encode())\n"
        f"    os.write(fd, ({MARKER!r} + {forged!r} + '\\n').encode())\n"
        "os.write(1, (json.dumps({'status': 'graded', 'notes': []}) + '\\n').encode())\n"))
    nbformat.write(notebook, subs / "forger.ipynb")
    result = grade_folder("E10.1", subs, tmp_path / "out", limits=LIMITS, progress=False,
                          sandbox=sandbox)[0]
    assert result.total() == 0 and result.points["energies"] == 0


@pytest.mark.parametrize("exercise_id, stem", [
    ("E10.1", "E10.1-attention-by-hand"), ("E10.2", "E10.2-vanilla-vs-attention"),
    ("E10.3", "E10.3-reading-attention-heatmaps"), ("E10.4", "E10.4-dot-and-general-scores")])
def test_the_grader_gives_solutions_full_marks_and_exercises_zero(exercise_id, stem):
    from helpers import judged_by_grader, notebook_functions

    from course_utils.checks import NOT_IMPLEMENTED, get_exercise
    from course_utils.checks.records import submitted
    from course_utils.tools.grading.judge import saved_records

    exercise = get_exercise(exercise_id)
    solution = notebook_functions(ROOT / "solutions" / f"{stem}.ipynb")
    untouched = notebook_functions(ROOT / "exercises" / f"{stem}.ipynb")
    # a part judged on a record (E10.3's finds) reads the one saved in the submitted file, as
    # course-grade does: the worked run's records for the solution, none for the exercise
    saved = saved_records(ROOT / "solutions" / f"{stem}.ipynb", exercise_id)
    for check in exercise.checks.values():
        with submitted(saved):
            assert judged_by_grader(check, solution.get(check.target)).passed, check.name
        with submitted({}):
            result = judged_by_grader(check, untouched.get(check.target))
        assert result.points == 0 and result.message == NOT_IMPLEMENTED, check.name


def test_folders_a_kernel_needs_under_tmp_are_kept_outermost_only(tmp_path):
    from course_utils.tools.grading.sandbox import kept_under_tmp

    course = tmp_path / "course"
    (course / ".venv" / "bin").mkdir(parents=True)
    other = tmp_path / "elsewhere"
    other.mkdir()
    outside = tmp_path.parent  # the base itself is never "kept"
    found = kept_under_tmp([course / ".venv", course, course / ".venv" / "bin", other, outside,
                            tmp_path / "missing"], tmp=outside)
    assert found == sorted([course.resolve(), other.resolve()])
    assert kept_under_tmp([course, course / ".venv"], tmp=tmp_path) == [course.resolve()]
    assert kept_under_tmp([tmp_path / "missing", tmp_path], tmp=tmp_path) == []


def test_results_too_large_to_be_an_answer_score_zero_and_notes_stay_few(tmp_path):
    from course_utils.tools.grading import NOTES, PROBE_BYTES

    subs = tmp_path / "subs"
    subs.mkdir()
    notebook = nbformat.read(ROOT / "exercises" / "E10.1-attention-by-hand.ipynb",
                             as_version=4)
    # each call returns 5,000 strings of 1,000 characters: about 5 MB of "results"
    notebook.cells.append(new_code_cell("def most_attended(weights):\n"
                                        "    return ['x' * 1000] * 5000\n"))
    notebook.cells.extend(new_code_cell(f"raise ValueError('cell {n}')") for n in range(60))
    nbformat.write(notebook, subs / "flood.ipynb")
    result = grade_folder("E10.1", subs, tmp_path / "out", limits=LIMITS, progress=False)[0]
    assert result.status == "graded" and result.points["most_attended"] == 0
    assert any(f"more than the {PROBE_BYTES / 1e6:.0f} MB a part may report" in note
               for note in result.notes), result.notes
    assert len(result.notes) <= NOTES and any("more notes like these" in n for n in result.notes)


def test_kernels_graded_at_once_share_the_cores(monkeypatch):
    from course_utils.tools.grading import limits

    monkeypatch.setattr(limits.os, "cpu_count", lambda: 8)
    assert [limits.kernel_threads(jobs) for jobs in (0, 1, 2, 3, 8, 20)] == [8, 8, 4, 2, 1, 1]
    env = limits.minimal_env(limits.kernel_threads(2))
    assert env["OMP_NUM_THREADS"] == env["MKL_NUM_THREADS"] == "4"
    assert env["COURSE_QUICK"] == "1"


def test_the_stress_benchmark_grades_solutions_and_untouched_exercises(tmp_path):
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "stress_grading.py"),
                             "--copies", "2", "--untouched", "1", "--exercises", "E10.1",
                             "--out", str(tmp_path / "b.md")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    text = (tmp_path / "b.md").read_text()
    assert "**2 of 2** honest runs scored full marks and **1 of 1** untouched" in text
    assert "10,000 submissions per exercise" in text
    record = json.loads((tmp_path / "grading_stress.json").read_text())
    assert [run["exercises"]["E10.1"]["full_marks"] for run in record.values()] == [2]
    # the shortcuts: exec of the answer's own text takes every part, the library's softmax one
    [run] = record.values()
    tried = run["exercises"]["E10.1"]["shortcuts"]
    assert sorted(tried["exec"]) == sorted(get_exercise("E10.1").checks) and "softmax" in tried[
        "library"] and run["exercises"]["E10.1"]["shortcuts_zero"] == 2
    assert "| exec (5 parts): yes, library (1 part): yes |" in text


def test_ctrl_c_while_a_worker_starts_kills_that_worker_too(tmp_path, monkeypatch):
    # Ctrl-C lands between a worker's start and its registration: stop_all cannot see it, so
    # grade_one itself must stop it, not leave it running until its time limit
    from course_utils.tools.grading import supervise
    from course_utils.tools.grading.limits import GradingLimits

    started = []

    def start_then_interrupt(command, folder, limits, threads):
        read_end, write_end = os.pipe()
        process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                                   stdin=subprocess.PIPE, start_new_session=True)
        os.close(write_end)
        started.append(process)
        supervise.stop_all()  # the Ctrl-C, before grade_one has registered the worker
        return process, read_end, None

    monkeypatch.setattr(supervise, "_start", start_then_interrupt)
    notebook = tmp_path / "a.ipynb"
    nbformat.write(solution_with("x = 1"), notebook)
    begin = time.perf_counter()
    try:
        with pytest.raises(KeyboardInterrupt):
            supervise.grade_one(notebook, "E10.1", GradingLimits(120, 600))
        assert time.perf_counter() - begin < 10
        assert started[0].wait(timeout=10) is not None  # killed, not left to sleep
    finally:
        supervise.clear_stop()
        for process in started:
            process.kill()

"""The nbgrader export: ``course-exercises --nbgrader OUT`` writes source notebooks that nbgrader
itself accepts. The last test runs nbgrader (installed from the package index into a virtual
environment of its own, cached between runs and keyed by its version, since it pins Jupyter
packages of its own): ``generate_assignment`` releases the exercises without their solutions,
and ``autograde`` gives the course's solutions full automatic marks and the untouched exercises
zero. It is part of the default suite, so CI runs it; it is skipped, saying why, where nbgrader
cannot be installed (no package index)."""

import copy
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from helpers import ROOT

from course_utils.checks import get_exercise, nbgrader_points
from course_utils.tools.nbgrader import (
    called_check,
    checks_by_call,
    export_nbgrader,
    nbgrader_source,
)
from course_utils.tools.solutions import BEGIN, END, ExerciseFormatError, without_markers

NBGRADER = "0.9.6"
ASSIGNMENTS = {"E10.1": "E10.1-attention-by-hand.ipynb",
               "E10.2": "E10.2-vanilla-vs-attention.ipynb",
               "E10.3": "E10.3-reading-attention-heatmaps.ipynb",
               "E10.4": "E10.4-dot-and-general-scores.ipynb"}
#: the points each exercise's table lists: automatic, written
POINTS = {"E10.1": (8, 3), "E10.2": (15, 8), "E10.3": (6, 5), "E10.4": (9, 3)}


def nbgrader_meta(cell) -> dict:
    return dict(cell.metadata.get("nbgrader", {}))


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("nbgrader") / "course"
    done = subprocess.run([sys.executable, "-m", "course_utils.tools.exercises", "--nbgrader", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return out


def test_export_is_nbgraders_course_layout(exported):
    assert sorted(p.relative_to(exported).as_posix() for p in exported.rglob("*")
                  if p.is_file()) == ["nbgrader_config.py", *(f"source/{a}/{n}" for a, n in
                                                               ASSIGNMENTS.items())]
    config = (exported / "nbgrader_config.py").read_text()
    assert "raise NotImplementedError  # your code here" in config  # the course's own stubs
    assert "_Write your answer here._" in config


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_part_is_an_nbgrader_cell_worth_its_points(exported, assignment):
    notebook = nbformat.read(exported / "source" / assignment / ASSIGNMENTS[assignment], 4)
    exercise = get_exercise(assignment)
    assert "course" not in notebook.metadata  # no record of a run: the source has no outputs
    cells = [(cell, nbgrader_meta(cell)) for cell in notebook.cells]
    tests = {m["grade_id"]: m["points"] for c, m in cells if m.get("grade") and not m["solution"]}
    answers = {m["grade_id"]: m["points"] for c, m in cells if m.get("grade") and m["solution"]}
    assert tests == {f"test_{name}": check.points for name, check in exercise.checks.items()}
    assert answers == {f"answer_{name}": q.points for name, q in exercise.manual.items()}
    assert (sum(tests.values()), sum(answers.values())) == POINTS[assignment]
    for cell, meta in cells:
        solved = BEGIN in cell.source
        assert bool(meta.get("solution")) == solved, cell.source[:80]
        if meta.get("grade") and not meta["solution"]:  # a test cell runs the part's check
            assert meta["locked"] and "nbgrader_points(" in cell.source
        if solved:
            assert not meta["locked"] and meta["schema_version"] == 3
        if cell.cell_type == "markdown" and not solved:
            assert meta["locked"]  # prose is read-only
        assert not cell.get("outputs")


def test_a_test_cell_is_worth_what_the_check_gives_and_never_raises(capsys):
    import numpy as np

    def compute_energies(decoder_states, encoder_states, W_s, W_h, v):
        return np.tanh((decoder_states @ W_s.T)[:, None, :] + encoder_states @ W_h.T) @ v

    assert nbgrader_points("E10.1", "energies", {"compute_energies": compute_energies}) == 3.0
    assert "[PASS]" in capsys.readouterr().out

    def noisy(energies, mask):
        print("to stderr", file=sys.stderr)  # nbgrader scores a cell writing to stderr 0
        raise NotImplementedError

    assert nbgrader_points("E10.1", "softmax", {"softmax": noisy}) == 0.0
    assert nbgrader_points("E10.1", "context", {}) == 0.0  # the function is not defined
    captured = capsys.readouterr()
    assert captured.err == "" and "to stderr" in captured.out
    # a part judged on the record of the student's own run is left to course-grade
    assert nbgrader_points("E10.3", "monotonic", {"monotonic_example": lambda: "a dog ."}) == 0
    assert "Grade it with course-grade" in capsys.readouterr().out


def test_a_written_answer_must_name_its_question():
    solution = nbformat.read(ROOT / "solutions" / ASSIGNMENTS["E10.1"], 4)
    broken = copy.deepcopy(solution)
    answer = next(c for c in broken.cells if c.metadata.get("course", {}).get("manual"))
    del answer.metadata["course"]
    with pytest.raises(ExerciseFormatError, match="must name its question"):
        nbgrader_source(broken, "E10.1", "E10.1.ipynb")
    broken = copy.deepcopy(solution)
    broken.cells = [c for c in broken.cells if "check_softmax" not in c.source]
    with pytest.raises(ExerciseFormatError, match="no check cell calls part 'softmax'"):
        nbgrader_source(broken, "E10.1", "E10.1.ipynb")


def test_bad_output_folders_are_refused_and_nothing_is_half_written(tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not empty"):
        export_nbgrader(ROOT / "solutions", full)
    assert [p.name for p in full.iterdir()] == ["keep.txt"]
    (tmp_path / "a-file").write_text("")
    with pytest.raises(FileExistsError, match="not a folder"):
        export_nbgrader(ROOT / "solutions", tmp_path / "a-file")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        export_nbgrader(ROOT / "solutions", tmp_path / "missing" / "out")
    if os.geteuid() != 0:  # root may write anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(PermissionError):
            export_nbgrader(ROOT / "solutions", locked / "out")
    # a solution that cannot be exported stops everything before anything is written
    bad = tmp_path / "solutions"
    bad.mkdir()
    shutil.copy(ROOT / "solutions" / ASSIGNMENTS["E10.1"], bad)
    (bad / "E10.9-unknown.ipynb").write_text((ROOT / "solutions" / ASSIGNMENTS["E10.1"])
                                             .read_text())
    with pytest.raises(ValueError, match="unknown exercise"):
        export_nbgrader(bad, tmp_path / "new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "full", "solutions"]
    empty = tmp_path / "empty"
    empty.mkdir()
    export_nbgrader(ROOT / "solutions", empty)  # an empty folder is fine
    assert (empty / "nbgrader_config.py").exists()
    done = subprocess.run([sys.executable, "-m", "course_utils.tools.exercises", "--nbgrader",
                           str(full)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "is not empty" in done.stderr


# ------------------------------------------------------------------------- nbgrader itself


def nbgrader_venv() -> Path:
    """A virtual environment with nbgrader, made once per nbgrader version and Python."""
    import fcntl  # POSIX only, as the test is
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "course_utils"
    name = f"nbgrader-{NBGRADER}-py{sys.version_info[0]}{sys.version_info[1]}"
    venv = base / name
    try:
        base.mkdir(parents=True, exist_ok=True)
        lock = open(base / f"{name}.lock", "w")  # noqa: SIM115 (held while we build)
    except OSError as error:
        pytest.skip(f"no cache folder for nbgrader's environment: {error}")
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (venv / ".complete").exists():
            return venv
        shutil.rmtree(venv, ignore_errors=True)  # a half-built one from an interrupted run
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        done = subprocess.run([venv / "bin" / "python", "-m", "pip", "install", "--quiet",
                               "--disable-pip-version-check", f"nbgrader=={NBGRADER}"],
                              capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
            pytest.skip(f"nbgrader {NBGRADER} could not be installed from the package index "
                        f"(no index reachable?): {last}")
        (venv / ".complete").write_text(NBGRADER)
    return venv


SCORES = """\
import json
from nbgrader.api import Gradebook
scores = {}
with Gradebook("sqlite:///gradebook.db") as gb:
    for sub in gb.assignment_submissions(ASSIGNMENT):
        for notebook in sub.notebooks:
            for grade in notebook.grades:
                scores.setdefault(sub.student_id, {})[grade.name] = grade.auto_score
print(json.dumps(scores))
"""


def filled_in(release: nbformat.NotebookNode, solution: nbformat.NotebookNode):
    """The released notebook as a student who wrote the course's solutions hands it in."""
    answers = {cell.id: cell.source for cell in solution.cells}
    filled = copy.deepcopy(release)
    for cell in filled.cells:
        if nbgrader_meta(cell).get("solution"):
            cell.source = without_markers(answers[cell.id])
    return filled


def run_nbgrader(assignment: str, exported: Path, folder: Path, env: dict, venv: Path):
    """generate_assignment, two fake students, autograde; returns (release, scores)."""
    root = folder / assignment
    (root / "source").mkdir(parents=True)
    shutil.copytree(exported / "source" / assignment, root / "source" / assignment)
    shutil.copy(exported / "nbgrader_config.py", root)

    def nbgrader(*args: str) -> None:
        done = subprocess.run([venv / "bin" / "nbgrader", *args], cwd=root, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"nbgrader {' '.join(args)}:\n{done.stderr[-3000:]}"

    nbgrader("generate_assignment", assignment)
    name = ASSIGNMENTS[assignment]
    release = nbformat.read(root / "release" / assignment / name, 4)
    solution = nbformat.read(ROOT / "solutions" / name, 4)
    for student, notebook in (("solutions", filled_in(release, solution)),
                              ("untouched", release)):
        (root / "submitted" / student / assignment).mkdir(parents=True)
        nbformat.write(notebook, root / "submitted" / student / assignment / name)
    nbgrader("autograde", assignment)
    done = subprocess.run([venv / "bin" / "python", "-c",
                           SCORES.replace("ASSIGNMENT", repr(assignment))],
                          cwd=root, env=env, capture_output=True, text=True, check=True)
    return release, json.loads(done.stdout)


@pytest.mark.skipif(os.name != "posix", reason="the test drives nbgrader in a POSIX virtualenv")
def test_nbgrader_releases_and_autogrades_the_exercises(exported, tmp_path):
    venv = nbgrader_venv()
    # the notebooks name the course's kernel: here it runs this Python, which has the course
    spec = tmp_path / "jupyter" / "kernels" / "bahdanau-day10"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "course", "language": "python"}))
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
           "JUPYTER_PATH": str(tmp_path / "jupyter"),
           "JUPYTER_CONFIG_DIR": str(tmp_path / "jupyter-config"),  # no user nbgrader config
           "COURSE_QUICK": "1", "COURSE_RUNS_DIR": str(tmp_path / "runs"), "MPLBACKEND": "Agg",
           # the three assignments are graded at once: one thread per kernel, or PyTorch's
           # threads compete for the cores and every kernel runs several times slower
           "OMP_NUM_THREADS": "1"}
    env.pop("MULTI30K_DIR", None)  # E10.2 and E10.3 read the committed sample
    env.pop("VIRTUAL_ENV", None)
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {a: pool.submit(run_nbgrader, a, exported, tmp_path, env, venv)
                   for a in ASSIGNMENTS}
        results = {a: f.result() for a, f in futures.items()}

    for assignment, (release, scores) in results.items():
        exercise = get_exercise(assignment)
        solution_text = (ROOT / "solutions" / ASSIGNMENTS[assignment]).read_text()
        student = nbformat.read(ROOT / "exercises" / ASSIGNMENTS[assignment], 4)
        # the release holds no solution: it is exercises/, cell for cell, except that each
        # check cell is the part's autograded test cell
        assert len(release.cells) == len(student.cells)
        for got, want in zip(release.cells, student.cells):
            assert BEGIN not in got.source and END not in got.source
            meta = nbgrader_meta(got)
            if meta.get("grade") and not meta["solution"]:
                part = meta["grade_id"].removeprefix("test_")
                assert called_check(want.source, checks_by_call(assignment)).name == part
                assert f"nbgrader_points({assignment!r}, {part!r}, globals())" in got.source
            else:
                assert (got.cell_type, got.source) == (want.cell_type, want.source)
        released = json.dumps(release.dict())
        for cell in nbformat.reads(solution_text, 4).cells:
            if cell.cell_type == "markdown" and BEGIN in cell.source:
                answer = cell.source.split(BEGIN, 1)[1].strip()[:60]
                assert answer not in released
        # autograde: every part full marks for the solutions, zero for the untouched notebook
        parts = {f"test_{name}": check.points for name, check in exercise.checks.items()}
        # a part judged on a record of the student's own run (E10.3's finds) is course-grade's:
        # nbgrader clears the record and re-runs without the student's model, so it gives 0
        recorded = {f"test_{name}" for name in exercise.recorded}
        assert {k: v for k, v in scores["solutions"].items() if k in parts} == {
            k: 0.0 if k in recorded else v for k, v in parts.items()}
        assert {k: v for k, v in scores["untouched"].items() if k in parts} == dict.fromkeys(
            parts, 0.0)
        assert sum(parts.values()) == POINTS[assignment][0]
        # written answers: left to the instructor when written, 0 when left blank
        for name in exercise.manual:
            assert scores["solutions"][f"answer_{name}"] is None
            assert scores["untouched"][f"answer_{name}"] == 0.0

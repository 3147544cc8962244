"""course-handout gives students the course without its worked solutions: the lecture notebooks
as committed, the exercises as generated, the installable package and a README, and nothing of
solutions/, the tests or the instructors' material; no file holds a line of a worked solution;
the folder appears whole or not at all.

The handout is made once per module (about 2 s: files are copied, nothing runs)."""

import importlib.util
import json
import os
import shutil
import subprocess
import sysconfig
import venv
from pathlib import Path
from unittest import mock

import nbformat
import pytest
from helpers import ROOT

from course_utils.tools import handout
from course_utils.tools.exercise_format import BEGIN, END
from course_utils.tools.exercises import render_exercise

SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))
CACHES = ("__pycache__", ".ipynb_checkpoints")


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    return handout.make_handout(tmp_path_factory.mktemp("handout") / "day10")


def files_under(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not set(p.parts) & set(CACHES) and p.suffix != ".pyc"}


def written_answers() -> list[tuple[str, str]]:
    """``(notebook, answer)`` for every written answer of a solution's manual Markdown cells."""
    found = []
    for path in SOLUTIONS:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown" and cell.metadata.get("course", {}).get("manual"):
                answer = cell.source.split(BEGIN, 1)[1].split(END, 1)[0].strip()
                found.append((path.name, answer))
    return found


def test_the_handout_holds_what_students_need_and_nothing_else(made):
    assert {p.name for p in made.iterdir()} == {
        "README.md", "course.py", "pyproject.toml", "environment.yml", ".gitignore", "postBuild",
        "notebooks", "exercises", "course_utils"}
    everything = [p.relative_to(made) for p in made.rglob("*")]
    for never in ("solutions", "tests", ".git", ".ci", "benchmarks", "docs", "runs",
                  "checkpoints", "data", *CACHES):
        assert not [p for p in everything if never in p.parts], f"{never} is in the handout"
    assert not [p for p in everything if p.suffix in (".pt", ".gz", ".pyc")]
    # the lecture notebooks as committed (outputs included), the package whole
    assert files_under(made / "notebooks") == {
        p.name: p.read_bytes() for p in (ROOT / "notebooks").glob("*.ipynb")} | {
        "matplotlibrc": (ROOT / "notebooks" / "matplotlibrc").read_bytes()}
    assert files_under(made / "course_utils") == files_under(ROOT / "course_utils")
    assert os.access(made / "postBuild", os.X_OK)


def test_the_exercises_are_exactly_the_generated_ones_without_outputs(made):
    assert files_under(made / "exercises") == {
        p.name: p.read_bytes() for p in (ROOT / "exercises").glob("*.ipynb")} | {
        "matplotlibrc": (ROOT / "exercises" / "matplotlibrc").read_bytes()}  # the course style
    for solution in SOLUTIONS:
        exercise = made / "exercises" / solution.name
        assert exercise.read_text(encoding="utf-8") == render_exercise(solution)
        cells = nbformat.read(exercise, as_version=4).cells
        assert not [c for c in cells if c.cell_type == "code" and c.outputs]


def test_no_file_holds_a_line_of_a_worked_solution(made):
    needles = handout.solution_text(ROOT)
    # every solution and every written answer is searched for, not only some
    assert {where.split(",")[0] for where in needles.values()} == {p.name for p in SOLUTIONS}
    for notebook, answer in written_answers():
        lines = [line.strip() for line in answer.splitlines()
                 if len(line.strip()) >= handout.MIN_CHARS]
        assert lines and all(line in needles for line in lines), notebook
    assert handout.find_solution_text(made, needles) == []


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: p.stem)
def test_the_detector_finds_a_solution_copied_in(made, tmp_path, solution):
    copy = tmp_path / "copy"
    shutil.copytree(made, copy)
    shutil.copy2(solution, copy / "exercises" / solution.name)  # the worked one, not the stub
    leaks = handout.find_solution_text(copy, handout.solution_text(ROOT))
    assert leaks and {leak.file for leak in leaks} == {copy / "exercises" / solution.name}
    assert {leak.solution.split(",")[0] for leak in leaks} == {solution.name}


def test_the_detector_finds_a_written_answer_or_a_line_of_code_pasted_anywhere(made, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(made, copy)
    needles = handout.solution_text(ROOT)
    _, answer = written_answers()[0]
    with open(copy / "README.md", "a", encoding="utf-8") as readme:
        readme.write("\n" + answer + "\n")
    line = next(line for line, where in needles.items()
                if where.startswith(SOLUTIONS[0].name) and "=" in line)
    (copy / "course_utils" / "hint.py").write_text(f"# {line}\n")
    notebook = nbformat.read(copy / "notebooks" / "01_bottleneck_and_attention_by_hand.ipynb", 4)
    notebook.cells.append(nbformat.v4.new_markdown_cell(f'A "quoted" answer: {answer}'))
    nbformat.write(notebook, copy / "notebooks" / "01_bottleneck_and_attention_by_hand.ipynb")
    leaks = handout.find_solution_text(copy, needles)
    assert {leak.file.relative_to(copy) for leak in leaks} == {
        Path("README.md"), Path("course_utils/hint.py"),
        Path("notebooks/01_bottleneck_and_attention_by_hand.ipynb")}


def test_a_handout_that_would_hold_a_solution_is_not_written(tmp_path, monkeypatch):
    _, answer = written_answers()[0]
    real = handout.student_readme
    monkeypatch.setattr(handout, "student_readme",
                        lambda *args, **kwargs: real(*args, **kwargs) + answer)
    with pytest.raises(handout.HandoutError, match="text of the worked solutions"):
        handout.make_handout(tmp_path / "out")
    assert os.listdir(tmp_path) == []


def test_a_second_run_into_the_same_folder_is_refused(made, capsys):
    before = files_under(made)
    with pytest.raises(handout.HandoutError, match="already exists and is not empty"):
        handout.make_handout(made)
    assert handout.main([str(made)]) == 1
    assert "already exists and is not empty" in capsys.readouterr().err
    assert files_under(made) == before


def test_an_empty_folder_is_filled_and_the_command_says_what_it_wrote(tmp_path, capsys):
    (tmp_path / "out").mkdir()
    assert handout.main([str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "6 lecture notebooks, 4 exercises" in printed and "course.py lab" in printed
    assert (tmp_path / "out" / "README.md").exists()
    assert os.listdir(tmp_path) == ["out"]


def test_a_failure_midway_leaves_no_folder_behind(tmp_path, monkeypatch):
    calls = []

    def failing_copy(*args, **kwargs):
        calls.append(args)
        if len(calls) == 2:
            raise OSError("disk full (simulated)")
        return shutil.copyfile(*args[:2])

    monkeypatch.setattr(handout.shutil, "copy2", failing_copy)
    with pytest.raises(OSError, match="simulated"):
        handout.make_handout(tmp_path / "out")
    assert len(calls) == 2  # it failed midway, after notebooks/ and course_utils/ were copied
    assert os.listdir(tmp_path) == []


def test_a_folder_inside_the_course_or_stale_exercises_are_refused(tmp_path):
    with pytest.raises(handout.HandoutError, match="inside the course"):
        handout.make_handout(ROOT / "notebooks" / "handout")
    assert not (ROOT / "notebooks" / "handout").exists()
    course = tmp_path / "course"
    for folder in ("solutions", "exercises"):
        (course / folder).mkdir(parents=True)
        shutil.copy2(ROOT / folder / SOLUTIONS[0].name, course / folder / SOLUTIONS[0].name)
    stale = course / "exercises" / SOLUTIONS[0].name
    stale.write_text(stale.read_text(encoding="utf-8").replace("NotImplementedError", "pass"))
    with pytest.raises(handout.HandoutError, match="out of date.*course-exercises"):
        handout.make_handout(tmp_path / "out", course=course)
    assert not (tmp_path / "out").exists()


def test_the_readme_says_what_is_here_how_to_open_it_and_how_to_hand_in(made, tmp_path):
    readme = (made / "README.md").read_text(encoding="utf-8")
    assert readme.startswith("# Day 10")
    assert "python3 course.py lab" in readme and "conda activate bahdanau-day10" in readme
    for folder in ("notebooks", "exercises"):
        for path in (ROOT / folder).glob("*.ipynb"):
            assert f"]({folder}/{path.name})" in readme, path.name
    assert "## Handing in" in readme and "alice.ipynb" in readme
    assert "worked solutions are\nnot part" in readme or "are not part of it" in readme
    other = handout.make_handout(tmp_path / "h", hand_in="Upload it to Moodle by Friday.")
    assert (other / "README.md").read_text(encoding="utf-8").rstrip().endswith(
        "Upload it to Moodle by Friday.")


def test_the_readme_carries_the_day_plan_the_notebooks_refer_to(made):
    readme = (made / "README.md").read_text(encoding="utf-8")
    course = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "## Day plan" in readme
    assert "| clock | course page block |" in readme  # the table itself
    assert "docs/day_plan.md" in course and "](docs/" not in readme  # no link to a missing file
    assert "README's day plan" in (made / "notebooks" / "03_reversal_task.ipynb").read_text()


def load_course_script(folder: Path):
    spec = importlib.util.spec_from_file_location("handout_course", folder / "course.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_course_py_opens_the_handout_and_says_the_tests_are_not_part_of_it(made, capsys):
    course = load_course_script(made)
    assert course.ROOT == made
    with (mock.patch.object(course, "ensure_environment", return_value="python") as env,
          mock.patch.object(course, "run") as run,
          mock.patch.object(course.subprocess, "run") as trust):
        assert course.main(["lab"]) == 0
        assert f"--ServerApp.root_dir={made}" in run.call_args.args
        trusted = trust.call_args.args[0]
        assert {Path(p).parent.name for p in trusted if p.endswith(".ipynb")} == {
            "notebooks", "exercises"}
        env.reset_mock()
        run.reset_mock()
        assert course.main(["test"]) == 2
        env.assert_not_called()  # nothing is installed for a command that cannot run
        run.assert_not_called()
    assert "tests are not part of this folder" in capsys.readouterr().err


@pytest.mark.skipif(os.name != "posix", reason="postBuild is a bash script")
def test_the_package_installs_from_the_handout_as_binder_would(made, tmp_path):
    """The handout's postBuild (Binder) in a fresh environment that holds only the
    dependencies: the course installs from the handout's files, its kernel is registered, and
    trusting the notebooks works without solutions/ (about 10 s)."""
    env_dir = tmp_path / "env"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True,
                          check=True).stdout.strip()
    Path(site, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    scripts = sysconfig.get_paths()["scripts"]
    env = {**os.environ, "PATH": f"{env_dir / 'bin'}:{scripts}:{os.environ['PATH']}",
           "JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data"), "HOME": str(tmp_path)}
    env.pop("JUPYTER_PATH", None)
    env.pop("PYTHONPATH", None)
    work = tmp_path / "handout"
    shutil.copytree(made, work)  # postBuild installs in place: keep the module's copy clean
    done = subprocess.run(["bash", str(work / "postBuild")], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    where = subprocess.run(
        [python, "-c", "import json, course_utils, course_utils.checks;"
         "from jupyter_client.kernelspec import KernelSpecManager;"
         "print(json.dumps([course_utils.__file__, "
         "KernelSpecManager().get_kernel_spec('bahdanau-day10').argv[0]]))"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=True).stdout
    assert json.loads(where) == [str(work / "course_utils" / "__init__.py"), str(python)]


def test_the_site_of_a_handout_has_no_solutions(tmp_path):
    """--site, on the smallest course the site tests use: one lecture notebook, one exercise."""
    from course_utils.tools import book

    if book.missing_packages():
        pytest.skip("the book extra is not installed: pip install -e '.[book]'")
    course = tmp_path / "course"
    course.mkdir()
    for name in ("README.md", "course.py", "pyproject.toml", "environment.yml"):
        shutil.copy2(ROOT / name, course / name)
    shutil.copytree(ROOT / "course_utils", course / "course_utils", ignore=handout.LEFT_OUT)
    notebook = ROOT / "notebooks" / "02_bahdanau_attention_in_pytorch.ipynb"
    (course / "notebooks").mkdir()
    shutil.copy2(notebook, course / "notebooks" / notebook.name)
    for folder in ("solutions", "exercises"):
        (course / folder).mkdir()
        shutil.copy2(ROOT / folder / SOLUTIONS[0].name, course / folder / SOLUTIONS[0].name)
    out = handout.make_handout(tmp_path / "out", course=course, site=True)
    site = out / "site"
    assert (site / "index.html").exists()
    assert (site / "exercises" / f"{SOLUTIONS[0].stem}.html").exists()
    assert (site / "notebooks" / f"{notebook.stem}.html").exists()
    assert not (site / "solutions").exists()
    assert "Worked solutions" not in (site / "index.html").read_text(encoding="utf-8")
    needles = handout.solution_text(course)
    assert handout.find_solution_text(site, needles) == []
    assert sorted(os.listdir(tmp_path)) == ["course", "out"]
    # ... where the same site built with the solutions gives them away, pages and sources
    with_them = book.build_book(tmp_path / "with-solutions", course=course, solutions=True)
    leaks = {leak.file.relative_to(with_them) for leak in handout.find_solution_text(
        with_them, needles)}
    assert Path("solutions", f"{SOLUTIONS[0].stem}.html") in leaks

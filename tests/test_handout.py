"""course-handout gives students the course without its worked solutions: the lecture notebooks
as committed, the exercises as generated, the installable package, the Multi30k sample (and
with --multi30k the full data, for a classroom without internet) and a README, and nothing of
solutions/, the tests or the instructors' material; no file holds a line of a worked solution;
every command and file the README names is there; the folder appears whole or not at all.

The handout is made once per module (about 2 s: files are copied, nothing runs)."""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import venv
from pathlib import Path
from unittest import mock

import nbformat
import pytest
from helpers import ROOT

from course_utils import multi30k
from course_utils.tools import handout, solutions
from course_utils.tools.answer_search import find_leaks
from course_utils.tools.exercises import render_exercise
from course_utils.tools.solutions import left_out, ships, worked_code, worked_written

SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))
HIDDEN = [p for p in sorted((ROOT / "course_utils").rglob("*.py"))  # the grader's answers
          if not ships(p.relative_to(ROOT))]
CACHES = ("__pycache__", ".ipynb_checkpoints")
SAMPLE = ROOT / multi30k.CHECKOUT_SAMPLE
FULL = os.environ.get("MULTI30K_DIR")
needs_full_data = pytest.mark.skipif(not FULL, reason="set MULTI30K_DIR to a copy of Multi30k")


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    return handout.make_handout(tmp_path_factory.mktemp("handout") / "day10")


def files_under(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not set(p.parts) & set(CACHES) and p.suffix != ".pyc"}


def written_answers() -> list[tuple[str, str]]:
    """``(exercise, answer)`` for every worked written answer of the solutions."""
    return [(path.name.split("-")[0], answer) for path in SOLUTIONS
            for answer in worked_written(path.name.split("-")[0]).values()]


def test_the_handout_holds_what_students_need_and_nothing_else(made):
    assert {p.name for p in made.iterdir()} == {
        "README.md", "course.py", "pyproject.toml", "environment.yml", ".gitignore", "postBuild",
        "notebooks", "exercises", "course_utils", "docs"}
    everything = [p.relative_to(made) for p in made.rglob("*")]
    for never in ("solutions", "tests", ".git", ".ci", "benchmarks", "runs", "checkpoints",
                  *CACHES):
        assert not [p for p in everything if never in p.parts], f"{never} is in the handout"
    assert not [p for p in everything if p.suffix in (".pt", ".pyc")]
    assert {p for p in everything if p.suffix == ".gz"} == {
        Path("course_utils", "multi30k_sample", p.name) for p in SAMPLE.glob("*.gz")}
    assert files_under(made / "docs") == {"day_plan.md": (ROOT / "docs" / "day_plan.md")
                                          .read_bytes()}
    # the sample, byte for byte, with its sums, in the package; no full data unless asked for
    assert files_under(made / "course_utils" / "multi30k_sample") == files_under(SAMPLE)
    # the lecture notebooks as committed (outputs included), the package whole
    assert files_under(made / "notebooks") == {
        p.name: p.read_bytes() for p in (ROOT / "notebooks").glob("*.ipynb")} | {
        "matplotlibrc": (ROOT / "notebooks" / "matplotlibrc").read_bytes()}
    # the package whole, but for the grader's answers (checks/e10_2/hidden.py, ...)
    hidden = {str(p.relative_to(ROOT / "course_utils")) for p in HIDDEN}
    assert hidden and {name: data for name, data in files_under(made / "course_utils").items()
                       if not name.startswith("multi30k_sample/")} == {  # checked above
        name: data for name, data in files_under(ROOT / "course_utils").items()
        if name not in hidden}
    assert os.access(made / "postBuild", os.X_OK)


def test_a_handouts_checks_keep_the_record_and_leave_the_decision_to_the_grader(made):
    """E10.3's finds in a handout, where the grader's criteria are not: the check reads the
    record of the student's sentence, says that it is judged when graded (with the criterion to
    read it against), and decides nothing, a find and a sentence without the pattern alike."""
    finds = json.loads((ROOT / "tests" / "data" / "e10_3_finds.json").read_text(encoding="utf-8"))
    script = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(made)!r})
        from course_utils.checks import e10_3
        from course_utils.checks.records import submitted
        assert e10_3.HIDDEN is None and e10_3.__file__.startswith({str(made)!r})
        finds = json.loads({json.dumps(finds)!r})
        for record in (finds["finds"]["reordering"], finds["without"]["reordering"]["record"]):
            with submitted({{"reordering": record}}):
                result = e10_3.check_reordering.verdict(lambda: record["sentence"])
            print(result.pending, result.points, str(result)[:11])
            print(result.message)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=made, check=True).stdout.splitlines()
    assert out[0] == out[2] == "True 0.0 [RECORDED] ", out
    assert all("decided when your notebook is graded" in line and "The criterion:" in line
               for line in out[1::2]), out


def test_the_exercises_are_exactly_the_generated_ones_without_outputs(made):
    assert files_under(made / "exercises") == {
        p.name: p.read_bytes() for p in (ROOT / "exercises").glob("*.ipynb")} | {
        "matplotlibrc": (ROOT / "exercises" / "matplotlibrc").read_bytes()}  # the course style
    for solution in SOLUTIONS:
        exercise = made / "exercises" / solution.name
        assert exercise.read_text(encoding="utf-8") == render_exercise(solution)
        cells = nbformat.read(exercise, as_version=4).cells
        assert not [c for c in cells if c.cell_type == "code" and c.outputs]


def test_no_file_holds_a_worked_solution_or_a_hidden_answer(made):
    assert HIDDEN and written_answers()
    assert find_leaks(ROOT, readable=made) == []


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: p.stem)
def test_the_search_finds_a_solution_copied_in(made, tmp_path, solution):
    copy = tmp_path / "copy"
    shutil.copytree(made, copy)
    shutil.copy2(solution, copy / "exercises" / solution.name)  # the worked one, not the stub
    leaks = find_leaks(ROOT, readable=copy)
    assert leaks and {leak.where.split(",")[0] for leak in leaks} == {
        f"exercises/{solution.name}"}
    assert {leak.exercise for leak in leaks} == {solution.name.split("-")[0]}


def test_the_search_finds_a_written_answer_or_worked_code_pasted_anywhere(made, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(made, copy)
    exercise, answer = written_answers()[0]
    with open(copy / "README.md", "a", encoding="utf-8") as readme:
        readme.write("\n" + answer + "\n")
    code = next(region for regions in worked_code(exercise).values() for region in regions
                if len(region.splitlines()) > 2)
    (copy / "course_utils" / "hint.py").write_text(
        "def hint(*args):\n" + textwrap.indent(code, "    ") + "\n")
    notebook = nbformat.read(copy / "notebooks" / "01_bottleneck_and_attention_by_hand.ipynb", 4)
    notebook.cells.append(nbformat.v4.new_markdown_cell(f'A "quoted" answer: {answer}'))
    nbformat.write(notebook, copy / "notebooks" / "01_bottleneck_and_attention_by_hand.ipynb")
    leaks = find_leaks(ROOT, readable=copy)
    assert {leak.where.split(",")[0] for leak in leaks} == {
        "README.md", "course_utils/hint.py", "notebooks/01_bottleneck_and_attention_by_hand.ipynb"}


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
    assert "## Day plan" in readme
    assert "| clock | course page block |" in readme  # the table itself
    # the notebooks that point there find it in the handout's README (not in the course's)
    referring = [p.name for p in (made / "notebooks").glob("*.ipynb")
                 if "README's day plan" in p.read_text(encoding="utf-8")]
    assert not referring or "## Day plan" in readme


def cited_files(readme: str) -> list[tuple[str, str]]:
    """``(path, the text before it)`` for every link target and every path in inline code."""
    cited = [(m.group(1), readme[max(0, m.start() - 40):m.start()])
             for m in re.finditer(r"\]\(([^)#\s]+)[^)]*\)", readme)
             if not m.group(1).startswith(("http:", "https:", "mailto:"))]
    return cited + [(m.group(1), readme[max(0, m.start() - 40):m.start()])
                    for m in handout.CITED_PATH.finditer(readme)]


def test_every_file_the_readme_cites_ships_or_is_said_to_be_elsewhere(made):
    readme = (made / "README.md").read_text(encoding="utf-8")
    cited = cited_files(readme)
    assert "docs/day_plan.md" in {path for path, _ in cited}  # the check sees the links
    for path, before in cited:
        assert (made / path).exists() or before.endswith(handout.ELSEWHERE), path
    course = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "`benchmarks/day_plan.py`" in course  # the course README cites it; the handout says
    assert f"{handout.ELSEWHERE}`benchmarks/day_plan.py`" in readme  # where it is


def test_a_cited_file_the_handout_lacks_is_caught(made, tmp_path):
    """The check above, on a day plan that cites files the handout does not carry."""
    section = handout.day_plan_section(
        "## Day plan\n\nSee [`docs/results.md`](docs/results.md), `benchmarks/x.py` and "
        "[notebook 1](notebooks/01_bottleneck_and_attention_by_hand.ipynb).\n", made)
    assert "[`docs/results.md`]" not in section and "`docs/results.md`" in section
    assert f"{handout.ELSEWHERE}`benchmarks/x.py`" in section
    assert "](notebooks/01_bottleneck_and_attention_by_hand.ipynb)" in section
    for path, before in cited_files(section):
        assert (made / path).exists() or before.endswith(handout.ELSEWHERE), path


def test_every_command_the_readme_names_exists_and_answers_help_offline(made):
    readme = (made / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"python3 course\.py (\w+)", readme))
    course = load_course_script(made)
    assert named == {"lab", "setup", "test"}
    assert named <= set(course.COMMANDS)
    env = {**os.environ, "COURSE_VENV": str(made / "no-venv-here")}
    for command in sorted(named):
        done = subprocess.run([sys.executable, str(made / "course.py"), command, "--help"],
                              capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 0 and done.stdout.startswith(
            f"usage: python3 course.py {command}"), done.stdout + done.stderr
    assert not (made / "no-venv-here").exists()  # nothing was installed


def load_course_script(folder: Path):
    spec = importlib.util.spec_from_file_location("handout_course", folder / "course.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_course_py_opens_the_handout_and_says_the_tests_are_not_part_of_it(made, capsys):
    course = load_course_script(made)
    assert course.ROOT == made
    python = Path(sys.executable)
    with (mock.patch.object(course, "ensure_environment", return_value=python) as env,
          mock.patch.object(course, "run_lab", return_value=0) as run_lab,
          mock.patch.object(course, "run") as run,
          mock.patch.object(course.subprocess, "run") as trust):
        assert course.main(["lab"]) == 0
        assert env.call_args.kwargs == {"use_venv": True, "extras": (), "optional": ()}
        assert f"--ServerApp.root_dir={made}" in course.lab_command(*run_lab.call_args.args)
        trusted = trust.call_args.args[0]
        assert trusted[0] == str(python)
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
    shutil.copytree(ROOT / "course_utils", course / "course_utils", ignore=left_out(ROOT))
    shutil.copytree(SAMPLE, course / multi30k.CHECKOUT_SAMPLE)  # the handout copies it
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
    assert find_leaks(course, readable=out) == []
    assert sorted(os.listdir(tmp_path)) == ["course", "out"]
    # ... where the same site built with the solutions, handed out, gives them away
    with_them = book.build_book(tmp_path / "with-solutions" / "site", course=course,
                                solutions=True)
    leaks = {leak.where.split(",")[0] for leak in find_leaks(course, readable=with_them.parent)}
    assert f"site/solutions/{SOLUTIONS[0].stem}.html" in leaks


#: Run in the handout's folder with its own course_utils, with every network connection refused
#: and no MULTI30K_DIR: what a student's kernel sees in a classroom without internet.
OFFLINE = textwrap.dedent("""\
    import json, socket, sys

    def refuse(*args, **kwargs):
        raise OSError("network unreachable (test)")

    socket.socket.connect = refuse
    socket.create_connection = refuse
    import course_utils
    from course_utils import multi30k
    assert course_utils.__file__.startswith(sys.argv[1]), course_utils.__file__
    try:
        sizes = {split: len(multi30k.load_sample_split(split) if sys.argv[2] == "sample"
                            else multi30k.load_split(split)) for split in multi30k.SPLITS}
    except multi30k.Multi30kError as error:
        print(json.dumps({"error": str(error)}))
    else:
        print(json.dumps(sizes))
""")


def load_offline(folder: Path, which: str, tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("MULTI30K_DIR", "PYTHONPATH")}
    env |= {"MULTI30K_CACHE": str(tmp_path / "empty-cache"), "PYTHONPATH": str(folder),
            "https_proxy": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9"}
    done = subprocess.run([sys.executable, "-c", OFFLINE, str(folder), which], cwd=folder,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


SAMPLE_SIZES = {"train": 1500, **{split: 100 for split in ("val", "test_2016_flickr",
                "test_2017_flickr", "test_2017_mscoco", "test_2018_flickr")}}
FULL_SIZES = {"train": 29_000, "val": 1_014, "test_2016_flickr": 1_000,
              "test_2017_flickr": 1_000, "test_2017_mscoco": 461, "test_2018_flickr": 1_071}


def test_the_handout_carries_the_sample_and_reads_it_offline(made, tmp_path):
    assert load_offline(made, "sample", tmp_path) == SAMPLE_SIZES
    # without the bundled data, the full data needs the network, and says so
    found = load_offline(made, "full", tmp_path)
    assert "could not get the Multi30k files" in found["error"], found


@pytest.fixture(scope="module")
def bundled(tmp_path_factory) -> Path:
    if not FULL:
        pytest.skip("set MULTI30K_DIR to a copy of Multi30k")
    return handout.make_handout(tmp_path_factory.mktemp("bundled") / "day10", multi30k=True)


@needs_full_data
def test_a_handout_with_the_bundled_data_reads_it_offline(bundled, tmp_path):
    """``--multi30k``: the full files, verified, which the handout's notebooks read with the
    network unreachable and no MULTI30K_DIR."""
    from course_utils import multi30k

    copy = bundled / "data" / "multi30k"
    assert multi30k.read_checksums(copy / "SHA256SUMS") == multi30k.SHA256
    assert {p.name for p in copy.glob("*.gz")} == set(multi30k.SHA256)
    assert load_offline(bundled, "full", tmp_path) == FULL_SIZES
    assert load_offline(bundled, "sample", tmp_path) == SAMPLE_SIZES
    readme = (bundled / "README.md").read_text(encoding="utf-8")
    assert "`data/multi30k/`" in readme and "runs offline" in readme
    assert find_leaks(ROOT, readable=bundled) == []


def test_bundling_damaged_or_missing_data_is_refused_and_leaves_nothing(tmp_path, monkeypatch):
    source = tmp_path / "multi30k"
    shutil.copytree(SAMPLE, source)
    (source / "val.de.gz").write_bytes(b"truncated")
    monkeypatch.setenv("MULTI30K_DIR", str(source))
    out = tmp_path / "out"
    with pytest.raises(handout.HandoutError, match=r"could not be bundled: .*does not match"):
        handout.make_handout(out, multi30k=True)
    monkeypatch.setenv("MULTI30K_DIR", str(tmp_path / "nowhere"))
    assert handout.main([str(out), "--multi30k"]) == 1
    assert sorted(os.listdir(tmp_path)) == ["multi30k"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_handout_published_as_a_repository_keeps_its_data(made, tmp_path):
    copy = tmp_path / "repo"
    shutil.copytree(made, copy)
    subprocess.run(["git", "init", "-q", str(copy)], check=True)
    data = sorted(str(p.relative_to(copy)) for p in (copy / solutions.SAMPLE).rglob("*")
                  if p.is_file())
    assert len(data) == 14  # the sample, its sums and README
    ignored = subprocess.run(["git", "-C", str(copy), "check-ignore", *data],
                             capture_output=True, text=True)
    assert ignored.stdout == "", f"git ignores {ignored.stdout}"
    assert "*.gz" in (copy / ".gitignore").read_text()  # runs' files stay ignored

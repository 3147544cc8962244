"""Every notebook starts with the same setup cell; it says in one line where the course comes
from, and on Colab what a student needs (device, runs on Drive); course-handout --colab pins it
and writes the "Open in Colab" links, which agree with the README's Colab section."""

import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import nbformat
import pytest
from helpers import ROOT

from course_utils import setup
from course_utils.tools import colab, handout
from course_utils.tools.answer_search import find_leaks

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))
EXERCISES = sorted((ROOT / "exercises").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS + SOLUTIONS + EXERCISES,
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_notebook_starts_with_the_same_setup_cell(path):
    """Its title, then the setup cell, word for word, and no other setup cell."""
    cells = nbformat.read(path, as_version=4).cells
    assert cells[0].cell_type == "markdown" and cells[0].source.startswith("# ")
    assert cells[1].cell_type == "code" and cells[1].source == colab.SETUP_CELL
    assert sum(colab.is_setup_cell(c) for c in cells) == 1
    assert colab.course_line(cells[1].source) == colab.LOCAL  # nothing installed from elsewhere


def run_setup_cell(source: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", source], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_locally_the_setup_cell_says_one_line_and_installs_nothing(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BINDER", "KAGGLE"))}
    done = run_setup_cell(colab.SETUP_CELL, tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Course ready: course_utils from this copy of the course.\n"


def test_without_the_course_the_setup_cell_says_what_to_do_in_a_paragraph(tmp_path):
    """No course and nothing to install from (the repository's notebooks opened in another
    kernel), or an install that fails: one paragraph, no pip traceback."""
    blocker = ("import importlib.util, sys\n"
               "real = importlib.util.find_spec\n"
               "importlib.util.find_spec = lambda name, *a: None if name == 'course_utils' "
               "else real(name, *a)\n")
    for course, expected in [(colab.LOCAL, "open the notebooks with python3 course.py lab"),
                             (f"git+file://{tmp_path}/nowhere.git@abc",
                              "Installing the course failed")]:
        source = blocker + colab.setup_cell_source(course)
        done = run_setup_cell(source, tmp_path, dict(os.environ))
        assert done.returncode == 1 and expected in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
        message = done.stderr.strip().splitlines()
        assert len(message) == 1, message  # one paragraph


@pytest.fixture
def on_colab(tmp_path, monkeypatch):
    """A ``google.colab`` stub whose ``drive.mount`` makes the mount point's ``MyDrive``."""
    mounted = []
    google = types.ModuleType("google")
    google.__path__ = []
    module = types.ModuleType("google.colab")
    drive = types.ModuleType("google.colab.drive")

    def mount(mountpoint, **kwargs):
        mounted.append(mountpoint)
        Path(mountpoint, "MyDrive").mkdir(parents=True, exist_ok=True)

    drive.mount = mount
    module.drive = drive
    for name, value in [("google", google), ("google.colab", module),
                        ("google.colab.drive", drive)]:
        monkeypatch.setitem(sys.modules, name, value)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COURSE_RUNS_DIR", raising=False)
    monkeypatch.delenv("COURSE_QUICK", raising=False)
    monkeypatch.setenv("COURSE_DRIVE_MOUNTPOINT", str(tmp_path / "drive"))
    return mounted


def test_on_colab_ready_says_the_device_and_offers_drive(on_colab, capsys, monkeypatch):
    import matplotlib as mpl

    from course_utils.colours import PALETTE

    monkeypatch.setattr(setup, "installed_from",
                        lambda: "commit 1a2b3c4 of https://github.com/alice/day10")
    assert setup.runtime() == "colab"
    with mpl.rc_context():
        setup.ready("git+https://github.com/alice/day10@9f9f9f9f")
        assert [c["color"] for c in mpl.rcParams["axes.prop_cycle"]] == list(PALETTE)
        assert mpl.rcParams["image.cmap"] == "viridis"
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Course ready: course_utils from commit 1a2b3c4 of https://github.com/alice/day10."
    assert "comes with commit 9f9f9f9" in lines[1]  # another commit than the runtime's
    assert lines[2].startswith("Device: CPU.") and "T4 GPU" in lines[2]
    assert "keep_runs_on_drive()" in lines[3] and str(Path.cwd() / "runs") in lines[3]
    assert "keep_runs_on_drive()" in setup.runs_hint()


def test_keep_runs_on_drive_mounts_drive_and_points_runs_there(on_colab, tmp_path, monkeypatch):
    from course_utils.checkpoints import E10_2_RUN

    where = setup.keep_runs_on_drive()
    assert on_colab == [str(tmp_path / "drive")]
    assert where == tmp_path / "drive" / "MyDrive" / setup.DRIVE_FOLDER and where.is_dir()
    assert os.environ["COURSE_RUNS_DIR"] == str(where)  # monkeypatch's delenv restores it
    assert E10_2_RUN.checkpoint() == where / "e10.2" / "attention.pt"
    assert setup.runs_hint() == ""  # nothing more to say once runs are on Drive


def test_off_colab_keep_runs_on_drive_changes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COURSE_RUNS_DIR", raising=False)
    monkeypatch.delenv("COURSE_QUICK", raising=False)
    monkeypatch.setattr(setup, "on_colab", lambda: False)
    assert setup.keep_runs_on_drive() == tmp_path / "runs"
    assert "Not on Colab" in capsys.readouterr().out and "COURSE_RUNS_DIR" not in os.environ
    assert setup.runs_hint() == ""


def test_the_runtime_is_told_apart(monkeypatch):
    monkeypatch.setattr(setup, "on_colab", lambda: False)
    for name in ("KAGGLE_KERNEL_RUN_TYPE", "BINDER_LAUNCH_HOST", "BINDER_REPO_URL"):
        monkeypatch.delenv(name, raising=False)
    assert setup.runtime() == "local"
    monkeypatch.setenv("BINDER_LAUNCH_HOST", "https://mybinder.org/")
    assert setup.runtime() == "binder"
    monkeypatch.setenv("KAGGLE_KERNEL_RUN_TYPE", "Interactive")
    assert setup.runtime() == "kaggle"


# ------------------------------------------------------------------ course-handout --colab


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    return handout.make_handout(tmp_path_factory.mktemp("colab") / "day10")


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def published(made: Path, tmp_path: Path) -> tuple[Path, str]:
    """The handout as a git repository with a GitHub remote, pushed to a local bare
    repository standing in for GitHub; returns ``(folder, commit)``."""
    folder = tmp_path / "handout"
    shutil.copytree(made, folder)
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(folder, "init", "-q", "-b", "main")
    git(folder, "add", "-A")
    git(folder, "-c", "user.name=T", "-c", "user.email=t@example.org", "commit", "-qm", "handout")
    git(folder, "remote", "add", "origin", "git@github.com:alice/day10-handout.git")
    git(folder, "config", "url.file://" + str(bare) + ".pushInsteadOf",
        "git@github.com:alice/day10-handout.git")
    git(folder, "push", "-q", "origin", "main")
    return folder, git(folder, "rev-parse", "HEAD")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_colab_links_pin_every_setup_cell_to_the_published_commit(made, tmp_path, capsys):
    folder, commit = published(made, tmp_path)
    assert handout.main([str(folder), "--colab"]) == 0  # OWNER/REPO from the remote
    assert "warning" not in capsys.readouterr().err
    readme = (folder / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Open it in Google Colab", 1)[1].split("\n## ", 1)[0]
    for path in sorted((folder / "notebooks").glob("*.ipynb")) + sorted(
            (folder / "exercises").glob("*.ipynb")):
        relative = path.relative_to(folder).as_posix()
        url = f"https://colab.research.google.com/github/alice/day10-handout/blob/main/{relative}"
        cells = nbformat.read(path, as_version=4).cells
        assert f"]({url})" in section, relative  # the README links every notebook ...
        assert cells[0].source.startswith(colab.BADGE) and f"({url})" in cells[0].source
        assert colab.course_line(cells[1].source) == (
            f"git+https://github.com/alice/day10-handout@{commit}")  # ... pinned alike
        assert colab.is_setup_cell(cells[1])
    assert "File → Download → Download .ipynb" in section
    assert "keep_runs_on_drive()" in section
    # again, e.g. after the next push: replaced, not added twice
    first = (folder / "README.md").read_text(encoding="utf-8")
    assert handout.main([str(folder), "--colab", "alice/day10-handout@main"]) == 0
    assert (folder / "README.md").read_text(encoding="utf-8") == first
    assert nbformat.read(folder / "notebooks" / NOTEBOOKS[0].name, 4).cells[0].source.count(
        colab.BADGE) == 1


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_an_unpushed_commit_or_an_unknown_ref_is_said(made, tmp_path, capsys):
    folder, _ = published(made, tmp_path)
    (folder / "extra.txt").write_text("x")
    git(folder, "add", "-A")
    git(folder, "-c", "user.name=T", "-c", "user.email=t@example.org", "commit", "-qm", "more")
    assert handout.main([str(folder), "--colab"]) == 0
    assert "not on a remote branch yet: push it" in capsys.readouterr().err
    assert handout.main([str(folder), "--colab", "alice/day10-handout@v9"]) == 0
    assert "as given (a commit pins best" in capsys.readouterr().err
    assert colab.course_line(nbformat.read(folder / "notebooks" / NOTEBOOKS[0].name, 4).cells[
        1].source) == "git+https://github.com/alice/day10-handout@v9"


def test_a_new_handout_gets_its_links_and_bad_targets_are_refused(tmp_path, capsys):
    out = tmp_path / "new"
    assert handout.main([str(out), "--colab", "not a repo"]) == 1
    assert "OWNER/REPO or OWNER/REPO@REF" in capsys.readouterr().err and not out.exists()
    assert handout.main([str(out), "--colab", "bob/course@1a2b3c4"]) == 0
    cells = nbformat.read(out / "exercises" / EXERCISES[0].name, 4).cells
    assert colab.course_line(cells[1].source) == "git+https://github.com/bob/course@1a2b3c4"
    assert "/blob/1a2b3c4/exercises/" in cells[0].source
    assert find_leaks(ROOT, readable=out) == []
    plain = tmp_path / "plain"
    plain.mkdir()
    assert handout.main([str(plain / "h")]) == 0
    assert handout.main([str(plain / "h"), "--colab"]) == 1  # not a git repo: no remote
    assert "has none: name them" in capsys.readouterr().err


def test_the_readme_colab_section_agrees_with_the_handout(made):
    """The course README's section names the command, the links, the setup cell, Drive and
    the hand-in that the handout's own section and cells carry."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Run it in Google Colab", 1)[1].split("\n## ", 1)[0]
    assert "course-handout" in section and "--colab" in section
    for words in ("keep_runs_on_drive()", "File → Download → Download .ipynb", "T4",
                  "COURSE"):
        assert words in section, words
    quickstart = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    assert "(#run-it-in-google-colab)" in quickstart  # students find it from the start

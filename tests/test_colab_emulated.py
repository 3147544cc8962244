"""A student's Google Colab, emulated: the handout published as a git repository, every notebook
opened in a runtime that has only what Colab preinstalls, its setup cell installing the course.

- **The runtime**: a fresh virtual environment holding only what Colab preinstalls and the
  course needs of it (PyTorch, NumPy, pandas, matplotlib, seaborn, ipykernel, ipywidgets): no
  JupyterLab, no course. PyTorch 2.13.0 comes from this machine's local wheel; nothing else is
  fetched beyond the package index.
- **Colab**: a ``google.colab`` stub on the kernel's path (its ``drive.mount`` makes the mount
  point's ``MyDrive``), each notebook in a working folder of its own outside the handout (a new
  runtime's ``/content``), at smoke scale (``COURSE_QUICK=1``).
- **The handout**: ``course-handout``'s folder, committed and pushed to a local bare repository
  standing in for GitHub; ``add_colab`` pins every setup cell to that commit, installed from
  ``git+file://`` (on Colab, ``git+https://github.com/...``).

The notebooks run top to bottom: 1, 2, 3, E10.1, then E10.2 and E10.3 in two runtimes, each
after ``keep_runs_on_drive()``, so that E10.3 finds E10.2's model on the emulated Drive. Then:
pip reinstalled neither PyTorch nor NumPy, and installed no JupyterLab. About 5 minutes on
the course's 2-core machine (about 80 s of it building the runtime); everything is in the test's
temporary folders.
"""

import json
import os
import shutil
import subprocess
import textwrap
import venv
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from course_utils.tools import colab, handout

pytestmark = [
    pytest.mark.skipif(os.name != "posix", reason="the emulated runtime is a POSIX venv"),
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
]

#: What Colab preinstalls and the course relies on (Colab has far more: nothing else is needed).
COLAB_PACKAGES = ["torch==2.13.0", "numpy", "pandas", "matplotlib", "seaborn", "ipykernel",
                  "ipywidgets"]
#: The course's pinned PyTorch lies on this machine's disk; an unpinned one is a CUDA download.
KERNEL = "colab-emulated"
NOTEBOOKS = ["notebooks/01_bottleneck_and_attention_by_hand.ipynb",
             "notebooks/02_bahdanau_attention_in_pytorch.ipynb",
             "notebooks/03_reversal_task.ipynb",
             "exercises/E10.1-attention-by-hand.ipynb"]
DRIVE_CELL = "from course_utils.setup import keep_runs_on_drive\n\nkeep_runs_on_drive()"
STUB = {
    "google/__init__.py": "",
    "google/colab/__init__.py": '"""A stand-in for Colab\'s own module (the tests)."""\n',
    "google/colab/drive.py": textwrap.dedent('''\
        """A stand-in for Colab's Drive: mounting makes the mount point's MyDrive."""
        import os


        def mount(mountpoint, force_remount=False, timeout_ms=120000, readonly=False):
            os.makedirs(os.path.join(mountpoint, "MyDrive"), exist_ok=True)
            print(f"Mounted at {mountpoint}")
        '''),
}


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def installed(python: Path, env: dict, cwd: Path) -> dict:
    """Each watched package's version and the time its install record was written, and
    whether the course and JupyterLab are importable, as the runtime's kernel sees them."""
    script = textwrap.dedent("""\
        import importlib.metadata as m, importlib.util as u, json, os
        found = {}
        for name in ("torch", "numpy"):
            d = m.distribution(name)
            found[name] = [d.version, os.stat(d._path / "RECORD").st_mtime_ns]
        found["jupyterlab"] = u.find_spec("jupyterlab") is not None
        found["course_utils"] = u.find_spec("course_utils") is not None
        print(json.dumps(found))
        """)
    return json.loads(subprocess.run([python, "-c", script], capture_output=True, text=True,
                                     check=True, env=env, cwd=cwd).stdout)


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    """``(base, python, commit, env)``: the published handout and the emulated runtime, all
    removed afterwards (the runtime alone is about 1 GB: pytest would keep it for three runs)."""
    base = tmp_path_factory.mktemp("colab")
    try:
        yield prepare(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def prepare(base: Path) -> tuple[Path, Path, str, dict]:
    """Publish the handout and build the runtime in ``base``; see :func:`runtime`."""
    made = handout.make_handout(base / "handout")
    bare = base / "github" / "day10.git"
    git(base, "init", "-q", "--bare", "-b", "main", str(bare))
    git(made, "init", "-q", "-b", "main")
    git(made, "add", "-A")
    git(made, "-c", "user.name=T", "-c", "user.email=t@example.org", "commit", "-qm", "handout")
    git(made, "remote", "add", "origin", f"file://{bare}")
    git(made, "push", "-q", "origin", "main")
    commit = git(made, "rev-parse", "HEAD")
    warnings = colab.add_colab(made, colab.ColabTarget("alice/day10"),
                               install_url=f"git+file://{bare}")
    assert warnings == []
    python = base / "runtime" / "bin" / "python"
    venv.EnvBuilder(with_pip=True).create(python.parents[1])
    subprocess.run([python, "-m", "pip", "install", "--quiet", *COLAB_PACKAGES], check=True,
                   timeout=900)
    for name, text in STUB.items():
        (base / "stub" / name).parent.mkdir(parents=True, exist_ok=True)
        (base / "stub" / name).write_text(text)
    spec = base / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Colab (emulated)", "language": "python"}))
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("COURSE_", "MULTI30K", "PYTHON", "VIRTUAL_ENV", "JUPYTER_PATH"))}
    env |= {"PYTHONPATH": str(base / "stub"), "HOME": str(base / "home"), "COURSE_QUICK": "1",
            "COURSE_DRIVE_MOUNTPOINT": str(base / "drive"), "MPLBACKEND": "agg",
            "PATH": f"{python.parent}:{os.environ['PATH']}"}
    return base, python, commit, env


def run_in_colab(base: Path, notebook: str, env: dict, *, drive: bool = False):
    """Run the handout's ``notebook`` top to bottom in a new runtime folder (``/content``);
    with ``drive``, after the call the setup cell offers (``keep_runs_on_drive()``)."""
    nb = nbformat.read(base / "handout" / notebook, as_version=4)
    if drive:
        nb.cells.insert(2, nbformat.v4.new_code_cell(DRIVE_CELL))
    content = base / "content" / Path(notebook).stem
    content.mkdir(parents=True)
    saved = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = str(base / "jupyter")
    try:
        NotebookClient(nb, timeout=600, kernel_name=KERNEL,
                       resources={"metadata": {"path": str(content)}}).execute(env=env)
    finally:
        if saved is None:
            os.environ.pop("JUPYTER_PATH")
        else:
            os.environ["JUPYTER_PATH"] = saved
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code), f"{notebook}: a cell did not run"
    return nb


def text_of(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []))


def test_the_notebooks_run_in_an_emulated_colab_from_the_published_handout(runtime):
    base, python, commit, env = runtime
    before = installed(python, env, base)
    assert not before["course_utils"] and not before["jupyterlab"]
    first = run_in_colab(base, NOTEBOOKS[0], env)
    setup = text_of(first.cells[1])
    assert f"Installing the course from git+file://{base}/github/day10.git@{commit}" in setup
    assert f"Course ready: course_utils from commit {commit[:7]}" in setup
    assert "Device: CPU." in setup and "keep_runs_on_drive()" in setup
    for notebook in NOTEBOOKS[1:]:
        again = text_of(run_in_colab(base, notebook, env).cells[1])
        assert "Installing" not in again and "Course ready" in again  # installed once
    after = installed(python, env, base)
    assert after["course_utils"] and not after["jupyterlab"]
    assert after["torch"] == before["torch"] and after["numpy"] == before["numpy"], (
        "pip reinstalled or upgraded PyTorch or NumPy")

    # E10.2 and E10.3, each in a runtime of its own, their runs kept on the emulated Drive
    run_in_colab(base, "exercises/E10.2-vanilla-vs-attention.ipynb", env, drive=True)
    drive = base / "drive" / "MyDrive" / "day10-runs"
    assert (drive / "quick" / "e10.2" / "attention.pt").is_file()
    # nothing in the runtime's own folder, which the next runtime would not have
    assert not list((base / "content" / "E10.2-vanilla-vs-attention").rglob("*.pt"))
    e10_3 = run_in_colab(base, "exercises/E10.3-reading-attention-heatmaps.ipynb", env,
                         drive=True)
    found = next(text_of(c) for c in e10_3.cells if "Model analysed" in text_of(c))
    assert found.startswith("Model analysed: your model from E10.2"), found
    assert "day10-runs/quick/e10.2/attention.pt" in found

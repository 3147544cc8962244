"""The setup cell's second half: where this notebook runs, and getting the course ready there.

Every notebook and exercise of the course starts with the same setup cell. Its first half, which
cannot import the course, installs it where it is missing (Google Colab, Kaggle) from the
cell's ``COURSE`` line; its second half calls :func:`ready`, which says in one line that the
course is installed and from where. On a hosted runtime (Colab, Kaggle) it also

- applies the course's colour-blind-safe plot style, which a local notebook reads from the
  ``matplotlibrc`` beside it (Colab's working folder, ``/content``, has none);
- says which device the notebook will use (a GPU's name, memory and precision), or how to get
  a GPU when there is none;
- says where runs are saved, and on Colab offers :func:`keep_runs_on_drive`: a new Colab
  runtime starts with empty folders, so notebook 5 would not find notebook 4's models, nor
  E10.3 the model E10.2 trained, unless both keep their runs on Google Drive.

Nothing is downloaded here: Multi30k is fetched on first use by the checksummed loader
(:mod:`course_utils.multi30k`) into a cache that the notebook's re-runs reuse, and smoke-scale
runs (``COURSE_QUICK=1``) read the sample inside the package.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Literal

from course_utils.config import runs_dir

__all__ = ["DRIVE_FOLDER", "Runtime", "installed_from", "keep_runs_on_drive", "on_colab",
           "ready", "runs_hint", "runtime"]

Runtime = Literal["colab", "kaggle", "binder", "local"]
#: The folder of Google Drive (under "My Drive") where :func:`keep_runs_on_drive` keeps runs.
DRIVE_FOLDER = "day10-runs"
DISTRIBUTION = "course-utils"


def on_colab() -> bool:
    """Whether this kernel runs in Google Colab (its ``google.colab`` module is importable)."""
    if "google.colab" in sys.modules:
        return True
    try:
        return importlib.util.find_spec("google.colab") is not None
    except (ImportError, ValueError):  # no ``google`` package at all
        return False


def runtime() -> Runtime:
    """Where this kernel runs: ``"colab"``, ``"kaggle"`` (``KAGGLE_KERNEL_RUN_TYPE``),
    ``"binder"`` (``BINDER_LAUNCH_HOST``) or ``"local"`` (a machine of one's own,
    ``python3 course.py lab``)."""
    if on_colab():
        return "colab"
    if os.environ.get("KAGGLE_KERNEL_RUN_TYPE"):
        return "kaggle"
    if os.environ.get("BINDER_LAUNCH_HOST") or os.environ.get("BINDER_REPO_URL"):
        return "binder"
    return "local"


def installed_from() -> str:
    """Where the installed course comes from, in words: ``"this copy of the course"`` when the
    package is the course folder's own (an editable install: ``course.py``, Binder),
    ``"commit 1a2b3c4 of https://github.com/owner/repo"`` when pip installed it from git (the
    setup cell's ``COURSE``), else the installed version."""
    package = Path(__file__).resolve().parent
    if not {"site-packages", "dist-packages"} & set(package.parts):
        return "this copy of the course"
    try:
        distribution = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "a copy without its install record"
    origin = json.loads(distribution.read_text("direct_url.json") or "{}")
    commit = origin.get("vcs_info", {}).get("commit_id")
    if commit:
        return f"commit {commit[:7]} of {origin.get('url', 'its repository')}"
    return f"version {distribution.version}"


def _pinned_commit(course: str) -> str | None:
    """The commit a setup cell's ``COURSE`` pins (``git+URL@COMMIT``), if it names one."""
    if not course.startswith("git+") or "@" not in course.rsplit("/", 1)[-1]:
        return None
    return course.rsplit("@", 1)[1].split("#")[0] or None


def _use_course_style() -> None:
    """The course's plot style (Okabe-Ito colours, viridis), where no ``matplotlibrc`` beside
    the notebook sets it (the folder a hosted runtime starts in has none)."""
    import matplotlib as mpl
    from cycler import cycler

    from course_utils.colours import PALETTE

    mpl.rcParams["axes.prop_cycle"] = cycler(color=list(PALETTE))
    mpl.rcParams["image.cmap"] = "viridis"


def _device_line() -> str:
    import torch

    from course_utils.precision import describe_device

    if torch.cuda.is_available():
        return f"Device: {describe_device(torch.device('cuda'))}."
    return ("Device: CPU. Notebooks 3, 4 and 6 and exercise E10.2 train much faster on a GPU: "
            "Runtime → Change runtime type → T4 GPU (this restarts the runtime; run the "
            "notebook again from the top).")


def runs_hint() -> str:
    """On Colab, a sentence on keeping runs between notebooks (for the messages of a notebook
    whose inputs are missing); elsewhere an empty string."""
    if runtime() != "colab" or os.environ.get("COURSE_RUNS_DIR"):
        return ""
    return (" On Colab, every notebook starts in a new runtime whose files are gone: call "
            "course_utils.setup.keep_runs_on_drive() right after the setup cell of both "
            "notebooks, and the runs are kept on your Google Drive.")


def ready(course: str = "") -> None:
    """Say in one line that the course is installed, and from where; on Colab or Kaggle also
    apply the course's plot style and say which device and runs folder the notebook uses.
    ``course``: the setup cell's ``COURSE`` (where a hosted runtime installs the course from);
    when it pins another commit than the installed one, says how to get the notebook's."""
    where, installed = runtime(), installed_from()
    print(f"Course ready: course_utils from {installed}.")
    pinned = _pinned_commit(course)
    if pinned and installed.startswith("commit ") and not pinned.startswith(installed[7:14]):
        print(f"Note: this runtime has the course from {installed}, but this notebook comes "
              f"with commit {pinned[:7]}. For the notebook's own version: Runtime → Disconnect "
              "and delete runtime, then run this cell again.")
    if where not in ("colab", "kaggle"):
        return
    _use_course_style()
    print(_device_line())
    if where == "colab" and not os.environ.get("COURSE_RUNS_DIR"):
        print(f"Runs are saved in {runs_dir()}, which a new runtime forgets. To keep them for "
              "later notebooks (notebook 4 → 5, E10.2 → E10.3), run "
              "course_utils.setup.keep_runs_on_drive() next.")
    else:
        print(f"Runs are saved in {runs_dir()}.")


def keep_runs_on_drive(folder: str = DRIVE_FOLDER) -> Path:
    """On Colab: mount Google Drive (Colab asks for your permission) and keep this notebook's
    runs in ``My Drive/<folder>`` (``COURSE_RUNS_DIR``), where every notebook that calls this
    saves and finds them, in any runtime. Returns the folder. Elsewhere it changes nothing
    and says so: runs stay in ``runs/`` beside the notebook.

    ``COURSE_DRIVE_MOUNTPOINT`` names where Drive is mounted (Colab's usual
    ``/content/drive`` by default)."""
    if not on_colab():
        print(f"Not on Colab: runs stay in {runs_dir()}, which keeps them between notebooks.")
        return runs_dir()
    from google.colab import drive  # type: ignore[import-not-found]  # Colab's own module

    mountpoint = Path(os.environ.get("COURSE_DRIVE_MOUNTPOINT", "/content/drive"))
    drive.mount(str(mountpoint))
    base = mountpoint / "MyDrive" / folder
    base.mkdir(parents=True, exist_ok=True)
    os.environ["COURSE_RUNS_DIR"] = str(base)
    print(f"Runs are kept on Google Drive, in My Drive/{folder} ({runs_dir()}): notebooks that "
          "call keep_runs_on_drive() save and find them there, in any runtime.")
    return base

"""Google Colab: the setup cell every notebook starts with, and a handout's "Open in Colab" links.

Every lecture notebook and worked solution (and so every exercise) starts, after its title, with
the same code cell, :data:`SETUP_CELL`. Its ``COURSE`` line says where a hosted runtime (Colab,
Kaggle) installs the course from. In the course's repository it says that nothing is to be
installed (the course folder is installed by ``python3 course.py lab``); for a handout published
as a repository on GitHub, :func:`add_colab` (``course-handout DIR --colab OWNER/REPO@REF``)
writes there, identically in every notebook::

    COURSE = "git+https://github.com/OWNER/REPO@<commit>"

pinned to the commit REF names in the handout's git repository (or REF as given where the
handout is not one: a commit pins best, a branch installs whatever it holds when the notebook
is opened). pip installs only the lessons' dependencies there (pyproject.toml's core), none of
which Colab lacks but sacreBLEU and sacremoses, so nothing Colab provides is reinstalled.
:func:`add_colab` also puts an "Open in Colab" badge into each notebook's first Markdown cell
and a section of links and hand-in steps into the handout's README.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import nbformat

__all__ = ["BADGE", "COLAB", "ColabError", "ColabTarget", "SETUP_CELL", "add_colab",
           "colab_url", "course_line", "is_handout", "is_setup_cell", "parse_target", "pin",
           "setup_cell_source", "write_links"]

#: What ``COURSE`` says in the course's own repository: nothing is installed from elsewhere.
LOCAL = "the course folder (python3 course.py lab installs it)"
#: The line of :data:`SETUP_CELL` that :func:`pin` rewrites.
COURSE_LINE = re.compile(r'^COURSE = "[^"\n]*"', re.MULTILINE)


def setup_cell_source(course: str = LOCAL) -> str:
    """The setup cell, with ``course`` as its ``COURSE`` (:data:`LOCAL` in the repository)."""
    return f'''\
# Setup, the same in every notebook. Where the course is not installed (Google Colab, Kaggle),
# this installs it from COURSE, pinned to one commit; elsewhere it only says that it is there.
COURSE = "{course}"
import importlib.util
import subprocess
import sys

if importlib.util.find_spec("course_utils") is None:
    if not COURSE.startswith("git+"):
        raise SystemExit("The course is not installed in this kernel: open the notebooks with "
                         "python3 course.py lab (it installs the course and its kernel).")
    print(f"Installing the course from {{COURSE}} (a minute) ...")
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-color", COURSE],
                         capture_output=True, text=True)
    if pip.returncode != 0:
        raise SystemExit(f"Installing the course failed ({{' '.join(pip.stderr.split())[-300:]}})"
                         ". Check that the runtime is online and run this cell again; if it "
                         "fails again, send this message to your instructor.")
    importlib.invalidate_caches()
from course_utils.setup import ready

ready(COURSE)'''


SETUP_CELL = setup_cell_source()
#: Marks the badge :func:`add_colab` puts into a notebook's first Markdown cell (replaced, not
#: added again, when it runs again).
BADGE = "<!-- open-in-colab -->"
COLAB = "https://colab.research.google.com/github"


class ColabError(ValueError):
    """The Colab links cannot be written; the message says what was expected and what was
    given."""


@dataclass(frozen=True)
class ColabTarget:
    """Where a handout is published: ``owner/repo`` on GitHub and a git ref (branch, tag or
    commit) of it; None: the handout repository's current branch (else ``main``)."""

    repo: str
    ref: str | None = None


def parse_target(text: str, folder: Path | None = None) -> ColabTarget:
    """``OWNER/REPO`` or ``OWNER/REPO@REF``; ``""`` or ``@REF`` alone take OWNER/REPO from the
    GitHub remote ``origin`` of the git repository ``folder`` (a published handout)."""
    repo, at, ref = text.partition("@")
    if not repo and folder is not None:
        repo = github_remote(folder) or ""
        if not repo:
            raise ColabError(f"--colab without OWNER/REPO takes them from the handout's git "
                             f"remote 'origin' on GitHub, and {folder} has none: name them, "
                             "e.g. --colab alice/day10-handout")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repo) or (at and not ref):
        raise ColabError(f"--colab takes OWNER/REPO or OWNER/REPO@REF (a GitHub repository and "
                         f"a branch, tag or commit); got {text!r}")
    return ColabTarget(repo.removesuffix(".git"), ref or None)


def is_handout(folder: Path) -> bool:
    """Whether ``folder`` holds a handout made by ``course-handout`` (no solutions)."""
    return all((folder / name).exists() for name in ("README.md", "notebooks", "exercises",
                                                     "course_utils")) and not (
        folder / "solutions").exists()


def is_setup_cell(cell: nbformat.NotebookNode) -> bool:
    """Whether ``cell`` is the course's setup cell, whatever its ``COURSE`` says."""
    return (cell.cell_type == "code"
            and COURSE_LINE.sub('COURSE = ""', cell.source) == setup_cell_source(""))


def course_line(source: str) -> str:
    """The value of the ``COURSE`` line of a setup cell's ``source``."""
    found = COURSE_LINE.search(source)
    if found is None:
        raise ColabError("not a setup cell: it has no line COURSE = \"...\"")
    return found.group(0).split('"')[1]


def pin(notebook: nbformat.NotebookNode, course: str) -> nbformat.NotebookNode:
    """``notebook`` with its setup cell's ``COURSE`` set to ``course`` (in place)."""
    setup = [cell for cell in notebook.cells if is_setup_cell(cell)]
    if len(setup) != 1:
        raise ColabError(f"a course notebook has one setup cell; this one has {len(setup)}")
    setup[0].source = COURSE_LINE.sub(f'COURSE = "{course}"', setup[0].source)
    return notebook


def colab_url(target: ColabTarget, path: str) -> str:
    """The Colab address of the notebook ``path`` (relative to the repository's root)."""
    return f"{COLAB}/{target.repo}/blob/{target.ref or 'main'}/{path}"


def _badge(url: str) -> str:
    return (f"{BADGE}[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
            f"({url})")


def _add_badge(notebook: nbformat.NotebookNode, url: str) -> None:
    first = next((c for c in notebook.cells if c.cell_type == "markdown"), None)
    if first is None:
        raise ColabError("a course notebook starts with a Markdown cell (its title); this one "
                         "has none")
    rest = "\n".join(line for line in first.source.splitlines() if not line.startswith(BADGE))
    first.source = f"{_badge(url)}\n\n{rest.lstrip()}"


def _git(folder: Path, *args: str) -> str | None:
    """The output of ``git -C folder args`` (stripped), or None where git or the repo is not."""
    try:
        done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True,
                              timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _is_repository(folder: Path) -> bool:
    """Whether ``folder`` is the top of a git repository (not a folder inside another one)."""
    top = _git(folder, "rev-parse", "--show-toplevel")
    return top is not None and Path(top).resolve() == folder.resolve()


def github_remote(folder: Path) -> str | None:
    """``owner/repo`` of the handout's ``origin`` remote where it is on GitHub, else None."""
    if not _is_repository(folder):
        return None
    url = _git(folder, "remote", "get-url", "origin")
    found = re.search(r"github\.com[:/]([^/]+/[^/]+?)(?:\.git)?/?$", url or "")
    return found.group(1) if found else None


def resolve(folder: Path, target: ColabTarget) -> tuple[ColabTarget, str, str | None]:
    """``(target, commit, warning)``: the target with its ref filled in (the repository's
    current branch, else ``main``), and that ref as a commit of the handout's git repository
    (the ref as given, with a warning, where the handout is not one or has no such ref)."""
    repository = _is_repository(folder)
    branch = _git(folder, "rev-parse", "--abbrev-ref", "HEAD") if repository else None
    ref = target.ref or (branch if branch and branch != "HEAD" else "main")
    target = ColabTarget(target.repo, ref)
    commit = (_git(folder, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
              if repository else None)
    if commit is None:
        return target, ref, (f"{folder} is not a git repository holding {ref!r}: the notebooks "
                             f"install the course from {ref!r} as given (a commit pins best: "
                             "a branch installs whatever it holds when a notebook is opened)")
    on_remote = _git(folder, "branch", "--remotes", "--contains", commit)
    if not on_remote:
        return target, commit, (f"commit {commit[:7]} is not on a remote branch yet: push it "
                                "before students open the links, or Colab cannot install the "
                                "course")
    return target, commit, None


def readme_section(target: ColabTarget, notebooks: Iterable[tuple[str, str]]) -> str:
    """The handout README's section: a link per ``(title, path)``, the Drive and GPU advice,
    and how to hand in from Colab."""
    links = "\n".join(f"- [{title}]({colab_url(target, path)})" for title, path in notebooks)
    return f"""## Open it in Google Colab

Each link opens a notebook in [Google Colab](https://colab.research.google.com) (a Google
account is all you need, nothing is installed on your machine). Its first code cell installs
the course into the runtime (about a minute); run the notebook from the top.

{links}

- **A GPU** makes notebooks 3, 4 and 6 and exercise E10.2 much faster: *Runtime → Change
  runtime type → T4 GPU* before you run anything.
- **Save your work**: Colab keeps your notebook only if you save a copy (*File → Save a copy
  in Drive*).
- **Runs between notebooks**: each Colab notebook runs in a runtime of its own that forgets its
  files. Notebook 5 reads notebook 4's models and E10.3 reads your E10.2 model: in each of
  these notebooks, run `course_utils.setup.keep_runs_on_drive()` right after the setup cell,
  and the models are kept on your Google Drive (`My Drive/day10-runs`). Without it, notebook 5
  and E10.3 say what is missing and train a smaller stand-in.
- **Hand in from Colab**: *Runtime → Restart session and run all*, then
  *File → Download → Download .ipynb*, and hand in that file as described under "Handing in".

"""


def add_colab(handout: Path, target: ColabTarget, install_url: str | None = None) -> list[str]:
    """Write the Colab links of ``handout`` (a folder made by ``course-handout``) for
    ``target``: every notebook's setup cell installs the course from ``install_url`` (default
    ``git+https://github.com/OWNER/REPO``) pinned to the commit ``target.ref`` resolves to,
    every notebook's first Markdown cell gets an "Open in Colab" badge, and the README a
    section of links (replacing those of an earlier run). Returns warnings to show."""
    handout = Path(handout)
    notebooks = [p for folder in ("notebooks", "exercises")
                 for p in sorted((handout / folder).glob("*.ipynb"))]
    if not notebooks or not (handout / "README.md").is_file():
        raise ColabError(f"{handout} is not a handout (no notebooks/, exercises/ or README.md); "
                         "make one with course-handout first")
    target, commit, warning = resolve(handout, target)
    course = f"{install_url or 'git+https://github.com/' + target.repo}@{commit}"
    listed = []
    for path in notebooks:
        relative = path.relative_to(handout).as_posix()
        notebook = nbformat.read(path, as_version=4)
        pin(notebook, course)
        _add_badge(notebook, colab_url(target, relative))
        nbformat.write(notebook, path)
        title = next(c for c in notebook.cells if c.cell_type == "markdown").source
        heading = next(line for line in title.splitlines() if line.startswith("#"))
        listed.append((heading.lstrip("# ").strip(), relative))
    readme = (handout / "README.md").read_text(encoding="utf-8")
    readme = re.sub(r"^## Open it in Google Colab\n.*?(?=^## )", "", readme,
                    flags=re.MULTILINE | re.DOTALL)
    section = readme_section(target, listed)
    at = readme.find("\n## ", readme.find("## Open the course")) + 1 or len(readme)
    (handout / "README.md").write_text(readme[:at] + section + readme[at:], encoding="utf-8")
    return [warning] if warning else []


def write_links(handout: Path, text: str, install_url: str | None = None) -> int:
    """``course-handout HANDOUT --colab TEXT``: :func:`add_colab` for the target ``TEXT``
    (:func:`parse_target`), its warnings and errors printed; returns the exit status."""
    try:
        warnings = add_colab(handout, parse_target(text, handout), install_url)
    except ColabError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"Wrote the 'Open in Colab' links into {handout}/README.md and its notebooks: commit "
          "and push them.")
    return 0

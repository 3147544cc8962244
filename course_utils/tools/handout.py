"""The student handout: what an instructor gives students, without the worked solutions.

The course's repository holds ``solutions/``, the tests, the benchmarks and the instructors'
notes. A handout holds only what students need::

    notebooks/        the lecture notebooks, as committed (no runs, no checkpoints)
    exercises/        the student versions, as course-exercises generates them (no outputs)
                      and the course's matplotlibrc (colour-blind-safe colours)
    course_utils/     the package the notebooks import (no caches), with the small Multi30k
                      sample that smoke-scale runs read (COURSE_QUICK=1) as its package data
    data/             with --multi30k: the full Multi30k files, checksums verified, which the
                      notebooks then read instead of downloading them
    docs/day_plan.md  the day plan's figures per section, which the README's day plan cites
    course.py, pyproject.toml, environment.yml, .gitignore, and Binder's postBuild
    README.md         generated for students: what is here, how to open it, how to hand in
    site/             with --site: the course website of the handout (no solutions)

``python3 course.py lab`` opens it as it opens the repository; ``python3 course.py test`` says
that the tests are not part of a handout. The package ships without the grader's hidden answers
(:func:`course_utils.tools.solutions.ships`, the definition the answer search reads by too), and
before the folder is put in place, what it gives students is searched for the worked solutions
and the hidden answers (:func:`course_utils.tools.answer_search.find_leaks`); a handout that
holds any is refused. It is written into a temporary folder beside OUT and renamed only when
complete, so a failure leaves no OUT behind.

Command line (installed as ``course-handout``)::

    course-handout OUT                  # a new folder OUT
    course-handout OUT --site           # with the course website in OUT/site (seconds)
    MULTI30K_DIR=/path/to/multi30k course-handout OUT --multi30k   # offline classroom
    course-handout OUT --hand-in "Upload each exercise notebook to the course page by Friday."
    course-handout OUT --colab OWNER/REPO@REF   # "Open in Colab" links (tools/colab.py); on a
                                                # published handout, --colab alone reads its remote
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import textwrap
from pathlib import Path

import nbformat

from course_utils import multi30k as dataset
from course_utils.files import COURSE_FOLDER, current_umask
from course_utils.tools.answer_search import find_leaks
from course_utils.tools.colab import ColabError, is_handout, parse_target, write_links
from course_utils.tools.exercises import build_all
from course_utils.tools.solutions import NOTEBOOKS, SAMPLE, left_out

__all__ = ["HandoutError", "main", "make_handout", "student_readme"]

#: Copied as they are; ``postBuild`` and the other repo2docker files only where the course has
#: them (Binder builds ``environment.yml``, then runs ``postBuild``).
FILES = ("course.py", "pyproject.toml", "environment.yml")
OPTIONAL_FILES = (".gitignore", "postBuild", "apt.txt", "runtime.txt", "start")
#: Copied into the handout's ``exercises/`` beside the notebooks: the course's matplotlib style
#: (colour-blind-safe colours), which matplotlib reads from the folder a notebook runs in.
#: ``notebooks/`` is copied whole, its copy included.
EXERCISE_FILES = ("matplotlibrc",)
#: Files of the course's documentation a handout carries (the README's day plan cites them).
DOCS = ("docs/day_plan.md",)
#: Where a handout carries the full Multi30k data (--multi30k), which ``course_utils.multi30k``
#: reads when it is there. (The small sample is package data: ``course_utils/multi30k_sample``.)
DATA = Path("data")
#: Appended to the handout's copy of ``.gitignore`` (which ignores ``data/`` and ``*.gz``), so
#: that a handout published as a repository keeps its data.
GITIGNORE_DATA = ("\n# the handout's Multi30k data (data/): part of the handout\n"
                  "!data/\n!data/**/*.gz\n")
#: Said before a cited file the handout does not carry.
ELSEWHERE = "the course repository's "
#: The course's folders a handout is made from (OUT may not be inside one of them).
COPIED = ("notebooks", "exercises", "course_utils", "solutions")
DEFAULT_HAND_IN = (
    "Before you hand in, run the notebook from the top (*Kernel → Restart Kernel and Run All "
    "Cells*; in Colab *Runtime → Restart session and run all*): the grader runs it the same way, "
    "in a fresh kernel. Then hand in that one `.ipynb` file per exercise (from Colab: *File → "
    "Download → Download .ipynb*), named with your student id (`alice.ipynb`), where your "
    "instructor tells you.")


class HandoutError(RuntimeError):
    """The handout cannot be made; the message says why and what to do."""


def _title(notebook: Path) -> str:
    for cell in nbformat.read(notebook, as_version=4).cells:
        if cell.cell_type == "markdown" and cell.source.strip():
            return cell.source.strip().splitlines()[0].lstrip("# ").strip()
    return notebook.stem


#: A file path in Markdown's inline code: ``benchmarks/day_plan.py``.
CITED_PATH = re.compile(r"`([\w.-]+(?:/[\w.-]+)*/[\w-]+\.\w+)`")


def day_plan_section(readme: str, handout: Path) -> str:
    """The course README's "Day plan" section (the notebooks' headers refer to it), for the
    handout in ``handout``: a link to a file the handout does not have becomes plain text, and a
    file named in code that it does not have is said to be in the course's repository
    (:data:`ELSEWHERE`). Empty if the README has no day plan."""
    found = re.search(r"^## Day plan\n.*?(?=^## |\Z)", readme, re.MULTILINE | re.DOTALL)
    if not found:
        return ""

    def ships(target: str) -> bool:
        return (handout / target.split("#")[0]).exists()

    text = re.sub(r"\[([^\]]+)\]\(([^)]+)\)",
                  lambda m: m.group(0) if ships(m.group(2)) else m.group(1), found.group(0))
    text = CITED_PATH.sub(lambda m: m.group(0) if ships(m.group(1)) else ELSEWHERE + m.group(0),
                          text)
    return text.strip() + "\n\n"


def data_paragraph(handout: Path) -> str:
    """What the handout's README says about Multi30k: bundled (no download) or downloaded."""
    quick = ("`COURSE_QUICK=1 python3 course.py lab` runs every notebook at smoke-test scale "
             f"on the small sample in `{SAMPLE.as_posix()}/` instead (for trying things out; "
             "its numbers mean nothing).")
    if (handout / DATA / "multi30k").is_dir():
        text = ("Notebook 4, E10.2 and E10.3 translate Multi30k (Elliott et al., 2016). Its "
                f"files are in `{DATA.as_posix()}/multi30k/`, checked against their published "
                "checksums, so nothing is downloaded: once `python3 course.py setup` has "
                "installed the packages (the only step that needs the internet), the course "
                f"runs offline. {quick}")
    else:
        text = ("Notebook 4, E10.2 and E10.3 translate Multi30k (Elliott et al., 2016): its "
                "files (about 1.4 MB) are downloaded on first use into a cache in your home "
                "folder. Without internet, set `MULTI30K_DIR` to a folder that holds them. "
                + quick)
    return textwrap.fill(text, 96, break_on_hyphens=False, break_long_words=False)


def data_where(handout: Path) -> str:
    """Where the handout keeps Multi30k, in a sentence for its README's list of what is here."""
    if (handout / DATA / "multi30k").is_dir():
        return "`data/` holds the Multi30k data described above."
    return ("The package carries the small Multi30k sample (`course_utils/multi30k_sample/`); "
            "the full data is downloaded as described above.")


def student_readme(handout: Path, title: str, hand_in: str = DEFAULT_HAND_IN,
                   day_plan: str = "") -> str:
    """The handout's README: what is in the folder, how to open it, the day plan, the exercises,
    handing in."""
    def listing(folder: str) -> str:
        return "\n".join(f"- [{_title(p)}]({folder}/{p.name})"
                         for p in sorted((handout / folder).glob("*.ipynb")))

    env = (handout / "environment.yml").read_text(encoding="utf-8")
    env_name = m.group(1) if (m := re.search(r"^name:\s*(\S+)", env, re.MULTILINE)) else "..."
    return f"""# {title}

This folder is the course as your instructor hands it out: the lecture notebooks, the exercises,
and the small Python package that the notebooks import (`course_utils`). The worked solutions
are not part of it.

## Open the course

You need Python 3.11 or newer, and an internet connection for the first run. In this folder:

```
python3 course.py lab
```

The first run creates a virtual environment in `.venv`, installs the course and what the
notebooks need into it (a few minutes: PyTorch is the big one) and registers the notebooks'
Jupyter kernel; then JupyterLab opens on the lecture notebooks. Later runs start at once.
Ctrl-C in the terminal stops JupyterLab (save your notebooks first). `python3 course.py setup`
only installs, without opening the lab: run it while you are online if the class is not.
`python3 course.py lab --help` says which options `lab` passes on to JupyterLab.
With conda instead: `conda env create -f environment.yml`, `conda activate {env_name}`, then
`python3 course.py lab --no-venv`. (`python3 course.py test` runs the course's tests, which come
with the course's repository, not with this handout.)

{data_paragraph(handout)}

{day_plan}## What is here

The lecture notebooks, in `notebooks/`, in the order they are taught:

{listing("notebooks")}

Your exercises, in `exercises/`:

{listing("exercises")}

`course_utils/` is the package the notebooks import: the day's library (what you build in the
notebooks, made fast and tested) and the checks that your exercises call. `course.py`,
`pyproject.toml` and `environment.yml` install it. {data_where(handout)}
[`docs/day_plan.md`](docs/day_plan.md) holds the day plan's times section by section.
Trained models are saved under `runs/` beside the notebook that trains them.

## Working on an exercise

Open it in `exercises/`, replace each `raise NotImplementedError` with your code and run the
check cell under it: the check says what is wrong without giving the answer, and the score
cell at the end adds up your points. Write your written answers where the notebook says *Write
your answer here*; your instructor grades those.

## Handing in

{hand_in.strip()}
"""


def _prepare(out: Path, course: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise HandoutError(f"{out} already exists and is not empty; a handout goes into a new "
                           "folder: name another one, or remove this one first")
    if out == course or any(out.is_relative_to(course / name) for name in COPIED):
        raise HandoutError(f"{out} is inside the course's files; put the handout elsewhere "
                           "(outside the course folder is best)")
    if not (course / "solutions").is_dir():
        raise HandoutError(f"no solutions/ in {course}: make the handout from the course's "
                           "repository (the exercises are checked against the solutions)")
    stale = build_all(course / "solutions", course / "exercises", check=True)
    if stale:
        raise HandoutError("out of date with solutions/: " + ", ".join(str(p) for p in stale)
                           + "; run course-exercises first")


def _add_data(work: Path, course: Path, full: bool) -> None:
    """Copy the checkout's Multi30k sample into the handout's package (``work/``:data:`SAMPLE`,
    its package data) and check it; with ``full``, the full data into ``work/data``, verified."""
    source, copy = course / dataset.CHECKOUT_SAMPLE, work / SAMPLE
    if not (source / "SHA256SUMS").is_file():
        raise HandoutError(f"no Multi30k sample in {source}: smoke-scale runs "
                           "(COURSE_QUICK=1) read it; make the handout from a checkout of the "
                           "course")
    shutil.copytree(source, copy, dirs_exist_ok=True)
    try:
        sums = dataset.read_checksums(copy / "SHA256SUMS")
        for split in dataset.SPLITS:  # every file there, and matching its sum
            dataset.ensure_files(split, copy, checksums=sums, progress=False)
    except dataset.Multi30kError as error:
        raise HandoutError(f"the Multi30k sample in {source} is not whole: "
                           f"{error}") from error
    if not full:
        return
    try:
        dataset.copy_dataset(work / DATA / "multi30k")
    except dataset.Multi30kError as error:
        raise HandoutError(f"the full Multi30k data could not be bundled: {error}") from error
    (work / DATA / "README.md").write_text(
        "# Multi30k, English-German (task 1)\n\n"
        "The data of notebook 4, E10.2 and E10.3: Elliott, Frank, Sima'an & Specia, \"Multi30K: "
        "Multilingual English-German Image Descriptions\", Proceedings of the 5th Workshop on "
        "Vision and Language (2016), doi:10.18653/v1/W16-3210, from the dataset's repository "
        "(`multi30k/dataset`, `data/task1/raw/`), whose terms of use apply.\n\n"
        "- `multi30k/`: the full files, byte for byte as published (`SHA256SUMS`); the "
        "notebooks read them from here instead of downloading them.\n",
        encoding="utf-8")


def _fill(work: Path, course: Path, *, site: bool, hand_in: str, multi30k: bool) -> None:
    """Write the handout's content into the (new, empty) folder ``work``."""
    shutil.copytree(course / NOTEBOOKS, work / NOTEBOOKS, ignore=left_out(course))
    shutil.copytree(course / "course_utils", work / "course_utils", ignore=left_out(course))
    (work / "exercises").mkdir()
    for solution in sorted((course / "solutions").glob("*.ipynb")):
        shutil.copy2(course / "exercises" / solution.name, work / "exercises" / solution.name)
    for name in EXERCISE_FILES:
        if (course / "exercises" / name).is_file():
            shutil.copy2(course / "exercises" / name, work / "exercises" / name)
    for name in FILES + tuple(n for n in OPTIONAL_FILES + DOCS if (course / n).is_file()):
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(course / name, work / name)
    _add_data(work, course, multi30k)
    if (work / ".gitignore").is_file():
        with open(work / ".gitignore", "a", encoding="utf-8") as ignore:
            ignore.write(GITIGNORE_DATA)
    readme = (course / "README.md").read_text(encoding="utf-8")
    title = m.group(1).strip() if (m := re.search(r"^# (.+)$", readme, re.MULTILINE)) else ""
    (work / "README.md").write_text(student_readme(work, title or "The course", hand_in,
                                                   day_plan_section(readme, work)),
                                    encoding="utf-8")
    if site:
        from course_utils.tools.book import BookError, build_book  # Sphinx, on demand

        try:
            build_book(work / "site", course=work, solutions=False)
        except BookError as error:
            raise HandoutError(f"the site could not be built: {error}") from error


def make_handout(out: str | Path, *, course: str | Path = COURSE_FOLDER, site: bool = False,
                 hand_in: str = DEFAULT_HAND_IN, multi30k: bool = False) -> Path:
    """Write the student handout of ``course`` into the new folder ``out``; return ``out``.

    With ``multi30k``, the handout bundles the full Multi30k files in ``data/multi30k`` (from
    ``MULTI30K_DIR``, else from the download cache, downloaded where missing; every file checked
    against its published SHA-256 sum), for a classroom without internet.

    Raises :class:`HandoutError` when ``out`` exists and is not empty, when ``exercises/`` is
    out of date, when the Multi30k files cannot be had or verified, or when a file of the
    handout holds text of a worked solution. On any failure nothing is left at ``out``.
    """
    course, out = Path(course).resolve(), Path(out).resolve()
    _prepare(out, course)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}-handout-", dir=out.parent))
    try:
        _fill(work, course, site=site, hand_in=hand_in, multi30k=multi30k)
        leaks = find_leaks(course, readable=work)
        if leaks:
            shown = "\n".join(f"  {leak.where}: {leak.text!r} (from {leak.exercise}, "
                              f"{leak.part})" for leak in leaks[:10])
            raise HandoutError(f"the handout would hold text of the worked solutions "
                               f"({len(leaks)} found), so it was not written:\n{shown}")
        os.chmod(work, 0o777 & ~current_umask())  # mkdtemp makes the folder private
        if out.exists():
            out.rmdir()  # empty, checked above
        work.rename(out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="course-handout",
        description="Write what students get (lecture notebooks, exercises, the course_utils "
                    "package, a README) into a new folder, without the worked solutions.")
    parser.add_argument("out", type=Path, help="a new (or empty) folder")
    parser.add_argument("--site", action="store_true",
                        help="also build the course website, without solutions, in OUT/site "
                             "(needs the book extra)")
    parser.add_argument("--hand-in", default=DEFAULT_HAND_IN, metavar="TEXT",
                        help="how students hand in, for the README (Markdown)")
    parser.add_argument("--multi30k", action="store_true",
                        help="bundle the full Multi30k files (about 1.4 MB) for a classroom "
                             "without internet: from MULTI30K_DIR, else downloaded; each file "
                             "checked against its published SHA-256 sum")
    parser.add_argument("--colab", nargs="?", const="", metavar="OWNER/REPO@REF",
                        help="write an 'Open in Colab' link for every notebook (README and each "
                             "notebook's first cell) and pin each setup cell's install to the "
                             "commit REF names; OUT may be the handout, published as a git "
                             "repository, whose GitHub remote and branch are the defaults")
    parser.add_argument("--install-url", metavar="URL",
                        help="with --colab: where Colab installs the course from (default "
                             "git+https://github.com/OWNER/REPO)")
    parser.add_argument("--course", type=Path, default=COURSE_FOLDER, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.colab is not None and is_handout(args.out):  # links for a published handout
        return write_links(args.out, args.colab, args.install_url)
    try:
        if args.colab is not None:
            parse_target(args.colab)  # a malformed OWNER/REPO fails before anything is written
    except ColabError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    try:
        out = make_handout(args.out, course=args.course, site=args.site, hand_in=args.hand_in,
                           multi30k=args.multi30k)
    except HandoutError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.colab is not None and write_links(out, args.colab, args.install_url):
        return 1
    counts = {name: len(list((out / name).glob("*.ipynb"))) for name in ("notebooks",
                                                                         "exercises")}
    data = ("the full Multi30k data (data/multi30k, verified)" if args.multi30k
            else "the Multi30k sample (the full data is downloaded on first use)")
    print(f"Wrote the student handout to {out}/: {counts['notebooks']} lecture notebooks, "
          f"{counts['exercises']} exercises, the course_utils package, {data}"
          f"{', the site (site/index.html)' if args.site else ''}; no solutions.\n"
          f"Hand it out as a zip (python3 -m zipfile -c {out.name}.zip {out}) or as a "
          "repository of its own; students run: python3 course.py lab")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

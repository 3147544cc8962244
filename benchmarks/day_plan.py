r"""The day plan's times: each notebook run top to bottom, section by section, plus reading time.

    MULTI30K_DIR=... python benchmarks/day_plan.py        # ~40 minutes on a 2-core CPU
    python benchmarks/day_plan.py --quick --out /tmp/plan.md   # seconds, smoke-test scale

Every lecture notebook and worked solution runs in a fresh kernel in its real configuration
(``COURSE_QUICK`` unset unless ``--quick``), from its own folder, and the seconds of every cell
are recorded. Nothing is written back to the notebooks unless ``--save`` is given (then each is
saved with its outputs, exactly as ``course-execute`` saves it). Notebook 4 retrains its models and
rewrites its checkpoints (the same seeds give the same models), so it runs before notebook 5
and the solutions that read them.

A section is a level-2 heading (``## ...``) and everything up to the next one. Its time is

    reading = (prose words + formula symbols) / WORDS_PER_MINUTE
              + code lines / CODE_LINES_PER_MINUTE + FIGURE_MINUTES per figure
    computing = the measured seconds of its cells

The reading paces are published ones. Prose: the slowest of Carver's reading "gears",
memorizing, measured at 138 words a minute for college students (R. P. Carver, "Reading rate:
Theory, research, and practical implications", Journal of Reading 36(2), 84-95, 1992; his
learning gear is 200, and Brysbaert's meta-analysis puts adults' silent reading of non-fiction
at 238: M. Brysbaert, "How many words do we read per minute? A review and meta-analysis of
reading rate", Journal of Memory and Language 109, 104047, 2019). A lecture notebook is studied,
not read, so the slowest gear applies; Carver measured ordinary prose, so a formula is counted
by its symbols rather than by its spaces (``v^\top \tanh(W_s s_{i-1} + W_h h_j)`` is 16 words:
names, indices, operators and brackets). Code: 5 lines a minute, 300 an hour, the pace of a
careful code review (the Cisco study in J. Cohen, "Best Kept Secrets of Peer Code Review", 2006:
reviewers who go faster than about 300-500 lines an hour find fewer of the defects). Half a
minute to read each figure is a budget, not a measurement. For the exercises, and for the
lecture notebooks' "your turn" cells (tagged ``your-turn``; their worked versions are not in
the notebook but in ``course_utils.checks.worked``, named by the cell's ``course.worked``
metadata), writing time is added on top of reading the instructions: WRITE_CODE_MINUTES
per line of solution code and the written answers at WRITING_WORDS_PER_MINUTE (a student
composing an answer, not copying one). Those are budgets too, the estimate's weakest part.
The figures go to ``docs/day_plan.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]

from course_utils.checks.registry import exercise_ids, notebook_of  # noqa: E402
from course_utils.checks.worked import WORKED  # noqa: E402
from course_utils.files import update_section  # noqa: E402
from course_utils.tools.colab import is_setup_cell  # noqa: E402
from course_utils.tools.execute import run_notebook  # noqa: E402
from course_utils.tools.solutions import Region, split_cell  # noqa: E402

#: Carver's (1992) memorizing gear, college students; see the module's docstring.
WORDS_PER_MINUTE = 138
#: 300 lines an hour: careful code review (Cisco's study, in J. Cohen, "Best Kept Secrets of Peer
#: Code Review", 2006: reviewers faster than about 300-500 lines an hour find fewer defects).
CODE_LINES_PER_MINUTE = 5
FIGURE_MINUTES = 0.5
WRITE_CODE_MINUTES = 1.0
WRITING_WORDS_PER_MINUTE = 15

#: The lecture notebooks, then every exercise's worked solution (registered by file name:
#: :mod:`course_utils.checks.registry`).
NOTEBOOKS = [
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "notebooks").glob("[0-9]*.ipynb")),
    *(str(notebook_of(name, ROOT / "solutions").relative_to(ROOT)) for name in exercise_ids()),
]
#: Sections outside the day's core path (README, "Day plan"), by notebook and section number:
#: for fast students, for homework, or for a second session. Everything else is core, except
#: a section whose heading says "(extension)".
EXTENSION = {
    "notebooks/01_bottleneck_and_attention_by_hand.ipynb": ("5.", "6.", "7.", "8."),
    "notebooks/02_bahdanau_attention_in_pytorch.ipynb": ("4.", "7.", "8."),
    "notebooks/03_reversal_task.ipynb": ("7.",),
    "notebooks/04_multi30k_vanilla_vs_attention.ipynb": ("5.", "8.", "10.", "11."),
}
#: Notebooks that are homework (or a second session) as a whole: these lectures, and every
#: worked solution that no block of the day (:data:`BLOCK_OF`, below) names.
HOMEWORK_LECTURES = (
    "notebooks/05_reading_attention_heatmaps.ipynb",
    "notebooks/06_additive_vs_dot_product.ipynb",  # the optional last hour, or homework
)
#: The course page's plan of the day, in minutes, block by block.
PAGE_BLOCKS = {"theory": 45, "implementation": 60, "exercises": 45}
#: Which block each core notebook's sections belong to: a block's name for the whole notebook,
#: or section-title prefixes to blocks with ``""`` for the rest (notebook 4 is read in part
#: while it trains, in the theory block, and its results in the exercise block).
BLOCK_OF: dict[str, str | dict[str, str]] = {
    "notebooks/01_bottleneck_and_attention_by_hand.ipynb": "theory",
    "notebooks/02_bahdanau_attention_in_pytorch.ipynb": "implementation",
    "notebooks/03_reversal_task.ipynb": "implementation",
    "notebooks/04_multi30k_vanilla_vs_attention.ipynb": {
        "(header": "theory", "1.": "theory", "2.": "theory", "": "exercises"},
    "solutions/E10.1-attention-by-hand.ipynb": "exercises",
}
#: Notebooks whose computing runs in the background: notebook 4 is started (Run All) at the
#: beginning of the day and trains in its own kernel while students work through the others.
BACKGROUND = ("notebooks/04_multi30k_vanilla_vs_attention.ipynb",)
HOMEWORK = (*HOMEWORK_LECTURES,
            *(p for p in NOTEBOOKS if p.startswith("solutions/") and p not in BLOCK_OF))
#: The tag of a lecture notebook's "your turn" cell; its metadata ``course.worked`` names the
#: piece of :data:`course_utils.checks.worked.WORKED` the student writes there.
YOUR_TURN_TAG = "your-turn"


@dataclass
class Section:
    title: str
    words: int = 0
    code_lines: int = 0
    figures: int = 0
    seconds: float = 0.0
    solution_code_lines: int = 0
    solution_words: int = 0
    output_words: int = 0

    @property
    def reading_minutes(self) -> float:
        return ((self.words + self.output_words) / WORDS_PER_MINUTE
                + self.code_lines / CODE_LINES_PER_MINUTE + self.figures * FIGURE_MINUTES)

    @property
    def writing_minutes(self) -> float:
        return (self.solution_code_lines * WRITE_CODE_MINUTES
                + self.solution_words / WRITING_WORDS_PER_MINUTE)

    @property
    def minutes(self) -> float:
        return self.reading_minutes + self.writing_minutes + self.seconds / 60


@dataclass
class Timed:
    path: str
    sections: list[Section] = field(default_factory=list)
    wall_seconds: float = 0.0

    @property
    def minutes(self) -> float:
        return sum(s.minutes for s in self.sections)

    @classmethod
    def from_record(cls, path: str, entry: dict) -> Timed:
        """A notebook's measurements as ``docs/day_plan.json`` keeps them."""
        return cls(path, [Section(**x) for x in entry["sections"]], entry["wall_seconds"])

    def is_extension(self, section: Section) -> bool:
        return (self.path in HOMEWORK or "(extension)" in section.title
                or section.title.startswith(EXTENSION.get(self.path, ())))

    @property
    def core_minutes(self) -> float:
        return sum(s.minutes for s in self.sections if not self.is_extension(s))


def block_minutes(timed: list[Timed]) -> dict[str, float]:
    """Minutes of each block of the course page's day: the core sections of :data:`BLOCK_OF`,
    without the computing of a :data:`BACKGROUND` notebook."""
    minutes = dict.fromkeys(PAGE_BLOCKS, 0.0)
    for item in timed:
        which = BLOCK_OF.get(item.path)
        if which is None:
            continue
        for section in item.sections:
            if item.is_extension(section):
                continue
            block = which if isinstance(which, str) else next(
                (b for prefix, b in which.items() if prefix and section.title.startswith(prefix)),
                which[""])
            spent = section.minutes - (section.seconds / 60 if item.path in BACKGROUND else 0)
            minutes[block] += spent
    return minutes


#: A formula in Markdown: ``$$...$$`` or ``$...$``.
MATH = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$", re.S)
#: What the eye takes in, in a formula: a command (``\tanh``), a run of letters or digits, or
#: an operator or bracket (not the braces and carets that only typeset).
SYMBOL = re.compile(r"\\[A-Za-z]+|[A-Za-z]+|\d+(?:\.\d+)?|[-+=<>*/|()\[\],;:!]")


def _words(text: str) -> int:
    """Prose words, with every symbol of a formula counted as a word."""
    symbols = sum(len(SYMBOL.findall(a or b)) for a, b in MATH.findall(text))
    return len(re.findall(r"\S+", MATH.sub(" ", text))) + symbols


def _code_lines(source: str) -> int:
    return sum(1 for line in source.splitlines()
               if line.strip() and not line.strip().startswith("#"))


def _marked(source: str) -> tuple[list[str], str]:
    """The text of each marked region of ``source`` (the student writes it), and the text
    around them (:func:`course_utils.tools.solutions.split_cell`)."""
    pieces = split_cell(source)
    return ([p.text for p in pieces if isinstance(p, Region)],
            "\n".join(p for p in pieces if isinstance(p, str)))


def _split_markdown(source: str) -> list[tuple[str | None, str]]:
    """``[(heading or None, text)]``: a markdown cell cut at each of its ``## `` headings."""
    parts: list[tuple[str | None, list[str]]] = [(None, [])]
    for line in source.splitlines():
        if line.startswith("## "):
            parts.append((line[3:].strip(), []))
        parts[-1][1].append(line)
    return [(heading, "\n".join(lines)) for heading, lines in parts if heading or lines]


#: What a cell prints that nobody reads: matplotlib's text for a figure, and progress bars
#: (each bar's last line: the run's time is said in the prose or printed beside it).
_NOT_READ = re.compile(r"<(?:Figure|Axes)\b[^>]*>|^.*\|[█▏▎▍▌▋▊▉ ]*\|.*$", re.M)


def _output_words(cell: nbformat.NotebookNode) -> int:
    """Words of a code cell's printed text (streams and plain-text results, not figures or
    progress bars): the output a student reads, at the prose pace."""
    texts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream" and output.get("name") == "stdout":
            texts.append(output.get("text", ""))
        elif "data" in output and not any(k.startswith("image/") for k in output["data"]):
            texts.append(output["data"].get("text/plain", ""))
    text = _NOT_READ.sub(" ", "".join("".join(t) if isinstance(t, list) else t for t in texts))
    return len(re.findall(r"\S+", text))


def sections_of(notebook: nbformat.NotebookNode, seconds: list[float]) -> list[Section]:
    """Split a notebook at its ``## `` headings (wherever they sit in a cell) and measure
    each part."""
    sections = [Section("(header and set-up)")]
    for cell, cell_seconds in zip(notebook.cells, seconds):
        source = cell.source
        if cell.cell_type == "markdown":
            for heading, text in _split_markdown(source):
                if heading:
                    sections.append(Section(heading))
                section = sections[-1]
                answers, given = _marked(text)
                section.solution_words += sum(_words(a) for a in answers)
                section.words += _words(given)
            continue
        section = sections[-1]
        if cell.cell_type != "code":
            continue
        if is_setup_cell(cell):  # run, not studied: the same cell at the top of every notebook
            section.seconds += cell_seconds
            continue
        if YOUR_TURN_TAG in cell.metadata.get("tags", []):
            # the student writes the worked piece's body (its signature is in the cell, read)
            worked = WORKED[cell.metadata["course"]["worked"]].code
            section.solution_code_lines += _code_lines(worked.split(":\n", 1)[1])
        answers, given = _marked(source)
        section.solution_code_lines += sum(_code_lines(a) for a in answers)
        section.code_lines += _code_lines(given)
        section.output_words += _output_words(cell)
        section.seconds += cell_seconds
        section.figures += sum(1 for o in cell.get("outputs", [])
                               if "image/png" in o.get("data", {}))
    return [s for s in sections if s.words or s.code_lines or s.seconds]


def recorded_seconds(notebook: nbformat.NotebookNode) -> list[float]:
    """Each cell's computing time in the saved run, from the timestamps Jupyter recorded in its
    metadata (``execution``: from ``iopub.execute_input`` to ``shell.execute_reply``); 0 for a
    cell without them (markdown, or never run)."""
    seconds = []
    for cell in notebook.cells:
        stamps = cell.metadata.get("execution", {})
        start, end = stamps.get("iopub.execute_input"), stamps.get("shell.execute_reply")
        if start and end:
            seconds.append((dt.datetime.fromisoformat(end.replace("Z", "+00:00"))
                            - dt.datetime.fromisoformat(start.replace("Z", "+00:00")))
                           .total_seconds())
        else:
            seconds.append(0.0)
    return seconds


def report(timed: list[Timed], quick: bool, dates: str,
           runs: dict[str, str | None] | None = None) -> str:
    """``docs/day_plan.md``'s measured part; ``runs``: each notebook's run date."""
    runs = runs or {}
    import torch

    lines = [
        "# The day plan, measured",
        "",
        f"Measured {dates} with `python benchmarks/day_plan.py` (one notebook at a time, "
        "each in a fresh kernel) on "
        f"{platform.machine()} with {os.cpu_count()} CPU cores, PyTorch {torch.__version__}, "
        f"{'CUDA' if torch.cuda.is_available() else 'no GPU'}"
        f"{', smoke-test scale (COURSE_QUICK=1)' if quick else ', real configuration'}. "
        "Computing is the measured time of each section's cells in a fresh kernel. Reading is "
        f"estimated at {WORDS_PER_MINUTE} words of prose a minute, the slowest (memorizing) gear "
        "of Carver's reading rates (Journal of Reading 36(2), 1992), with every symbol of a "
        "formula counted as a word, and the same pace for the text the cells print (tables, "
        "translations, measurements: every word of a cell's printed output, not its figures or "
        f"progress bars); {CODE_LINES_PER_MINUTE} lines of code a minute, the pace of "
        "a careful code review (Cisco's study, in J. Cohen, *Best Kept Secrets of Peer Code "
        f"Review*, 2006); and {FIGURE_MINUTES} min per figure, a budget (see "
        "`benchmarks/day_plan.py`). For the exercises and the lecture's \"your turn\" cells, "
        "writing is budgeted at "
        f"{WRITE_CODE_MINUTES:g} min per line of solution code and "
        f"{WRITING_WORDS_PER_MINUTE} words a minute for written answers.",
        "",
    ]
    for item in timed:
        where = ("homework or a second session" if item.path in HOMEWORK
                 else f"core {item.core_minutes:.0f} min")
        lines += [
            f"## `{item.path}`: {item.minutes:.0f} min ({where}; "
            f"computing {sum(s.seconds for s in item.sections) / 60:.1f} min; "
            f"whole run {item.wall_seconds / 60:.1f} min)",
            "",
            "| section | path | reading (min) | writing (min) | computing (min) | total (min) |",
            "|---|---|---|---|---|---|",
        ]
        for s in item.sections:
            path = "extension" if item.is_extension(s) else "core"
            lines.append(f"| {s.title} | {path} | {s.reading_minutes:.1f} | "
                         f"{s.writing_minutes:.1f} | {s.seconds / 60:.1f} | {s.minutes:.1f} |")
        lines.append("")
    core = sum(t.core_minutes for t in timed)
    rest = sum(t.minutes for t in timed) - core
    blocks = block_minutes(timed)
    background = sum(s.seconds for t in timed if t.path in BACKGROUND for s in t.sections) / 60
    page = ", ".join(f"{name} {blocks[name]:.0f} min (page {PAGE_BLOCKS[name]})"
                     for name in PAGE_BLOCKS)
    lines += [
        f"**The course page's blocks:** {page}; the core path {sum(blocks.values()):.0f} min "
        f"(page {sum(PAGE_BLOCKS.values())}), with notebook 4's {background:.0f} min of "
        "computing running in the background from the start of the day.",
        "",
        f"**In all:** core sections {core:.0f} min (notebook 4's computing included), "
        f"extensions and homework {rest:.0f} min.",
        "",
        "## Which runs these are",
        "",
        "Every figure above comes from the run whose outputs are committed in that notebook: its "
        "computing is the time of each cell as Jupyter recorded it in that run "
        "(`benchmarks/day_plan.py --recount` reads those timestamps, and re-counts the prose "
        "after an edit without running anything again), and its date is the run's own "
        "(`course.built_with` in the notebook's metadata).",
        "",
        "| notebook | run of | computing (min) |",
        "|---|---|---|",
        *(f"| `{t.path}` | {runs.get(t.path) or 'not recorded'} | "
          f"{sum(s.seconds for s in t.sections) / 60:.1f} |" for t in timed),
        "",
        "The block totals count notebook 4's reading but not its computing, which runs in the "
        "background from the start of the day (`BACKGROUND` in `benchmarks/day_plan.py`); "
        "`BLOCK_OF` there says which sections fill which block of the course page.",
        "",
    ]
    return "\n".join(lines)


def page(saved: dict) -> str:
    """``docs/day_plan.md``'s measured part, made from the measurements ``saved`` (as
    ``docs/day_plan.json`` keeps them): the page holds nothing its measurements do not give."""
    order = [p for p in NOTEBOOKS if p in saved] + [p for p in saved if p not in NOTEBOOKS]
    timed = [Timed.from_record(p, saved[p]) for p in order]
    dates = sorted({saved[p]["measured"] for p in order})
    quick = any(saved[p]["quick"] for p in order)
    return report(timed, quick, ", ".join(dates), {p: saved[p]["measured"] for p in order})


def recounted(notebook: nbformat.NotebookNode) -> list[Section]:
    """A committed notebook's sections, measured from its text and the timestamps its saved
    run recorded (what ``--recount`` stores)."""
    return sections_of(notebook, recorded_seconds(notebook))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke-test scale (seconds)")
    parser.add_argument("notebooks", nargs="*", default=NOTEBOOKS,
                        help="notebooks to time, relative to the course folder (default: all)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "day_plan.md")
    parser.add_argument("--from-json", action="store_true",
                        help="re-write the report from the measurements of the last run "
                             "(docs/day_plan.json) instead of running the notebooks")
    parser.add_argument("--recount", action="store_true",
                        help="re-count the words, code and figures of the committed notebooks "
                             "and take each cell's computing time from the timestamps their "
                             "saved run recorded, without running them (after a prose edit)")
    parser.add_argument("--save", action="store_true",
                        help="save each executed notebook with its outputs, as course-execute does")
    args = parser.parse_args(argv)
    if args.quick:
        os.environ["COURSE_QUICK"] = "1"
    else:
        os.environ.pop("COURSE_QUICK", None)
    missing = [p for p in args.notebooks if not (ROOT / p).is_file()]
    if missing:
        print(f"error: no notebook at {', '.join(missing)} (paths are relative to {ROOT.name}/)",
              file=sys.stderr)
        return 2
    record = args.out.with_suffix(".json")  # the raw measurements, for re-reading the report
    saved = json.loads(record.read_text()) if record.is_file() else {}
    if args.from_json and not saved:
        print(f"error: no measurements at {record}; run without --from-json first",
              file=sys.stderr)
        return 2
    if args.recount:
        for relative in args.notebooks:
            notebook = nbformat.read(ROOT / relative, as_version=4)
            seconds = recorded_seconds(notebook)
            item = Timed(relative, recounted(notebook))
            built = notebook.metadata.get("course", {}).get("built_with") or {}
            previous = saved.get(relative, {})
            saved[relative] = {"measured": built.get("date") or previous.get("measured"),
                               "quick": built.get("scale") == "quick",
                               "wall_seconds": previous.get("wall_seconds", round(sum(seconds), 2)),
                               "sections": [vars(x) for x in item.sections]}
            print(f"{relative}: {item.minutes:.0f} min (recounted)", flush=True)
        record.write_text(json.dumps(saved, indent=1) + "\n")
    elif not args.from_json:
        for relative in args.notebooks:
            run = run_notebook(ROOT / relative, save=args.save)
            item = Timed(relative, sections_of(run.notebook, run.cell_seconds), run.seconds)
            # a run of some notebooks replaces their measurements and keeps the others'
            saved[relative] = {"measured": dt.date.today().isoformat(), "quick": args.quick,
                               "wall_seconds": round(item.wall_seconds, 2),
                               "sections": [vars(x) for x in item.sections]}
            print(f"{relative}: {item.minutes:.0f} min "
                  f"(computing {sum(run.cell_seconds) / 60:.1f} min)", flush=True)
        record.write_text(json.dumps(saved, indent=1) + "\n")
    update_section(args.out, "day-plan", page(saved))
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

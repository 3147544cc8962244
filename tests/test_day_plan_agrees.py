"""The day's times are said in three places, and they must agree: each notebook's header, the
README (its table of contents and its day plan), and ``docs/day_plan.md``, which
``benchmarks/day_plan.py`` writes from the measurements in ``docs/day_plan.json``."""

import json
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import day_plan  # noqa: E402

RECORD = json.loads((ROOT / "docs" / "day_plan.json").read_text())


def _timed(path: str) -> day_plan.Timed:
    return day_plan.Timed.from_record(path, RECORD[path])


def test_every_notebook_of_the_day_is_timed():
    assert sorted(RECORD) == sorted(day_plan.NOTEBOOKS)


@pytest.mark.parametrize("path", day_plan.NOTEBOOKS)
def test_a_notebooks_header_states_its_measured_time(path):
    minutes = round(_timed(path).minutes)
    header = nbformat.read(ROOT / path, as_version=4).cells[0].source
    stated = re.search(r"\*\*Time:\*\* about (\d+) minutes", header)
    assert stated, f"{path}: the first cell says no '**Time:** about N minutes'"
    assert abs(int(stated.group(1)) - minutes) <= 1, (
        f"{path}'s header says {stated.group(1)} minutes; docs/day_plan.json gives {minutes}")


@pytest.mark.parametrize("path", day_plan.NOTEBOOKS)
def test_the_readme_table_of_contents_states_the_same_time(path):
    timed = _timed(path)
    row = next(line for line in (ROOT / "README.md").read_text().splitlines()
               if line.startswith("|") and Path(path).name in line
               and ("notebooks/" in path or "exercises/" in line))
    times = [int(t) for t in re.findall(r"(\d+) min\b", row.split("|")[-3])]
    assert times and abs(times[0] - round(timed.minutes)) <= 1, (
        f"README says {times[:1]} min for {path}; docs/day_plan.json gives {timed.minutes:.0f}")
    if path not in day_plan.HOMEWORK:
        assert f"core {round(timed.core_minutes)}" in row or times[0] == round(timed.core_minutes)


def test_the_readme_day_plan_ends_where_its_rows_add_up_and_names_the_total():
    readme = (ROOT / "README.md").read_text()
    plan = readme[readme.index("## Day plan"):readme.index("## Table of contents")]
    rows = re.findall(r"^\| (\d+):(\d\d) \|[^\n]*\| (\d+) min \|$", plan, re.M)
    end = re.search(r"^\| (\d+):(\d\d) \| \| \| end of the core path", plan, re.M)
    assert rows and end
    clock = [60 * int(h) + int(m) for h, m, _ in rows] + [60 * int(end[1]) + int(end[2])]
    for (start, stop), (_, _, minutes) in zip(zip(clock, clock[1:]), rows):
        assert stop - start == int(minutes), f"a row of {minutes} min takes {stop - start}"
    blocks = day_plan.block_minutes([_timed(p) for p in day_plan.NOTEBOOKS])
    total = round(sum(blocks.values()))
    assert abs(clock[-1] - total) <= 2, f"the plan ends at {clock[-1]} min; the blocks sum to {total}"
    assert f"core path takes {total} minutes" in plan


def test_the_core_path_fits_the_course_pages_blocks():
    """The course page plans theory 45 minutes, implementation 60 and exercises 45: the core
    path fits that, each block within 5 minutes, 150 minutes in all at most."""
    blocks = day_plan.block_minutes([_timed(p) for p in day_plan.NOTEBOOKS])
    for name, page in day_plan.PAGE_BLOCKS.items():
        assert abs(blocks[name] - page) <= 5, f"{name}: {blocks[name]:.0f} min against {page}"
    assert sum(blocks.values()) <= sum(day_plan.PAGE_BLOCKS.values()) + 0.5


def test_the_blocks_count_every_core_section_once():
    timed = [_timed(p) for p in day_plan.NOTEBOOKS]
    core = sum(t.core_minutes for t in timed if t.path in day_plan.BLOCK_OF)
    background = sum(s.seconds for t in timed if t.path in day_plan.BACKGROUND
                     for s in t.sections if not t.is_extension(s)) / 60
    assert sum(day_plan.block_minutes(timed).values()) == pytest.approx(core - background)


def _page_section(text: str) -> str:
    return text.split("<!-- begin day-plan -->", 1)[1].split("<!-- end day-plan -->", 1)[0].strip()


def test_the_day_plan_page_is_what_its_measurements_make():
    """``docs/day_plan.md`` holds only what ``benchmarks/day_plan.py`` writes from
    ``docs/day_plan.json``: a number typed into it by hand, or left from an older run, fails."""
    assert _page_section((ROOT / "docs" / "day_plan.md").read_text()) == \
        day_plan.page(RECORD).strip()


def test_a_number_edited_by_hand_in_the_day_plan_page_is_found():
    page = (ROOT / "docs" / "day_plan.md").read_text()
    number = re.search(r"\| (\d+\.\d) \|", page).group(1)
    edited = page.replace(f"| {number} |", f"| {float(number) + 0.1:.1f} |", 1)
    assert _page_section(edited) != day_plan.page(RECORD).strip()


@pytest.mark.parametrize("path", day_plan.NOTEBOOKS)
def test_the_measurements_are_those_of_the_committed_run(path):
    """Each notebook's sections in ``docs/day_plan.json`` (words, code, figures, printed output,
    computing) are those of the notebook as committed, and its date is its run's own."""
    notebook = nbformat.read(ROOT / path, as_version=4)
    assert [vars(s) for s in day_plan.recounted(notebook)] == RECORD[path]["sections"]
    built = notebook.metadata.get("course", {}).get("built_with") or {}
    assert RECORD[path]["measured"] == built.get("date"), path

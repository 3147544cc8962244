"""Prose bound to its outputs: every number a notebook's Markdown or a figure's description quotes
is printed by one of that notebook's cells (or set in its code, or quoted from a source listed in
``prose_numbers.SOURCED``, or the day plan's minutes), and ``docs/results.md`` quotes only what
the runs it reports hold. Re-running a notebook fails these tests until its prose agrees with
its new outputs (:mod:`course_utils.tools.prose_numbers`). ``docs/day_plan.md`` is checked in
``tests/test_day_plan_agrees.py``: it must be what its generator writes from its measurements."""

import nbformat
import pytest
from helpers import ROOT

from course_utils.tools.prose_numbers import (
    numbers_in_prose,
    unbound_in_document,
    unbound_in_notebook,
)

NOTEBOOKS = sorted([*(ROOT / "notebooks").glob("*.ipynb"), *(ROOT / "solutions").glob("*.ipynb")])
#: The project's measurements a notebook's header may quote.
DOCUMENTS = [ROOT / "docs" / "day_plan.md", ROOT / "docs" / "benchmarks.md"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_number_a_notebook_quotes_is_one_it_prints(path):
    found = unbound_in_notebook(path, documents=DOCUMENTS)
    assert not found, "\n".join(map(str, found))


def test_the_results_page_quotes_only_the_runs_it_reports():
    sources = [ROOT / "docs" / "results.json", ROOT / "docs" / "score_comparison.json",
               ROOT / "notebooks" / "04_multi30k_vanilla_vs_attention.ipynb",
               ROOT / "notebooks" / "05_reading_attention_heatmaps.ipynb",
               ROOT / "notebooks" / "06_additive_vs_dot_product.ipynb"]
    found = unbound_in_document(ROOT / "docs" / "results.md", sources)
    assert not found, "\n".join(map(str, found))


def test_what_reads_like_a_result_is_checked_and_what_does_not_is_not():
    said = [n for n, _ in numbers_in_prose(
        "In section 4 of notebook 3, E10.2 (2014) trained 54 sentences in 7.9 min: +6.4 BLEU, "
        "62.6% of 1,000, `d = 16`, $W_s s_1 = 0.44$, $h_3$, Figure 2, version 2.6.0, 2026-11-27")]
    assert said == ["54", "7.9", "+6.4", "62.6", "1,000", "0.44"]


def seeded(tmp_path, path, cell_id, where, number="987.65"):
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.get("id") == cell_id:
            if where == "alt":
                cell.metadata["mystnb"]["image"]["alt"] += f" It peaks at {number}."
            else:
                cell.source += f"\n\nThe score was {number} in this run."
    copy = tmp_path / path.name
    nbformat.write(notebook, copy)
    return copy


def test_a_stale_number_in_markdown_or_a_figure_description_fails(tmp_path):
    path = ROOT / "notebooks" / "02_bahdanau_attention_in_pytorch.ipynb"
    notebook = nbformat.read(path, as_version=4)
    markdown = next(c.get("id") for c in notebook.cells if c.cell_type == "markdown")
    figure = next(c.get("id") for c in notebook.cells
                  if c.metadata.get("mystnb", {}).get("image", {}).get("alt"))
    for cell_id, where in ((markdown, "markdown"), (figure, "alt")):
        found = unbound_in_notebook(seeded(tmp_path, path, cell_id, where), documents=DOCUMENTS)
        assert [u.number for u in found] == ["987.65"], found


def test_the_results_page_reports_the_run_committed_in_notebook_4():
    """The test BLEU the results page reports is the one notebook 4's saved run printed: a page
    written from other checkpoints than the notebook's run disagrees here."""
    import re

    page = (ROOT / "docs" / "results.md").read_text()
    notebook = nbformat.read(ROOT / "notebooks" / "04_multi30k_vanilla_vs_attention.ipynb",
                             as_version=4)
    printed = "\n".join("".join(o.get("text", "")) for c in notebook.cells
                        for o in c.get("outputs", []))
    rows = re.findall(r"^\| (test_\w+) \| (\d+) \| ([\d.]+) \| ([\d.]+) \| ([+-][\d.]+) \|$", page,
                      re.M)
    assert len(rows) == 3
    for split, n, vanilla, attention, gain in rows:
        assert re.search(rf"{split}\s+{n}\s+{vanilla}\s+{attention}\s+{re.escape(gain)}",
                         printed), split

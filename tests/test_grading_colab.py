"""A notebook handed in from Google Colab (File → Download → Download .ipynb) grades like any
other: Colab saves nbformat 4.0 without cell ids, its own metadata (``colab``, ``accelerator``,
a ``python3`` kernelspec), an ``id`` and an ``outputId`` in each cell's metadata, and the setup
cell pinned to the handout's commit, with the output of the install it ran."""

import json
import secrets

import nbformat
from helpers import ROOT, calibrated_limits

from course_utils.tools.colab import pin
from course_utils.tools.grading import grade_folder

SOLUTION = ROOT / "solutions" / "E10.1-attention-by-hand.ipynb"
LIMITS = calibrated_limits(cell_seconds=15, total_seconds=120)
PINNED = "git+https://github.com/alice/day10-handout@" + "1a2b3c4d" * 5


def saved_by_colab() -> dict:
    """The worked E10.1, as Colab's *Download .ipynb* writes it after a run on a T4 runtime."""
    notebook = pin(nbformat.read(SOLUTION, as_version=4), PINNED)
    saved = json.loads(nbformat.writes(notebook))
    saved["nbformat_minor"] = 0
    saved["metadata"] = {
        "colab": {"provenance": [], "gpuType": "T4", "toc_visible": True},
        "accelerator": "GPU",
        "kernelspec": {"name": "python3", "display_name": "Python 3"},
        "language_info": {"name": "python"},
    }
    for cell in saved["cells"]:
        cell.pop("id", None)
        cell["metadata"] = {"id": secrets.token_urlsafe(9)}
        if cell["cell_type"] == "code":
            cell["metadata"] |= {"colab": {"base_uri": "https://localhost:8080/"},
                                 "outputId": secrets.token_hex(4) + "-1d2e-4f5a-8b9c-0d1e2f3a4b5c"}
    saved["cells"][1]["outputs"] = [{
        "output_type": "stream", "name": "stdout",
        "text": [f"Installing the course from {PINNED} (a minute) ...\n",
                 "Course ready: course_utils from commit 1a2b3c4 of "
                 "https://github.com/alice/day10-handout.\n"]}]
    return saved


def test_a_notebook_saved_by_colab_grades_full_marks(tmp_path):
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    saved = saved_by_colab()
    assert "id" not in saved["cells"][0] and saved["metadata"]["accelerator"] == "GPU"
    (submissions / "alice.ipynb").write_text(json.dumps(saved, indent=1), encoding="utf-8")
    [result] = grade_folder("E10.1", submissions, tmp_path / "grades", jobs=1, limits=LIMITS,
                            progress=False)
    assert result.status == "graded", result.notes
    assert result.total() == 8, (result.points, result.notes)  # every automatic point
    assert not [note for note in result.notes if "error" in note.lower()], result.notes

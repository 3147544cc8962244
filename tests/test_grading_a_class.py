"""A class, not a notebook: what the class got wrong, and grading in shards that merge into one.

A folder of seeded mistakes (two students with the same unstable softmax, one counting
positions from 0, one with W_h untransposed, one untouched exercise, one right answer) is
graded once whole and once as two shards of a batch engine's job array.
"""

import csv
import json
import shutil
from dataclasses import asdict

import nbformat
import pytest
from helpers import ROOT, calibrated_limits

from course_utils.checks import get_exercise
from course_utils.tools.grading import grade_folder, main, write_class_report
from course_utils.tools.grading.limits import memory_enforcement
from course_utils.tools.grading.sandbox import detect
from course_utils.tools.grading.shards import RESULTS, MergeError, in_shard, merge, parse_shard

SOLUTION = ROOT / "solutions" / "E10.1-attention-by-hand.ipynb"
EXERCISE = ROOT / "exercises" / "E10.1-attention-by-hand.ipynb"
LIMITS = calibrated_limits(cell_seconds=20, total_seconds=120)


def edited(old: str, new: str) -> nbformat.NotebookNode:
    notebook = nbformat.read(SOLUTION, as_version=4)
    hits = 0
    for cell in notebook.cells:
        if old in cell.source:
            cell.source = cell.source.replace(old, new)
            hits += 1
    assert hits == 1, old
    return notebook


UNSTABLE = ("exps = np.exp(scores - scores.max(axis=1, keepdims=True))", "exps = np.exp(scores)")
FROM_ZERO = ("return weights.argmax(axis=1) + 1", "return weights.argmax(axis=1)")
UNTRANSPOSED = ("keys = encoder_states @ W_h.T", "keys = encoder_states @ W_h")

CLASS = {
    "ada": lambda: nbformat.read(SOLUTION, as_version=4),
    "bea": lambda: edited(*UNSTABLE),
    "cem": lambda: edited(*UNSTABLE),
    "dov": lambda: edited(*FROM_ZERO),
    "eli": lambda: edited(*UNTRANSPOSED),
    "fay": lambda: nbformat.read(EXERCISE, as_version=4),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("class")
    subs = folder / "subs"
    subs.mkdir()
    for student, make in CLASS.items():
        nbformat.write(make(), subs / f"{student}.ipynb")
    whole = grade_folder("E10.1", subs, folder / "whole", limits=LIMITS, progress=False)
    for k in (1, 2):  # shard 1 calibrates its time limits, shard 2 takes them as given
        assert main(["E10.1", str(subs), "--out", str(folder / f"shard-{k}"), "--shard",
                     f"{k}/2", "--quiet", "--cell-timeout", str(LIMITS.cell_seconds),
                     "--total-timeout", str(LIMITS.total_seconds), "--memory-mb",
                     str(LIMITS.memory_mb), *(["--no-calibrate"] if k == 2 else [])]) == 0
    return folder, {r.student: r for r in whole}


def mistakes(out):
    with open(out / "mistakes.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def test_the_class_report_counts_each_named_mistake_once_per_student(graded):
    folder, results = graded
    assert results["ada"].total() == 8 and results["fay"].total() == 0
    rows = mistakes(folder / "whole")
    softmax = [r for r in rows if r["part"] == "softmax"]
    # the two unstable softmaxes are one mistake, named by the check, counted twice
    unstable = [r for r in softmax if r["students"] == "2"]
    assert len(unstable) == 1 and "overflow" in unstable[0]["mistake"].lower()
    assert unstable[0]["example"] == results["bea"].messages["softmax"]
    assert unstable[0]["of graded"] == "6"
    # the untouched notebook: "not implemented yet" in every part
    for part in ("energies", "softmax", "context", "most_attended"):
        assert any(r["part"] == part and "not implemented" in r["mistake"] and
                   r["students"] == "1" for r in rows), part
    most = [r for r in rows if r["part"] == "most_attended"]
    assert sum(int(r["students"]) for r in most) == 2  # counting from 0, and untouched
    energies = [r for r in rows if r["part"] == "energies"]
    assert sum(int(r["students"]) for r in energies) == 2  # W_h untransposed, and untouched


def test_the_class_report_names_no_student(graded):
    folder, _ = graded
    for name in ("mistakes.csv", "mistakes.html"):
        text = (folder / "whole" / name).read_text()
        assert not any(student in text for student in CLASS), name
    page = (folder / "whole" / "mistakes.html").read_text()
    assert page.startswith("<!doctype html>") and "<caption>" in page


def test_shards_split_the_class_and_merge_into_the_same_gradebook(graded, tmp_path):
    folder, results = graded
    students = sorted(CLASS)
    assert in_shard(students, (1, 2)) + in_shard(students, (2, 2)) != students
    assert sorted(in_shard(students, (1, 2)) + in_shard(students, (2, 2))) == students
    for k in (1, 2):
        record = json.loads((folder / f"shard-{k}" / RESULTS).read_text())
        assert [r["student"] for r in record["results"]] == in_shard(students, (k, 2))
    merged = {r.student: r for r in merge([folder / "shard-2", folder / "shard-1"],
                                          tmp_path / "merged")}
    assert {s: r.points for s, r in merged.items()} == {s: r.points
                                                         for s, r in results.items()}

    def columns(out):
        with open(out / "grades.csv", newline="") as handle:
            return [{k: v for k, v in row.items() if k != "notes"}
                    for row in csv.DictReader(handle)]

    assert columns(tmp_path / "merged") == columns(folder / "whole")
    # the merged class report is the one the merged results make...
    write_class_report(tmp_path / "again", get_exercise("E10.1"),
                       [merged[s] for s in sorted(merged)])
    assert mistakes(tmp_path / "merged") == mistakes(tmp_path / "again")
    # ...and the unsharded run's wherever each part's message is the same in both runs (a
    # mistake's name depends on the run's fresh inputs when, rarely, two wrong formulas give
    # the same answers on all of them); in any case the same students made mistakes per part
    def rows(out, keep):
        return [{k: v for k, v in r.items() if k in keep} for r in mistakes(out)]

    if all(merged[s].messages == results[s].messages for s in CLASS):
        every = set(mistakes(folder / "whole")[0]) - {"example"}
        assert rows(tmp_path / "merged", every) == rows(folder / "whole", every)
    else:
        def per_part(out):
            counts: dict[str, int] = {}
            for row in mistakes(out):
                counts[row["part"]] = counts.get(row["part"], 0) + int(row["students"])
            return counts

        assert per_part(tmp_path / "merged") == per_part(folder / "whole")
    assert sorted(p.name for p in (tmp_path / "merged" / "feedback").iterdir()) == sorted(
        f"{s}.{ext}" for s in CLASS for ext in ("md", "html"))
    # merging again changes nothing
    before = {p.name: p.read_bytes() for p in (tmp_path / "merged").iterdir() if p.is_file()}
    assert main(["merge", str(folder / "shard-1"), str(folder / "shard-2"), "--out",
                 str(tmp_path / "merged")]) == 0
    after = {p.name: p.read_bytes() for p in (tmp_path / "merged").iterdir() if p.is_file()}
    assert after.keys() == before.keys()
    assert {k: v for k, v in after.items() if k != "histogram.png"} == {
        k: v for k, v in before.items() if k != "histogram.png"}


def tampered(folder, tmp_path, name, change):
    copy = tmp_path / name
    shutil.copytree(folder, copy)
    record = json.loads((copy / RESULTS).read_text())
    change(record)
    (copy / RESULTS).write_text(json.dumps(record))
    return copy


def test_shards_that_do_not_belong_together_are_refused(graded, tmp_path):
    folder, _ = graded
    one, two = folder / "shard-1", folder / "shard-2"
    cases = [
        ([one], "missing 2/2"),
        ([one, one, two], "given twice 1/2"),
        ([one, tampered(two, tmp_path, "looser", lambda r: r["limits"].update(
            cell_seconds=999.0))], "other limits"),
        ([one, tampered(two, tmp_path, "other", lambda r: r.update(exercise="E10.3"))],
         "other exercise"),
        ([one, tampered(two, tmp_path, "of3", lambda r: r.update(shard=[2, 3]))],
         "different numbers of parts"),
        ([one, tampered(two, tmp_path, "dup", lambda r: r["results"].append(
            json.loads((one / RESULTS).read_text())["results"][0]))], "in two shards"),
        ([one, tmp_path], "holds no results.json"),
        ([folder / "whole", two], "not the output of a --shard"),
    ]
    for folders, why in cases:
        with pytest.raises(MergeError, match=why):
            merge(folders, tmp_path / "out")
        assert not (tmp_path / "out" / "grades.csv").exists()
    with pytest.raises(MergeError, match="must not be one of the shard folders"):
        merge([one, two], one)


def test_each_shard_records_its_sandbox_memory_enforcement_and_time_limits(graded):
    folder, _ = graded
    records = [json.loads((folder / f"shard-{k}" / RESULTS).read_text()) for k in (1, 2)]
    for record in records:
        assert record["protection"] == {"sandbox": detect() or "none",
                                        "memory": memory_enforcement(LIMITS.memory_mb)}
        assert record["limits"] == asdict(LIMITS)  # as given: what the merge compares
    factor = records[0]["calibration"]["factor"]
    assert factor >= 1 and records[0]["applied_limits"] == asdict(LIMITS.scaled(factor))
    assert records[1]["calibration"] is None and records[1]["applied_limits"] == asdict(LIMITS)


def test_shards_graded_under_different_memory_enforcement_merge_with_a_warning(
        graded, tmp_path, capsys):
    folder, results = graded
    one = folder / "shard-1"
    here = memory_enforcement(LIMITS.memory_mb)
    other = {"cgroup": "rlimit", "rlimit": "cgroup"}[here]  # a node where it went the other way
    two = tampered(folder / "shard-2", tmp_path, "other-node",
                   lambda r: r["protection"].update(memory=other))
    assert main(["merge", str(one), str(two), "--out", str(tmp_path / "merged")]) == 0
    captured = capsys.readouterr()
    warning = [line for line in captured.err.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and "different memory enforcement" in warning[0]
    assert f"{here} (" in warning[0] and f"in shard 1/2 ({one})" in warning[0]
    assert f"{other} (" in warning[0] and f"in shard 2/2 ({two})" in warning[0]
    weaker = 2 if other == "rlimit" else 1
    assert f"--array={weaker}" in warning[0]
    assert "differ between the shards" in captured.out
    record = json.loads((tmp_path / "merged" / RESULTS).read_text())
    assert record["warnings"] == [warning[0].removeprefix("warning: ")]
    assert record["protection"] is None
    assert [s["protection"]["memory"] for s in record["shards"]] == [here, other]
    assert {r["student"]: r["points"] for r in record["results"]} == {
        s: r.points for s, r in results.items()}
    # shards that agree (one calibrated, one not) merge without a word
    assert main(["merge", str(one), str(folder / "shard-2"), "--out",
                 str(tmp_path / "agreeing")]) == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.err and "in every shard" in captured.out
    assert json.loads((tmp_path / "agreeing" / RESULTS).read_text())["warnings"] == []


@pytest.mark.parametrize("text", ["3", "0/2", "3/2", "a/b", "1/2/3", "-1/2"])
def test_a_bad_shard_is_a_clear_error(text, capsys):
    with pytest.raises(ValueError, match="K/N"):
        parse_shard(text)
    assert main(["E10.1", str(ROOT / "exercises"), f"--shard={text}", "--quiet"]) == 2
    assert "--shard" in capsys.readouterr().err


@pytest.mark.parametrize("option, value", [("--cell-timeout", "0"), ("--total-timeout", "-5"),
                                           ("--memory-mb", "0"), ("--cell-timeout", "nan")])
def test_limits_that_are_not_positive_are_a_clear_error(option, value, capsys):
    assert main(["E10.1", str(ROOT / "exercises"), option, value, "--quiet"]) == 2
    assert "must be a positive number" in capsys.readouterr().err

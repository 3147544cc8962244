"""Grading a large class on a batch engine: one shard of a folder per job, then one merge.

A MOOC's 10,000 submissions need more than one machine, and schedulers that run N copies of a
job already exist (a Slurm job array, a Kubernetes Indexed Job). ``course-grade E10.1 subs/
--shard K/N --out grades-K/`` grades only the K-th of N shares of the folder (the students in
sorted order, every N-th from the K-th: the same split on every machine that sees the same
folder); every run, sharded or not, also writes ``results.json``, the machine-readable record of
what it graded and under which limits. ``course-grade merge grades-*/ --out grades/`` then
checks that the shards belong together (the same exercise with the same parts and points, the
same limits, each of the N shards exactly once, no student twice) and writes one gradebook,
the feedback, the histogram and one class report, exactly as a single run would have. Merging
again gives the same files.

The record also keeps what each run graded under beyond the limits asked for
(:class:`Conditions`): the sandbox and the memory enforcement (a cgroup, where the grader may make
one, or the per-process rlimit only), and the calibration that stretched the time limits. Shards
whose sandbox or memory enforcement differ are merged with a warning that names them and both
settings (:func:`differences`): both enforce the same limits, so an honest submission's points do
not depend on which applied, and a cluster whose nodes differ could otherwise never be merged;
the warning says which shards to re-run where it matters. The warnings stay in the merged record.

The written answers' marks (:mod:`.marks`) live in one file that every shard and the merge read
(``--marks PATH``; the merge's default is its output folder's ``marks.csv``): a shard reads it
only, so that N jobs never write one file at once, and the merge adds the rows of new students
and flags changed answers exactly as an unsharded run does, so the merged gradebook is the
unsharded one, marks included.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from course_utils.checks import get_exercise
from course_utils.files import write_text_atomically
from course_utils.tools.grading.class_report import write_class_report
from course_utils.tools.grading.limits import (
    MEMORY_ENFORCEMENT,
    Calibration,
    GradingLimits,
    Protection,
)
from course_utils.tools.grading.marks import (
    MARKS,
    Marking,
    MarksSource,
    read_marks,
    reconcile,
    save_marks,
)
from course_utils.tools.grading.reports import write_feedback, write_gradebook, write_histogram
from course_utils.tools.grading.results import STATUSES, GradeResult
from course_utils.tools.grading.stopping import held

__all__ = ["RESULTS", "Conditions", "MergeError", "differences", "in_shard", "merge",
           "parse_shard", "read_record", "write_outputs"]


#: The record every grading run leaves in its output folder, for :func:`merge`.
RESULTS = "results.json"
FORMAT = 1


class MergeError(ValueError):
    """Shards that do not belong together, or a folder that holds no shard."""


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` (1 <= K <= N) as ``(K, N)``; a clear ``ValueError`` otherwise."""
    try:
        k, n = (int(part) for part in str(text).split("/"))
    except ValueError:
        raise ValueError(f"--shard must be K/N with whole numbers, e.g. 3/8; got {text!r}"
                         ) from None
    if not 1 <= k <= n:
        raise ValueError(f"--shard K/N needs 1 <= K <= N; got {text!r}")
    return k, n


def in_shard(students: list[str], shard: tuple[int, int] | None) -> list[str]:
    """The students shard ``(K, N)`` grades: in sorted order, every N-th from the K-th."""
    ordered = sorted(students)
    if shard is None:
        return ordered
    k, n = shard
    return ordered[k - 1::n]


@dataclass(frozen=True)
class Conditions:
    """What one run graded under beyond the limits it was given: its sandbox and memory
    enforcement, the calibration that stretched its time limits (``None``: as given) and the
    limits that applied."""

    protection: Protection
    calibration: Calibration | None
    applied: GradingLimits

    def as_record(self) -> dict:
        return {"protection": asdict(self.protection),
                "calibration": asdict(self.calibration) if self.calibration else None,
                "applied_limits": asdict(self.applied)}


def differences(shards: list[dict]) -> list[str]:
    """A warning for each setting of :class:`Protection` on which ``shards`` (each
    ``{"shard": [K, N], "folder": ..., "protection": {...} or None}``) differ, naming the shards
    under each value; none when they agree."""
    warnings = []
    for setting in ("sandbox", "memory"):
        groups: dict[Any, list[dict]] = {}
        for shard in shards:
            groups.setdefault((shard.get("protection") or {}).get(setting), []).append(shard)
        if len(groups) < 2:
            continue
        described = "; ".join(
            (f"{value} ({MEMORY_ENFORCEMENT[value]})" if value in MEMORY_ENFORCEMENT
             else str(value or "not recorded (an older course-grade)"))
            + f" in shard{'s' if len(group) > 1 else ''} "
            + ", ".join(f"{s['shard'][0]}/{s['shard'][1]} ({s['folder']})" for s in group)
            for value, group in sorted(groups.items(), key=lambda g: str(g[0])))
        weaker = sorted(s["shard"][0] for value, group in groups.items()
                        if value in ("none", "rlimit", None) for s in group)
        listed = ",".join(map(str, weaker))
        warnings.append(
            f"the shards were graded under different {setting} enforcement: {described}. "
            "Merged anyway: the limits are the same, and an honest submission's points do not "
            "depend on it" + (
                f"; where they matter, re-run shard{'s' if len(weaker) > 1 else ''} {listed} "
                "where the grader has " + ("a sandbox" if setting == "sandbox" else
                                           "memory cgroups")
                + f" (sbatch --array={listed}) and merge again" if weaker else ""))
    return warnings


def _parts(exercise: Any) -> dict[str, float]:
    return {**{name: check.points for name, check in exercise.checks.items()},
            **{name: question.points for name, question in exercise.manual.items()}}


def write_outputs(out: Path, exercise_id: str, results: list[GradeResult],
                  limits: GradingLimits, shard: tuple[int, int] | None = None, *,
                  conditions: Conditions | None = None, merged: list[dict] | None = None,
                  marks: MarksSource | None = None) -> Marking:
    """Everything a grading run leaves in ``out``: the gradebook, one feedback file per
    student, the histogram, the class report and :data:`RESULTS` (last: the merge reads it),
    with the written answers' marks of ``marks`` (by default ``out/marks.csv``, which an
    unsharded run writes and a shard only reads), which it updates (:mod:`.marks`).
    ``conditions``: this run's (:class:`Conditions`); ``merged``: each merged shard's record of
    them. A marks file that is not right raises :class:`.marks.MarksError` before anything is
    written; Ctrl-C or SIGTERM waits until every file is written (:func:`.stopping.held`).
    Returns the marking."""
    exercise = get_exercise(exercise_id)
    out = Path(out)
    source = marks or MarksSource(out / MARKS, frozenset(r.student for r in results),
                                  writable=shard is None)
    found = read_marks(source.path, exercise, source.present)
    marking, text = reconcile(found, exercise, results)
    record = {"format": FORMAT, "exercise": exercise_id, "parts": _parts(exercise),
              "limits": asdict(limits), "shard": list(shard) if shard else None,
              "merged_from": len(merged) if merged is not None else None,
              **(conditions.as_record() if conditions else {}),
              "marks": marking.as_record([r.student for r in results]),
              "results": [asdict(r) for r in results]}
    if merged is not None:
        protections = {json.dumps(m.get("protection"), sort_keys=True) for m in merged}
        record.update(shards=merged, warnings=differences(merged),
                      protection=merged[0].get("protection") if len(protections) == 1
                      else None)
    with held():
        if source.writable:
            save_marks(found, text)  # first: if it changed meanwhile, nothing is written
        write_gradebook(out / "grades.csv", exercise, results, marking)
        for result in results:
            write_feedback(out / "feedback", exercise, result, marking)
        write_histogram(out / "histogram.png", exercise, results)
        write_class_report(out, exercise, results, marking)
        write_text_atomically(out / RESULTS,
                              json.dumps(record, indent=1, sort_keys=True) + "\n")
    return marking


def read_record(folder: Path) -> dict:
    """The record (:data:`RESULTS`) a grading run left in ``folder``; :class:`MergeError` when
    there is none or it is not one."""
    path = Path(folder) / RESULTS
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        raise MergeError(f"{folder} holds no {RESULTS}: not the output folder of a "
                         "course-grade run (or that run was interrupted)") from None
    except ValueError as error:
        raise MergeError(f"{path} is not valid JSON ({error})") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise MergeError(f"{path} is not a course-grade record of format {FORMAT}")
    return record


def _result(data: object, where: Path) -> GradeResult:
    try:
        assert isinstance(data, dict)
        result = GradeResult(**data)
        assert isinstance(result.student, str) and result.status in STATUSES
        assert all(isinstance(v, (int, float)) for v in result.points.values())
    except (AssertionError, TypeError, AttributeError):
        raise MergeError(f"{where / RESULTS} holds a result that is not one: "
                         f"{str(data)[:120]}") from None
    return result


def merge(folders: list[Path], out: Path, marks: Path | None = None) -> list[GradeResult]:
    """One gradebook, feedback, histogram and class report in ``out`` from the output folders
    of the N shards of one grading, with the written answers' marks of ``marks`` (default:
    ``out/marks.csv``), which it updates as an unsharded run would; :class:`MergeError` when
    the shards do not belong together, :class:`.marks.MarksError` when the marks are not
    right."""
    if not folders:
        raise MergeError("no shard folders to merge")
    out = Path(out).resolve()
    if any(Path(f).resolve() == out for f in folders):
        raise MergeError(f"the merged output {out} must not be one of the shard folders")
    # a list, not a dict: a folder given twice counts twice
    records = [(Path(f), read_record(Path(f))) for f in folders]
    first_folder, first = records[0]
    exercise_id = first.get("exercise")
    try:
        exercise = get_exercise(str(exercise_id))
    except (KeyError, ValueError) as error:
        raise MergeError(f"{first_folder}: unknown exercise {exercise_id!r} ({error})") from None
    for folder, record in records:
        for key, what in (("exercise", "exercise"), ("parts", "parts and points"),
                          ("limits", "limits")):
            if record.get(key) != first.get(key):
                raise MergeError(f"{folder} was graded with other {what} than {first_folder}: "
                                 f"{record.get(key)!r} against {first.get(key)!r}")
    if first.get("parts") != _parts(exercise):
        raise MergeError(f"the shards were graded with parts {first.get('parts')!r}, but this "
                         f"course's {exercise_id} has {_parts(exercise)!r}: merge with the "
                         "course version that graded them")
    raw = [(folder, record.get("shard")) for folder, record in records]
    unsharded = [str(f) for f, s in raw if not (
        isinstance(s, list) and len(s) == 2 and all(isinstance(x, int) for x in s))]
    if unsharded:
        raise MergeError(f"not the output of a --shard K/N run: {unsharded}")
    shards: list[tuple[int, int]] = [(s[0], s[1]) for _, s in raw if s]
    totals = {n for _, n in shards}
    if len(totals) != 1:
        raise MergeError(f"the shards split the folder in different numbers of parts: "
                         f"{sorted(totals)}")
    n = totals.pop()
    seen = sorted(k for k, _ in shards)
    if seen != list(range(1, n + 1)):
        missing = sorted(set(range(1, n + 1)) - set(seen))
        twice = sorted({k for k in seen if seen.count(k) > 1})
        raise MergeError(f"{n} shards expected, each once: "
                         + (f"missing {', '.join(f'{k}/{n}' for k in missing)}"
                            if missing else "")
                         + ("; " if missing and twice else "")
                         + (f"given twice {', '.join(f'{k}/{n}' for k in twice)}"
                            if twice else ""))
    results: dict[str, GradeResult] = {}
    for folder, record in records:
        for data in record.get("results", []):
            result = _result(data, folder)
            if result.student in results:
                raise MergeError(f"student {result.student!r} is in two shards: were the shards "
                                 "graded from the same folder?")
            results[result.student] = result
    ordered = [results[s] for s in sorted(results)]
    limits = GradingLimits(**first["limits"])
    merged = sorted(({"shard": record["shard"], "folder": str(folder),
                      **{key: record.get(key) for key in ("protection", "calibration",
                                                          "applied_limits")}}
                     for folder, record in records), key=lambda m: m["shard"][0])
    write_outputs(out, str(exercise_id), ordered, limits, merged=merged, marks=MarksSource(
        Path(marks) if marks is not None else out / MARKS, frozenset(results)))
    return ordered

"""Grading a folder (:func:`grade_folder`): the submissions found (:mod:`.intake`), those
unchanged since the last run reused (:mod:`.cache`), the others graded a few at once
(:func:`.supervise.grade_one`), and then, only if the batch ran to its end, the gradebook,
feedback, histogram, class report and record written (:func:`.shards.write_outputs`). Stopped
by Ctrl-C or SIGTERM (:mod:`.stopping`), it kills the running workers, waits for each to remove
its temporary folder and memory cgroup, and writes nothing. The written answers' marks
(:mod:`.marks`) are read before anything runs: a marks file that is not right stops it there."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from course_utils.checks import get_exercise
from course_utils.tools.grading.answers import ANSWER_CHARS, written_answers
from course_utils.tools.grading.cache import cache_key, reused, store, submission_digest
from course_utils.tools.grading.intake import Intake, collect
from course_utils.tools.grading.judge import handed_in, saved_records
from course_utils.tools.grading.limits import (
    DEFAULT_LIMITS,
    GradingLimits,
    Protection,
    kernel_threads,
    memory_enforcement,
)
from course_utils.tools.grading.limits import calibrate as calibrate_now
from course_utils.tools.grading.marks import MARKS, MarksSource, fingerprint, read_marks
from course_utils.tools.grading.results import NO_KERNEL, GradeResult, cut
from course_utils.tools.grading.shards import Conditions, in_shard, write_outputs
from course_utils.tools.grading.supervise import clear_stop, grade_one, hidden_folders, stop_all

__all__ = ["JOBS", "grade_folder"]

#: Notebooks graded at once by default (``course-grade --jobs``): each kernel gets the cores
#: divided among them (:func:`.limits.kernel_threads`).
JOBS = 2


def grade_folder(
    exercise_id: str,
    submissions: Path | Intake,
    out: Path,
    *,
    jobs: int = JOBS,
    only: list[str] | None = None,
    reuse: bool = True,
    limits: GradingLimits = DEFAULT_LIMITS,
    progress: bool = True,
    sandbox: str | None = None,
    shard: tuple[int, int] | None = None,
    calibrate: bool = False,
    marks: Path | None = None,
) -> list[GradeResult]:
    """Grade every notebook in ``submissions`` (a folder, or what :func:`.intake.collect` found
    in one); write the gradebook, feedback and histogram.

    ``shard=(K, N)`` grades only the K-th of N shares of the folder (:mod:`.shards`; merge the
    N output folders with :func:`.shards.merge`).
    ``sandbox``: ``"unshare"`` (see :mod:`course_utils.tools.grading.sandbox`) or ``None``.
    ``calibrate``: the time limits in ``limits`` are a quiet machine's, stretched by how busy
    this one is now (:func:`.limits.calibrate`, once the arguments are found good); otherwise
    they apply as given. The record (``results.json``) keeps both, and the sandbox and memory
    enforcement the run had.
    ``marks``: the written answers' marks (:mod:`.marks`; default ``out/marks.csv``), read and
    checked before anything runs and again before the outputs are written; an unsharded run
    adds the rows it lacks, a shard only reads it. One that is not right raises
    :class:`.marks.MarksError` and nothing is written.
    On Ctrl-C (or SIGTERM within :func:`.stopping.on_signals`) the running workers are killed,
    nothing new starts, and nothing is written: the earlier gradebook stays as it was.
    """
    get_exercise(exercise_id)  # an unknown id is an error before anything runs
    intake = submissions if isinstance(submissions, Intake) else collect(Path(submissions))
    submissions, out = intake.folder, Path(out)
    unknown = sorted(set(only or []) - set(intake.submissions))
    if unknown:
        raise ValueError(f"--only names students with no submission: {unknown}")
    mine = in_shard(list(intake.submissions), shard)
    if only is not None and set(only) - set(mine):
        raise ValueError(f"--only names students of other shards: {sorted(set(only) - set(mine))}")
    source = MarksSource(Path(marks) if marks is not None else out / MARKS,
                         frozenset(intake.submissions), writable=shard is None)
    read_marks(source.path, get_exercise(exercise_id), source.present)  # wrong: stop now
    cache = out / ".cache"
    cache.mkdir(parents=True, exist_ok=True)
    key = cache_key()
    hide = hidden_folders(submissions, out, source.path.parent) if sandbox else None
    protection = Protection(sandbox or "none", memory_enforcement(limits.memory_mb))
    calibration = calibrate_now() if calibrate else None
    applied = limits.scaled(calibration.factor) if calibration else limits

    results: dict[str, GradeResult] = {}
    to_grade: list[tuple[str, Path, str]] = []
    for student in mine:
        path = intake.submissions[student]
        digest = submission_digest(path, exercise_id, limits, protection)
        forced = only is not None and student in only
        earlier = reused(cache / f"{student}.json", digest, key) if reuse and not forced \
            else None
        if earlier is not None:
            results[student] = earlier
        else:
            to_grade.append((student, path, digest))

    from tqdm import tqdm

    clear_stop()
    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    threads = kernel_threads(min(jobs, len(to_grade)))
    def attempt(path: Path) -> GradeResult:
        result = grade_one(path, exercise_id, applied, sandbox, hide, threads)
        if result.status == "grader error" and any(n.startswith(NO_KERNEL) for n in result.notes):
            # the machine's fault, not the student's: one more try before the row says so
            result = grade_one(path, exercise_id, applied, sandbox, hide, threads)
        return result

    try:
        futures = {pool.submit(attempt, path):
                   (student, digest) for student, path, digest in to_grade}
        for future in tqdm(as_completed(futures), total=len(futures), disable=not progress,
                           desc=f"grading {exercise_id}", unit="notebook"):
            student, digest = futures[future]
            try:
                result = future.result()
            except KeyboardInterrupt:
                raise
            except Exception as error:  # never lose a row
                result = GradeResult(student, "grader error", notes=[cut(repr(error))])
            result.student = student  # the id from the file or its folder
            results[student] = result
            store(cache / f"{student}.json", digest, key, result)
    except KeyboardInterrupt:
        stop_all()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)

    ordered = [results[s] for s in mine]
    for student, result in zip(mine, ordered):  # read, never run: the answers page, marks
        whole = written_answers(intake.submissions[student], get_exercise(exercise_id), None)
        result.picks = handed_in(saved_records(intake.submissions[student], exercise_id))
        result.answers = {name: cut(text, ANSWER_CHARS) for name, text in whole.items()}
        result.fingerprints = {name: fingerprint(text) for name, text in whole.items()}
    write_outputs(out, exercise_id, ordered, limits, shard,
                  conditions=Conditions(protection, calibration, applied), marks=source)
    return ordered

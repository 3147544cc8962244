"""Grade a folder of submitted notebooks with the checks students already ran.

    course-grade E10.1 submissions/ --out grades/ [--jobs 2] [--only alice bob] [--no-reuse]
    course-grade export grades/ --roster roster.csv --format canvas --out canvas.csv

Each submission runs in a fresh kernel inside its own temporary folder that holds a copy of
that notebook only, under a per-cell time limit, a total time limit and a memory limit, so one
submission can neither stall the batch nor touch another submission or the gradebook. After the
student's cells have run (errors do not stop them), one probe cell per part calls the student's
functions on inputs drawn for this run and reports only their raw results (see
:mod:`course_utils.checks.probes`); the grader then judges them itself
(:meth:`Check.judge <course_utils.checks.Check.judge>`). Notebooks run at smoke-test scale
(``COURSE_QUICK=1``, checkpoints in the temporary folder): the checks need the student's
functions, not a full-size training run.

Writes, atomically: ``grades.csv`` (one row per file: student id from the file name, one column
per check, one per written question with its mark, total of both, maximum, status, the written
answers' state), one feedback file per student in ``feedback/`` (Markdown and HTML), and
``histogram.png``; and ``marks.csv``, where the instructor types the written answers' marks:
the grader adds rows and never changes a cell the instructor wrote (:mod:`.marks`). Results of
unchanged submissions are reused from ``.cache/`` unless ``--no-reuse`` is given.

Statuses: ``graded`` (``needs marking`` in the gradebook until every written answer is marked);
``timeout`` (a cell or the whole notebook ran past its limit);
``memory`` (the memory limit was hit); ``crashed`` (the kernel died, e.g. ``os._exit``);
``not a notebook`` (unreadable or not nbformat JSON); ``grader error``.

The limits protect a batch against accidents (endless loops, runaway memory, a dying kernel).
On Linux, where user namespaces are allowed, each worker also runs in a sandbox
(:mod:`.sandbox`: own PID and network namespaces, read-only files, a private ``/tmp``, the
submissions, the output folder and the cache key hidden). Kernels see a minimal environment (no
instructor variables) and start from the grader's own Python.

The kernel computes; the grader judges. The run's seed reaches the worker on its stdin and the
kernel only with each probe cell, together with a tag the worker drew for that cell; a part
whose tag is printed twice scores 0. The worker forwards each probe's raw data on its private
pipe, which the grader reads to the end (until the worker's whole process tree is gone) before
any part is judged. The judge recomputes every expected answer in the grader, with the course's
reference code, on the same inputs; decodes results strictly; never takes points from the
kernel; clamps; ignores unknown parts. Parts whose input is the student's class (E10.2's
decoder, E10.4's scores) are no exception: their ``adapt`` runs the class in the kernel on the
run's inputs and reports plain arrays, judged here like any function's results.

The modules, by idea (none imports another's private names, and there is no cycle):

- :mod:`.cli`: ``course-grade``'s arguments and what it prints (:func:`main`);
- :mod:`.batch`: grading a folder (:func:`grade_folder`);
- :mod:`.intake`: the submissions in a folder (:func:`collect`), a notebook read as Jupyter
  would (:func:`read_notebook`);
- :mod:`.cache`: reusing the results of unchanged submissions (digest, signed entries);
- :mod:`.supervise`: running one submission (:func:`grade_one`): the worker process, its
  report pipe, its process group, stopping them all (:func:`.supervise.stop_all`);
- :mod:`.limits`: :class:`GradingLimits` (each default declared once, with its help text), the
  calibration that stretches the time limits on a busy machine, the kernel's environment, the
  memory limits and which enforcement a run has (:class:`.limits.Protection`);
- :mod:`.stopping`: Ctrl-C and SIGTERM (a scheduler's cancel) handled alike: the workers
  stopped, their temporary copies and cgroups removed, the outputs written whole or not at all;
- :mod:`.worker`: what runs in the worker process (``python -m
  course_utils.tools.grading.worker``): the notebook, its probe cells, its report;
- :mod:`.judge`: the points of each part, decided in the grader (:func:`add_parts`);
- :mod:`.reports`: the gradebook, feedback, histogram and summary;
- :mod:`.marks`: the written answers' marks in ``marks.csv`` (read, checked, completed, each
  answer marked, to mark, or changed since marked: :class:`.marks.Marking`), on top of
  :mod:`.spreadsheet` (a CSV file edited cell by cell, every other byte kept; text no
  spreadsheet runs as a formula);
- :mod:`.export`: ``course-grade export``, the gradebook in Canvas's, Moodle's or a plain
  ``student,score`` import format, through the instructor's roster;
- :mod:`.class_report`: what the class got wrong, per part and named mistake
  (:func:`write_class_report`);
- :mod:`.shards`: one shard of a folder (``--shard K/N``), the record every run leaves
  (``results.json``) and ``course-grade merge`` (:func:`merge`);
- :mod:`.results`: :class:`GradeResult`, the statuses, the report's markers and the caps;
- :mod:`.sandbox` and :mod:`.memcg`: the per-submission sandbox and memory cgroup.

One submission's path: :func:`.intake.collect` finds it; :func:`.batch.grade_folder` reuses its
cached result if its digest (:mod:`.cache`) is unchanged, else hands it to
:func:`.supervise.grade_one`, which copies it into a temporary folder and starts
:mod:`.worker` there (sandboxed, limited, in its own process group) with the seed on its stdin.
The worker reads the notebook (:func:`.intake.read_notebook`), runs its cells and probe cells,
and streams each part's raw results, then its status, on a private pipe; ``grade_one`` reads it
to the end, kills the process group, and :func:`.judge.add_parts` judges each part. The result
goes into the cache, then, once every submission is done, with the marks of ``marks.csv``
(:mod:`.marks`), into the gradebook, feedback, histogram (:mod:`.reports`), class report
(:mod:`.class_report`) and record (:func:`.shards.write_outputs`).
"""

from course_utils.tools.grading.batch import grade_folder
from course_utils.tools.grading.cache import PACKAGE_DIR, REUSED
from course_utils.tools.grading.class_report import Mistake, class_mistakes, write_class_report
from course_utils.tools.grading.cli import main
from course_utils.tools.grading.intake import Intake, collect, read_notebook
from course_utils.tools.grading.judge import add_parts
from course_utils.tools.grading.limits import GradingLimits, kernel_threads
from course_utils.tools.grading.marks import Marking, MarksError, read_marks, reconcile
from course_utils.tools.grading.reports import (
    summary,
    write_feedback,
    write_gradebook,
    write_histogram,
)
from course_utils.tools.grading.results import (
    MARKER,
    NOTES,
    PART,
    PROBE_BYTES,
    STATUSES,
    GradeResult,
)
from course_utils.tools.grading.shards import MergeError, merge, parse_shard
from course_utils.tools.grading.supervise import grade_one

__all__ = ["MARKER", "NOTES", "PACKAGE_DIR", "PART", "PROBE_BYTES", "REUSED", "STATUSES",
           "GradeResult", "GradingLimits", "Intake", "Marking", "MarksError", "MergeError",
           "Mistake", "add_parts", "class_mistakes", "collect", "grade_folder", "grade_one",
           "kernel_threads", "main", "merge", "parse_shard", "read_marks", "read_notebook",
           "reconcile", "summary", "write_class_report", "write_feedback", "write_gradebook",
           "write_histogram"]

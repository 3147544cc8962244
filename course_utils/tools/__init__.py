"""The tools that run the course: none of this is part of the lesson.

- :mod:`course_utils.tools.grading`: ``course-grade``, grading a folder of submissions (its
  intake, the worker that runs a notebook, supervision, sandbox and memory cgroup, the result
  cache, judging, and the gradebook, feedback and histogram it writes)
- :mod:`course_utils.tools.solutions`: the worked solutions, read in one place: the
  ``### BEGIN SOLUTION`` markers and their regions, the cells that define each graded part, the
  shortcuts a student would try, and what a handout ships
- :mod:`course_utils.tools.exercise_format`: a solution made into a student's version
- :mod:`course_utils.tools.answer_search`: the one search for answers where students can read
  them (with :mod:`course_utils.tools.student_pages`, what they read, and
  :mod:`course_utils.tools.word_runs`, copied words found)
- :mod:`course_utils.tools.exercises`: ``course-exercises``, ``exercises/`` from ``solutions/``
- :mod:`course_utils.tools.nbgrader`: the same exercises as nbgrader source notebooks
- :mod:`course_utils.tools.book`: the course website (``python3 course.py book``)
- :mod:`course_utils.tools.handout`: ``course-handout``, the folder students get (no solutions)
- :mod:`course_utils.tools.execute`: ``course-execute``, re-running notebooks for their outputs
- :mod:`course_utils.tools.kernel`: ``course-kernel``, the Jupyter kernel the notebooks use

The exercise checks that students call, and that the grader judges with, are in
:mod:`course_utils.checks`.
"""

import sys

# Each tool reads notebooks, so imports nbformat, whose jsonschema imports rfc3987_syntax, and
# that module builds some thirty Earley parsers as it is imported: 1.5 s of CPU in every process,
# the grader's worker for each submission included (python-jsonschema/jsonschema#1428). It
# serves only to check the "iri" format, which no notebook or Jupyter schema uses, so the tools
# go without it; jsonschema then leaves that format unchecked.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]

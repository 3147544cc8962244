"""``python -m course_utils.tools.grading``: the same as ``course-grade``."""

from course_utils.tools.grading.cli import main

raise SystemExit(main())

"""Shared by the tests: load the functions a notebook defines, without a kernel."""

import functools
import subprocess
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]


def notebook_functions(path: Path) -> dict:
    """Execute the code cells of ``path`` that define functions or classes; return their
    namespace."""
    namespace: dict = {}
    exec("import re\nimport numpy as np\nimport sacrebleu\nimport matplotlib.pyplot as plt\nimport torch\n"
         "from course_utils.models import VanillaDecoder\nimport math\nfrom torch import nn\n"
         "from course_utils.models import AttentionDecoder, DecoderMemory, GRUDecoder\n"
         "from course_utils.attention import Attention", namespace)
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "code" and cell.source.lstrip().startswith(("def ", "class ")):
            exec(cell.source, namespace)
    return namespace


def judged_by_grader(check, student_fn, seed: int = 2024):
    """``check``'s verdict as ``course-grade`` reaches it: the probe's raw data through JSON
    (what leaves the kernel), judged on the grader's side."""
    import json

    return check.judge(json.loads(json.dumps(check.probe(student_fn, seed))), seed)


#: Seconds a bare kernel takes to start, import NumPy and the checks, and shut down on a quiet
#: 2-core machine of the course's kind (docs/benchmarks.md: 1.5 to 2.4 s): the reference that
#: the grader's time limits in the tests are scaled against.
QUIET_KERNEL_SECONDS = 2.0


@functools.cache
def machine_slowness() -> float:
    """How many times slower than :data:`QUIET_KERNEL_SECONDS` this machine starts a kernel
    right now (at least 1): measured once per test session, the way every graded notebook
    starts, so that a test's time limits keep their meaning on a loaded machine."""
    from course_utils.tools.grading.limits import bare_kernel_seconds

    return max(1.0, bare_kernel_seconds() / QUIET_KERNEL_SECONDS)


def calibrated_limits(cell_seconds: float, total_seconds: float, memory_mb: int = 3000):
    """Grading limits for a test, stated for a quiet machine and stretched by
    :func:`machine_slowness`: an honest notebook fits under them however busy the cores are,
    and a notebook that runs forever still runs past them."""
    from course_utils.tools.grading import GradingLimits

    slowness = machine_slowness()
    return GradingLimits(cell_seconds=cell_seconds * slowness,
                         total_seconds=total_seconds * slowness, memory_mb=memory_mb)


#: ``course.py`` as students run it, in the test's own Python: the environment step is
#: skipped (this Python is already the course's environment), everything else is course.py's.
LAUNCH = """\
import importlib.util, pathlib, sys
spec = importlib.util.spec_from_file_location("course", sys.argv[1])
course = importlib.util.module_from_spec(spec)
spec.loader.exec_module(course)
course.ensure_environment = lambda **kwargs: pathlib.Path(sys.executable)
raise SystemExit(course.main(sys.argv[2:]))
"""


def workers_of(folder) -> list[str]:
    """The processes whose command line names ``folder`` (a grader's worker names its notebook's
    copy, under the run's ``TMPDIR``, and its kernel a file in the same folder): one run's,
    whatever other tests run beside it."""
    listing = subprocess.run(["ps", "-ww", "-eo", "pid=,args="], capture_output=True,
                             text=True).stdout
    return [line for line in listing.splitlines() if str(folder) in line]

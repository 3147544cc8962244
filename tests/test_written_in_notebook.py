"""A graded function must be written in the notebook: code that a cell compiled from its own
text counts; code run from text made elsewhere (``exec``, ``eval``, ``compile`` under any file
name, ``types.FunctionType`` of another code object, a module file, a library's function under
the student's name) scores 0, in the student's kernel and under ``course-grade``."""

import json

import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from course_utils.checks.provenance import cell_digest, not_written_in_cells

#: Cells run in one kernel; the last prints, for each name, why it is not the notebook's own
#: code (null: it is).
CELLS = [
    "import functools, inspect, json, types\nimport numpy as np\n"
    "from course_utils.checks.provenance import cell_digest, not_written_in_cells\n"
    "import course_utils.attention",
    "def honest(x):\n    return helper(x) + 1\n\ndef helper(x):\n    return 2 * x",
    "class Honest:\n    def __call__(self, x):\n        return honest(x)",
    "honest_lambda = lambda x: x + 1\ndecorated = functools.lru_cache(honest)",
    "SOURCE = 'def from_text(x):\\n    return x + 1\\n'\n"
    "exec(SOURCE)\n"
    "exec(compile(SOURCE.replace('from_text', 'kernel_named'), '/tmp/ipykernel_1/1.py', 'exec'))\n"
    "exec(compile(SOURCE.replace('from_text', 'cell_named'), honest.__code__.co_filename,"
    " 'exec'))\n"
    "made = types.FunctionType(compile(SOURCE, 'x.py', 'exec').co_consts[0], globals())\n"
    "from_eval = eval('lambda x: x + 1')\n"
    "exec(inspect.getsource(course_utils.attention.softmax))\n"
    "library = course_utils.attention.softmax\n"
    "cached = functools.lru_cache(from_text)\n"
    "Built = type('Built', (), {'__call__': from_text})\n"
    "class Inherits(Built):\n    pass\n"
    "def calls_text(x):\n    return from_text(x)\n"
    "get_ipython().run_cell('def run_cell_made(x):\\n    return x', store_history=True)",
    "NAMES = ['honest', 'helper', 'Honest', 'honest_lambda', 'decorated', 'from_text',\n"
    "         'kernel_named', 'cell_named', 'made', 'from_eval', 'softmax', 'library',\n"
    "         'cached', 'Built', 'Inherits', 'calls_text', 'run_cell_made']\n"
    "DIGESTS = DIGESTS_HERE\n"
    "print(json.dumps({'any cell': {n: not_written_in_cells(globals()[n]) for n in NAMES},\n"
    "                  'its cells': {n: not_written_in_cells(globals()[n], DIGESTS)\n"
    "                                for n in NAMES}}))",
]


@pytest.fixture(scope="module")
def verdicts():
    digests = sorted(cell_digest(source) for source in CELLS[:-1])
    cells = [*CELLS[:-1], CELLS[-1].replace("DIGESTS_HERE", repr(digests))]
    notebook = new_notebook(cells=[new_code_cell(source) for source in cells])
    NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    text = "".join(o.get("text", "") for o in notebook.cells[-1].outputs)
    return json.loads(text)


WRITTEN = ["honest", "helper", "Honest", "honest_lambda", "decorated"]


@pytest.mark.parametrize("name", WRITTEN)
def test_code_a_cell_compiled_from_its_own_text_counts(verdicts, name):
    assert verdicts["any cell"][name] is None
    assert verdicts["its cells"][name] is None


@pytest.mark.parametrize("name, why", [
    ("from_text", "runs code from `<string>`"),
    ("kernel_named", "runs code from `1.py`"),
    ("cell_named", "compiled under a cell's name from other text"),
    ("made", "runs code from `x.py`"),
    ("from_eval", "runs code from `<string>`"),
    ("softmax", "runs code from `<string>`"),  # inspect.getsource of the library, exec'd
    ("library", "runs code from `attention.py`"),
    ("cached", "runs code from `<string>`"),
    ("Built", "runs code from `<string>`"),
    ("Inherits", "runs code from `<string>`"),  # a method of a base the notebook made
    ("calls_text", "(through `from_text`) runs code from `<string>`"),
])
def test_code_from_text_made_elsewhere_does_not_count(verdicts, name, why):
    for where in ("any cell", "its cells"):
        assert verdicts[where][name] and why in verdicts[where][name], (where, verdicts[where])


def test_a_cell_the_code_ran_itself_is_not_a_cell_of_the_notebook(verdicts):
    assert verdicts["any cell"]["run_cell_made"] is None  # in the kernel's history...
    assert "not from a cell of this notebook" in verdicts["its cells"]["run_cell_made"]


def test_outside_a_kernel_nothing_is_refused():
    namespace: dict = {}
    exec("def f(x):\n    return x", namespace)
    assert not_written_in_cells(namespace["f"]) is None


def test_cells_run_without_history_count_as_the_notebooks_own():
    """nbval (the test suite's notebook runner) and some front ends run cells with
    ``store_history=False``: the kernel still compiles and caches them under their cell names,
    so a function they define is the notebook's own, and exec'd text still is not."""
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3")
    printed: list[str] = []

    def keep(message: dict) -> None:
        if message["msg_type"] == "stream":
            printed.append(message["content"]["text"])

    try:
        for code in ("from course_utils.checks.provenance import not_written_in_cells",
                     "def honest(x):\n    return x + 1",
                     "exec('def from_text(x):\\n    return x + 1')",
                     "print([not_written_in_cells(honest), not_written_in_cells(from_text)])"):
            client.execute_interactive(code, store_history=False, timeout=60, output_hook=keep)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    text = "".join(printed)
    verdicts = text.splitlines()[-1]  # (under COURSE_QUICK the kernel says its scale first)
    assert verdicts.startswith("[None, ") and "not from a cell of this notebook" in verdicts, text

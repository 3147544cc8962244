"""In the student's own notebook, a check judges the code that runs: every function entered while
the graded function runs must be compiled from one of the notebook's cells, or be an installed
library's own code, or a method the standard library wrote for a class (a dataclass's
``__init__``, a named tuple's ``__new__``). An import in the answer's cell, a helper dataclass or
named tuple, a dataclass made inside the function pass; the library's source run by ``exec``
and reached through a dict, an attribute, ``getattr`` or a ``partial``, or compiled under an
installed file's name, scores 0 and says what ran."""

import json

import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

SETUP = ("import functools, inspect, json, sys\nimport numpy as np\n"
         "import course_utils.attention\nfrom course_utils.checks import e10_1\n"
         "_source = inspect.getsource(course_utils.attention)")

HONEST = {
    "import_in_cell": "import numpy as np\n\ndef import_in_cell(energies, mask):\n"
                      "    scores = np.where(mask, energies, -np.inf)\n"
                      "    exps = np.exp(scores - scores.max(axis=1, keepdims=True))\n"
                      "    return exps / exps.sum(axis=1, keepdims=True)",
    "with_records": "from collections import namedtuple\nfrom dataclasses import dataclass\n\n"
                    "@dataclass\nclass Shifted:\n    values: object\n\n"
                    "Pair = namedtuple('Pair', 'exps total')\n\n"
                    "def with_records(energies, mask):\n"
                    "    @dataclass\n    class Inner:\n        n: int\n"
                    "    Inner(len(energies))\n"
                    "    scores = np.where(mask, energies, -np.inf)\n"
                    "    shifted = Shifted(scores - scores.max(axis=1, keepdims=True))\n"
                    "    exps = np.exp(shifted.values)\n"
                    "    pair = Pair(exps, exps.sum(axis=1, keepdims=True))\n"
                    "    return pair.exps / pair.total",
}

#: The library's softmax (it takes an axis) over the masked energies: the right answer, taken.
_MASKED = "np.where(mask, energies, -np.inf), axis=1"
TAKEN = {
    "through_dict": "_ns = {}\nexec(_source, _ns)\n\ndef through_dict(energies, mask):\n"
                    f"    return _ns['softmax']({_MASKED})",
    "through_attribute": "_box = {}\nexec(_source, _box)\nclass Holder:\n    pass\n"
                         "holder = Holder()\nholder.f = _box['softmax']\n\n"
                         f"def through_attribute(energies, mask):\n    return holder.f({_MASKED})",
    "through_getattr": "def through_getattr(energies, mask):\n"
                       f"    return getattr(sys.modules['__main__'], 'holder').f({_MASKED})",
    "through_partial": "_p = {}\nexec(_source, _p)\n_partial = functools.partial(_p['softmax'])\n\n"
                       f"def through_partial(energies, mask):\n    return _partial({_MASKED})",
    "under_numpys_name": "_n = {}\nexec(compile(_source, np.__file__, 'exec'), _n)\n"
                         "_table = [_n['softmax']]\n\n"
                         f"def under_numpys_name(energies, mask):\n    return _table[0]({_MASKED})",
}


@pytest.fixture(scope="module")
def results():
    names = [*HONEST, *TAKEN]
    report = ("print(json.dumps({name: [r.points, r.message] for name, r in "
              f"((n, e10_1.check_softmax(globals()[n])) for n in {names!r})}}))")
    cells = [SETUP, *HONEST.values(), *TAKEN.values(), report]
    notebook = new_notebook(cells=[new_code_cell(source) for source in cells])
    NotebookClient(notebook, timeout=300, kernel_name="python3").execute()
    text = "".join(o.get("text", "") for o in notebook.cells[-1].outputs)
    return json.loads(text.splitlines()[-1])


@pytest.mark.parametrize("name", HONEST)
def test_honest_code_that_imports_or_uses_records_keeps_its_points(results, name):
    points, message = results[name]
    assert points == 2, message


@pytest.mark.parametrize("name", TAKEN)
def test_the_librarys_source_run_by_exec_scores_zero_whatever_the_route(results, name):
    points, message = results[name]
    assert points == 0 and "graded code must be written in this notebook's cells" in message
    assert "runs code from" in message and "softmax" in message, message

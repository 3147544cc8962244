"""What every test shares: matplotlib without a display, and a test run that writes nothing
into its user's own Jupyter, IPython, matplotlib, pip or npm state.

Jupyter's trust database and kernel connection files, IPython's history, matplotlib's font cache,
pip's cache and npm's logs all live under the user's home by default; the tests start kernels, servers,
``jupyter trust`` and ``pip install``, and everything they spawn inherits these variables, so
all of it goes into one temporary folder that is removed when the run ends. Kernels stay
findable: the course kernel is registered in the environment (``sys.prefix``), not in the
user's Jupyter folder.
"""

import os
import shutil
import tempfile

#: The run's stand-in for the user's state folders, set before anything reads them.
STATE = tempfile.mkdtemp(prefix="course-tests-state-")
STATE_VARIABLES = {
    "JUPYTER_CONFIG_DIR": "jupyter-config",
    "JUPYTER_DATA_DIR": "jupyter-data",
    "JUPYTER_RUNTIME_DIR": "jupyter-runtime",
    "IPYTHONDIR": "ipython",
    "MPLCONFIGDIR": "matplotlib",
    "PIP_CACHE_DIR": "pip-cache",
    "npm_config_cache": "npm-cache",  # a lab's language-server probe runs npm, which logs there
}
for _name, _folder in STATE_VARIABLES.items():
    os.environ[_name] = os.path.join(STATE, _folder)

# Under pytest-xdist two workers share the cores: each computes with one thread (and so does
# every kernel and process it starts), or PyTorch's threads in the two compete and both crawl.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_name, "1")

import matplotlib  # noqa: E402

matplotlib.use("Agg")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(STATE, ignore_errors=True)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT

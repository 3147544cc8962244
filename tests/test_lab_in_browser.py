"""A student's first minutes, in a real browser: ``course.py lab`` serves the course, notebook 1
opens in headless Chromium with the course kernel, Run All runs every cell through
JupyterLab's own menu, and no cell ends in an error.

Skipped where no Chromium and chromedriver are installed (CI installs them where it can). The
notebook that runs is a copy in a temporary folder under the git-ignored ``_build/``, and
JupyterLab's settings (autosave off) and workspaces live in a temporary folder too, so the
committed notebook and the user's own JupyterLab settings are never touched.
"""

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
from browser import free_port, headless_chromium, needs_chromium, screenshot_folder
from helpers import LAUNCH, ROOT

from course_utils.tools.kernel import KERNEL_NAME

pytestmark = needs_chromium

NOTEBOOK = ROOT / "notebooks" / "01_bottleneck_and_attention_by_hand.ipynb"


#: JupyterLab settings for the test only: no autosave (nothing is ever written back), no news.
LAB_SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False},
}

#: The notebook panel JupyterLab shows, read through the app it exposes to the page.
PANEL = "window.jupyterapp && window.jupyterapp.shell.currentWidget"
KERNEL_STATUS = f"""
const panel = {PANEL};
const kernel = panel && panel.sessionContext && panel.sessionContext.session
    && panel.sessionContext.session.kernel;
return kernel ? kernel.status : null;
"""
NOTEBOOK_STATE = f"""
const panel = {PANEL};
if (!panel || !panel.content || !panel.content.model) return null;
return JSON.stringify(panel.content.model.toJSON());
"""


def wait_for(what, condition, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def server_up(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


@pytest.fixture
def lab(tmp_path):
    """``course.py lab`` on a free port, serving a copy of notebook 1; yields (url, path)."""
    if importlib.util.find_spec("jupyterlab") is None:
        pytest.skip("JupyterLab is not installed")
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec(KERNEL_NAME)
    except NoSuchKernel:
        pytest.fail(f"the course kernel {KERNEL_NAME!r} is not registered: "
                    "python -m course_utils.tools.kernel")
    settings = tmp_path / "lab-settings"
    for name, values in LAB_SETTINGS.items():
        (settings / name).parent.mkdir(parents=True, exist_ok=True)
        (settings / name).write_text(json.dumps(values))
    # the lab serves the course folder; the copy sits in its git-ignored _build/
    (ROOT / "_build").mkdir(exist_ok=True)
    copy_dir = Path(tempfile.mkdtemp(prefix="browser-test-", dir=ROOT / "_build"))
    shutil.copy2(NOTEBOOK, copy_dir / NOTEBOOK.name)
    port = free_port()
    command = [sys.executable, "-c", LAUNCH, str(ROOT / "course.py"), "lab",
               f"--port={port}", "--no-browser", "--ServerApp.token=",
               "--ServerApp.password=", "--ServerApp.ip=127.0.0.1",
               "--LabApp.expose_app_in_browser=True",
               f"--LabApp.user_settings_dir={settings}",
               f"--LabApp.workspaces_dir={tmp_path / 'lab-workspaces'}"]
    env = {**os.environ, "COURSE_QUICK": "1", "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    log = (tmp_path / "lab.log").open("w")
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_for("the lab to answer", lambda: server.poll() is not None
                     or server_up(f"{base}/api/status"), timeout=90)
        except AssertionError:
            pass
        if server.poll() is not None or not server_up(f"{base}/api/status"):
            raise AssertionError("course.py lab did not start:\n"
                                 + (tmp_path / "lab.log").read_text()[-3000:])
        yield base, copy_dir.relative_to(ROOT) / NOTEBOOK.name
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)  # the server and the kernels it started
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
        log.close()
        shutil.rmtree(copy_dir, ignore_errors=True)


def test_notebook_1_runs_all_cells_in_jupyterlab_in_a_browser_without_an_error(lab, tmp_path):
    from selenium.webdriver.common.by import By

    base, path = lab
    committed = NOTEBOOK.read_bytes()
    expected = nbformat.read(NOTEBOOK, as_version=4)
    code_cells = sum(1 for c in expected.cells if c.cell_type == "code" and c.source.strip())
    figures = sum(1 for c in expected.cells if c.cell_type == "code"
                  for o in c.outputs if "image/png" in o.get("data", {}))
    driver = headless_chromium(1400, 1000)
    try:
        driver.get(f"{base}/lab/tree/{path.as_posix()}")
        wait_for("the notebook to open", lambda: driver.execute_script(NOTEBOOK_STATE), 120)
        wait_for("the course kernel to start",
                 lambda: driver.execute_script(KERNEL_STATUS) == "idle", 120)
        kernel_name = driver.execute_script(
            f"return {PANEL}.sessionContext.session.kernel.name")
        assert kernel_name == KERNEL_NAME
        time.sleep(1)  # the kernel's info has reached the notebook's metadata
        dirty = driver.execute_script(f"return {PANEL}.context.model.dirty")
        assert dirty is False, "the notebook opened already marked unsaved"
        # Run > Run All Cells, through the menu bar as a student would
        menu = next(item for item in driver.find_elements(By.CSS_SELECTOR, ".lm-MenuBar-item")
                    if item.text.strip() == "Run")
        menu.click()

        def run_all_item():
            return next((item for item in driver.find_elements(By.CSS_SELECTOR, ".lm-Menu-item")
                         if item.text.startswith("Run All Cells")), None)

        wait_for("Run All Cells in the Run menu", run_all_item, 20).click()

        def finished():
            state = json.loads(driver.execute_script(NOTEBOOK_STATE))
            code = [c for c in state["cells"] if c["cell_type"] == "code"
                    and "".join(c["source"]).strip()]
            done = all(c.get("execution_count") for c in code)
            return state if done and driver.execute_script(KERNEL_STATUS) == "idle" else None

        state = wait_for("every cell to run", finished, timeout=300)
        driver.save_screenshot(str(screenshot_folder(tmp_path) / "lab-notebook-1.png"))
        code = [c for c in state["cells"] if c["cell_type"] == "code"
                and "".join(c["source"]).strip()]
        assert len(code) == code_cells
        errors = [f"{o.get('ename')}: {o.get('evalue')}" for c in code for o in c["outputs"]
                  if o["output_type"] == "error"]
        assert not errors, errors
        tracebacks = [e.text[:500] for e in driver.find_elements(
            By.CSS_SELECTOR, '.jp-OutputArea-output[data-mime-type='
                             '"application/vnd.jupyter.stderr"') if "Traceback" in e.text]
        assert not tracebacks, tracebacks
        shown = driver.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output img")
        assert len(shown) >= figures, f"{len(shown)} figures shown; the notebook has {figures}"
    finally:
        driver.quit()
    assert NOTEBOOK.read_bytes() == committed  # the committed notebook was never written

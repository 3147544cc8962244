"""Ctrl-C on ``python3 course.py lab`` shuts Jupyter down cleanly: its kernels stopped, its
runtime files removed, no "Shut down this Jupyter server (y/[n])?" left on the terminal.

The lab runs for real (``course.py`` with its install skipped) on a pseudo-terminal that is its
controlling terminal, as in a shell; the test types Ctrl-C into that terminal, so the terminal
sends SIGINT to its foreground process group exactly as a student's keyboard would. About 15 s:
a server and one kernel start and stop."""

import fcntl
import json
import os
import pty
import signal
import socket
import subprocess
import sys
import termios
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from helpers import LAUNCH, ROOT

pytestmark = pytest.mark.skipif(os.name != "posix", reason="a pseudo-terminal is POSIX only")

TOKEN = "course-test-token"
#: "a few seconds" from Ctrl-C to the prompt (it takes about 2 s; the rest is a loaded machine).
EXIT_WITHIN = 15.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(what: str, condition, timeout: float, output: "Terminal") -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}; the terminal shows:\n"
                                 + output.text()[-3000:])
        time.sleep(0.2)


class Terminal:
    """A pseudo-terminal whose output is read continuously (so the program never blocks)."""

    def __init__(self) -> None:
        self.master, self.slave = pty.openpty()
        self.chunks: list[bytes] = []
        self.reader = threading.Thread(target=self._read, daemon=True)

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # EIO: every process holding the terminal has exited
                return
            if not chunk:
                return
            self.chunks.append(chunk)

    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", errors="replace")

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)


def controlling_terminal() -> None:
    """In the child, after ``setsid``: make its stdin (the pseudo-terminal) the session's
    controlling terminal, so that its Ctrl-C becomes SIGINT to the foreground process group."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def api(port: int, path: str, method: str = "GET") -> object:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                     headers={"Authorization": f"token {TOKEN}"},
                                     data=b"{}" if method == "POST" else None)
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read() or b"null")


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "\nState:\tZ" in status.read_text())


def processes_naming(text: str) -> list[int]:
    """Processes whose command line holds ``text`` (a kernel names its connection file)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to find the kernels")
def test_ctrl_c_shuts_the_lab_down_cleanly(tmp_path):
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    from course_utils.tools.kernel import KERNEL_NAME

    try:
        KernelSpecManager().get_kernel_spec(KERNEL_NAME)
    except NoSuchKernel:
        pytest.fail(f"the course kernel {KERNEL_NAME!r} is not registered: "
                    "python -m course_utils.tools.kernel")
    runtime = tmp_path / "runtime"
    port = free_port()
    # an empty home: whatever the lab, its kernel or trusting the notebooks writes outside the
    # folders tests/conftest.py points the state variables at would show up in it
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(runtime), "COURSE_QUICK": "1",
           "HOME": str(home)}
    env.pop("XDG_CACHE_HOME", None)
    env.pop("XDG_DATA_HOME", None)
    env.pop("XDG_CONFIG_HOME", None)
    terminal = Terminal()
    lab = subprocess.Popen(
        [sys.executable, "-c", LAUNCH, str(ROOT / "course.py"), "lab", f"--port={port}",
         "--no-browser", f"--ServerApp.token={TOKEN}", "--ServerApp.ip=127.0.0.1",
         f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}"],
        cwd=ROOT, env=env, stdin=terminal.slave, stdout=terminal.slave, stderr=terminal.slave,
        start_new_session=True, preexec_fn=controlling_terminal)
    os.close(terminal.slave)
    terminal.reader.start()
    server_pid = None
    try:
        wait_for("the lab's server file", lambda: lab.poll() is not None
                 or list(runtime.glob("jpserver-*.json")), 90, terminal)
        assert lab.poll() is None, "course.py lab exited:\n" + terminal.text()[-3000:]
        server = json.loads(next(runtime.glob("jpserver-*.json")).read_text())
        # the port it serves on: Jupyter moves to the next one when the free port chosen above
        # was taken meanwhile (by a test beside this one)
        server_pid = server["pid"]
        kernel = api(server["port"], "/api/kernels", "POST")
        connection = runtime / f"kernel-{kernel['id']}.json"
        wait_for("the kernel to be running", lambda: connection.exists()
                 and processes_naming(str(connection)), 60, terminal)
        assert {p.name for p in runtime.iterdir()} >= {
            f"jpserver-{server_pid}.json", f"jpserver-{server_pid}-open.html", connection.name}

        terminal.type(b"\x03")  # Ctrl-C, as the student types it
        pressed = time.monotonic()
        try:
            status = lab.wait(timeout=EXIT_WITHIN)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"course.py lab still runs {EXIT_WITHIN:g} s after Ctrl-C:\n"
                                 + terminal.text()[-3000:]) from None
        took = time.monotonic() - pressed
        terminal.reader.join(timeout=5)
        shown = terminal.text()
        assert status == 128 + signal.SIGINT, shown[-3000:]
        assert "Shut down this Jupyter server" not in shown, shown[-3000:]
        assert "Shutting down 1 kernel" in shown, shown[-3000:]  # Jupyter's own cleanup
        assert not running(server_pid), f"Jupyter (pid {server_pid}) still runs"
        assert not processes_naming(str(connection)), "the kernel still runs"
        # (jupyter_cookie_secret stays: it is meant to outlive the server)
        left = sorted(p.name for p in runtime.iterdir() if p.name.startswith(("jpserver-",
                                                                               "kernel-")))
        assert left == [], f"runtime files were left: {left}"
        assert not list(home.rglob("*")), "written into the user's home: " + ", ".join(
            str(p.relative_to(home)) for p in home.rglob("*"))
        assert took < EXIT_WITHIN
    finally:
        for pid in [lab.pid, server_pid, *processes_naming(str(runtime))]:
            if pid and running(pid):
                try:
                    os.killpg(os.getpgid(pid), signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        lab.wait(timeout=10)
        os.close(terminal.master)

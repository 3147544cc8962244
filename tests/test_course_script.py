"""course.py, behind the README's commands, passes the right things on.

Nothing here spawns a program by a bare name (a stock Debian or Ubuntu has ``python3`` but no
``python``): the environment's interpreter is this test's own, and whatever would install or
start something is mocked; the tests that run a child run ``sys.executable``."""

import importlib.util
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from unittest import mock

import pytest
from helpers import ROOT

spec = importlib.util.spec_from_file_location("course", ROOT / "course.py")
course = importlib.util.module_from_spec(spec)
spec.loader.exec_module(course)


PYTHON = Path(sys.executable)


def call(argv):
    """``course.main(argv)`` with nothing installed, trusted or started; returns ``(use_venv,
    the call that would have run: run_lab's or run's)``."""
    with (
        mock.patch.object(course, "ensure_environment", return_value=PYTHON) as env,
        mock.patch.object(course, "run") as run,
        mock.patch.object(course, "run_lab", return_value=0) as run_lab,
        mock.patch.object(course, "trust_notebooks"),
    ):
        assert course.main(argv) == 0
    return env.call_args.kwargs["use_venv"], (run_lab if argv_command(argv) == "lab"
                                              else run).call_args


def argv_command(argv):
    return next(arg for arg in argv if arg != "--no-venv")


@pytest.mark.parametrize("argv", [["lab", "--no-venv"], ["--no-venv", "lab"]])
def test_no_venv_is_taken_wherever_it_stands(argv):
    use_venv, run_lab = call(argv)
    assert use_venv is False
    assert "--no-venv" not in run_lab.args[1]


def test_lab_serves_the_course_folder_and_opens_the_notebooks():
    _, run_lab = call(["lab", "--port", "8899"])
    assert run_lab.args == (PYTHON, ["--port", "8899"])
    command = course.lab_command(PYTHON, ["--port", "8899"])
    assert command[:4] == [str(PYTHON), "-m", "jupyter", "lab"]
    assert f"--ServerApp.root_dir={ROOT}" in command
    assert command[-2:] == ["--port", "8899"]


def test_lab_allows_root_only_when_running_as_root(monkeypatch):
    monkeypatch.setattr(course.os, "geteuid", lambda: 0)
    assert "--allow-root" in course.lab_command(PYTHON, [])
    monkeypatch.setattr(course.os, "geteuid", lambda: 1000)
    assert "--allow-root" not in course.lab_command(PYTHON, [])


def test_test_runs_pytest_at_smoke_scale_unless_told_otherwise(monkeypatch):
    monkeypatch.delenv("COURSE_QUICK", raising=False)
    use_venv, run = call(["test", "-k", "attention"])
    assert use_venv is True
    assert run.args[1:] == ("-m", "pytest", "-k", "attention")
    assert run.kwargs["env"]["COURSE_QUICK"] == "1"
    monkeypatch.setenv("COURSE_QUICK", "0")
    assert call(["test"])[1].kwargs["env"]["COURSE_QUICK"] == "0"


def test_unknown_command_is_refused():
    with pytest.raises(SystemExit):
        course.main(["frobnicate"])


def test_lab_offers_the_course_kernel_by_default_and_trusts_the_notebooks():
    from course_utils.tools.kernel import KERNEL_NAME

    assert course.KERNEL_NAME == KERNEL_NAME
    with (mock.patch.object(course, "ensure_environment", return_value=PYTHON),
          mock.patch.object(course, "run_lab", return_value=0),
          mock.patch.object(course, "trust_notebooks") as trust):
        assert course.main(["lab"]) == 0
    trust.assert_called_once_with(PYTHON)
    command = course.lab_command(PYTHON, [])
    assert f"--MappingKernelManager.default_kernel_name={KERNEL_NAME}" in command
    assert f"--KernelSpecManager.allowed_kernelspecs={KERNEL_NAME}" in command


def test_trusting_signs_every_course_notebook(tmp_path, monkeypatch):
    with mock.patch.object(course.subprocess, "run") as run:
        course.trust_notebooks(PYTHON)
    args = run.call_args.args[0]
    assert args[0] == str(PYTHON)
    assert args[1:4] == ["-m", "jupyter", "trust"]
    assert any(a.endswith("05_reading_attention_heatmaps.ipynb") for a in args)
    assert any(a.endswith("E10.2-vanilla-vs-attention.ipynb") for a in args)


def torch_install(monkeypatch, *, platform="linux", gpu=False, has_torch=False,
                  index_up=True, pip_fails=False):
    monkeypatch.setattr(course.sys, "platform", platform)
    monkeypatch.setattr(course, "nvidia_gpu_present", lambda: gpu)
    monkeypatch.setattr(course, "reachable", lambda url, timeout=5.0: index_up)
    probe = mock.Mock(returncode=0 if has_torch else 1)
    calls = []

    def fake_run(*cmd, **kwargs):
        calls.append(cmd)
        if pip_fails:
            raise course.subprocess.CalledProcessError(1, cmd)

    with (mock.patch.object(course.subprocess, "run", return_value=probe),
          mock.patch.object(course, "run", side_effect=fake_run)):
        course.install_torch(PYTHON)
    return calls


def test_a_linux_machine_without_a_gpu_gets_the_cpu_build(monkeypatch, capsys):
    calls = torch_install(monkeypatch)
    assert calls == [(PYTHON, "-m", "pip", "install", "torch", "--index-url",
                      course.TORCH_CPU_INDEX)]
    for kwargs in [{"gpu": True}, {"platform": "darwin"}, {"has_torch": True}]:
        assert torch_install(monkeypatch, **kwargs) == []  # the default build, or keep it


def test_an_unreachable_cpu_index_falls_back_to_the_default_with_a_note(monkeypatch, capsys):
    assert torch_install(monkeypatch, index_up=False) == []
    assert "cannot be reached; installing the default PyTorch build" in capsys.readouterr().out
    torch_install(monkeypatch, pip_fails=True)
    assert "failed; installing the default PyTorch build" in capsys.readouterr().out


def test_the_reachability_probe_is_quick_and_says_no_for_a_closed_port():
    import time

    start = time.perf_counter()
    assert course.reachable("http://127.0.0.1:9/", timeout=3) is False
    assert course.reachable("not a url") is False
    assert time.perf_counter() - start < 5


def test_book_builds_the_site_with_the_book_extra_installed():
    with (mock.patch.object(course, "ensure_environment", return_value=PYTHON) as env,
          mock.patch.object(course, "run") as run):
        assert course.main(["book", "--no-solutions"]) == 0
    assert env.call_args.kwargs == {"use_venv": True, "extras": ("book",), "optional": ()}
    assert run.call_args.args == (PYTHON, "-m", "course_utils.tools.book", "--no-solutions")


def test_test_installs_the_test_tools_and_the_site_builder_if_it_can():
    with (mock.patch.object(course, "ensure_environment", return_value=PYTHON) as env,
          mock.patch.object(course, "run")):
        course.main(["test"])  # the tests build the site too: the book extra if it can be had
    assert env.call_args.kwargs == {"use_venv": True, "extras": ("test",),
                                    "optional": ("book",)}


@pytest.mark.parametrize("command", ["lab", "setup"])
def test_a_student_gets_no_extra(command):
    with (mock.patch.object(course, "ensure_environment", return_value=PYTHON) as env,
          mock.patch.object(course, "run_lab", return_value=0),
          mock.patch.object(course, "trust_notebooks")):
        assert course.main([command]) == 0
    assert env.call_args.kwargs == {"use_venv": True, "extras": (), "optional": ()}


def test_the_test_tools_are_an_extra_not_a_dependency():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {dep.split(">")[0].split("=")[0].strip() for dep in project["dependencies"]}
    tools = {"pytest", "nbval", "ruff", "mypy", "selenium", "sphinx"}
    assert not names & tools, f"students would install {sorted(names & tools)}"
    extras = {dep.split(">")[0].strip() for dep in project["optional-dependencies"]["test"]}
    assert tools - {"sphinx"} <= extras


@pytest.mark.parametrize("argv", [["--help"], ["lab", "--help"], ["lab", "-h"],
                                  ["test", "-k", "x", "--help"], ["setup", "--help"],
                                  ["book", "-h"], ["--no-venv", "lab", "--help"]])
def test_help_answers_without_installing_anything(argv, capsys):
    with (mock.patch.object(course, "ensure_environment") as env,
          mock.patch.object(course.subprocess, "run") as spawned,
          mock.patch.object(course.subprocess, "Popen") as started):
        try:
            status = course.main(argv)
        except SystemExit as done:  # argparse's own --help
            status = done.code
    assert status == 0
    env.assert_not_called()
    spawned.assert_not_called()
    started.assert_not_called()
    shown = capsys.readouterr().out
    if argv[0] == "--help":
        assert all(name in shown for name in ("lab", "test", "setup", "book"))
    else:
        command = argv_command(argv)
        assert shown.startswith(f"usage: python3 course.py {command}")
        assert {"lab": "go to JupyterLab", "test": "go to pytest", "setup": "no options",
                "book": "--no-solutions"}[command] in shown


@pytest.mark.parametrize("argv", [[], ["--no-venv"]])
def test_no_command_lists_the_commands_a_line_each(argv, capsys):
    """``python3 course.py`` alone names every command with what it does, and calls nothing
    required (argparse said "the following arguments are required: COMMAND, OPTIONS")."""
    with mock.patch.object(course, "ensure_environment") as env:
        assert course.main(argv) == 2
    env.assert_not_called()
    shown = capsys.readouterr()
    lines = shown.out.splitlines()
    for name, (summary, _) in course.COMMANDS.items():
        assert any(line.startswith(f"  {name:7}{summary[:30]}") for line in lines), name
    assert "required" not in shown.out + shown.err and "OPTIONS" not in shown.err


def test_the_lab_and_its_tools_are_installed_with_the_course(tmp_path, monkeypatch):
    """course.py installs the lessons' dependencies and the `lab` extra (JupyterLab, the
    kernel, widgets, nbclient): the core alone is what Colab installs."""
    monkeypatch.setenv("COURSE_VENV", str(tmp_path / "venv"))
    monkeypatch.setattr(course.venv.EnvBuilder, "create", lambda self, folder: None)
    with (mock.patch.object(course, "run") as run,
          mock.patch.object(course, "install_torch")):
        course.ensure_environment(use_venv=True)
    assert ("-m", "pip", "install", "-e", f"{ROOT}[lab]") in [c.args[1:] for c in
                                                               run.call_args_list]


def test_setup_installs_and_says_so_and_takes_no_options(capsys):
    _, run = call(["setup"])
    assert run is None  # nothing is started
    assert "environment is ready" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        course.main(["setup", "--port", "1"])


def test_an_interrupted_venv_creation_leaves_no_half_built_venv(tmp_path, monkeypatch, capsys):
    env = tmp_path / "venv"
    monkeypatch.setenv("COURSE_VENV", str(env))

    def interrupted(self, folder):
        Path(folder, "bin").mkdir(parents=True)  # halfway
        raise KeyboardInterrupt

    monkeypatch.setattr(course.venv.EnvBuilder, "create", interrupted)
    with mock.patch.object(course, "run") as run:
        assert course.main(["setup"]) == 130
    run.assert_not_called()
    assert not env.exists()
    assert "Interrupted" in capsys.readouterr().err


def run_lab_with(monkeypatch, tmp_path, child_code, signum, *, stop_timeout=30.0):
    """run_lab on a stand-in child (``sys.executable -c child_code READY``); ``signum`` is sent
    to this process once the child has written READY (its signal handlers are set). Returns
    (status, seconds, the child)."""
    ready = tmp_path / "ready"
    monkeypatch.setattr(course, "lab_command", lambda python, extra: [
        sys.executable, "-c", child_code, str(ready)])
    monkeypatch.setattr(course, "STOP_TIMEOUT", stop_timeout)
    started = []
    real_popen = subprocess.Popen

    def signal_when_ready():
        end = time.monotonic() + 30
        while not ready.exists() and time.monotonic() < end:
            time.sleep(0.05)
        os.kill(os.getpid(), signum)

    def popen(*args, **kwargs):
        started.append(real_popen(*args, **kwargs))
        threading.Thread(target=signal_when_ready, daemon=True).start()
        return started[-1]

    monkeypatch.setattr(course.subprocess, "Popen", popen)
    begin = time.monotonic()
    status = course.run_lab(PYTHON, [])
    return status, time.monotonic() - begin, started[0]


STOPS_ON_SIGTERM = ("import pathlib, signal, sys, time\n"
                    "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n"
                    "signal.signal(signal.SIGINT, lambda *a: sys.exit(3))\n"
                    "pathlib.Path(sys.argv[1]).touch()\n"
                    "time.sleep(60)")
IGNORES_SIGTERM = ("import pathlib, signal, sys, time\n"
                   "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                   "pathlib.Path(sys.argv[1]).touch()\n"
                   "time.sleep(60)")


@pytest.mark.skipif(os.name != "posix", reason="signals to a process group: POSIX")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_the_lab_is_asked_to_stop_with_sigterm(monkeypatch, tmp_path, signum):
    """Ctrl-C, or SIGTERM to course.py, reaches Jupyter as one SIGTERM (Jupyter's clean stop;
    tests/test_lab_interrupt.py checks it on a real server)."""
    # what was in place before: Python's own Ctrl-C handler, or SIG_IGN where this test process
    # was started in the background of a script (the shell then ignores SIGINT for it)
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    status, took, child = run_lab_with(monkeypatch, tmp_path, STOPS_ON_SIGTERM, signum)
    assert status == 128 + signum
    assert child.returncode == 0  # it got SIGTERM, not SIGINT, and exited by itself
    assert took < 10
    assert {sig: signal.getsignal(sig) for sig in before} == before  # handlers restored


@pytest.mark.skipif(os.name != "posix", reason="signals to a process group: POSIX")
def test_a_lab_that_does_not_stop_is_killed_after_the_timeout(monkeypatch, tmp_path, capsys):
    status, took, child = run_lab_with(monkeypatch, tmp_path, IGNORES_SIGTERM, signal.SIGINT,
                                       stop_timeout=1.0)
    assert status == 130
    assert child.returncode == -signal.SIGKILL
    assert took < 10
    assert "did not stop within 1 s: killing it" in capsys.readouterr().err


def test_an_extra_is_installed_once_per_pyproject_and_a_failure_is_said(tmp_path, capsys):
    stamp = tmp_path / course.STAMP_NAME
    stamp.write_text("abc\n")
    with mock.patch.object(course, "run") as run:
        course.install_extra(PYTHON, stamp, "book", required=True)
        course.install_extra(PYTHON, stamp, "book", required=True)  # done already
    assert run.call_count == 1
    assert run.call_args.args == (PYTHON, "-m", "pip", "install", "-e", f"{ROOT}[book]")
    stamp.write_text("def\n")  # pyproject.toml changed
    failing = mock.patch.object(course, "run",
                                side_effect=course.subprocess.CalledProcessError(1, "pip"))
    with failing, pytest.raises(SystemExit, match="installing the 'book' dependencies"):
        course.install_extra(PYTHON, stamp, "book", required=True)
    with failing:
        course.install_extra(PYTHON, stamp, "book", required=False)
    assert "could not be installed; the tests that need them will be skipped" in (
        capsys.readouterr().out)

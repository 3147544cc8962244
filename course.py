#!/usr/bin/env python3
"""Set up and run the Day 10 course: the commands of the README.

    python3 course.py lab     # open the course in JupyterLab
    python3 course.py test    # run every test: unit tests and the notebooks (nbval)
                              # (not in a student handout, which has no tests/)
    python3 course.py setup   # only create / update the environment (e.g. while online,
                              # before a class without internet)
    python3 course.py book    # build the course website (_build/book/html); --no-solutions

Each creates a virtual environment in .venv on first use, installs the course into it
(pip install -e ".[lab]": what the notebooks need and JupyterLab, nothing more) and registers
its Jupyter kernel;
later runs reinstall only when pyproject.toml has changed. ``test`` adds the ``test`` extra
(pytest, nbval, the linters, the browser tests' tools) and, where it can, the ``book`` extra;
``book`` adds the ``book`` extra. On Linux without an NVIDIA GPU, PyTorch comes from its CPU
wheel index (a few hundred MB instead of several GB of CUDA libraries); where that index cannot
be reached, from the default index, with a one-line note. ``--help`` after a command says what
it passes on, without installing anything. Standard library only, so it runs before anything is
installed.
Set COURSE_VENV to use another folder; run with --no-venv to use the current Python
(e.g. the conda environment from environment.yml).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import urllib.request
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
STAMP_NAME = ".course-installed"
KERNEL_NAME = "bahdanau-day10"  # course_utils.tools.kernel.KERNEL_NAME (not yet importable)
#: PyTorch's documented index of CPU-only wheels (https://pytorch.org/get-started/locally/).
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def venv_python(env: Path) -> Path:
    scripts = "Scripts" if os.name == "nt" else "bin"
    return env / scripts / ("python.exe" if os.name == "nt" else "python")


def run(*cmd: object, **kwargs) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True, **kwargs)


def nvidia_gpu_present() -> bool:
    """An NVIDIA driver is loaded (or its tool is installed): the default PyTorch build fits."""
    return Path("/proc/driver/nvidia/version").exists() or shutil.which("nvidia-smi") is not None


def reachable(url: str, timeout: float = 5.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def install_torch(python: Path) -> None:
    """Before the course's own install: PyTorch's CPU build on Linux without an NVIDIA GPU.

    Elsewhere (a GPU, macOS, Windows) or when PyTorch is already there, nothing happens and
    ``pip install -e ".[lab]"`` brings the default build. ``COURSE_TORCH_INDEX`` names another
    index.
    """
    if not sys.platform.startswith("linux") or nvidia_gpu_present():
        return
    if subprocess.run([str(python), "-c", "import torch"], capture_output=True).returncode == 0:
        return
    index = os.environ.get("COURSE_TORCH_INDEX", TORCH_CPU_INDEX)
    if not reachable(index):
        print(f"note: PyTorch's CPU wheel index ({index}) cannot be reached; installing the "
              "default PyTorch build instead (a larger download)", flush=True)
        return
    try:
        run(python, "-m", "pip", "install", "torch", "--index-url", index)
    except subprocess.CalledProcessError:
        print(f"note: installing PyTorch from {index} failed; installing the default PyTorch "
              "build instead (a larger download)", flush=True)


def trust_notebooks(python: Path) -> None:
    """Mark the course's own notebooks trusted, so that saved widget views show (a fresh
    clone's notebooks are untrusted). Best effort: the lab opens whatever happens."""
    notebooks = sorted(str(p) for folder in ("notebooks", "exercises", "solutions")
                       for p in (ROOT / folder).glob("*.ipynb"))
    subprocess.run([str(python), "-m", "jupyter", "trust", *notebooks],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def ensure_environment(use_venv: bool, extras: tuple[str, ...] = (),
                       optional: tuple[str, ...] = ()) -> Path:
    """Create .venv if needed, install the course when pyproject.toml changed; return python.

    ``extras`` and ``optional`` name optional dependencies of pyproject.toml to install as well
    (each once per pyproject.toml). Where one of ``extras`` cannot be installed, that is an
    error; where one of ``optional`` cannot, a one-line note (the tests that need it are then
    skipped). A virtual environment whose creation is interrupted is removed, so that the next
    run starts it afresh instead of using a half-built one.
    """
    if use_venv:
        env = Path(os.environ.get("COURSE_VENV", ROOT / ".venv"))
        python = venv_python(env)
        if not python.exists():
            print(f"Creating the course environment in {env} ...", flush=True)
            fresh = not env.exists()
            try:
                venv.EnvBuilder(with_pip=True).create(env)
            except BaseException:
                if fresh:
                    shutil.rmtree(env, ignore_errors=True)
                raise
        stamp = env / STAMP_NAME
    else:
        python = Path(sys.executable)
        stamp = ROOT / "build" / STAMP_NAME
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if not stamp.exists() or stamp.read_text().strip() != wanted:
        print("Installing the course and its dependencies (first run takes a few minutes) ...")
        run(python, "-m", "pip", "install", "--upgrade", "pip")
        install_torch(python)
        # the lessons' own dependencies and the lab's (pyproject.toml's `lab` extra)
        run(python, "-m", "pip", "install", "-e", f"{ROOT}[lab]")
        run(python, "-m", "course_utils.tools.kernel")
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(wanted + "\n")
    for extra in extras:
        install_extra(python, stamp, extra, required=True)
    for extra in optional:
        install_extra(python, stamp, extra, required=False)
    return python


def install_extra(python: Path, stamp: Path, extra: str, *, required: bool) -> None:
    """``pip install -e .[extra]``, unless it was done for this pyproject.toml already."""
    extra_stamp = stamp.with_name(f"{STAMP_NAME}-{extra}")
    wanted = stamp.read_text()
    if extra_stamp.exists() and extra_stamp.read_text() == wanted:
        return
    print(f"Installing the course's optional '{extra}' dependencies ...", flush=True)
    try:
        run(python, "-m", "pip", "install", "-e", f"{ROOT}[{extra}]")
    except subprocess.CalledProcessError:
        if required:
            raise SystemExit(f"error: installing the '{extra}' dependencies of pyproject.toml "
                             "failed (pip's messages are above)") from None
        print(f"note: the '{extra}' dependencies could not be installed; the tests that need "
              "them will be skipped", flush=True)
        return
    extra_stamp.write_text(wanted)


def lab_command(python: Path, extra: list[str]) -> list[str]:
    """``jupyter lab`` on the course folder, offering the course kernel only."""
    # Jupyter refuses root unless told; containers and cloud machines often run as root.
    as_root = ["--allow-root"] if getattr(os, "geteuid", lambda: 1)() == 0 else []
    return [str(python), "-m", "jupyter", "lab", f"--ServerApp.root_dir={ROOT}",
            "--LabApp.default_url=/lab/tree/notebooks",
            # new notebooks get the course kernel, the only one the launcher offers
            f"--MappingKernelManager.default_kernel_name={KERNEL_NAME}",
            f"--KernelSpecManager.allowed_kernelspecs={KERNEL_NAME}",
            *as_root, *extra]


#: Seconds JupyterLab gets to shut its kernels down after Ctrl-C before it is killed.
STOP_TIMEOUT = 30.0
#: The signals that stop the lab: Ctrl-C, a polite kill, the terminal closing.
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                     if hasattr(signal, name))


def run_lab(python: Path, extra: list[str]) -> int:
    """Run JupyterLab until it exits; Ctrl-C shuts it down cleanly. Returns the exit status.

    On a Ctrl-C of its own, Jupyter asks "Shut down this Jupyter server (y/[n])?", and killed, it
    leaves its kernels and runtime files behind. So Jupyter runs in a session of its own, where
    the terminal's Ctrl-C does not reach it, and this script, which gets it, asks Jupyter to stop
    with SIGTERM: Jupyter shuts its kernels down and removes its runtime files
    (``jpserver-*.json``, ``jpserver-*-open.html``, the kernels' connection files), asking
    nothing. SIGTERM and SIGHUP sent to this script are passed on the same way. Should Jupyter
    not stop within :data:`STOP_TIMEOUT` seconds, it is killed.
    """
    command = lab_command(python, extra)
    print("+", " ".join(command), flush=True)
    if os.name != "posix":  # Windows: the console's Ctrl-C reaches Jupyter, which asks nothing
        try:
            return subprocess.run(command, cwd=ROOT).returncode
        except KeyboardInterrupt:
            return 130
    received: list[int] = []
    child: list[subprocess.Popen] = []
    deadline: list[float] = []

    def stop(signum: int, frame: object) -> None:
        if not received:
            print("\nStopping JupyterLab: shutting down its kernels ...", file=sys.stderr,
                  flush=True)
            deadline.append(time.monotonic() + STOP_TIMEOUT)
            if child:
                child[0].send_signal(signal.SIGTERM)
        received.append(signum)

    previous = {sig: signal.signal(sig, stop) for sig in STOP_SIGNALS}
    try:
        child.append(subprocess.Popen(command, cwd=ROOT, start_new_session=True))
        if received:  # the signal came while Jupyter was being started
            child[0].send_signal(signal.SIGTERM)
        while True:
            try:
                status = child[0].wait(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                if deadline and time.monotonic() > deadline[0]:
                    print(f"JupyterLab did not stop within {STOP_TIMEOUT:g} s: killing it "
                          "(its kernels may still run)", file=sys.stderr, flush=True)
                    child[0].kill()
                    deadline.clear()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 128 + received[0] if received else status


#: ``course.py COMMAND --help``: what the command does and where its options go. Answered
#: without installing anything.
COMMANDS = {
    "lab": ("open the course in JupyterLab",
            "Options after 'lab' go to JupyterLab, e.g. --port 8899 or --no-browser (all of them: "
            ".venv/bin/python -m jupyter lab --help, once the environment exists). Ctrl-C shuts "
            "JupyterLab down: its kernels are stopped and its runtime files removed."),
    "test": ("run the tests: unit tests, then the notebooks under nbval at smoke-test scale",
             "Options after 'test' go to pytest, e.g. -k attention, -x or a test file (all of "
             "them: .venv/bin/python -m pytest --help, once the environment exists). Sets "
             "COURSE_QUICK=1 unless it is set. Installs the course's 'test' extra (pytest, "
             "nbval, ruff, mypy, selenium) and, where it can, its 'book' "
             "extra. Only in the course's repository: a student handout has no tests/."),
    "setup": ("only create or update the environment, e.g. while online before a class "
              "without internet", "Takes no options."),
    "book": ("build the course website into _build/book/html",
             "Options after 'book' go to the site builder: --no-solutions leaves the worked "
             "solutions out, --out DIR writes elsewhere. Installs the course's 'book' extra "
             "(Sphinx, MyST-NB, the Sphinx Book Theme)."),
}
#: The optional dependencies of pyproject.toml each command installs: (required, if possible).
EXTRAS = {"test": (("test",), ("book",)), "book": (("book",), ())}


def command_help(command: str) -> str:
    summary, details = COMMANDS[command]
    return "\n\n".join([f"usage: python3 course.py {command} [--no-venv] [OPTIONS ...]",
                        textwrap.fill(f"{summary[0].upper()}{summary[1:]}.", 79),
                        textwrap.fill(details, 79),
                        "--no-venv: install into and use the current Python instead of .venv"])


def usage() -> str:
    """What ``python3 course.py`` alone prints: the commands, one line each."""
    lines = ["usage: python3 course.py COMMAND [--no-venv] [OPTIONS ...]", "", "commands:"]
    lines += [textwrap.fill(summary, 79, break_on_hyphens=False, initial_indent=f"  {name:7}",
                            subsequent_indent=" " * 9) for name, (summary, _) in COMMANDS.items()]
    lines += ["", "python3 course.py lab opens the course; python3 course.py COMMAND --help",
              "says where a command's options go, without installing anything."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # --no-venv may stand anywhere; everything else after the command goes to jupyter / pytest.
    use_venv = "--no-venv" not in argv
    argv = [arg for arg in argv if arg != "--no-venv"]
    if not argv:  # no command: what the commands are, one line each, and how to run one
        print(usage())
        return 2
    parser = argparse.ArgumentParser(
        prog="python3 course.py",
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="commands:\n" + "\n".join(
            textwrap.fill(summary, 79, break_on_hyphens=False, initial_indent=f"  {name:7}",
                          subsequent_indent=" " * 9)
            for name, (summary, _) in COMMANDS.items())
        + "\n\nCOMMAND --help says where its options go, without installing anything.\n"
          "--no-venv: install into and use the current Python instead of .venv",
    )
    parser.add_argument("command", choices=list(COMMANDS), metavar="COMMAND",
                        help=", ".join(COMMANDS) + " (below)")
    parser.add_argument("extra", nargs=argparse.REMAINDER, metavar="OPTIONS",
                        help="passed on to jupyter / pytest / the site builder")
    args = parser.parse_args(argv)
    if {"-h", "--help"} & set(args.extra):
        print(command_help(args.command))
        return 0
    if args.command == "setup" and args.extra:
        parser.error(f"setup takes no options; got {' '.join(args.extra)}")
    if args.command == "test" and not (ROOT / "tests").is_dir():
        # a student handout (course-handout) ships the notebooks and exercises, not the tests
        print(f"error: the course's tests are not part of this folder ({ROOT} has no tests/): "
              "they come with the course's repository. In a student handout, each exercise's "
              "check cells are the tests; python3 course.py lab opens them.", file=sys.stderr)
        return 2
    required, optional = EXTRAS.get(args.command, ((), ()))
    try:
        python = ensure_environment(use_venv=use_venv, extras=required, optional=optional)
        if args.command == "setup":
            print(f"The course environment is ready ({python}); python3 course.py lab opens "
                  "the course.")
        elif args.command == "lab":
            trust_notebooks(python)
            return run_lab(python, args.extra)
        elif args.command == "test":
            env = dict(os.environ)
            env.setdefault("COURSE_QUICK", "1")  # smoke-test scale unless told otherwise
            run(python, "-m", "pytest", *args.extra, cwd=ROOT, env=env)
        elif args.command == "book":
            run(python, "-m", "course_utils.tools.book", *args.extra, cwd=ROOT)
    except subprocess.CalledProcessError as error:
        return error.returncode
    except KeyboardInterrupt:
        print("\nInterrupted. An unfinished install is finished on the next run.",
              file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

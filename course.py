#!/usr/bin/env python3
"""Set up and run the Day 10 course: the two commands of the README.

    python3 course.py lab     # open the course in JupyterLab
    python3 course.py test    # run every test: unit tests and the notebooks (nbval)
                              # (not in a student handout, which has no tests/)
    python3 course.py setup   # only create / update the environment
    python3 course.py book    # build the course website (_build/book/html); --no-solutions

Both create a virtual environment in .venv on first use, install the course into it
(pip install -e .) and register its Jupyter kernel; later runs reinstall only when
pyproject.toml has changed. On Linux without an NVIDIA GPU, PyTorch comes from its CPU wheel
index (a few hundred MB instead of several GB of CUDA libraries); where that index cannot be
reached, from the default index, with a one-line note. Standard library only, so it runs before
anything is installed.
Set COURSE_VENV to use another folder; run with --no-venv to use the current Python
(e.g. the conda environment from environment.yml).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
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
    ``pip install -e .`` brings the default build. ``COURSE_TORCH_INDEX`` names another index.
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
                       extras_required: bool = True) -> Path:
    """Create .venv if needed, install the course when pyproject.toml changed; return python.

    ``extras`` names optional dependencies of pyproject.toml to install as well (once per
    pyproject.toml); where they cannot be installed, that is an error if ``extras_required``,
    otherwise a one-line note (the tests that need them are then skipped).
    """
    if use_venv:
        env = Path(os.environ.get("COURSE_VENV", ROOT / ".venv"))
        python = venv_python(env)
        if not python.exists():
            print(f"Creating the course environment in {env} ...", flush=True)
            venv.EnvBuilder(with_pip=True).create(env)
        stamp = env / STAMP_NAME
    else:
        python = Path(sys.executable)
        stamp = ROOT / "build" / STAMP_NAME
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if not stamp.exists() or stamp.read_text().strip() != wanted:
        print("Installing the course and its dependencies (first run takes a few minutes) ...")
        run(python, "-m", "pip", "install", "--upgrade", "pip")
        install_torch(python)
        run(python, "-m", "pip", "install", "-e", str(ROOT))
        run(python, "-m", "course_utils.tools.kernel")
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(wanted + "\n")
    for extra in extras:
        install_extra(python, stamp, extra, required=extras_required)
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


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # --no-venv may stand anywhere; everything else after the command goes to jupyter / pytest.
    use_venv = "--no-venv" not in argv
    argv = [arg for arg in argv if arg != "--no-venv"]
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="--no-venv: install into and use the current Python instead of .venv",
    )
    parser.add_argument("command", choices=["lab", "test", "setup", "book"])
    parser.add_argument("extra", nargs=argparse.REMAINDER,
                        help="passed on to jupyter / pytest / the site builder")
    args = parser.parse_args(argv)
    if args.command == "test" and not (ROOT / "tests").is_dir():
        # a student handout (course-handout) ships the notebooks and exercises, not the tests
        print(f"error: the course's tests are not part of this folder ({ROOT} has no tests/): "
              "they come with the course's repository. In a student handout, each exercise's "
              "check cells are the tests; python3 course.py lab opens them.", file=sys.stderr)
        return 2
    # the site needs the book extra; the tests build it too, so they install it if they can
    extras = ("book",) if args.command in ("book", "test") else ()
    python = ensure_environment(use_venv=use_venv, extras=extras,
                                extras_required=args.command == "book")
    try:
        if args.command == "lab":
            # Jupyter refuses root unless told; containers and cloud machines often run as root.
            as_root = ["--allow-root"] if getattr(os, "geteuid", lambda: 1)() == 0 else []
            trust_notebooks(python)
            run(python, "-m", "jupyter", "lab", f"--ServerApp.root_dir={ROOT}",
                "--LabApp.default_url=/lab/tree/notebooks",
                # new notebooks get the course kernel, the only one the launcher offers
                f"--MappingKernelManager.default_kernel_name={KERNEL_NAME}",
                f"--KernelSpecManager.allowed_kernelspecs={KERNEL_NAME}",
                *as_root, *args.extra, cwd=ROOT)
        elif args.command == "test":
            env = dict(os.environ)
            env.setdefault("COURSE_QUICK", "1")  # smoke-test scale unless told otherwise
            run(python, "-m", "pytest", *args.extra, cwd=ROOT, env=env)
        elif args.command == "book":
            run(python, "-m", "course_utils.tools.book", *args.extra, cwd=ROOT)
    except subprocess.CalledProcessError as error:
        return error.returncode
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

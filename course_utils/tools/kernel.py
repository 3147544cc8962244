"""Register this environment as the Jupyter kernel the course notebooks name.

Every notebook's metadata names the kernel ``bahdanau-day10``. Registering it (which
``python course.py lab`` does) makes JupyterLab run the notebooks in the same Python
environment that the tests use. ``python -m course_utils.tools.kernel --user`` registers it for
a Jupyter installed elsewhere. The kernel loads :mod:`course_utils.tools.lab_hints`, which says
which section to run first when a cell uses a name an earlier cell defines.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

KERNEL_NAME = "bahdanau-day10"
DISPLAY_NAME = "Python (Day 10: Bahdanau attention)"
#: IPython extensions the course's kernel loads.
EXTENSIONS = ("course_utils.tools.lab_hints",)

__all__ = ["DISPLAY_NAME", "EXTENSIONS", "KERNEL_NAME", "install_kernel", "main"]


def install_kernel(user: bool = False, prefix: str | None = None) -> str:
    """Install the kernel spec for ``sys.executable``; returns the folder it was written to.

    By default into this environment (``sys.prefix``); ``user=True`` for the user's Jupyter.
    """
    from ipykernel.kernelspec import install

    if user:
        folder = install(user=True, kernel_name=KERNEL_NAME, display_name=DISPLAY_NAME)
    else:
        folder = install(prefix=prefix or sys.prefix, kernel_name=KERNEL_NAME,
                         display_name=DISPLAY_NAME)
    spec_file = Path(folder) / "kernel.json"
    spec = json.loads(spec_file.read_text(encoding="utf-8"))
    spec["argv"] = [*spec["argv"], *(f"--ext={name}" for name in EXTENSIONS)]
    spec_file.write_text(json.dumps(spec, indent=1) + "\n", encoding="utf-8")
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--user", action="store_true", help="install for this user instead of this environment"
    )
    args = parser.parse_args(argv)
    path = install_kernel(user=args.user)
    print(f"installed kernel {KERNEL_NAME!r} ({sys.executable}) in {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

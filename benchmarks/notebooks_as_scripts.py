"""Turn notebooks 3 and 4 and E10.2's worked solution into scripts, for a GPU machine without
Jupyter (a lent machine has PyTorch but no kernel; ``benchmarks/gpu_notebooks.sh`` runs them).

    python benchmarks/notebooks_as_scripts.py OUT_FOLDER

Each code cell becomes a block that first prints ``@@cell N``; lines starting with ``%`` or
``!`` (magics, shell escapes) are left out; matplotlib draws off screen.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
#: The notebooks a GPU run times, and the script each becomes.
NOTEBOOKS = {"nb4": "notebooks/04_multi30k_vanilla_vs_attention.ipynb",
             "e102": "solutions/E10.2-vanilla-vs-attention.ipynb",
             "nb3": "notebooks/03_reversal_task.ipynb"}


def as_script(path: Path) -> str:
    notebook = nbformat.read(path, as_version=4)
    blocks = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        lines = [line for line in cell.source.splitlines()
                 if not line.lstrip().startswith(("%", "!"))]
        blocks.append(f"print('@@cell {index}', flush=True)\n" + "\n".join(lines))
    return "import matplotlib\nmatplotlib.use('Agg')\n\n" + "\n\n".join(blocks) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(args[0])
    out.mkdir(parents=True, exist_ok=True)
    for name, relative in NOTEBOOKS.items():
        (out / f"{name}.py").write_text(as_script(ROOT / relative))
        print(f"wrote {out / name}.py")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A student who runs a cell before the one that defines its names is told which section to run
first, under the usual NameError (course_utils.tools.lab_hints, loaded by the course's kernel)."""

import json
import os

import nbformat
from helpers import ROOT
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from course_utils.tools.kernel import KERNEL_NAME, install_kernel
from course_utils.tools.lab_hints import Definition, defined_names, find_definition, hint


def test_every_way_a_cell_binds_a_name_is_seen():
    source = ("%matplotlib inline\nimport numpy as np\nfrom torch import nn, optim as o\n"
              "import os.path\nx, (y, z) = 1, (2, 3)\nw: int = 4\nv += 1\ndef f(): a = 1\n"
              "class C: pass\nfor i, j in []: pass\nwith open('f') as fh: pass\nf(q := 2)\n")
    assert defined_names(source) == {"np", "nn", "o", "os", "x", "y", "z", "w", "v", "f", "C",
                                     "i", "j", "fh"}
    assert defined_names("def broken(:") == set()


def test_the_section_and_cell_that_define_a_name_in_the_lecture_notebooks():
    nb3 = json.loads((ROOT / "notebooks" / "03_reversal_task.ipynb").read_text())
    found = find_definition("Decoder", nb3)
    assert found is not None and "your turn" in found.section.lower() and found.code_cell > 1
    # code cell 1 is the setup cell every notebook opens with; the imports come next
    assert find_definition("torch", nb3) == Definition(find_definition("torch", nb3).section, 2)
    assert find_definition("COURSE", nb3).code_cell == 1
    assert find_definition("no_such_name_anywhere", nb3) is None
    assert hint("no_such_name_anywhere", nb3) is None and hint("x", None) is None


def test_the_course_kernel_adds_the_line_and_the_cell_still_fails(tmp_path):
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    notebook = new_notebook(cells=[
        new_markdown_cell("# A notebook"), new_code_cell("import math"),
        new_markdown_cell("## 2. Make a number"), new_code_cell("number = math.pi"),
        new_code_cell("print(number)")])
    path = tmp_path / "student.ipynb"
    nbformat.write(notebook, path)
    install_kernel(prefix=str(tmp_path / "env"))
    specs = KernelSpecManager(kernel_dirs=[str(tmp_path / "env" / "share" / "jupyter" / "kernels")])
    manager = KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=specs)
    manager.start_kernel(env={**os.environ, "JPY_SESSION_NAME": str(path)}, cwd=str(tmp_path))
    outputs: list[dict] = []
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=120)
        reply = client.execute_interactive("print(number)", timeout=60,
                                           output_hook=outputs.append)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert reply["content"]["status"] == "error"  # the cell still fails: Run All stops there
    said = " ".join("".join(m["content"].get("text", "")) for m in outputs
                    if m["msg_type"] == "stream").split()
    assert " ".join(said).startswith(
        '`number` is defined in this notebook\'s section "2. Make a number" (code cell 2), '
        "which has not run in this kernel"), said


"""An honest submission does not time out because the machine is busy: ``course-grade``'s time
limits are a quiet machine's, stretched by a calibration measured at the start of the run, and
the summary and ``results.json`` say which limits applied. Each limit's default is declared once,
with its help text, in ``GradingLimits``."""

import json

import nbformat
import pytest
from helpers import ROOT
from nbformat.v4 import new_code_cell

from course_utils.tools.grading import GradingLimits, main
from course_utils.tools.grading import limits as grading_limits
from course_utils.tools.grading.limits import QUIET_KERNEL_SECONDS, Calibration, calibrate

SOLUTION = ROOT / "solutions" / "E10.1-attention-by-hand.ipynb"


def test_each_limit_is_declared_once_and_the_command_line_takes_it_from_there(capsys):
    defaults = GradingLimits()
    options = dict(GradingLimits.options())
    assert {o: k["default"] for o, k in options.items()} == {
        "--cell-timeout": defaults.cell_seconds, "--total-timeout": defaults.total_seconds,
        "--memory-mb": defaults.memory_mb}
    assert options["--memory-mb"]["type"] is int  # whole megabytes, as the rlimit needs
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for option, keywords in options.items():
        assert f"{option} {keywords['metavar']}" in text
        assert " ".join(keywords["help"].split()) in text  # the help, with its default
    assert "--no-calibrate" in text


def test_a_calibration_stretches_the_time_limits_never_the_memory_or_below_quiet(monkeypatch):
    limits = GradingLimits(cell_seconds=60, total_seconds=300, memory_mb=2048)
    assert limits.scaled(2.5) == GradingLimits(150, 750, 2048)
    with pytest.raises(ValueError, match=">= 1"):
        limits.scaled(0.5)
    monkeypatch.setattr(grading_limits, "bare_kernel_seconds", lambda: QUIET_KERNEL_SECONDS / 2)
    assert calibrate().factor == 1.0  # a fast machine keeps the limits it was given
    monkeypatch.setattr(grading_limits, "bare_kernel_seconds", lambda: 3 * QUIET_KERNEL_SECONDS)
    assert calibrate() == Calibration(kernel_seconds=3 * QUIET_KERNEL_SECONDS, factor=3.0)


def test_an_honest_cell_slowed_by_a_busy_machine_is_not_stopped(tmp_path, monkeypatch, capsys):
    # A cell that needs 4 s under a 2 s limit stated for a quiet machine, on a machine that
    # starts a kernel 3 times slower than a quiet one (as E10.2's smoke-scale training cell,
    # 4 s when quiet, passed 60 s on a loaded machine): graded normally, where the same limit
    # without the calibration stops it.
    monkeypatch.setattr(grading_limits, "bare_kernel_seconds", lambda: 3 * QUIET_KERNEL_SECONDS)
    subs = tmp_path / "subs"
    subs.mkdir()
    notebook = nbformat.read(SOLUTION, as_version=4)
    notebook.cells.insert(1, new_code_cell("import time\ntime.sleep(4)  # the slowed work"))
    nbformat.write(notebook, subs / "slow.ipynb")
    args = ["E10.1", str(subs), "--quiet", "--cell-timeout", "2", "--total-timeout", "60"]
    statuses = {}
    for name, extra in (("calibrated", []), ("as given", ["--no-calibrate"])):
        out = tmp_path / name
        assert main([*args, "--out", str(out), *extra]) == 0
        record = json.loads((out / "results.json").read_text())
        statuses[name] = record["results"][0]["status"]
        printed = capsys.readouterr().out
        assert record["limits"]["cell_seconds"] == 2  # as given: what the merge compares
        if name == "calibrated":
            assert record["calibration"] == {"kernel_seconds": 6.0, "factor": 3.0,
                                             "failed": None}
            assert record["applied_limits"]["cell_seconds"] == 6.0
            assert "time limits: 2 s per cell, 60 s per notebook on a quiet machine, x3.00 " \
                   "for this machine's load" in printed and "6 s and 180 s applied" in printed
        else:
            assert record["calibration"] is None and record["applied_limits"]["cell_seconds"] == 2
            assert "as given (not calibrated)" in printed
    assert statuses == {"calibrated": "graded", "as given": "timeout"}


def test_a_calibration_that_fails_never_stops_grading(tmp_path, monkeypatch, capsys):
    """A bare kernel that cannot start (a broken Jupyter install, a kernel that dies) costs the
    calibration, not the batch: the limits apply as given, and the summary and the record say
    why."""
    def dies():
        raise RuntimeError("Kernel died before replying to kernel_info")

    monkeypatch.setattr(grading_limits, "bare_kernel_seconds", dies)
    assert calibrate() == Calibration(0.0, 1.0, "RuntimeError: Kernel died before replying "
                                                "to kernel_info")
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "alice.ipynb").write_bytes(SOLUTION.read_bytes())
    out = tmp_path / "out"
    assert main(["E10.1", str(subs), "--quiet", "--out", str(out)]) == 0
    record = json.loads((out / "results.json").read_text())
    assert record["results"][0]["status"] == "graded"
    assert record["calibration"]["failed"].startswith("RuntimeError: Kernel died")
    assert record["applied_limits"] == record["limits"]
    printed = " ".join(capsys.readouterr().out.split())
    assert "the calibration failed (RuntimeError: Kernel died before replying to kernel_info), " \
           "so the limits apply as given" in printed

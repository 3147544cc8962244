"""A grading run stopped from outside leaves nothing behind: a scheduler's cancel (SIGTERM, as
Slurm's ``scancel`` sends before SIGKILL) is handled as Ctrl-C is. Tested with real signals sent
to a real ``course-grade`` process in the middle of a run: no temporary copy of a student's
notebook, no memory cgroup and no worker outlives it, and the earlier gradebook is untouched."""

import contextlib
import os
import signal
import subprocess
import sys
import time

import nbformat
import pytest
from helpers import ROOT, workers_of
from nbformat.v4 import new_code_cell

from course_utils.tools.grading.memcg import MemoryCgroup
from course_utils.tools.grading.stopping import Interrupted, held, on_signals

SOLUTION = ROOT / "solutions" / "E10.1-attention-by-hand.ipynb"
EARLIER = {"grades.csv": "the earlier gradebook\n", "results.json": "the earlier record\n"}


def leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("course-grade-"))


def processes(group):
    """Every process in ``group`` and in the groups the grader made below it."""
    below = [MemoryCgroup(group.folder / name, group.layout) for name in leftovers(group.folder)]
    return [pid for g in (group, *below) for pid in g.pids()]


def wait_for(condition, seconds, what):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {seconds} s for {what}")
        time.sleep(0.2)


@pytest.fixture
def parent_cgroup():
    """A memory cgroup of the test's own for the grader, so that the groups it makes for its
    submissions are found below it and nowhere else (other gradings may run beside this one);
    ``None`` where this machine lets no cgroup be made (then the grader makes none either)."""
    group = MemoryCgroup.create(8 << 30)
    yield group
    if group is not None:  # whatever a failed test left: its processes killed, groups removed
        for name in leftovers(group.folder):
            MemoryCgroup(group.folder / name, group.layout).remove()
        group.remove()


@pytest.mark.parametrize("whom", ["the grader", "every process of the job"])
def test_sigterm_mid_run_leaves_no_copy_no_cgroup_and_the_gradebook_alone(
        tmp_path, parent_cgroup, whom):
    if whom == "every process of the job" and parent_cgroup is None:
        pytest.skip("finding every process of the job needs a cgroup of the test's own")
    subs, out, tmp = tmp_path / "subs", tmp_path / "out", tmp_path / "tmp"
    for folder in (subs, out, tmp):
        folder.mkdir()
    notebook = nbformat.read(SOLUTION, as_version=4)
    notebook.cells.insert(1, new_code_cell("import time\ntime.sleep(120)"))
    for name in ("a", "b", "c"):
        nbformat.write(notebook, subs / f"{name}.ipynb")
    for name, text in EARLIER.items():
        (out / name).write_text(text)
    process = subprocess.Popen(
        [sys.executable, "-m", "course_utils.tools.grading", "E10.1", str(subs), "--out",
         str(out), "--quiet", "--jobs", "2", "--cell-timeout", "300", "--total-timeout", "600"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "TMPDIR": str(tmp)},
        preexec_fn=parent_cgroup.join if parent_cgroup else None)
    try:
        # mid-run: two notebooks are being graded, each in its copy (and cgroup, where allowed)
        wait_for(lambda: len(leftovers(tmp)) == 2, 60, "two workers to start")
        if parent_cgroup is not None:
            wait_for(lambda: len(leftovers(parent_cgroup.folder)) == 2, 30, "their cgroups")
        time.sleep(3)
        targets = [process.pid]
        if whom == "every process of the job" and parent_cgroup is not None:
            # as Slurm does: the signal reaches the workers and kernels too, all at once
            targets = processes(parent_cgroup)
            assert len(targets) > 3, targets  # the grader, two workers, their kernels
        start = time.monotonic()
        for pid in targets:
            with contextlib.suppress(ProcessLookupError):  # a process may end meanwhile
                os.kill(pid, signal.SIGTERM)
        _, err = process.communicate(timeout=60)
        seconds = time.monotonic() - start
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for line in workers_of(tmp):  # a failed test leaves no worker running
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(line.split()[0]), signal.SIGKILL)
    assert process.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert "SIGTERM" in err and "the earlier gradebook" in err, err[-2000:]
    assert seconds < 20, f"cleaning up took {seconds:.1f} s (Slurm's KillWait is 30 s)"
    assert leftovers(tmp) == [], "a copy of a student's notebook was left behind"
    # killed, not waited for: on a busy machine a killed process may take a moment to go
    wait_for(lambda: workers_of(tmp) == [], 15, "the workers to end")
    if parent_cgroup is not None:
        assert leftovers(parent_cgroup.folder) == [], "a memory cgroup was left behind"
        assert processes(parent_cgroup) == [], "a worker or kernel outlived the grader"
    for name, text in EARLIER.items():
        assert (out / name).read_text() == text
    assert not (out / "feedback").exists()


def test_a_signal_while_the_outputs_are_written_waits_until_they_are_whole():
    written = []
    with pytest.raises(Interrupted) as stopped, on_signals():
        with held():
            os.kill(os.getpid(), signal.SIGTERM)  # a real signal, to this very process
            time.sleep(0.2)  # the handler has run by now: the block goes on all the same
            written.append("grades.csv")
            written.append("results.json")
    assert written == ["grades.csv", "results.json"]
    assert stopped.value.signum == signal.SIGTERM and stopped.value.outputs_written
    assert stopped.value.exit_code == 143


def test_a_signal_after_the_outputs_were_written_says_so():
    with pytest.raises(Interrupted) as stopped, on_signals():
        with held():
            pass  # the outputs, written
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # never reached
    assert stopped.value.outputs_written


def test_a_second_signal_does_not_cut_the_clean_up_short():
    cleaned = []
    with pytest.raises(Interrupted) as stopped, on_signals():
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)  # never reached: the first signal raises
        finally:
            os.kill(os.getpid(), signal.SIGTERM)  # the scheduler's, during the clean-up
            time.sleep(0.2)
            cleaned.append(True)
    assert cleaned == [True] and stopped.value.signum == signal.SIGINT
    assert stopped.value.exit_code == 130 and not stopped.value.outputs_written


def test_the_signal_handlers_are_put_back_afterwards():
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    with on_signals():
        assert signal.getsignal(signal.SIGTERM) is not before[signal.SIGTERM]
    assert {s: signal.getsignal(s) for s in before} == before

"""The grader's memory cgroup: found in both layouts, made and removed cleanly, and, where this
machine lets the grader make one, counting the shared memory the rlimit cannot see."""

import subprocess
import sys

import nbformat
import pytest
from helpers import ROOT
from nbformat.v4 import new_code_cell

from course_utils.tools.grading.memcg import MemoryCgroup, own_memory_cgroup


def fake_tree(tmp_path, layout):
    root = tmp_path / "cgroup"
    if layout == "v1":
        folder = root / "memory" / "jobs" / "me"
        folder.mkdir(parents=True)
        (folder / "memory.limit_in_bytes").write_text("9223372036854771712")
        proc = "12:pids:/jobs/me\n4:memory:/jobs/me\n0::/\n"
    else:
        folder = root / "user.slice" / "me"
        folder.mkdir(parents=True)
        (folder / "cgroup.controllers").write_text("cpu io memory pids")
        proc = "0::/user.slice/me\n"
    (tmp_path / "proc").write_text(proc)
    return root, folder


@pytest.mark.parametrize("layout", ["v1", "v2"])
def test_the_graders_own_cgroup_is_found_in_either_layout(tmp_path, layout):
    root, folder = fake_tree(tmp_path, layout)
    assert own_memory_cgroup(root, tmp_path / "proc") == (folder, layout)


def test_no_memory_cgroup_is_no_cgroup(tmp_path):
    (tmp_path / "proc").write_text("0::/\n")
    assert own_memory_cgroup(tmp_path / "cgroup", tmp_path / "proc") is None
    assert own_memory_cgroup(tmp_path, tmp_path / "missing") is None
    assert MemoryCgroup.create(1 << 20, parent=(tmp_path / "missing", "v2")) is None


@pytest.mark.parametrize("layout, limit_file", [("v1", "memory.limit_in_bytes"),
                                                ("v2", "memory.max")])
def test_a_group_gets_its_limit_and_leaves_no_folder(tmp_path, layout, limit_file):
    _, folder = fake_tree(tmp_path, layout)
    group = MemoryCgroup.create(256 << 20, parent=(folder, layout))
    assert group is not None and group.folder.parent == folder
    assert (group.folder / limit_file).read_text() == str(256 << 20)
    for name in list(group.folder.iterdir()):  # a real cgroup's files go with its folder
        name.unlink()
    group.remove()
    assert not group.folder.exists()
    with pytest.raises(ValueError, match="must be positive"):
        MemoryCgroup.create(0, parent=(folder, layout))


def real_group(limit):
    group = MemoryCgroup.create(limit)
    if group is None:
        pytest.skip("this machine does not let the grader create a memory cgroup")
    return group


SHARED = ("import mmap\n"
          "shared = mmap.mmap(-1, {size})  # MAP_SHARED: not counted by RLIMIT_DATA\n"
          "chunk = b'x' * (16 << 20)\n"
          "for _ in range({size} // len(chunk)):\n"
          "    shared.write(chunk)\n"
          "print('survived')\n")


def test_shared_memory_past_the_limit_is_killed_and_counted():
    group = real_group(200 << 20)
    try:
        done = subprocess.run([sys.executable, "-c", SHARED.format(size=512 << 20)],
                              preexec_fn=group.join, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == -9 and "survived" not in done.stdout
        assert group.oom_kills() >= 1
        assert group.pids() == []
    finally:
        group.remove()
    assert not group.folder.exists()


def test_removing_a_group_ends_what_still_runs_in_it():
    group = real_group(512 << 20)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                               preexec_fn=group.join, start_new_session=True)
    try:
        assert group.pids() == [sleeper.pid]
        group.remove()
        assert sleeper.wait(timeout=10) == -9 and not group.folder.exists()
    finally:
        sleeper.kill()


def test_the_grader_counts_a_submissions_shared_memory(tmp_path):
    from course_utils.tools.grading import GradingLimits, grade_folder

    real_group(1 << 20).remove()
    subs = tmp_path / "subs"
    subs.mkdir()
    notebook = nbformat.read(ROOT / "exercises" / "E10.1-attention-by-hand.ipynb",
                             as_version=4)
    notebook.cells.append(new_code_cell(SHARED.format(size=3 << 30)))
    nbformat.write(notebook, subs / "shared.ipynb")
    limits = GradingLimits(cell_seconds=60, total_seconds=120, memory_mb=1500)
    result = grade_folder("E10.1", subs, tmp_path / "out", limits=limits, progress=False)[0]
    assert result.status == "memory", (result.status, result.notes)
    assert any("shared memory counted" in note for note in result.notes), result.notes

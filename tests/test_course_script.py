"""course.py, behind the README's two commands, passes the right things on."""

import importlib.util
from unittest import mock

import pytest
from helpers import ROOT

spec = importlib.util.spec_from_file_location("course", ROOT / "course.py")
course = importlib.util.module_from_spec(spec)
spec.loader.exec_module(course)


def call(argv):
    with (
        mock.patch.object(course, "ensure_environment", return_value="python") as env,
        mock.patch.object(course, "run") as run,
    ):
        assert course.main(argv) == 0
    return env.call_args.kwargs["use_venv"], run.call_args


@pytest.mark.parametrize("argv", [["lab", "--no-venv"], ["--no-venv", "lab"]])
def test_no_venv_is_taken_wherever_it_stands(argv):
    use_venv, run = call(argv)
    assert use_venv is False
    assert "--no-venv" not in run.args


def test_lab_serves_the_course_folder_and_opens_the_notebooks():
    _, run = call(["lab", "--port", "8899"])
    assert run.args[1:4] == ("-m", "jupyter", "lab")
    assert f"--ServerApp.root_dir={ROOT}" in run.args
    assert run.args[-2:] == ("--port", "8899")


def test_lab_allows_root_only_when_running_as_root(monkeypatch):
    monkeypatch.setattr(course.os, "geteuid", lambda: 0)
    assert "--allow-root" in call(["lab"])[1].args
    monkeypatch.setattr(course.os, "geteuid", lambda: 1000)
    assert "--allow-root" not in call(["lab"])[1].args


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
    with mock.patch.object(course, "trust_notebooks") as trust:
        _, run = call(["lab"])
    trust.assert_called_once()
    assert f"--MappingKernelManager.default_kernel_name={KERNEL_NAME}" in run.args
    assert f"--KernelSpecManager.allowed_kernelspecs={KERNEL_NAME}" in run.args


def test_trusting_signs_every_course_notebook(tmp_path, monkeypatch):
    with mock.patch.object(course.subprocess, "run") as run:
        course.trust_notebooks("python")
    args = run.call_args.args[0]
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
        course.install_torch("python")
    return calls


def test_a_linux_machine_without_a_gpu_gets_the_cpu_build(monkeypatch, capsys):
    calls = torch_install(monkeypatch)
    assert calls == [("python", "-m", "pip", "install", "torch", "--index-url",
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
    with (mock.patch.object(course, "ensure_environment", return_value="python") as env,
          mock.patch.object(course, "run") as run):
        assert course.main(["book", "--no-solutions"]) == 0
    assert env.call_args.kwargs == {"use_venv": True, "extras": ("book",),
                                    "extras_required": True}
    assert run.call_args.args == ("python", "-m", "course_utils.tools.book", "--no-solutions")
    with (mock.patch.object(course, "ensure_environment", return_value="python") as env,
          mock.patch.object(course, "run")):
        course.main(["test"])  # the tests build the site too: the extra if it can be had
    assert env.call_args.kwargs["extras"] == ("book",)
    assert env.call_args.kwargs["extras_required"] is False


def test_an_extra_is_installed_once_per_pyproject_and_a_failure_is_said(tmp_path, capsys):
    stamp = tmp_path / course.STAMP_NAME
    stamp.write_text("abc\n")
    with mock.patch.object(course, "run") as run:
        course.install_extra("python", stamp, "book", required=True)
        course.install_extra("python", stamp, "book", required=True)  # done already
    assert run.call_count == 1
    assert run.call_args.args == ("python", "-m", "pip", "install", "-e", f"{ROOT}[book]")
    stamp.write_text("def\n")  # pyproject.toml changed
    failing = mock.patch.object(course, "run",
                                side_effect=course.subprocess.CalledProcessError(1, "pip"))
    with failing, pytest.raises(SystemExit, match="installing the 'book' dependencies"):
        course.install_extra("python", stamp, "book", required=True)
    with failing:
        course.install_extra("python", stamp, "book", required=False)
    assert "could not be installed; the tests that need them will be skipped" in (
        capsys.readouterr().out)

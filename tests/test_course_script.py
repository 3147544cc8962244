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

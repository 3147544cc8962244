"""An exercise is registered in one place, its file names (course_utils.checks.registry): every
tool and test finds it from there, and a missing or stray file is an error that names it. No test
lists the exercises: tests/test_new_exercise.py adds one from the template and finds it
registered, graded, handed out and searched."""

from pathlib import Path

import pytest
from helpers import ROOT

from course_utils.checks import exercise_ids, get_exercise, notebook_of, registry


def test_every_exercise_has_its_checks_its_solution_and_its_student_version():
    ids = exercise_ids()
    solved = {p.name.split("-", 1)[0] for p in (ROOT / "solutions").glob("*.ipynb")}
    assert ids and set(ids) == solved
    for name in ids:
        assert get_exercise(name).id == name
        solution = notebook_of(name, ROOT / "solutions")
        assert notebook_of(name, ROOT / "exercises").name == solution.name
    for folder in ("solutions", "exercises"):  # no notebook that no check module registers
        stray = {p.name.split("-", 1)[0] for p in (ROOT / folder).glob("*.ipynb")} - set(ids)
        assert not stray, f"{folder}/ holds notebooks of unregistered exercises: {stray}"


def test_the_readme_lists_every_exercise():
    readme = (ROOT / "README.md").read_text()
    for name in exercise_ids():
        assert f"exercises/{notebook_of(name, ROOT / 'exercises').name}" in readme, name


def test_ids_come_from_folder_names_in_numeric_order(tmp_path, monkeypatch):
    for name in ("e10_2", "e10_10", "e11_1", "e10_9", "e10_7", "hints", "e10_x"):
        (tmp_path / name).mkdir()
    for name in ("e10_2", "e10_10", "e11_1", "e10_9", "hints", "e10_x"):  # e10_7: no checks yet
        (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / "e10_5.py").write_text("")  # a module beside the folders is no exercise
    monkeypatch.setattr(registry, "_CHECKS", tmp_path)
    assert registry.exercise_ids() == ["E10.2", "E10.9", "E10.10", "E11.1"]
    assert registry.module_of("E10.10") == "course_utils.checks.e10_10"
    # the hidden answers: in the exercise's folder
    assert registry.hidden_module_of("E10.9") == "course_utils.checks.e10_9.hidden"


def test_every_exercise_finds_its_hidden_answers_where_they_are():
    for name in exercise_ids():
        hidden = registry.load_hidden(name)
        path = ROOT.joinpath(*registry.hidden_module_of(name).split(".")).with_suffix(".py")
        assert (hidden is not None) == path.is_file(), name
        if hidden is not None:
            assert hidden.__name__ == registry.hidden_module_of(name)
            assert Path(hidden.__file__).resolve() == path.resolve()


def test_unknown_ids_and_missing_notebooks_are_named(tmp_path):
    with pytest.raises(ValueError, match="unknown exercise 'E99'; expected one of: E10.1"):
        get_exercise("E99")
    with pytest.raises(ValueError, match=r"expected one notebook E10.1-<name>.ipynb in .*found 0"):
        notebook_of("E10.1", tmp_path)
    (tmp_path / "E10.1-a.ipynb").write_text("{}")
    (tmp_path / "E10.1-b.ipynb").write_text("{}")
    with pytest.raises(ValueError, match=r"found 2: \['E10.1-a.ipynb', 'E10.1-b.ipynb'\]"):
        notebook_of("E10.1", tmp_path)

"""No graded answer where a student can read it: the worked code of every automatically graded
part, and the grader's hidden answers, are in nothing the handout ships (the library and its
checks included, the README and the course site too), a short part's statements are in no
lecture notebook, the README or the site, and no worked written answer repeats anything a
student reads (:mod:`course_utils.tools.answer_search`)."""

import shutil
import textwrap
import time

import nbformat
import pytest
from helpers import ROOT

from course_utils.checks import exercise_ids, get_exercise
from course_utils.tools import answer_search
from course_utils.tools.answer_search import (
    code_tokens,
    find_code_leaks,
    find_written_leaks,
    hidden_code,
    statement_tokens,
)
from course_utils.tools.solutions import worked_code, worked_written

EXERCISES = exercise_ids()


def test_every_exercise_with_a_solution_is_searched():
    assert EXERCISES and [path.name.split("-")[0] for path in sorted(
        (ROOT / "solutions").glob("*.ipynb"))] == EXERCISES
    for exercise in EXERCISES:
        parts = worked_code(exercise)
        assert set(parts) == set(get_exercise(exercise).checks)
        assert all(parts.values()), f"{exercise}: a graded part with no worked code"


def test_the_graders_hidden_answers_are_searched_for_too():
    found = {exercise: hidden_code(exercise) for exercise in EXERCISES}
    assert any(found.values()), "no exercise has hidden answers to search for"
    for exercise, functions in found.items():
        assert all(regions and all(regions) for regions in functions.values()), exercise


@pytest.mark.parametrize("exercise", EXERCISES)
def test_no_graded_parts_worked_code_ships_in_the_handout(exercise):
    leaks = find_code_leaks(exercise)
    assert not leaks, "\n".join(f"{f.part}: {f.where}: {f.text}" for f in leaks)


@pytest.mark.parametrize("exercise", EXERCISES)
def test_no_worked_written_answer_repeats_a_lecture_notebook(exercise):
    leaks = find_written_leaks(exercise)
    assert not leaks, "\n".join(f"{f.part}: {f.where}: “{f.text}”" for f in leaks)


def test_names_layout_and_comments_do_not_hide_a_copy():
    original = "shifted = energies - np.max(energies)\nexps = np.exp(shifted)\nreturn exps / exps.sum()"
    retyped = ("z = e-np.max(e)   # stable\n\n"
               "t = np.exp(\n    z)\nreturn t/t.sum()")
    assert code_tokens(original) == code_tokens(retyped)
    assert code_tokens("return x.sum()") != code_tokens("return x.mean()")  # the answer counts
    assert code_tokens("return np.exp(x)") != code_tokens("return torch.exp(x)")


@pytest.fixture
def course(tmp_path):
    """A copy of the course's library beside its notebooks and solutions (linked, unchanged)."""
    shutil.copytree(ROOT / "course_utils", tmp_path / "course_utils",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for folder in ("notebooks", "exercises", "solutions"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    return tmp_path


def test_a_worked_part_pasted_into_the_library_is_found_even_retyped(course):
    part, regions = next((p, r) for p, r in worked_code("E10.1").items() if p == "softmax")
    retyped = "\n".join(line.replace("shifted", "s").replace("exps", "ex") + "  # mine"
                        for line in regions[0].splitlines())
    with open(course / "course_utils" / "attention.py", "a") as module:
        module.write("\n\ndef helper(energies):\n" + retyped + "\n")
    found = find_code_leaks("E10.1", course)
    assert [(f.part, f.where) for f in found] == [("softmax", "course_utils/attention.py")]


def test_a_hidden_answer_pasted_into_a_shipped_module_is_found(course):
    """The grader's hidden answers ship nowhere, nor does a copy of one in a module that ships."""
    exercise, functions = next((e, f) for e in EXERCISES if (f := hidden_code(e, course)))
    part, (body,) = max(functions.items(), key=lambda item: len(item[1][0]))
    assert not [f for f in find_code_leaks(exercise, course) if f.part == part]
    with open(course / "course_utils" / "attention.py", "a") as module:
        module.write("\n\ndef helper(*args):\n" + textwrap.indent(body, "    ") + "\n")
    found = [(f.part, f.where) for f in find_code_leaks(exercise, course)]
    assert (part, "course_utils/attention.py") in found


def test_a_worked_written_answer_copied_into_a_lecture_is_found(course, tmp_path):
    cell, answer = next(iter(worked_written("E10.1").items()))
    (course / "notebooks").unlink()
    (course / "notebooks").mkdir()
    lecture = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "As we saw: " + answer.replace("\n", " ").upper())])
    nbformat.write(lecture, course / "notebooks" / "99_copy.ipynb")
    found = find_written_leaks("E10.1", course)
    assert [(f.part, f.where) for f in found] == [(cell, "notebooks/99_copy.ipynb")]


def test_the_command_line_reports_and_fails_on_a_finding(capsys, monkeypatch):
    monkeypatch.setattr(answer_search, "find_leaks", lambda exercises: [
        answer_search.Finding(name, "softmax", "course_utils/x.py", "exps = np.exp(shifted)")
        for name in exercises])
    assert answer_search.main(["E10.1"]) == 1
    assert "E10.1 softmax: in course_utils/x.py" in capsys.readouterr().out


# ------------------------------------------------ E10.1, and the places a student reads first


def test_no_e10_1_part_is_in_notebooks_1_to_3_or_the_readme():
    """E10.1 asks for the batched, padded form, which notebooks 1-3 do not write in NumPy."""
    found = [f for f in find_code_leaks("E10.1")
             if f.where.startswith(("notebooks/01", "notebooks/02", "notebooks/03", "README"))]
    assert not found, found
    assert not [f for f in find_written_leaks("E10.1")
                if f.where.startswith(("notebooks/", "README"))]


def test_a_short_part_is_searched_by_its_statements_and_generic_ones_are_not():
    """E10.1's most_attended is one short statement: under MIN_TOKENS, so no window of it is
    searched, but the statement itself is; statements of names and operators alone are not."""
    (region,) = worked_code("E10.1")["most_attended"]
    assert len(code_tokens(region)) < answer_search.MIN_TOKENS
    assert answer_search._short_needles([region])
    telling = answer_search._telling
    assert not telling(statement_tokens("c = weights @ h")[0])
    assert not telling(statement_tokens("return x.sum()")[0])
    assert not telling(statement_tokens("query[:, None] + keys")[0])
    assert not telling(statement_tokens("e = scores(s, h, W_s, W_h, v)")[0])
    assert telling(statement_tokens("return np.exp(x)")[0])
    assert statement_tokens("return w.argmax(axis=1) + 1") == statement_tokens(
        "best = weights.argmax(axis=1) + 1")


@pytest.fixture
def course_with(course):
    """``course`` with real copies of notebook 1 and the README to seed, the other notebooks
    linked as they are."""
    (course / "notebooks").unlink()
    (course / "notebooks").mkdir()
    for path in (ROOT / "notebooks").glob("*.ipynb"):
        if path.name.startswith("01_"):
            shutil.copy(path, course / "notebooks" / path.name)
        else:
            (course / "notebooks" / path.name).symlink_to(path)
    shutil.copy(ROOT / "README.md", course / "README.md")
    return course


NOTEBOOK_1 = "notebooks/01_bottleneck_and_attention_by_hand.ipynb"


def seed_notebook_1(course, source, markdown=False):
    path = course / NOTEBOOK_1
    notebook = nbformat.read(path, as_version=4)
    new = nbformat.v4.new_markdown_cell if markdown else nbformat.v4.new_code_cell
    notebook.cells.append(new(source))
    nbformat.write(notebook, path)
    return f"{NOTEBOOK_1}, cell {len(notebook.cells) - 1}"


def renamed(region, names):
    for old, new in names.items():
        region = region.replace(old, new)
    return region


def test_the_worked_energies_renamed_in_a_notebook_1_cell_are_found(course_with):
    (region,) = worked_code("E10.1")["energies"]
    copy = renamed(region, {"decoder_states": "S", "encoder_states": "H", "query": "q",
                            "keys": "k"})
    where = seed_notebook_1(course_with, "def scores(S, H, W_s, W_h, v):\n" + copy)
    found = [(f.part, f.where) for f in find_code_leaks("E10.1", course_with)]
    assert found == [("energies", where)]


def test_a_short_parts_statement_is_found_in_a_lecture_and_in_the_readmes_inline_code(
        course_with):
    where = seed_notebook_1(course_with, "winners = alphas.argmax(axis=1) + 1  # from 1")
    readme = course_with / "README.md"
    readme.write_text(readme.read_text() + "\nThe winner is `w.argmax(axis=1) + 1`.\n")
    found = [(f.part, f.where) for f in find_code_leaks("E10.1", course_with)]
    assert found == [("most_attended", where), ("most_attended", "README.md")]


def test_the_worked_context_shown_in_markdown_is_found(course_with):
    (region,) = worked_code("E10.1")["context"]
    where = seed_notebook_1(course_with, "In code:\n\n```python\nc = "
                            + renamed(region.strip(), {"return ": "", "weights": "a",
                                                       "encoder_states": "h"}) + "\n```",
                            markdown=True)
    assert [(f.part, f.where) for f in find_code_leaks("E10.1", course_with)] == [
        ("context", where)]


def test_a_worked_written_answer_in_the_readme_is_found(course_with):
    cell, answer = list(worked_written("E10.1").items())[-1]
    readme = course_with / "README.md"
    readme.write_text(readme.read_text() + "\n| E10.1 | " + answer.replace("\n", " ") + " |\n")
    found = find_written_leaks("E10.1", course_with)
    assert [(f.part, f.where) for f in found] == [(cell, "README.md")]


def test_the_built_sites_pages_are_searched_but_not_its_worked_solutions(course_with):
    (region,) = worked_code("E10.1")["softmax"]
    code = "".join(f'<span class="n">{line}</span>\n' for line in
                   renamed(region, {"scores": "z", "exps": "t"}).replace(">", "&gt;")
                   .replace("<", "&lt;").splitlines())
    page = f"<html><body><div class=highlight><pre>{code}</pre></div></body></html>"
    site = course_with / "_build" / "book" / "html"
    for folder in ("notebooks", "solutions"):
        (site / folder).mkdir(parents=True)
        (site / folder / "page.html").write_text(page)
    found = [(f.part, f.where) for f in find_code_leaks("E10.1", course_with)]
    assert found == [("softmax", "_build/book/html/notebooks/page.html")]


def test_the_search_of_one_exercise_takes_seconds():
    start = time.process_time()
    find_code_leaks("E10.1")
    find_written_leaks("E10.1")
    assert time.process_time() - start < 10

"""E10.3 checks: the course page's Part 3, examples of monotonic alignment, reordering and
many-to-one alignment that the student finds in their own model. A worked find, recorded from the
real E10.2 model, passes; a sentence of that model without the pattern is refused with a hint
that names what it lacks; the record is what is judged, strictly, and it must be of the sentence
the student's function returns."""

import json
import re

import nbformat
import numpy as np
import pytest
from helpers import ROOT, notebook_functions

from course_utils.checks import NOT_IMPLEMENTED, get_exercise
from course_utils.checks import e10_3 as checks
from course_utils.checks.e10_3 import hidden
from course_utils.checks.records import RECORD_MIME, records_in, submitted

SOLUTION = ROOT / "solutions" / "E10.3-reading-attention-heatmaps.ipynb"
EXERCISE = ROOT / "exercises" / "E10.3-reading-attention-heatmaps.ipynb"
#: Records made by E10.3's check cells from the worked E10.2 model (its source inside).
FINDS = json.loads((ROOT / "tests" / "data" / "e10_3_finds.json").read_text(encoding="utf-8"))
PARTS = ("monotonic", "reordering", "many-to-one")


def cells(path):
    return nbformat.read(path, as_version=4).cells


def judged(part, example, records):
    """The part's verdict as the grader reaches it: the kernel's probe, then the judge on the
    records saved in the submission."""
    check = checks.EXERCISE.checks[part]
    raw = json.loads(json.dumps(check.probe(example, 7)))
    with submitted(records):
        return check.judge(raw, 7)


def returns(sentence):
    def example():
        return sentence
    return example


def test_the_parts_are_the_course_pages_in_its_order_with_their_points():
    exercise = get_exercise("E10.3")
    assert list(exercise.checks) == list(PARTS) == list(checks.FINDS)
    assert exercise.recorded == list(PARTS)
    assert {n: c.points for n, c in exercise.checks.items()} == dict.fromkeys(PARTS, 2)
    assert {n: q.points for n, q in exercise.manual.items()} == {
        "monotonic_reading": 1, "reordering_reading": 1, "many_to_one_reading": 1,
        "word_order": 2}
    assert exercise.auto_points == 6 and exercise.max_points == 11
    headings = [c.source.splitlines()[0] for c in cells(SOLUTION)
                if c.cell_type == "markdown" and c.source.startswith("#")]
    assert [h for h in headings if h.startswith("## Part")] == [
        "## Part 1: five translations of varying length", "## Part 2: their heatmaps",
        "## Part 3: find the three patterns in your model (6 points, and 3 written)",
        "## Part 4: does your model learn the word-order differences between English and "
        "German? (2 points)"]


def test_the_headers_points_table_and_the_answer_cells_agree_with_the_checks():
    notebook = cells(SOLUTION)
    table = re.findall(r"^\| (\d[a-f]?)\. .*? \| (\d|–) \| ", notebook[0].source, re.M)
    graded = [float(points) for _, points in table if points != "–"]
    parts = [*checks.EXERCISE.checks.values(), *checks.EXERCISE.manual.values()]
    assert graded == [part.points for part in parts]
    answers = {c.metadata["course"]["manual"]: c.metadata["course"]["points"]
               for c in notebook if "manual" in c.metadata.get("course", {})}
    assert answers == {name: q.points for name, q in checks.EXERCISE.manual.items()}


def test_each_criterion_is_stated_in_the_exercise_with_the_thresholds_the_check_applies():
    text = "\n".join(c.source for c in cells(EXERCISE) if c.cell_type == "markdown")
    assert f"at least {checks.CONFIDENT}" in text and f"at least {checks.SHARE}" in text
    assert f"At least **{checks.MONOTONIC_WORDS}**" in text
    assert f"at most **{checks.NEAR}** steps apart" in text
    assert "the one definition the course uses" in text  # punctuation: word_class, once
    for part in PARTS:
        assert f"{checks.CONFIDENT}" in checks.CRITERIA[part] or part == "many-to-one"


def test_the_exercise_asks_for_sentences_and_ships_no_criterion_code():
    exercise = nbformat.read(EXERCISE, as_version=4)
    for name in checks.FINDS.values():
        assert f"def {name}():" in "\n".join(c.source for c in exercise.cells)
    shipped = (ROOT / "course_utils" / "checks" / "e10_3" / "__init__.py").read_text(encoding="utf-8")
    for name in hidden.__all__:
        assert f"def {name}(" not in shipped


def test_the_worked_finds_recorded_from_the_real_model_have_each_pattern():
    solution = notebook_functions(SOLUTION)
    for part in PARTS:
        record = FINDS["finds"][part]
        assert solution[checks.FINDS[part]]() == record["sentence"]
        assert hidden.lacks(part, checks.read_record(record), checks.THRESHOLDS) is None, part
        result = judged(part, solution[checks.FINDS[part]], FINDS["finds"])
        assert result.passed and result.message.startswith("found: "), result


def test_the_worked_solution_saved_the_records_of_its_finds_and_they_pass():
    """The committed run's records (the fixture's, unless the worked E10.2 model was trained
    again since) are of the worked sentences, and each shows its pattern."""
    notebook = json.loads(SOLUTION.read_text(encoding="utf-8"))
    saved = records_in(notebook, "E10.3")
    assert {part: r["sentence"] for part, r in saved.items()} == {
        part: r["sentence"] for part, r in FINDS["finds"].items()}
    solution = notebook_functions(SOLUTION)
    for part in PARTS:
        assert judged(part, solution[checks.FINDS[part]], saved).passed


@pytest.mark.parametrize("part", PARTS)
def test_a_sentence_of_the_real_model_without_the_pattern_is_refused_with_a_named_hint(part):
    without = FINDS["without"][part]
    record, hint = without["record"], without["hint"]
    assert hint in hidden.lacks(part, checks.read_record(record), checks.THRESHOLDS)
    result = judged(part, returns(record["sentence"]), {part: record})
    assert result.points == 0 and hint in result.message, result
    assert f"does not show {part} alignment" in result.message


def test_the_untouched_exercise_scores_zero_and_says_not_implemented():
    for result in checks.EXERCISE.grade(notebook_functions(EXERCISE)):
        assert result.points == 0 and result.message == NOT_IMPLEMENTED, result
    exercise = notebook_functions(EXERCISE)
    for part in PARTS:
        result = judged(part, exercise[checks.FINDS[part]], FINDS["finds"])
        assert result.points == 0 and result.message == NOT_IMPLEMENTED


def test_no_record_or_a_record_of_another_sentence_scores_zero_saying_what_to_run():
    sentence = FINDS["finds"]["monotonic"]["sentence"]
    missing = judged("monotonic", returns(sentence), {})
    assert missing.points == 0 and "run this part's check cell" in missing.message
    assert "save the notebook" in missing.message
    stale = judged("monotonic", returns("a dog runs ."), FINDS["finds"])
    assert stale.points == 0 and "another sentence" in stale.message


def _forged(change):
    record = json.loads(json.dumps(FINDS["finds"]["reordering"]))
    change(record)
    return judged("reordering", returns(record.get("sentence", "x")), {"reordering": record})


@pytest.mark.parametrize("change, why", [
    (lambda r: r["weights"].pop(), "shape"),
    (lambda r: r["weights"][0].__setitem__(0, r["weights"][0][0] + 0.5), "between 0 and 1"),
    (lambda r: r["weights"][1].__setitem__(0, r["weights"][1][0] + 0.2), "sum to 1"),
    (lambda r: r["source_tokens"].reverse(), "English tokens are not those of its sentence"),
    (lambda r: r.__setitem__("weights", "[[1]]"), "not a matrix of numbers"),
    (lambda r: r.__setitem__("output_tokens", []), "German tokens"),
])
def test_a_malformed_or_forged_record_scores_zero_and_says_to_run_the_cell_again(change, why):
    result = _forged(change)
    assert result.points == 0 and "cannot be read" in result.message, result
    assert why in result.message and "run its check cell again" in result.message


def test_a_record_that_is_not_a_record_scores_zero():
    for record in (None, [], "text", {"sentence": 3}):
        result = judged("monotonic", returns("a dog runs ."), {"monotonic": record})
        assert result.points == 0, record


class _Translation:
    def __init__(self, source, output, weights):
        self.source_tokens, self.output_tokens = source, output
        self.word_attention = np.asarray(weights, dtype=float)


class _Translator:
    """Stands in for the student's E10.2 model: translates one sentence to a fixed German."""

    def __init__(self, record):
        self.record = record

    def translate(self, sentences):
        assert sentences == [self.record["sentence"]]
        return [_Translation(self.record["source_tokens"], self.record["output_tokens"],
                             self.record["weights"])]


def test_the_check_cell_records_the_students_model_and_judges_that_record(monkeypatch,
                                                                         capsys):
    record = FINDS["finds"]["many-to-one"]
    monkeypatch.setattr(checks, "_your_translator", lambda: _Translator(record))
    shown = []
    monkeypatch.setattr("course_utils.checks.records._display",
                        lambda document: shown.append(document), raising=False)
    result = checks.check_many_to_one(returns(record["sentence"]))
    assert result.passed, result
    out = capsys.readouterr().out
    assert "reads most" in out and record["sentence"] in out  # what to read by eye
    assert checks.EXERCISE.checks["many-to-one"].verdict(returns(record["sentence"])).passed


def test_without_the_students_model_the_check_says_to_run_e10_2_first(monkeypatch, tmp_path,
                                                                       capsys):
    monkeypatch.setenv("COURSE_RUNS_DIR", str(tmp_path))
    monkeypatch.setattr("course_utils.checks.records._MADE", {})
    result = checks.check_reordering(returns("a dog runs ."))
    assert result.points == 0 and "no record" in result.message
    assert "run E10.2 first" in capsys.readouterr().out


def test_in_a_handout_the_check_keeps_the_record_and_leaves_the_decision_to_the_grader(
        monkeypatch):
    monkeypatch.setattr(checks, "HIDDEN", None)
    record = FINDS["without"]["reordering"]["record"]
    with submitted({"reordering": record}):
        result = checks.EXERCISE.checks["reordering"].verdict(returns(record["sentence"]))
    assert result.pending and result.points == 0 and str(result).startswith("[RECORDED]")
    assert checks.CRITERIA["reordering"] in result.message


def test_records_are_read_from_a_notebooks_saved_outputs_only_for_their_exercise():
    record = FINDS["finds"]["monotonic"]
    output = {"output_type": "display_data", "metadata": {}, "data": {
        RECORD_MIME: {"exercise": "E10.3", "part": "monotonic", "record": record}}}
    other = {"output_type": "display_data", "metadata": {}, "data": {
        RECORD_MIME: {"exercise": "E10.2", "part": "reordering", "record": record}}}
    notebook = {"cells": [{"cell_type": "code", "outputs": [other, output]},
                          {"cell_type": "markdown"}, "not a cell"]}
    assert records_in(notebook, "E10.3") == {"monotonic": record}
    assert records_in({"cells": "no"}, "E10.3") == {} == records_in([], "E10.3")


def test_probe_sentences_are_a_dict_of_sentences_or_nothing_with_a_reason(capsys):
    probes = checks.probe_sentences

    def raises():
        raise NotImplementedError

    assert probes(raises) == {} and "not written yet" in capsys.readouterr().out
    assert probes(lambda: ["a dog runs ."]) == {} and "must return a dict" in \
        capsys.readouterr().out
    assert probes(lambda: {"verb last": "one string"}) == {}
    assert "list of English sentences" in capsys.readouterr().out
    assert probes(lambda: {"verb last": ["a dog runs ."]}) == {"verb last": ["a dog runs ."]}
    assert "at least two" in capsys.readouterr().out
    assert probes(None) == {} and "not a function" in capsys.readouterr().out


# ------------------------------------------------- the criteria on hand-made alignments


def alignment(english, german, columns, weight=0.8):
    """Each German word reading the English position of ``columns`` with ``weight`` (None: a
    uniform row), the rest spread evenly."""
    source, output = tuple(english.split()), tuple(german.split())
    weights = np.full((len(output), len(source)), 0.0)
    for row, column in enumerate(columns):
        if column is None:
            weights[row] = 1 / len(source)
        else:
            weights[row] = (1 - weight) / (len(source) - 1)
            weights[row, column] = weight
    return checks.Alignment(english, source, output, weights)


def lacks(part, found):
    return hidden.lacks(part, found, checks.THRESHOLDS)


def test_a_long_diagonal_is_monotonic_and_one_step_back_is_not():
    english = "a man in a blue shirt is standing on a ladder ."
    diagonal = alignment(english, "ein mann in einem blauen hemd steht auf einer leiter .",
                         [0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11])
    assert lacks("monotonic", diagonal) is None
    back = alignment(english, "ein mann in einem blauen hemd steht auf einer leiter .",
                     [0, 1, 2, 3, 5, 4, 7, 8, 9, 10, 11])
    assert "moves left" in lacks("monotonic", back) and "blauen (shirt" in lacks("monotonic",
                                                                                 back)


def test_monotonic_needs_six_confident_words_on_six_english_words():
    short = alignment("a dog runs .", "ein hund rennt .", [0, 1, 2, 3])
    assert "only 3 German words" in lacks("monotonic", short)
    spread = alignment("a man in a blue shirt is standing .",
                       "ein mann in einem blauen hemd steht .", [0, 1, 2, 3, 4, 5, 7, 8], 0.4)
    assert "only 0 German words" in lacks("monotonic", spread)
    stuck = alignment("a man in a blue shirt is standing .",
                      "ein mann mann mann in in einem hemd steht .",
                      [0, 1, 1, 1, 2, 2, 3, 3, 7, 8])
    assert "read only 5 different English words" in lacks("monotonic", stuck)


def test_a_verb_moved_to_the_end_of_its_clause_is_a_reordering():
    # "she smiles when her dog barks" -> "sie lächelt , wenn ihr hund bellt": the same order;
    # "he has eaten something" -> "er hat etwas gegessen": the participle moves to the end
    moved = alignment("he has eaten something .", "er hat etwas gegessen .", [0, 1, 3, 2, 4])
    assert lacks("reordering", moved) is None
    assert "etwas (something 0.80), then gegessen (eaten 0.80)" in hidden.shows(
        "reordering", moved, checks.THRESHOLDS)
    kept = alignment("he has eaten something .", "er hat gegessen etwas .", [0, 1, 2, 3, 4])
    assert "no two confidently read German words" in lacks("reordering", kept)


def test_a_word_read_again_far_back_or_a_crossing_of_unsure_rows_is_no_reordering():
    english = "a man with a hat holds a red ball in his hand ."
    again = alignment(english, "ein mann mit einem hut hält einen roten ball in der hand hut .",
                      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 4])
    assert lacks("reordering", again) is not None  # hut again: far back, and read before
    unsure = alignment("he has eaten something .", "er hat etwas gegessen .",
                       [0, 1, 3, 2, 4], 0.45)
    assert lacks("reordering", unsure) is not None
    marks = alignment("stop , and the .", ". , der und", [4, 1, 3, 2])
    assert lacks("reordering", marks) is not None  # punctuation and function words only


def test_one_content_word_reading_two_neighbouring_english_words_is_many_to_one():
    english = "a boy is playing soccer ."
    split = alignment(english, "ein junge spielt fußball .", [0, 1, 2, 4, 5])
    split.weights[2] = [0.02, 0.08, 0.4, 0.45, 0.03, 0.02]  # spielt: is + playing
    assert lacks("many-to-one", split) is None
    assert hidden.shows("many-to-one", split, checks.THRESHOLDS) == \
        "spielt reads is 0.40 + playing 0.45"
    article = alignment(english, "ein junge spielt fußball .", [0, 1, 3, 4, 5])
    article.weights[0] = [0.45, 0.4, 0.05, 0.05, 0.03, 0.02]  # ein: a + boy, a function word
    assert "no German content word" in lacks("many-to-one", article)
    apart = alignment(english, "ein junge spielt fußball .", [0, 1, 3, 4, 5])
    apart.weights[3] = [0.02, 0.4, 0.05, 0.05, 0.45, 0.03]  # fußball: boy + soccer, not neighbours
    assert lacks("many-to-one", apart) is not None
    stop = alignment(english, "ein junge spielt fußball .", [0, 1, 3, 4, 5])
    stop.weights[3] = [0.02, 0.02, 0.05, 0.05, 0.45, 0.41]  # fußball: soccer + the full stop
    assert lacks("many-to-one", stop) is not None

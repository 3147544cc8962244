"""Checks for exercise E10.3: reading attention heatmaps, on the student's own model.

The course page's Part 3 asks for examples of three patterns in the student's own model:
**monotonic alignment**, **reordering** and **many-to-one alignment**. The student finds them
by reading heatmaps and hands in one English sentence for each, returned by a function of
their own (``monotonic_example()``, ``reordering_example()``, ``many_to_one_example()``).

Each check cell translates the sentence with the student's E10.2 model (``runs/e10.2/`` beside
the notebook), prints the hard alignment and the confident cells, and shows a **record** of the
translation (the sentence, its tokens, the German and the attention matrix, rounded) in its
output, saved with the notebook (:mod:`course_utils.checks.records`). The grader never has the
student's model, so it judges the record saved in the submitted notebook, and checks that it is
a record of the sentence the student's function returns.

Whether a record shows its pattern is decided by the criteria the exercise states
(:data:`CRITERIA`), computed in :mod:`course_utils.checks.e10_3.hidden`, which a student's
handout leaves out: the finding is the student's (reading heatmaps), not a loop over the test
set that asks an oracle. In the course's repository the check decides at once and names what a
pick lacks; in a handout it keeps the record and says that it is judged when graded.

The written parts (reading each find, and whether the model learned the word-order differences
between English and German) are graded by hand. :func:`probe_sentences` serves Part 4's cell,
which translates the student's own probe sentences.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

from course_utils.checks.calling import CheckFailed, CheckPending, call_student, student_line
from course_utils.checks.framework import Exercise
from course_utils.checks.records import current, show_record
from course_utils.checks.registry import load_hidden

#: The grader's criteria (``hidden.py``); a student's handout has none.
HIDDEN: ModuleType | None = load_hidden("E10.3")

__all__ = ["CONFIDENT", "CRITERIA", "EXERCISE", "MONOTONIC_WORDS", "NEAR", "SHARE", "THRESHOLDS",
           "Alignment", "Thresholds",
           "check_many_to_one", "check_monotonic", "check_reordering", "probe_sentences",
           "read_record"]

EXERCISE = Exercise("E10.3", "Reading attention heatmaps")



@dataclass(frozen=True)
class Thresholds:
    """The numbers of the criteria, as the exercise states them."""

    #: A German word is read *confidently* when its row's largest weight is at least this
    #: (notebook 5's threshold): then its hard alignment (that weight's column) can be trusted.
    confident: float = 0.5
    #: Monotonic: at least this many confident German words, on as many English words.
    monotonic_words: int = 6
    #: Reordering: the two crossing German words at most this many steps apart, and their
    #: English words at most this many positions apart (a local move, not a word read again
    #: far back).
    near: int = 3
    #: Many-to-one: each English word a German word reads gives it at least this weight.
    share: float = 0.3


THRESHOLDS = Thresholds()
CONFIDENT, MONOTONIC_WORDS = THRESHOLDS.confident, THRESHOLDS.monotonic_words
NEAR, SHARE = THRESHOLDS.near, THRESHOLDS.share

#: The criteria, as the exercise states them (a token is punctuation when
#: ``course_utils.alignment.word_class`` says so: every character of it a punctuation mark).
CRITERIA = {
    "monotonic": (f"at least {MONOTONIC_WORDS} German words that are not punctuation are read "
                  f"confidently (largest weight >= {CONFIDENT}), on at least {MONOTONIC_WORDS} "
                  "different English words, and no two of them cross: in the order the German "
                  "is written, their hard alignments never move left"),
    "reordering": (f"two German words read confidently (largest weight >= {CONFIDENT}), "
                   "neither punctuation and at least one a content word (not <unk>), at most "
                   f"{NEAR} steps apart, cross: the later one reads an English word to the left "
                   f"of the earlier one's, at most {NEAR} positions away, and reads it for the "
                   "first time (no confidently read German content word before it has that "
                   "hard alignment)"),
    "many-to-one": (f"one German content word (not <unk>) gives at least {SHARE} of its weight "
                    "to each of two or more neighbouring English words, none of them "
                    "punctuation"),
}

#: Each part: (the pattern, the student's function that returns the sentence).
FINDS = {"monotonic": "monotonic_example", "reordering": "reordering_example",
         "many-to-one": "many_to_one_example"}

#: Decimals the record keeps of each weight: enough for every criterion, small to save.
DECIMALS = 3
#: Tokens a record may hold on each side: a caption, not an essay.
MAX_TOKENS = 80


@dataclass(frozen=True)
class Alignment:
    """One translation as a record keeps it: rows of ``weights`` are the German words (the step
    that wrote ``<eos>`` left out), columns the English tokens; each row sums to 1."""

    sentence: str
    source_tokens: tuple[str, ...]
    output_tokens: tuple[str, ...]
    weights: np.ndarray  # (len(output_tokens), len(source_tokens))

    def reads(self, step: int) -> str:
        """``"hemd (shirt 0.81)"``: German word ``step``, the English word it reads most and the
        weight."""
        column = int(self.weights[step].argmax())
        return (f"{self.output_tokens[step]} ({self.source_tokens[column]} "
                f"{self.weights[step, column]:.2f})")


# ------------------------------------------------------------------------ making a record


_TRANSLATORS: dict[tuple[str, float], object] = {}


def _your_translator():
    """The student's own E10.2 attention model (``runs/e10.2/attention.pt`` beside the notebook),
    loaded once per file; raises ``FileNotFoundError`` saying what to run when it is missing."""
    from course_utils.checkpoints import E10_2_RUN, display_path
    from course_utils.translation import Translator

    path = E10_2_RUN.checkpoint("attention")
    if not path.is_file():
        raise FileNotFoundError(
            f"your E10.2 model was not found at {display_path(path)}. This part is judged on "
            "your own model: run E10.2 first (it saves it there), then this cell again")
    key = (str(Path(path).resolve()), path.stat().st_mtime)
    if key not in _TRANSLATORS:
        _TRANSLATORS[key] = Translator.from_checkpoint(path)
    return _TRANSLATORS[key]


def _sentence(value: object, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise CheckFailed(f"`{name}` must return one English sentence (a non-empty string); "
                          f"got {type(value).__name__}: {str(value)[:80]}")
    return value


def _readout(found: Alignment, pattern: str) -> str:
    """What the student reads against the criteria: each German word, the English word it reads
    most (its hard alignment) and that weight, confident or not, and every English word it
    gives at least :data:`SHARE`."""
    lines = [f"{pattern}: {found.sentence}", f"  -> {' '.join(found.output_tokens)}",
             f"  {'step':>4}  {'German':18}{'reads most (position)':>24}{'weight':>8}"
             f"{'confident':>11}  other English words with weight >= {SHARE}"]
    for step, word in enumerate(found.output_tokens):
        row = found.weights[step]
        column = int(row.argmax())
        others = ", ".join(f"{found.source_tokens[j]} ({j}) {row[j]:.2f}"
                           for j in np.flatnonzero(row >= SHARE) if j != column)
        english = f"{found.source_tokens[column][:18]} ({column})"
        lines.append(f"  {step:>4}  {word[:18]:18}{english:>24}{row[column]:>8.2f}"
                     f"{'yes' if row[column] >= CONFIDENT else '':>11}  {others}".rstrip())
    return "\n".join(lines)


def _recorder(part: str) -> Callable[[Callable], None]:
    """The check cell's first half: translate the student's sentence with their E10.2 model,
    print what to read, and show the record (saved with the notebook)."""
    def record(example: Callable) -> None:
        try:
            sentence = _sentence(example(), FINDS[part])
            (translation,) = _your_translator().translate([sentence])
        except NotImplementedError:
            return  # the part is not written yet: the check says so
        except (CheckFailed, FileNotFoundError) as problem:
            print(getattr(problem, "message", None) or str(problem))
            return
        except Exception as error:  # the student's code or sentence: say so, never stop
            print(f"No record made: {type(error).__name__}: {error}{student_line(error)}")
            return
        weights = np.round(translation.word_attention.astype(float), DECIMALS)
        found = Alignment(sentence, tuple(translation.source_tokens),
                          tuple(translation.output_tokens), weights)
        print(_readout(found, part))
        show_record(EXERCISE.id, part, {
            "sentence": sentence, "source_tokens": list(found.source_tokens),
            "output_tokens": list(found.output_tokens), "weights": weights.tolist()})

    return record


# ------------------------------------------------------------------------ reading a record

_NO_RECORD = ("no record of your model's translation of this sentence: run this part's check "
              "cell with your own E10.2 model, then save the notebook (the grader judges the "
              "record saved in it)")


def _tokens(value: object, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not 0 < len(value) <= MAX_TOKENS or not all(
            isinstance(t, str) and 0 < len(t) <= 100 for t in value):
        raise ValueError(f"its {what} are not a list of 1 to {MAX_TOKENS} tokens")
    return tuple(value)


def read_record(record: object) -> Alignment:
    """A record back as an :class:`Alignment`, strictly: the sentence, its English tokens as the
    course's tokenizer splits it, the German tokens, and a matrix of their shape whose rows are
    attention weights (each in [0, 1], rows summing to 1 to within the rounding). Raises
    ``ValueError`` saying what is wrong."""
    from course_utils.text import Tokenizer

    if not isinstance(record, dict):
        raise ValueError("it is not a record of a translation")
    sentence = record.get("sentence")
    if not isinstance(sentence, str) or not 0 < len(sentence) <= 1000:
        raise ValueError("its sentence is missing")
    source = _tokens(record.get("source_tokens"), "English tokens")
    output = _tokens(record.get("output_tokens"), "German tokens")
    if source not in {tuple(Tokenizer("en", lowercase)(sentence)) for lowercase in (True, False)}:
        raise ValueError("its English tokens are not those of its sentence")
    try:
        weights = np.array(record.get("weights"), dtype=float)
    except (TypeError, ValueError):
        raise ValueError("its attention matrix is not a matrix of numbers") from None
    if weights.shape != (len(output), len(source)):
        raise ValueError(f"its attention matrix has shape {weights.shape}, not one row per "
                         f"German token and one column per English token "
                         f"({len(output)}, {len(source)})")
    if not np.all(np.isfinite(weights)) or weights.min() < 0 or weights.max() > 1:
        raise ValueError("its attention weights are not all between 0 and 1")
    if not np.allclose(weights.sum(axis=1), 1, atol=0.01 + 10 ** -DECIMALS * len(source)):
        raise ValueError("the rows of its attention matrix do not sum to 1")
    return Alignment(sentence, source, output, weights)


def _judge(part: str, example: Callable) -> str:
    """A find's check: the sentence the student's function returns, the record of it, and the
    stated criterion for ``part`` (the grader's, where this copy of the course has it)."""
    name = FINDS[part]
    sentence = _sentence(call_student(example, given="no arguments"), name)
    record = current(EXERCISE.id, part)
    if record is None:
        raise CheckFailed(_NO_RECORD)
    try:
        found = read_record(record)
    except ValueError as problem:
        raise CheckFailed(f"the record saved for this part cannot be read ({problem}): run its "
                          "check cell again with your own E10.2 model and save the "
                          "notebook") from None
    if found.sentence != sentence:
        raise CheckFailed(f"the record saved is of another sentence than `{name}` returns now: "
                          "run its check cell again, then save the notebook")
    if HIDDEN is None:
        raise CheckPending(f"your model's translation and its attention are recorded in this "
                           f"cell's output; whether they show {part} alignment is decided when "
                           f"your notebook is graded, on this record. The criterion: "
                           f"{CRITERIA[part]}. Read the table above against it")
    lacking = HIDDEN.lacks(part, found, THRESHOLDS)
    if lacking:
        raise CheckFailed(f"your model's translation does not show {part} alignment: "
                          f"{lacking}")
    return f"found: {HIDDEN.shows(part, found, THRESHOLDS)}"


@EXERCISE.check("monotonic", points=2, target="monotonic_example",
                record=_recorder("monotonic"))
def check_monotonic(monotonic_example: Callable) -> str:
    return _judge("monotonic", monotonic_example)


@EXERCISE.check("reordering", points=2, target="reordering_example",
                record=_recorder("reordering"))
def check_reordering(reordering_example: Callable) -> str:
    return _judge("reordering", reordering_example)


@EXERCISE.check("many-to-one", points=2, target="many_to_one_example",
                record=_recorder("many-to-one"))
def check_many_to_one(many_to_one_example: Callable) -> str:
    return _judge("many-to-one", many_to_one_example)


EXERCISE.manual_question(
    "monotonic_reading",
    points=1,
    prompt="Your monotonic find: what your model wrote, and what its heatmap shows (where the "
           "diagonal runs, which words stay on one English word or skip one, and why English "
           "and German agree on this sentence's order).",
)
EXERCISE.manual_question(
    "reordering_reading",
    points=1,
    prompt="Your reordering find: which German words cross, which English words they read, and "
           "what moved (a verb to the end of its clause, a separable particle, an adjective or "
           "a prepositional phrase), and whether German needs that order or the model read a "
           "word out of place.",
)
EXERCISE.manual_question(
    "many_to_one_reading",
    points=1,
    prompt="Your many-to-one find: which German word reads which English words, and whether it "
           "is one word made from several (a compound, an auxiliary and its verb) or a word "
           "reading its own English word and a neighbour.",
)
EXERCISE.manual_question(
    "word_order",
    points=2,
    prompt="Does your model learn the word-order differences between English and German? Your "
           "answer with your own evidence: your reordering find and your probe sentences, what "
           "the model wrote and what their heatmaps show.",
)


# ------------------------------------------- the cell that uses the student's sentences


def probe_sentences(my_probes: object) -> dict[str, list[str]]:
    """The student's probe sentences, ``my_probes()``, as ``{phenomenon: [English sentences]}``;
    when the part is not written yet, or returns something else, says so and gives ``{}``."""
    if not callable(my_probes):
        print("`my_probes` is not a function: run the cell that defines it")
        return {}
    try:
        probes = my_probes()
    except NotImplementedError:
        print("`my_probes` is not written yet: write your sentences, then run this cell again")
        return {}
    except Exception as error:  # the student's code: say what and where, never stop
        print(f"`my_probes` raised {type(error).__name__}: {error}{student_line(error)}")
        return {}
    if not isinstance(probes, dict) or not probes:
        print(f"my_probes must return a dict {{phenomenon: [English sentences]}}; got "
              f"{type(probes).__name__}{' (empty)' if probes == {} else ''}")
        return {}
    checked: dict[str, list[str]] = {}
    for phenomenon, sentences in probes.items():
        if isinstance(sentences, str) or not isinstance(sentences, (list, tuple)) or not all(
                isinstance(s, str) and s.strip() for s in sentences) or not sentences:
            print(f"my_probes()[{phenomenon!r}] must be a list of English sentences (strings, "
                  f"at least one); got {type(sentences).__name__}: {str(sentences)[:80]}")
            return {}
        checked[str(phenomenon)] = list(sentences)
        if len(sentences) < 2:
            print(f"my_probes()[{phenomenon!r}] has one sentence; the part asks for at least two "
                  "of each kind, so that one odd translation does not decide what you conclude")
    return checked

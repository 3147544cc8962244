"""E10.2's attention model is the one the student built in notebooks 2 and 3: pasted into the
exercise, checked again by the lecture's checks, not graded, trained (with the library's piece
standing in for one that does not pass), and its checkpoint loads into the library's model
(E10.3 reads it). And Part 7a, ``word_differences``: right in any style earns the points, a
wrong answer loses them with a named hint, values typed in do not pass."""

import re
from collections import Counter

import pytest
import torch
from helpers import ROOT, judged_by_grader, notebook_functions

from course_utils.attention import BahdanauAttention
from course_utils.checkpoints import load_checkpoint, save_checkpoint
from course_utils.checks import NOT_IMPLEMENTED
from course_utils.checks import e10_2 as checks
from course_utils.checks.word_errors import _case
from course_utils.data import Vocab
from course_utils.models import AttentionDecoder, GRUDecoder, ModelConfig, build_model


def functions(name):
    namespace = notebook_functions(ROOT / name / "E10.2-vanilla-vs-attention.ipynb")
    namespace["re"] = re
    return namespace


SOLUTION, EXERCISE = functions("solutions"), functions("exercises")
CONFIG = ModelConfig(src_vocab_size=17, tgt_vocab_size=15, embed_dim=6, hidden_dim=5,
                     attention_dim=4, dropout=0.0, maxout_dim=3)


def pieces(namespace):
    return (namespace["MyBahdanauAttention"], namespace["Decoder"],
            namespace["TeacherForcing"])


def batch():
    generator = torch.Generator().manual_seed(0)
    lengths = torch.tensor([5, 2, 4])
    src = torch.randint(4, CONFIG.src_vocab_size, (3, 5), generator=generator)
    src[torch.arange(5)[None, :] >= lengths[:, None]] = Vocab.pad_id
    tgt_in = torch.randint(4, CONFIG.tgt_vocab_size, (3, 4), generator=generator)
    return src, lengths, tgt_in


def test_the_pasted_classes_are_trained_and_equal_the_librarys_model(capsys):
    assembled = checks.attention_decoder_to_train(*pieces(SOLUTION))
    out = capsys.readouterr().out
    assert out.count("✓") == 3 and "yours (MyBahdanauAttention, Decoder.step" in out
    assert checks.uses_only_yours(assembled)
    torch.manual_seed(1)
    library = build_model(CONFIG).eval()
    yours = build_model(CONFIG, decoder_class=assembled).eval()
    assert isinstance(yours.decoder.attention, SOLUTION["MyBahdanauAttention"])
    assert yours.state_dict().keys() == library.state_dict().keys()  # E10.3 loads it
    yours.load_state_dict(library.state_dict())
    with torch.no_grad():
        for got, want in zip(yours(*batch()), library(*batch())):
            assert torch.allclose(got, want, atol=1e-6)


def test_the_checkpoint_of_the_pasted_model_loads_into_the_librarys(tmp_path):
    torch.manual_seed(2)
    yours = build_model(CONFIG, decoder_class=checks.attention_decoder_to_train(
        *pieces(SOLUTION)))
    src_vocab, tgt_vocab = (Vocab.build([[f"w{i}" for i in range(n - 4)]])  # 4 specials
                            for n in (CONFIG.src_vocab_size, CONFIG.tgt_vocab_size))
    path = save_checkpoint(tmp_path / "attention.pt", yours, src_vocab, tgt_vocab)
    loaded = load_checkpoint(path).model
    assert type(loaded.decoder) is AttentionDecoder
    with torch.no_grad():
        assert torch.allclose(loaded.eval()(*batch())[0], yours.eval()(*batch())[0], atol=1e-6)


def test_untouched_pieces_give_way_to_the_librarys_and_the_model_still_runs(capsys):
    assembled = checks.attention_decoder_to_train(*pieces(EXERCISE))
    out = capsys.readouterr().out
    assert "attention model: the library's" in out and out.count("not written yet") == 3
    assert not checks.uses_only_yours(assembled)
    model = build_model(CONFIG, decoder_class=assembled).eval()
    assert isinstance(model.decoder.attention, BahdanauAttention)
    with torch.no_grad():
        logits, weights = model(*batch())
    assert logits.shape == (3, 4, CONFIG.tgt_vocab_size) and weights.shape == (3, 4, 5)


def test_a_wrong_step_is_named_and_replaced_the_other_pieces_kept(capsys):
    namespace = dict(SOLUTION)
    exec("""
class Decoder(AttentionDecoder):
    def step(self, y_prev, s_prev, memory):
        c, alpha = self.attention(s_prev, memory.encoder_outputs, mask=memory.mask,
                                  keys=memory.keys)
        return self.cell(torch.cat([c, y_prev], dim=-1), s_prev), c, alpha


class TeacherForcing(Decoder):
    forward = SOLUTION_FORWARD
""", {**namespace, "SOLUTION_FORWARD": SOLUTION["TeacherForcing"].forward}, namespace)
    assembled = checks.attention_decoder_to_train(*pieces(namespace))
    out = capsys.readouterr().out
    assert "✗ Decoder.step" in out and "show_worked('step')" in out
    assert "yours (MyBahdanauAttention, TeacherForcing.forward)" in out
    assert vars(assembled)["step"] is GRUDecoder.step and not checks.uses_only_yours(assembled)


# --------------------------------------------------------------- Part 7a: word_differences


def counted(hypothesis, reference):  # the right answer in another style than the solution's
    said = Counter(re.findall(r"\w+", hypothesis.lower()))
    wanted = Counter(re.findall(r"\w+", reference.lower()))
    return {"missing": sorted((wanted - said).elements()),
            "extra": sorted((said - wanted).elements()),
            "repeated": sorted(w for w, n in said.items() if n > 1 and n > wanted[w])}


def variant(words=lambda t: re.findall(r"\w+", t.lower()), sets=False, swap=False,
            repeats=None, unsorted=False):
    def word_differences(hypothesis, reference):
        said, wanted = Counter(words(hypothesis)), Counter(words(reference))
        if sets:
            said, wanted = Counter(set(said)), Counter(set(wanted))
        out = {"missing": sorted((wanted - said).elements()),
               "extra": sorted((said - wanted).elements()),
               "repeated": sorted(w for w, n in said.items() if n > 1 and n > wanted[w])}
        if repeats:
            out["repeated"] = repeats(said, wanted)
        if swap:
            out["missing"], out["extra"] = out["extra"], out["missing"]
        if unsorted:
            out["missing"] = out["missing"][::-1]
        return out
    return word_differences


#: (student, points, hint) for the usual mistakes of word_differences, with or without the
#: grader's answers.
MISTAKES = [
    (variant(words=lambda t: re.findall(r"\w+", t)), 0, "lowercase both texts first"),
    (variant(words=lambda t: t.lower().split()), 0, "punctuation sticks to the words"),
    (variant(sets=True), 0, "sets lose the counts"),
    (variant(swap=True), 0, "`missing` and `extra` are swapped"),
    (variant(unsorted=True), 0, "sort the list"),
    (variant(repeats=lambda said, wanted: sorted(w for w, n in said.items() if n > 1)), 2,
     "a word the reference also repeats is no loop"),
]


def test_word_differences_right_in_any_style_earns_the_points():
    assert SOLUTION["word_differences"]("Ein hund, ein hund läuft.", "Ein Hund rennt.") == {
        "missing": ["rennt"], "extra": ["ein", "hund", "läuft"], "repeated": ["ein", "hund"]}
    for student in (SOLUTION["word_differences"], counted):
        assert checks.check_word_differences(student).passed
        assert judged_by_grader(checks.check_word_differences, student).passed


@pytest.mark.parametrize("student, points, hint", [
    *MISTAKES,
    (lambda h, r: {"missing": [], "extra": []}, 0, "the keys must be"),
    (lambda h, r: "ein hund", 0, "must return a dict"),
])
def test_word_differences_mistakes_lose_points_with_a_named_hint(student, points, hint):
    result = checks.check_word_differences(student)
    assert result.points == points and hint in result.message, result.message


def test_values_typed_in_for_one_run_fail_on_another():
    hypothesis, reference = _case(120)
    typed = counted(hypothesis, reference)
    assert not checks.check_word_differences(lambda h, r: typed).passed
    assert judged_by_grader(checks.check_word_differences, lambda h, r: typed, seed=7).points == 0


def test_the_untouched_exercise_scores_zero_on_word_differences():
    result = checks.check_word_differences(EXERCISE["word_differences"])
    assert result.points == 0 and result.message == NOT_IMPLEMENTED


@pytest.mark.parametrize("student, points, hint", MISTAKES)
def test_without_the_graders_answers_the_fixed_sentences_check_and_name_mistakes(
        monkeypatch, student, points, hint):
    """A handout has no checks/hidden_e10_2.py: word_differences is checked on the fixed
    sentences, whose answers are stored, names the same mistakes, and says that the grader
    adds fresh sentences."""
    from course_utils.checks import word_errors

    monkeypatch.setattr(word_errors, "HIDDEN", None)
    for right in (SOLUTION["word_differences"], counted):
        result = checks.check_word_differences(right)
        assert result.passed and "fresh translations" in result.message, result
    result = checks.check_word_differences(student)
    assert result.points == points and hint in result.message, result.message


def test_answers_recited_from_the_stored_constants_fail_when_graded():
    from course_utils.checks import word_errors

    def recited(hypothesis, reference):
        for base in word_errors.KNOWN:
            if (hypothesis, reference) == _case(base):
                return word_errors.KNOWN[base]["right"]
        return {"missing": [], "extra": [], "repeated": []}

    assert checks.check_word_differences(recited).passed  # the fixed sentences, in a notebook
    assert judged_by_grader(checks.check_word_differences, recited, seed=7).points == 0


def test_calling_the_graders_answers_earns_nothing():
    from course_utils.checks import hidden_e10_2

    def borrowed(hypothesis, reference):
        return hidden_e10_2.word_differences(re.findall(r"\w+", hypothesis.lower()),
                                             re.findall(r"\w+", reference.lower()))

    result = checks.check_word_differences(borrowed)
    assert result.points == 0 and "the course's own code" in result.message, result

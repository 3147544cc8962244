"""E10.2's attention parts: the student's AdditiveAttention and BahdanauDecoder earn full marks
when right, nothing when untouched or handed to the library, and a named hint for each usual
mistake, in the notebook and under the grader alike; the trained model loads into the library's."""

from dataclasses import replace

import pytest
import torch
from helpers import ROOT, judged_by_grader, notebook_functions

from course_utils.checkpoints import E10_2_RUN, load_checkpoint, save_checkpoint
from course_utils.checks import NOT_IMPLEMENTED
from course_utils.checks import e10_2 as checks
from course_utils.checks.attention_hints import (
    KEYS_RECOMPUTED,
    MASK_AFTER_SOFTMAX,
    MASK_MISSING,
    NO_SOFTMAX,
    NOT_NORMALISED,
    SWAPPED_INPUT,
    WRONG_AXIS,
)
from course_utils.checks.decoders import CONFIG
from course_utils.data import Vocab
from course_utils.models import AttentionDecoder, build_model

SOLUTION = notebook_functions(ROOT / "solutions" / "E10.2-vanilla-vs-attention.ipynb")
EXERCISE = notebook_functions(ROOT / "exercises" / "E10.2-vanilla-vs-attention.ipynb")
RIGHT_ATTEND = """
        query = self.W_s(decoder_state).unsqueeze(1)
        energies = self.v(torch.tanh(query + keys)).squeeze(-1)
        energies = energies.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(energies, dim=-1)
"""


def attention_class(attend_body=RIGHT_ATTEND, keys_body="return self.W_h(encoder_outputs)",
                    extra=""):
    source = f"""
class AdditiveAttention(nn.Module):
    def __init__(self, encoder_dim, decoder_dim, attention_dim):
        super().__init__()
        self.W_s = nn.Linear(decoder_dim, attention_dim, bias=False)
        self.W_h = nn.Linear(encoder_dim, attention_dim, bias=False)
        self.v = nn.Linear(attention_dim, 1, bias=False)

    def project_keys(self, encoder_outputs):
        {keys_body}

    def attend(self, decoder_state, encoder_outputs, keys, mask):{extra}
{attend_body}
        context = torch.bmm(weights.unsqueeze(1), encoder_outputs).squeeze(1)
        return context, weights
"""
    namespace = dict(SOLUTION)
    exec(source, namespace)
    return namespace["AdditiveAttention"]


def make_decoder(step_body, attention=None):
    namespace = dict(SOLUTION)
    namespace["AdditiveAttention"] = attention or SOLUTION["AdditiveAttention"]
    namespace["SOLUTION_PREPARE"] = SOLUTION["BahdanauDecoder"].prepare
    exec(f"""
class BahdanauDecoder(AttentionDecoder):
    def __init__(self, vocab_size, embed_dim, hidden_dim, encoder_dim, attention_dim,
                 dropout=0.0, maxout_dim=0, score="additive"):
        GRUDecoder.__init__(self, vocab_size, embed_dim, hidden_dim, encoder_dim, dropout,
                            maxout_dim)
        self.attention = AdditiveAttention(encoder_dim, hidden_dim, attention_dim)

    prepare = SOLUTION_PREPARE

    def step(self, embedded, state, memory):
{step_body}
""", namespace)
    return namespace["BahdanauDecoder"]


def both_ways(check, student):
    """The verdict in the notebook, checked equal to the grader's."""
    result = check(student)
    judged = judged_by_grader(check, student)
    assert (judged.points, judged.message) == (result.points, result.message)
    return result


def test_the_solution_scores_full_marks_and_the_exercise_nothing():
    for check, name in [(checks.check_attention, "AdditiveAttention"),
                        (checks.check_attention_step, "BahdanauDecoder")]:
        assert both_ways(check, SOLUTION[name]).passed
        untouched = both_ways(check, EXERCISE[name])
        assert untouched.points == 0 and untouched.message == NOT_IMPLEMENTED


@pytest.mark.parametrize("attend, points, hint", [
    ("""        energies = self.v(torch.tanh(self.W_s(decoder_state).unsqueeze(1) + keys)).squeeze(-1)
        weights = torch.softmax(energies, dim=-1) * mask""", 1, MASK_AFTER_SOFTMAX),
    ("""        energies = self.v(torch.tanh(self.W_s(decoder_state).unsqueeze(1) + keys)).squeeze(-1)
        weights = torch.softmax(energies, dim=-1)""", 1, MASK_MISSING),
    ("""        energies = self.v(torch.tanh(self.W_s(decoder_state).unsqueeze(1) + keys)).squeeze(-1)
        weights = torch.softmax(energies.masked_fill(~mask, float("-inf")), dim=0)""", 1,
     WRONG_AXIS),
    ("""        energies = self.v(torch.tanh(self.W_s(decoder_state).unsqueeze(1) + keys)).squeeze(-1)
        weights = energies.masked_fill(~mask, 0.0)""", 1, NO_SOFTMAX),
    ("""        energies = self.v(torch.tanh(self.W_s(decoder_state).unsqueeze(1) + keys)).squeeze(-1)
        weights = torch.exp(energies) * mask""", 1, NOT_NORMALISED),
    ("""        keys = self.W_h(encoder_outputs)
""" + RIGHT_ATTEND, 2, "does not use the keys it is given"),
])
def test_attention_mistakes_get_their_named_hints(attend, points, hint):
    result = both_ways(checks.check_attention, attention_class(attend))
    assert result.points == points and hint in result.message, result


def test_wrong_keys_lose_their_point_and_say_what_keys_are():
    result = both_ways(checks.check_attention, attention_class(
        keys_body="return encoder_outputs"))
    assert result.points == 2 and "`project_keys` must return the keys W_h h_j" in result.message


@pytest.mark.parametrize("student, why", [
    (lambda: attention_class(extra="\n        return BahdanauAttention.attend(self, "
                                   "decoder_state, encoder_outputs, keys, mask)"),
     "BahdanauAttention"),
])
def test_attention_handed_to_the_library_scores_zero(student, why):
    from course_utils.attention import BahdanauAttention

    SOLUTION["BahdanauAttention"] = BahdanauAttention
    try:
        result = both_ways(checks.check_attention, student())
    finally:
        del SOLUTION["BahdanauAttention"]
    assert result.points == 0 and "write it yourself" in result.message.lower(), result


def test_a_subclass_of_the_library_attention_scores_zero():
    from course_utils.attention import BahdanauAttention

    class AdditiveAttention(BahdanauAttention):
        pass

    result = both_ways(checks.check_attention, AdditiveAttention)
    assert result.points == 0 and "subclass `nn.Module`" in result.message


RIGHT_STEP = """        context, weights = self.attention.attend(state, memory.encoder_outputs, memory.keys,
                                                 memory.mask)
"""


@pytest.mark.parametrize("step, hint", [
    (RIGHT_STEP + """        return self.cell(torch.cat([context, embedded], -1), state), context, weights""",
     SWAPPED_INPUT),
    ("""        keys = self.attention.project_keys(memory.encoder_outputs)
        context, weights = self.attention.attend(state, memory.encoder_outputs, keys, memory.mask)
        return self.cell(torch.cat([embedded, context], -1), state), context, weights""",
     KEYS_RECOMPUTED),
    (RIGHT_STEP + """        state = self.cell(torch.cat([embedded, context], -1), state)
        context, weights = self.attention.attend(state, memory.encoder_outputs, memory.keys,
                                                 memory.mask)
        return state, context, weights""", "s_(i-1)"),
])
def test_step_mistakes_get_their_named_hints(step, hint):
    result = both_ways(checks.check_attention_step, make_decoder(step))
    assert result.points == 0 and hint in result.message, result


def test_the_step_is_judged_on_its_own_when_the_attention_is_wrong():
    wrong = attention_class("""        energies = self.v(torch.tanh(self.W_s(decoder_state).unsqueeze(1) + keys)).squeeze(-1)
        weights = torch.softmax(energies, dim=-1)""")
    result = both_ways(checks.check_attention_step,
                       make_decoder(SOLUTION_STEP, attention=wrong))
    assert result.passed and "standing in" in result.message


SOLUTION_STEP = RIGHT_STEP + """        return self.cell(torch.cat([embedded, context], -1), state), context, weights"""


@pytest.mark.parametrize("step", [
    "        return super().step(embedded, state, memory)",
    "        return AttentionDecoder.step(self, embedded, state, memory)",
    "        context, weights = self.context(state, memory)\n" + SOLUTION_STEP.split("\n")[-1],
])
def test_a_step_handed_to_the_library_scores_zero(step):
    result = both_ways(checks.check_attention_step, make_decoder(step))
    assert result.points == 0
    assert "write it yourself" in result.message.lower() or "library's" in result.message, result


def test_training_uses_the_students_classes_only_once_they_pass(capsys):
    chosen = checks.attention_decoder_to_train(SOLUTION["AdditiveAttention"],
                                               SOLUTION["BahdanauDecoder"])
    assert chosen is SOLUTION["BahdanauDecoder"] and "your BahdanauDecoder" in capsys.readouterr().out
    chosen = checks.attention_decoder_to_train(EXERCISE["AdditiveAttention"],
                                               EXERCISE["BahdanauDecoder"])
    assert chosen is AttentionDecoder and "the library's" in capsys.readouterr().out


def test_the_students_trained_model_loads_into_the_library_model(tmp_path, monkeypatch):
    """E10.3 reads the student's checkpoint with a library-built model."""
    monkeypatch.setenv("COURSE_RUNS_DIR", str(tmp_path))
    vocab = Vocab.build([list("abcdefgh")])
    config = replace(CONFIG, attention=True, src_vocab_size=len(vocab),
                     tgt_vocab_size=len(vocab))
    yours = build_model(config, decoder_class=SOLUTION["BahdanauDecoder"])
    path = save_checkpoint(E10_2_RUN.checkpoint("attention"), yours, vocab, vocab,
                           extra={"config": "test", "decoder": "yours"})
    assert tmp_path in path.parents
    model = load_checkpoint(path).model
    assert type(model.decoder) is AttentionDecoder
    src = torch.tensor([[5, 6, 7], [5, 6, 0]])
    lengths = torch.tensor([3, 2])
    tgt = torch.tensor([[1, 5], [1, 6]])
    with torch.no_grad():
        assert torch.allclose(model.eval()(src, lengths, tgt)[0],
                              yours.eval()(src, lengths, tgt)[0], atol=1e-6)


def test_a_library_step_taken_as_the_students_own_scores_zero():
    from course_utils.models import GRUDecoder

    namespace = {"Base": make_decoder(SOLUTION_STEP), "GRUDecoder": GRUDecoder}
    exec("class BahdanauDecoder(Base):\n    step = GRUDecoder.step\n", namespace)
    result = both_ways(checks.check_attention_step, namespace["BahdanauDecoder"])
    assert result.points == 0 and "GRUDecoder.step" in result.message, result.message


def test_a_prepare_that_leaves_padding_in_the_keys_is_named():
    namespace = dict(SOLUTION)
    exec("""
class BahdanauDecoder(SOLUTION_DECODER):
    def prepare(self, encoder_outputs, summary, mask):
        return DecoderMemory(encoder_outputs, summary, mask,
                             self.attention.project_keys(encoder_outputs))

    step = SOLUTION_DECODER.step
""", {**namespace, "SOLUTION_DECODER": SOLUTION["BahdanauDecoder"]}, namespace)
    result = both_ways(checks.check_attention_step, namespace["BahdanauDecoder"])
    assert result.points == 0 and "padding" in result.message, result.message

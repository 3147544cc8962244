"""E10.2 checks: full marks for the solution, zero for the untouched exercise, a named
mistake for the usual errors."""

import re

import pytest
import torch
from helpers import ROOT, judged_by_grader, notebook_functions

from course_utils.checks import NOT_IMPLEMENTED, get_exercise
from course_utils.checks import e10_2 as checks
from course_utils.models import VanillaDecoder

SOLUTION = ROOT / "solutions" / "E10.2-vanilla-vs-attention.ipynb"
EXERCISE = ROOT / "exercises" / "E10.2-vanilla-vs-attention.ipynb"


def functions(path):
    """The notebook's functions and classes, with the ``re`` its first cell imports."""
    namespace = notebook_functions(path)
    namespace["re"] = re
    return namespace


def test_solution_scores_full_marks_and_exercise_scores_zero():
    assert all(r.passed for r in checks.EXERCISE.grade(functions(SOLUTION)))
    for result in checks.EXERCISE.grade(functions(EXERCISE)):
        assert result.points == 0 and result.message == NOT_IMPLEMENTED
    exercise = get_exercise("E10.2")
    assert (exercise.auto_points, exercise.max_points) == (15, 23)
    # the attention model is the lecture's: checked in the notebook, not graded again
    assert set(exercise.checks) == {"vanilla_context", "bleu_curve", "plot_bleu_curves",
                                    "word_differences"}


# ------------------------------------------------------------------ the fixed-context decoder


def right_context(self, state, memory):
    outputs = memory.encoder_outputs
    half = outputs.shape[-1] // 2
    last = memory.mask.sum(1) - 1
    return torch.cat([outputs[torch.arange(outputs.shape[0]), last, :half],
                      outputs[:, 0, half:]], -1), None


def right_step(self, embedded, state, memory):
    context, _ = self.context(state, memory)
    return self.cell(torch.cat([embedded, context], -1), state), context, None


def decoder(context=right_context, step=None):
    """A ``FixedContextDecoder`` with these methods (``step``: the library's shared one unless
    given)."""
    methods = {}
    if context is not None:
        methods["context"] = context
    if step is not None:
        methods["step"] = step
    return type("FixedContextDecoder", (VanillaDecoder,), methods)


def last_real(self, state, memory):
    outputs = memory.encoder_outputs
    return outputs[torch.arange(outputs.shape[0]), memory.mask.sum(1) - 1], None


def backward_first(self, state, memory):
    context, _ = right_context(self, state, memory)
    half = context.shape[-1] // 2
    return torch.cat([context[:, half:], context[:, :half]], -1), None


@pytest.mark.parametrize("context, points, expected", [
    (right_context, 5, "final states, read from its outputs; in the whole model, the same"),
    (lambda self, s, m: (m.summary, None), 0, "returns `memory.summary`"),
    (lambda self, s, m: (m.summary + 0, None), 0, "reads `memory.summary`"),
    (lambda self, s, m: (m.encoder_outputs.mean(1), None), 0, "mean of the encoder outputs"),
    (lambda self, s, m: (m.encoder_outputs.sum(1) / m.mask.sum(1, keepdim=True), None), 0,
     "mean of the encoder outputs"),
    (lambda self, s, m: (m.encoder_outputs[:, -1], None), 0, "column -1 is padding"),
    (last_real, 0, "forgot the backward direction"),
    (backward_first, 0, "wrong concatenation order: the forward state comes first"),
    (lambda self, s, m: (right_context(self, s, m)[0] + s.sum(), None), 0,
     "changes with the decoder state"),
    (lambda self, s, m: (right_context(self, s, m)[0], m.mask.float()), 4,
     "no attention weights"),
    (lambda self, s, m: right_context(self, s, m)[0], 0, "must return a pair"),
    (lambda self, s, m: VanillaDecoder.context(self, s, m), 0, "calls the library's `context`"),
    (lambda self, s, m: (right_context(self, s, m)[0].detach(), None), 3,
     "no gradient flows back from your context"),
    (lambda self, s, m: (right_context(self, s, m)[0].detach(), m.mask.float()), 3,
     "no attention weights: return None as the second value; and no gradient flows back"),
    (lambda self, s, m: (right_context(self, s, m)[0].numpy(), None), 0,
     "must be a torch tensor"),
    (lambda self, s, m: (torch.cat([m.encoder_outputs[:, -1, :6], right_context(self, s, m)[0]
                                    [:, 6:]], -1), None), 0, "forward half comes from column -1"),
    (lambda self, s, m: (torch.cat([last_real(self, s, m)[0][:, 6:],
                                    m.encoder_outputs[:, 0, :6]], -1), None), 0,
     "the halves are swapped"),
    (None, 0, "does not define `context`"),
])
def test_context_mistakes_get_their_named_hints(context, points, expected):
    cls = decoder(context=context)
    result = checks.check_vanilla_context(cls)
    assert result.points == points and expected in result.message, result.message
    # under course-grade: the class runs in the kernel, the grader decides; the same verdict
    graded = judged_by_grader(checks.check_vanilla_context, cls, seed=5)
    assert (graded.points, graded.message) == (result.points, result.message)


def caches_its_context(self, state, memory):  # right for the first batch only
    if not hasattr(self, "cached"):
        self.cached = right_context(self, state, memory)[0]
    return self.cached, None


def caches_it_without_grad(self, state, memory):
    """Saves the context on ``self`` for the later steps of the batch: a fresh batch starts
    a new one (its size changes), but a decoding batch that shrinks keeps the old rows."""
    cached = getattr(self, "cached", None)
    if cached is None or cached.shape[0] != memory.encoder_outputs.shape[0]:
        self.cached = right_context(self, state, memory)[0]
    return self.cached, None


def keeps_a_counter(self, state, memory):  # right at the first step, wrong at the others
    self.calls = getattr(self, "calls", 0) + 1
    context, _ = right_context(self, state, memory)
    return context * (1.0 if self.calls <= 3 else 0.5), None


def swapped_step(self, embedded, state, memory):  # a step of the student's own, in the wrong order
    context, _ = self.context(state, memory)
    return self.cell(torch.cat([context, embedded], -1), state), context, None


@pytest.mark.parametrize("context, step, expected", [
    (caches_its_context, None, "keep something of its own between calls"),
    (caches_it_without_grad, None, "keep something of its own between calls"),
    (keeps_a_counter, None, "over whole sentences your decoder's outputs differ"),
    (right_context, swapped_step, "or does your class change the shared `step`"),
])
def test_a_context_that_is_right_once_but_not_in_the_whole_model_loses_points(context, step,
                                                                               expected):
    cls = decoder(context=context, step=step)
    result = checks.check_vanilla_context(cls)
    assert 0 < result.points <= 2 and expected in result.message, result.message
    graded = judged_by_grader(checks.check_vanilla_context, decoder(context=context, step=step),
                              seed=6)
    assert (graded.points, graded.message) == (result.points, result.message)


def test_a_step_of_the_students_own_is_allowed_and_the_librarys_is_not_refused():
    result = checks.check_vanilla_context(decoder(step=right_step))
    assert result.passed, result.message
    result = checks.check_vanilla_context(decoder(step=lambda self, e, s, m: super(
        VanillaDecoder, self).step(e, s, m)))
    assert result.passed, result.message


def test_the_grader_takes_only_arrays_that_fit_this_runs_model():
    import json

    check = checks.check_vanilla_context
    raw = json.loads(json.dumps(check.probe(decoder(), 3)))
    assert check.judge(raw, 3).passed
    assert check.judge(raw, 4).points == 0  # another run's seed: the record does not fit

    def forge(path, change):
        copy = json.loads(json.dumps(raw))
        node = copy["calls"][0]["result"]
        for key in path:  # dicts are recorded as [key, value] pairs
            node = next(v for k, v in node["v"] if k["v"] == key)
        change(node)
        return check.judge(copy, 3)

    def nudge(node):
        node["v"][0][0][0] += 0.5  # one logit of the first sentence

    assert forge(["logits"], nudge).points < check.points
    assert forge(["tokens"], lambda node: node["v"].reverse()).points < check.points
    assert forge(["context"], lambda node: node["v"][0].__setitem__(0, 9.0)).points == 0
    claims = dict(raw, points=5, message="forged", calls=[])
    assert check.judge(claims, 3).points == 0


def test_a_stateful_context_fails_every_time_not_by_chance():
    assert not any(checks.check_vanilla_context(decoder(context=caches_it_without_grad)).passed
                   for _ in range(10))


def test_what_is_not_a_decoder_class_is_named():
    assert "subclasses the library's decoder" in checks.check_vanilla_context(int).message
    assert "run its cell first" in checks.check_vanilla_context(None).message

    class Extra(VanillaDecoder):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.extra = torch.nn.Linear(2, 2)

    assert "weights do not load" in checks.check_vanilla_context(Extra).message


def test_the_library_steps_are_put_back_whatever_the_check_found():
    from course_utils.models import GRUDecoder

    before = (GRUDecoder.step, VanillaDecoder.context)
    checks.check_vanilla_context(decoder(context=lambda self, s, m: VanillaDecoder.context(
        self, s, m)))
    checks.check_vanilla_context(decoder(context=lambda self, s, m: 1 / 0))
    assert (GRUDecoder.step, VanillaDecoder.context) == before


def test_training_uses_the_students_decoder_only_once_it_passes(capsys):
    good = decoder()
    assert checks.vanilla_decoder_to_train(good) is good
    assert "your FixedContextDecoder" in capsys.readouterr().out
    assert checks.vanilla_decoder_to_train(decoder(context=last_real)) is VanillaDecoder
    assert "does not pass its checks yet" in capsys.readouterr().out


def test_a_library_method_taken_as_the_students_own_scores_zero():
    from course_utils.models import AttentionDecoder

    borrowed = type("FixedContextDecoder", (VanillaDecoder,),
                    {"context": AttentionDecoder.context})
    result = checks.check_vanilla_context(borrowed)
    assert result.points == 0 and "AttentionDecoder.context" in result.message, result.message
    assert judged_by_grader(checks.check_vanilla_context, borrowed).points == 0

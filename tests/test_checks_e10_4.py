"""E10.4's checks. Parts 1-3: every decoder step at once, checked against the library's
step-by-step scores; right answers in any style pass on fresh inputs, each usual mistake gets
its named hint, a loop over the steps or the sentences earns half, the library earns nothing.
Part 5: a rank-limited general score is checked as s^T U V h_j with its keys once per sentence."""

import json
import math

import numpy as np
import pytest
import torch
from helpers import ROOT, judged_by_grader, notebook_functions
from torch import nn

from course_utils.attention import Attention
from course_utils.checks import NOT_IMPLEMENTED, e10_4, get_exercise
from course_utils.scores import DotAttention, GeneralAttention, ScaledDotAttention

# ----------------------------------------------------------------- right answers, many styles


def dot_matmul(S, H, scaled):
    scores = S @ H.transpose(1, 2)
    return scores / math.sqrt(S.shape[-1]) if scaled else scores


def dot_einsum(S, H, scaled):
    return torch.einsum("btd,bjd->btj", S, H) / (S.shape[-1] ** 0.5 if scaled else 1.0)


def dot_bmm_mT(S, H, scaled):
    out = torch.bmm(S, H.mT)
    if scaled:
        out = out * (1 / math.sqrt(H.size(2)))
    return out


def attention_matmul(S, H, mask):
    scores = dot_matmul(S, H, True).masked_fill(~mask.unsqueeze(1), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights, weights @ H


def attention_where(S, H, mask):  # another style: where, exp and a sum, einsum for the context
    scores = torch.einsum("btd,bjd->btj", S, H) / math.sqrt(S.shape[-1])
    scores = torch.where(mask[:, None, :], scores, torch.tensor(-1e9))
    exp = torch.exp(scores - scores.max(-1, keepdim=True).values) * mask[:, None, :]
    weights = exp / exp.sum(-1, keepdim=True)
    return weights, torch.einsum("btj,bjd->btd", weights, H)


def general_matmul(S, H, W):
    return S @ (H @ W.T).transpose(1, 2)


def general_einsum(S, H, W):
    return torch.einsum("bte,ed,bjd->btj", S, W, H)


def additive_broadcast(S, H, W_s, W_h, v):
    return torch.tanh((S @ W_s.T).unsqueeze(2) + (H @ W_h.T).unsqueeze(1)) @ v


def additive_einsum(S, H, W_s, W_h, v):
    steps, positions = torch.einsum("ad,btd->bta", W_s, S), torch.einsum("ae,bje->bja", W_h, H)
    return torch.einsum("btja,a->btj", torch.tanh(steps[:, :, None] + positions[:, None]), v)


RIGHT = [("dot", dot_matmul), ("dot", dot_einsum), ("dot", dot_bmm_mT),
         ("scaled_dot", attention_matmul), ("scaled_dot", attention_where),
         ("general", general_matmul), ("general", general_einsum),
         ("additive", additive_broadcast), ("additive", additive_einsum)]


@pytest.mark.parametrize("part, fn", RIGHT)
def test_right_answers_in_any_style_get_every_point(part, fn):
    result = e10_4.EXERCISE.checks[part](fn)
    assert result.passed, result.message


def test_solution_scores_full_marks_and_exercise_scores_zero():
    name = "E10.4-dot-and-general-scores.ipynb"
    assert all(r.passed for r in e10_4.EXERCISE.grade(notebook_functions(
        ROOT / "solutions" / name)))
    for result in e10_4.EXERCISE.grade(notebook_functions(ROOT / "exercises" / name)):
        assert result.points == 0 and result.message == NOT_IMPLEMENTED
    assert get_exercise("E10.4") is e10_4.EXERCISE
    assert list(e10_4.EXERCISE.manual) == ["prediction", "outcome"]
    exercise = e10_4.EXERCISE
    assert {n: c.points for n, c in exercise.checks.items()} == {
        "dot": 2, "scaled_dot": 2, "general": 1, "additive": 2, "low_rank": 2}
    assert exercise.auto_points == 9 and exercise.max_points == 12


# ----------------------------------------------------------------- named mistakes


def dot_swapped(S, H, scaled):
    return H @ S.transpose(1, 2)


def dot_unscaled(S, H, scaled):
    return S @ H.transpose(1, 2)


def dot_always_scaled(S, H, scaled):
    return S @ H.transpose(1, 2) / math.sqrt(S.shape[-1])


def dot_by_d(S, H, scaled):
    return S @ H.transpose(1, 2) / (S.shape[-1] if scaled else 1)


def attention_softmax_steps(S, H, mask):
    scores = dot_matmul(S, H, True).masked_fill(~mask.unsqueeze(1), float("-inf"))
    weights = torch.softmax(scores, dim=1)
    return weights, weights @ H


def attention_no_mask(S, H, mask):
    weights = torch.softmax(dot_matmul(S, H, True), dim=-1)
    return weights, weights @ H


def attention_mask_after(S, H, mask):
    weights = torch.softmax(dot_matmul(S, H, True), dim=-1) * mask.unsqueeze(1)
    return weights, weights @ H


def attention_mask_inverted(S, H, mask):
    scores = dot_matmul(S, H, True).masked_fill(mask.unsqueeze(1), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights, weights @ H


def attention_unscaled(S, H, mask):
    scores = dot_matmul(S, H, False).masked_fill(~mask.unsqueeze(1), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights, weights @ H


def attention_bad_context(S, H, mask):
    weights = attention_matmul(S, H, mask)[0]
    return weights, weights @ H * 2


def general_wrong_side(S, H, W):
    return (S @ W.T) @ H.transpose(1, 2) if W.shape[0] == W.shape[1] else general_matmul(S, H, W)


def general_swapped(S, H, W):
    return (H @ W.T) @ S.transpose(1, 2)


def additive_paired(S, H, W_s, W_h, v):  # no axis added: step t with position t only
    return torch.tanh(S @ W_s.T + H @ W_h.T) @ v


def additive_no_tanh(S, H, W_s, W_h, v):
    return ((S @ W_s.T).unsqueeze(2) + (H @ W_h.T).unsqueeze(1)) @ v


def additive_tanh_after_v(S, H, W_s, W_h, v):
    return torch.tanh(((S @ W_s.T).unsqueeze(2) + (H @ W_h.T).unsqueeze(1)) @ v)


MISTAKES = [
    ("dot", dot_swapped, "last two axes are swapped"),
    ("dot", dot_unscaled, "with scaled=True the scores must be divided by sqrt(d)"),
    ("dot", dot_always_scaled, "with scaled=False the scores are the plain dot products"),
    ("dot", dot_by_d, "divided by d;"),
    ("scaled_dot", attention_softmax_steps, "softmax runs over the wrong axis"),
    ("scaled_dot", attention_no_mask, "the mask is not applied"),
    ("scaled_dot", attention_mask_after, "the mask is applied after the softmax"),
    ("scaled_dot", attention_mask_inverted, "the mask is the wrong way round"),
    ("scaled_dot", attention_unscaled, "divide the scores by sqrt(d)"),
    ("scaled_dot", attention_bad_context, "the contexts differ"),
    ("general", general_wrong_side, "W is on the wrong side"),
    ("general", general_swapped, "last two axes are swapped"),
    ("additive", additive_paired, "step t paired with position t"),
    ("additive", additive_no_tanh, "the tanh is missing"),
    ("additive", additive_tanh_after_v, "tanh is applied after v"),
]


@pytest.mark.parametrize("part, fn, hint", MISTAKES)
def test_each_usual_mistake_gets_its_hint_and_no_points(part, fn, hint):
    result = e10_4.EXERCISE.checks[part](fn)
    assert result.points == 0 and hint in result.message, result.message


def test_additive_without_the_broadcast_axes_is_explained_on_unequal_lengths():
    from course_utils.checks.e10_4.all_steps import function_adapter
    run = function_adapter("additive_scores", ("scores",))(additive_paired)
    S, H = torch.randn(2, 3, 4), torch.randn(2, 5, 6)
    out = run(S.numpy(), H.numpy(), np.ones((7, 4), np.float32), np.ones((7, 6), np.float32),
              np.ones(7, np.float32))
    assert "size of tensor" in out["error"]
    result = e10_4.check_additive(additive_paired)
    assert "(batch, tgt_len, 1, a) + (batch, 1, src_len, a)" in result.message


# ----------------------------------------------------------------- loops: half the points


def dot_loop_steps(S, H, scaled):
    rows = [torch.bmm(H, S[:, t].unsqueeze(-1)).squeeze(-1) for t in range(S.shape[1])]
    scores = torch.stack(rows, 1)
    return scores / math.sqrt(S.shape[-1]) if scaled else scores


def attention_loop_batch(S, H, mask):
    weights, contexts = [], []
    for b in range(S.shape[0]):
        w, c = attention_matmul(S[b:b + 1], H[b:b + 1], mask[b:b + 1])
        weights.append(w)
        contexts.append(c)
    return torch.cat(weights), torch.cat(contexts)


def general_loop_steps(S, H, W):
    keys = H @ W.T
    return torch.stack([(keys @ S[:, t].unsqueeze(-1)).squeeze(-1) for t in range(S.shape[1])], 1)


def additive_loop_steps(S, H, W_s, W_h, v):  # the library's form, written out, one step a time
    keys = H @ W_h.T
    return torch.stack([torch.tanh(keys + (S[:, t] @ W_s.T).unsqueeze(1)) @ v
                        for t in range(S.shape[1])], 1)


def additive_loop_batch(S, H, W_s, W_h, v):
    return torch.cat([additive_broadcast(S[b:b + 1], H[b:b + 1], W_s, W_h, v)
                      for b in range(S.shape[0])])


@pytest.mark.parametrize("part, fn, what", [
    ("dot", dot_loop_steps, "decoder step"), ("scaled_dot", attention_loop_batch, "sentence"),
    ("general", general_loop_steps, "decoder step"),
    ("additive", additive_loop_steps, "decoder step"),
    ("additive", additive_loop_batch, "sentence of the batch"),
])
def test_a_loop_over_steps_or_sentences_earns_half(part, fn, what):
    result = e10_4.EXERCISE.checks[part](fn)
    assert result.points == result.max_points / 2, result.message
    assert f"loops over each {what}" in result.message


# ----------------------------------------------------------------- the library earns nothing


def dot_library_loop(S, H, scaled):
    module = (ScaledDotAttention if scaled else DotAttention)(S.shape[-1], S.shape[-1])
    return torch.stack([module.energies(S[:, t], H) for t in range(S.shape[1])], 1)


def attention_library_loop(S, H, mask):
    module = ScaledDotAttention(S.shape[-1], S.shape[-1])
    steps = [module(S[:, t], H, mask) for t in range(S.shape[1])]
    return torch.stack([w for _, w in steps], 1), torch.stack([c for c, _ in steps], 1)


def general_library(S, H, W):
    module = GeneralAttention(H.shape[-1], S.shape[-1])
    module.W.weight.data = W
    return torch.stack([module.energies(S[:, t], module.project_keys(H))
                        for t in range(S.shape[1])], 1)


_helper = {}


def additive_through_a_helper(S, H, W_s, W_h, v):  # the library reached without naming it
    return _helper["fn"](S, H, W_s, W_h, v)


@pytest.mark.parametrize("part, fn", [
    ("dot", dot_library_loop), ("scaled_dot", attention_library_loop),
    ("general", general_library),
])
def test_the_library_in_a_loop_earns_nothing(part, fn):
    result = e10_4.EXERCISE.checks[part](fn)
    assert result.points == 0 and "library" in result.message, result.message
    graded = judged_by_grader(e10_4.EXERCISE.checks[part], fn, seed=5)
    assert graded.points == 0


def test_a_call_into_the_library_that_the_source_does_not_name_earns_nothing():
    from course_utils.attention import BahdanauAttention

    def hidden(S, H, W_s, W_h, v):
        module = BahdanauAttention(H.shape[-1], S.shape[-1], v.shape[0])
        keys = module.project_keys(H)
        return torch.stack([module.energies(S[:, t], keys) for t in range(S.shape[1])], 1)

    _helper["fn"] = hidden
    result = e10_4.check_additive(additive_through_a_helper)
    assert result.points == 0 and "calls `course_utils.attention" in result.message, \
        result.message


def test_untouched_missing_and_crashing_functions_get_zero_with_a_reason():
    def untouched(S, H, scaled):
        raise NotImplementedError

    def numpy_result(S, H, scaled):
        return (S @ H.transpose(1, 2)).numpy()

    def crash(S, H, scaled):
        return 1 / 0

    assert e10_4.check_dot(untouched).message == NOT_IMPLEMENTED
    assert "not defined" in e10_4.EXERCISE.grade({})[0].message
    assert "float torch tensor" in e10_4.check_dot(numpy_result).message
    assert "ZeroDivisionError" in e10_4.check_dot(crash).message
    assert "must be a function" in e10_4.check_dot(DotAttention).message
    assert "2 tensors" in e10_4.check_scaled_dot(lambda S, H, mask: S).message


def test_the_references_are_the_library_called_step_by_step():
    from course_utils.checks.e10_4 import all_steps
    S, H = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    energies, weights, contexts = all_steps.loop_over_steps(DotAttention(4, 4), S, H)
    assert torch.allclose(energies, S @ H.transpose(1, 2), atol=1e-5)
    assert weights.shape == (2, 3, 5) and contexts.shape == (2, 3, 4)


# ----------------------------------------------------------------- Part 5: low rank


class LowRank(Attention):
    def __init__(self, encoder_dim, decoder_dim, rank):
        super().__init__()
        self.encoder_dim, self.decoder_dim, self.key_dim = encoder_dim, decoder_dim, rank
        self.V = nn.Linear(encoder_dim, rank, bias=False)
        self.U = nn.Linear(rank, decoder_dim, bias=False)

    def project_keys(self, encoder_outputs):
        return self.V(encoder_outputs)

    def energies(self, decoder_state, keys):
        return torch.bmm(keys, (decoder_state @ self.U.weight).unsqueeze(-1)).squeeze(-1)


class General(Attention):
    def __init__(self, encoder_dim, decoder_dim):
        super().__init__()
        self.encoder_dim, self.decoder_dim, self.key_dim = encoder_dim, decoder_dim, decoder_dim
        self.W = nn.Linear(encoder_dim, decoder_dim, bias=False)

    def project_keys(self, encoder_outputs):
        return self.W(encoder_outputs)

    def energies(self, decoder_state, keys):
        return torch.bmm(keys, decoder_state.unsqueeze(-1)).squeeze(-1)


class Dot(General):
    def __init__(self, encoder_dim, decoder_dim):
        super().__init__(encoder_dim, decoder_dim)


class LowRankFullKeys(LowRank):
    """Keys U V h_j of the decoder's size, once per sentence: the same score, also right."""

    def project_keys(self, encoder_outputs):
        return self.U(self.V(encoder_outputs))

    def energies(self, decoder_state, keys):
        return torch.bmm(keys, decoder_state.unsqueeze(-1)).squeeze(-1)


class LowRankVEveryStep(LowRank):
    def project_keys(self, encoder_outputs):
        return encoder_outputs

    def energies(self, decoder_state, keys):
        return super().energies(decoder_state, self.V(keys))


class LowRankUEveryStep(LowRank):
    def energies(self, decoder_state, keys):
        return torch.bmm(self.U(keys), decoder_state.unsqueeze(-1)).squeeze(-1)


class LowRankUOnState(LowRank):
    def energies(self, decoder_state, keys):
        return torch.bmm(keys, self.U(decoder_state).unsqueeze(-1)).squeeze(-1)


class LowRankWrongAxis(LowRank):
    def energies(self, decoder_state, keys):  # s^T U times the keys' columns: (b, rank)
        return torch.bmm((decoder_state @ self.U.weight).unsqueeze(1), keys).squeeze(1)


class LowRankFullW(General):
    """Ignores the rank: a full W, which the check's U and V do not load into."""

    def __init__(self, encoder_dim, decoder_dim, rank):
        super().__init__(encoder_dim, decoder_dim)


class LowRankLibrary(GeneralAttention):
    def __init__(self, encoder_dim, decoder_dim, rank):
        super().__init__(encoder_dim, decoder_dim)


def test_a_rank_limited_score_is_s_U_V_h_with_its_keys_once_per_sentence():
    assert e10_4.check_low_rank(LowRankFullKeys).passed
    for cls in (LowRankVEveryStep, LowRankUEveryStep):
        result = e10_4.check_low_rank(cls)
        assert result.points == 1 and "once per sentence" in result.message, result.message


@pytest.mark.parametrize("cls, hint", [
    (LowRankUOnState, "U maps r numbers to the decoder's size"),
    (LowRankWrongAxis, "wrong axis"),
    (LowRankFullW, "keep the constructor"),
    (LowRankLibrary, "library's `GeneralAttention`"),
])
def test_low_rank_mistakes_are_named(cls, hint):
    result = e10_4.check_low_rank(cls)
    assert result.points == 0 and hint in result.message, result.message


def test_an_untouched_low_rank_score_gets_zero_and_the_run_cell_says_why():
    class Untouched(LowRank):
        def project_keys(self, encoder_outputs):
            raise NotImplementedError

    assert e10_4.check_low_rank(Untouched).message == NOT_IMPLEMENTED
    assert e10_4.check_low_rank(Dot).points == 0  # two sizes, no rank: a clear refusal



# Every part, judged as `course-grade` judges it (the kernel runs the adapted function or class
# on this run's inputs; the grader decides) and as the notebook does: the same verdict.
STUDENTS = ([(part, fn) for part, fn in RIGHT] + [(part, fn) for part, fn, _ in MISTAKES]
            + [("dot", dot_loop_steps), ("additive", additive_loop_batch), ("dot", None),
               ("low_rank", LowRank), ("low_rank", LowRankFullKeys),
               ("low_rank", LowRankVEveryStep), ("low_rank", LowRankUEveryStep),
               ("low_rank", LowRankUOnState), ("low_rank", LowRankWrongAxis),
               ("low_rank", LowRankFullW), ("low_rank", LowRankLibrary)])


@pytest.mark.parametrize("part, fn", STUDENTS)
def test_the_grader_judges_each_part_outside_the_kernel_with_the_notebooks_verdict(part, fn):
    check = e10_4.EXERCISE.checks[part]
    assert check.adapt is not None
    in_notebook, graded = check(fn), judged_by_grader(check, fn, seed=7)
    assert (graded.points, graded.message) == (in_notebook.points, in_notebook.message)


def test_fresh_inputs_every_run_and_a_forged_record_earns_nothing():
    check = e10_4.EXERCISE.checks["dot"]
    raw = json.loads(json.dumps(check.probe(dot_matmul, 11)))
    assert check.judge(raw, 11).passed
    assert check.judge(raw, 12).points == 0  # another run's inputs: the record does not fit
    forged = json.loads(json.dumps(raw))
    result = forged["calls"][0]["result"]
    array = next(v for _, v in result["v"] if isinstance(v, dict) and v.get("t") == "array")
    array["v"][0][0][0] += 1.0
    assert check.judge(forged, 11).points == 0
    claims = json.loads(json.dumps(raw))
    claims["points"] = 2  # a kernel that claims its points is not listened to
    claims["calls"] = []
    assert check.judge(claims, 11).points == 0
    refused = check.judge({"refused": "x" * 1000}, 11)
    assert refused.points == 0 and len(refused.message) <= 1000

"""E10.4's checks: right scores pass on fresh inputs, each usual mistake gets its named hint,
the course's own scores earn nothing, and a rank-limited general score is checked as s^T U V h_j
with its keys once per sentence."""

import math

import numpy as np
import pytest
import torch
from helpers import ROOT, judged_by_grader, notebook_functions
from torch import nn

from course_utils.attention import Attention
from course_utils.checks import NOT_IMPLEMENTED, e10_4, get_exercise
from course_utils.scores import DotAttention, GeneralAttention


class Dot(Attention):
    def __init__(self, encoder_dim, decoder_dim):
        super().__init__()
        if encoder_dim != decoder_dim:
            raise ValueError("equal sizes")
        self.encoder_dim = self.decoder_dim = self.key_dim = encoder_dim

    def project_keys(self, encoder_outputs):
        return encoder_outputs

    def energies(self, decoder_state, keys):
        return torch.bmm(keys, decoder_state.unsqueeze(-1)).squeeze(-1)


class Scaled(Dot):
    def energies(self, decoder_state, keys):
        return super().energies(decoder_state, keys) / math.sqrt(self.key_dim)


class General(Attention):
    def __init__(self, encoder_dim, decoder_dim):
        super().__init__()
        self.encoder_dim, self.decoder_dim, self.key_dim = encoder_dim, decoder_dim, decoder_dim
        self.W = nn.Linear(encoder_dim, decoder_dim, bias=False)

    def project_keys(self, encoder_outputs):
        return self.W(encoder_outputs)

    def energies(self, decoder_state, keys):
        return torch.bmm(keys, decoder_state.unsqueeze(-1)).squeeze(-1)


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


def test_solution_scores_full_marks_and_exercise_scores_zero():
    name = "E10.4-dot-and-general-scores.ipynb"
    assert all(r.passed for r in e10_4.EXERCISE.grade(notebook_functions(
        ROOT / "solutions" / name)))
    for result in e10_4.EXERCISE.grade(notebook_functions(ROOT / "exercises" / name)):
        assert result.points == 0 and result.message == NOT_IMPLEMENTED
    assert get_exercise("E10.4") is e10_4.EXERCISE
    assert list(e10_4.EXERCISE.manual) == ["prediction", "outcome"]


def test_right_scores_get_every_point_and_the_exercise_counts_its_parts():
    for check, cls in [(e10_4.check_dot, Dot), (e10_4.check_scaled_dot, Scaled),
                       (e10_4.check_general, General), (e10_4.check_low_rank, LowRank)]:
        result = check(cls)
        assert result.passed, result.message
    exercise = e10_4.EXERCISE
    assert exercise.auto_points == 9 and exercise.max_points == 12
    assert [r.points for r in exercise.grade(
        {"DotScore": Dot, "ScaledDotScore": Scaled, "GeneralScore": General,
         "LowRankGeneralScore": LowRank})] == [2, 2, 3, 2]


def test_untouched_and_missing_classes_get_zero_with_a_reason():
    class Untouched(Dot):
        def energies(self, decoder_state, keys):
            raise NotImplementedError

    assert "not implemented" in e10_4.check_dot(Untouched).message
    assert e10_4.check_dot(None).points == 0
    assert "subclasses the course's score interface" in e10_4.check_dot(lambda *a: 0).message


class NoTranspose(Dot):
    def energies(self, decoder_state, keys):
        return torch.bmm(decoder_state.unsqueeze(1), keys).squeeze(1)  # (b, d): per coordinate


class NoTransposeMatmul(Dot):
    def energies(self, decoder_state, keys):
        return decoder_state @ keys  # broadcasts wrongly or fails


@pytest.mark.parametrize("cls", [NoTranspose, NoTransposeMatmul])
def test_a_missing_transpose_is_named(cls):
    result = e10_4.check_dot(cls)
    assert result.points == 0
    assert "missing transpose" in result.message or "wrong axis" in result.message


def test_the_dot_part_refuses_a_scaled_score_by_name():
    assert "scaled score of Part 2" in e10_4.check_dot(Scaled).message


class Unscaled(Dot):
    pass


class ScaledByD(Dot):
    def energies(self, decoder_state, keys):
        return super().energies(decoder_state, keys) / self.key_dim


class ScaledBySourceLength(Dot):
    def energies(self, decoder_state, keys):
        return super().energies(decoder_state, keys) / math.sqrt(keys.shape[1])


class ScaledWeights(Dot):
    def attend(self, decoder_state, encoder_outputs, keys, mask=None):
        context, weights = super().attend(decoder_state, encoder_outputs, keys, mask)
        weights = weights / math.sqrt(self.key_dim)
        return torch.bmm(weights.unsqueeze(1), encoder_outputs).squeeze(1), weights


class ScaledContext(Scaled):
    def attend(self, decoder_state, encoder_outputs, keys, mask=None):
        context, weights = super().attend(decoder_state, encoder_outputs, keys, mask)
        return context / math.sqrt(self.key_dim), weights


@pytest.mark.parametrize("cls, hint", [
    (Unscaled, "not scaled"),
    (ScaledByD, "divided by d: divide by its square root"),
    (ScaledBySourceLength, "source length"),
    (ScaledWeights, "scaled the weights, after the softmax"),
    (ScaledContext, "the context is not"),
])
def test_scaling_mistakes_are_named(cls, hint):
    result = e10_4.check_scaled_dot(cls)
    assert result.points == 0 and hint in result.message, result.message


class WrongSide(General):
    def project_keys(self, encoder_outputs):
        return encoder_outputs

    def energies(self, decoder_state, keys):
        return torch.bmm(keys, self.W(decoder_state).unsqueeze(-1)).squeeze(-1)  # (W s)^T h


class EveryStep(General):
    def project_keys(self, encoder_outputs):
        return encoder_outputs

    def energies(self, decoder_state, keys):
        return torch.bmm(self.W(keys), decoder_state.unsqueeze(-1)).squeeze(-1)


class WithBias(General):
    def __init__(self, encoder_dim, decoder_dim):
        super().__init__(encoder_dim, decoder_dim)
        self.W = nn.Linear(encoder_dim, decoder_dim)


def test_general_mistakes_are_named():
    wrong = e10_4.check_general(WrongSide)
    assert wrong.points == 0 and "wrong size" in wrong.message and "W h_j" in wrong.message
    every = e10_4.check_general(EveryStep)
    assert every.points == 2 and "once per sentence" in every.message
    assert "keep the constructor" in e10_4.check_general(WithBias).message


class UsesLibrary(Attention):
    def __init__(self, encoder_dim, decoder_dim):
        super().__init__()
        self.inner = DotAttention(encoder_dim, decoder_dim)
        self.encoder_dim = self.decoder_dim = self.key_dim = encoder_dim

    def project_keys(self, encoder_outputs):
        return self.inner.project_keys(encoder_outputs)

    def energies(self, decoder_state, keys):
        return self.inner.energies(decoder_state, keys)


class SubclassesLibrary(GeneralAttention):
    pass


def test_the_courses_own_scores_earn_nothing():
    used = e10_4.check_dot(UsesLibrary)
    assert used.points == 0 and "course's own score" in used.message
    sub = e10_4.check_general(SubclassesLibrary)
    assert sub.points == 0 and "library's `GeneralAttention`" in sub.message


def test_numpy_results_and_crashes_are_explained():
    class Numpy(Dot):
        def energies(self, decoder_state, keys):
            return np.einsum("btd,bd->bt", keys.numpy(), decoder_state.numpy())

    class Crash(Dot):
        def energies(self, decoder_state, keys):
            return 1 / 0

    assert "must return a torch tensor; got ndarray" in e10_4.check_dot(Numpy).message
    assert "ZeroDivisionError" in e10_4.check_dot(Crash).message


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


def test_score_to_train_falls_back_to_the_library_until_the_check_passes(capsys):
    assert e10_4.score_to_train(General) is General
    assert e10_4.score_to_train(EveryStep) is GeneralAttention  # 2 of 3: not passed
    assert "library's GeneralAttention" in capsys.readouterr().out


# Every class above, judged as `course-grade` judges it (the kernel runs the adapted class on
# this run's inputs; the grader decides) and as the notebook does: the same verdict.
STUDENTS = [
    ("dot", Dot), ("dot", Scaled), ("dot", NoTranspose), ("dot", NoTransposeMatmul),
    ("dot", UsesLibrary), ("dot", None), ("scaled_dot", Scaled), ("scaled_dot", Unscaled),
    ("scaled_dot", ScaledByD), ("scaled_dot", ScaledBySourceLength),
    ("scaled_dot", ScaledWeights), ("scaled_dot", ScaledContext), ("general", General),
    ("general", WrongSide), ("general", EveryStep), ("general", WithBias),
    ("general", SubclassesLibrary), ("low_rank", LowRank), ("low_rank", LowRankFullKeys),
    ("low_rank", LowRankVEveryStep), ("low_rank", LowRankUEveryStep),
    ("low_rank", LowRankUOnState), ("low_rank", LowRankWrongAxis), ("low_rank", LowRankFullW),
    ("low_rank", LowRankLibrary),
]


@pytest.mark.parametrize("part, cls", STUDENTS)
def test_the_grader_judges_each_class_outside_the_kernel_with_the_notebooks_verdict(part, cls):
    check = e10_4.EXERCISE.checks[part]
    assert check.adapt is not None
    in_notebook, graded = check(cls), judged_by_grader(check, cls, seed=7)
    assert (graded.points, graded.message) == (in_notebook.points, in_notebook.message)


def test_a_forged_record_earns_nothing():
    import json

    check = e10_4.EXERCISE.checks["dot"]
    raw = json.loads(json.dumps(check.probe(Dot, 11)))
    assert check.judge(raw, 11).passed
    assert check.judge(raw, 12).points == 0  # another run's inputs: the record does not fit
    forged = json.loads(json.dumps(raw))
    energies = forged["calls"][0]["result"]["v"][0][1]  # the first call's energies
    energies["v"][0][0] += 1.0
    assert check.judge(forged, 11).points == 0
    points = json.loads(json.dumps(raw))
    points["points"] = 2  # a kernel that claims its points is not listened to
    points["calls"] = []
    assert check.judge(points, 11).points == 0
    refused = check.judge({"refused": "x" * 1000}, 11)
    assert refused.points == 0 and len(refused.message) <= 1000

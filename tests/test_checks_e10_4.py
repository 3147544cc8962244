"""E10.4's checks: right scores pass on fresh inputs, each usual mistake gets its named hint,
and the course's own scores earn nothing."""

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


def test_solution_scores_full_marks_and_exercise_scores_zero():
    name = "E10.4-dot-and-general-scores.ipynb"
    assert all(r.passed for r in e10_4.EXERCISE.grade(notebook_functions(
        ROOT / "solutions" / name)))
    for result in e10_4.EXERCISE.grade(notebook_functions(ROOT / "exercises" / name)):
        assert result.points == 0 and result.message == NOT_IMPLEMENTED
    assert get_exercise("E10.4") is e10_4.EXERCISE
    assert set(e10_4.EXERCISE.manual) == {"experiment"}


def test_right_scores_get_every_point_and_the_exercise_counts_its_parts():
    for check, cls in [(e10_4.check_dot, Dot), (e10_4.check_scaled_dot, Scaled),
                       (e10_4.check_general, General)]:
        result = check(cls)
        assert result.passed, result.message
    exercise = e10_4.EXERCISE
    assert exercise.auto_points == 7 and exercise.max_points == 10
    assert [r.points for r in exercise.grade(
        {"DotScore": Dot, "ScaledDotScore": Scaled, "GeneralScore": General})] == [2, 2, 3]


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
    ("general", SubclassesLibrary),
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

"""The two shared tensor helpers."""

import numpy as np
import pytest
import torch
from torch import nn

from course_utils.tensors import eval_mode, to_numpy


def test_to_numpy_takes_tensors_of_any_kind_and_plain_values():
    grad = torch.ones(2, 3, requires_grad=True) * 2
    assert np.array_equal(to_numpy(grad), np.full((2, 3), 2.0))
    half = to_numpy(torch.tensor([1.5], dtype=torch.bfloat16))
    assert half.dtype == np.float32 and half[0] == 1.5
    assert to_numpy(torch.tensor([1, 2])).dtype == np.int64  # integers stay integers
    assert np.array_equal(to_numpy([[1, 2]]), np.array([[1, 2]]))


@pytest.mark.parametrize("training", [True, False])
def test_eval_mode_restores_the_mode_it_found_even_on_error(training):
    model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5)).train(training)
    with eval_mode(model):
        assert not model.training and not model[1].training
    assert model.training is training
    with pytest.raises(RuntimeError), eval_mode(model):
        raise RuntimeError("boom")
    assert model.training is training

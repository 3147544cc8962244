"""Two small helpers every module that reads a model's tensors needs.

Importing this module does not import PyTorch (the plotting and alignment code use it on
plain arrays too, and the grader keeps its workers light).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from torch import nn

__all__ = ["eval_mode", "to_numpy"]

_HALF = {"torch.bfloat16", "torch.float16"}


def to_numpy(values: Any) -> np.ndarray:
    """A NumPy array of ``values``: a tensor on any device (detached; half precision widened
    to float32), an array, or anything ``np.asarray`` takes."""
    if hasattr(values, "detach") and hasattr(values, "cpu"):  # a torch tensor
        values = values.detach()
        if str(values.dtype) in _HALF:
            values = values.float()
        return values.cpu().numpy()
    return np.asarray(values)


@contextmanager
def eval_mode(model: nn.Module) -> Iterator[nn.Module]:
    """Switch ``model`` to evaluation mode (no dropout) for the block, then restore the mode
    it had, even if the block raises."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)

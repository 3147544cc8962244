"""E10.4's Parts 1-3: a score for every decoder step of a sentence at once, checked step by step.

The student writes plain functions of tensors that score *all* the decoder states of a batch
against all its source positions in one go (``S`` ``(batch, tgt_len, decoder_dim)`` and ``H``
``(batch, src_len, encoder_dim)`` -> ``(batch, tgt_len, src_len)``): the form Day 11's attention
takes, ``Q K^T``. The library (:mod:`course_utils.scores`, :mod:`course_utils.attention`) scores
one step at a time; the references here are those modules called in a loop over the steps, never
a batched formula.

:func:`function_adapter` runs the student's function in the kernel as a function of plain
arrays: it refuses a function that uses the library, converts the tensors, and counts the torch
operations the function makes (:class:`_OpCounter`). A function that loops over the decoder
steps (or over the sentences of the batch) makes more operations on a longer target (a larger
batch); one batched expression makes as many on any size. The count is a property of the
computation, not a timing, so it is the same on a busy machine.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch.overrides import TorchFunctionMode

from course_utils.attention import Attention
from course_utils.checks.calling import CheckFailed, reported
from course_utils.checks.own_work import module_files, references_to, watch_calls

__all__ = ["LIBRARY", "function_adapter", "loop_over_steps", "outputs_of", "per_step_loop"]

#: The modules that hold the step-by-step scores: a graded function may not use them.
LIBRARY = ("course_utils.scores", "course_utils.attention")


class _OpCounter(TorchFunctionMode):
    """Counts the torch functions and tensor methods called inside the block."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


def _not_own_work(name: str, what: str) -> str:
    return (f"`{name}` {what}: the library scores one decoder step at a time, and this check "
            "compares your function with it, so this part earns no points. Write the batched "
            "form yourself with torch operations")


def function_adapter(name: str, outputs: tuple[str, ...]) -> Callable[[object], Callable]:
    """``adapt`` for a function part: ``run(*args)`` (NumPy arrays in, converted to tensors;
    other values passed as they are) returns ``{output: array, ..., "ops": count}``, with one
    array per name of ``outputs`` (the function returns a tuple when there are several), or
    ``{"error": why}``."""

    def adapt(student_fn: object) -> Callable:
        if isinstance(student_fn, type):
            raise CheckFailed(f"`{name}` must be a function (def {name}(...):), not a class")
        used = references_to(student_fn, LIBRARY)  # type: ignore[arg-type]
        if used:
            raise CheckFailed(_not_own_work(name, used[0]))
        files = module_files(LIBRARY)

        def run(*args: object) -> dict:
            tensors = [torch.as_tensor(a) if isinstance(a, np.ndarray) else a for a in args]
            counter = _OpCounter()
            try:
                with torch.no_grad(), watch_calls(files) as entered, counter:
                    result = student_fn(*tensors)  # type: ignore[operator]
            except NotImplementedError:
                raise
            except Exception as error:
                first = (str(error).splitlines() or [""])[0][:300]
                return {"error": f"`{name}` raised {type(error).__name__}: {first}"}
            if entered:
                return {"error": _not_own_work(name, f"calls `{entered[0]}`")}
            results = result if len(outputs) > 1 else (result,)
            if not isinstance(results, tuple) or len(results) != len(outputs):
                return {"error": f"`{name}` must return {len(outputs)} tensors, "
                                 f"({', '.join(outputs)}); got {type(result).__name__}"}
            reported: dict = {"ops": counter.count}
            for key, value in zip(outputs, results):
                if not isinstance(value, torch.Tensor) or not value.dtype.is_floating_point:
                    return {"error": f"`{name}` must return {key} as a float torch tensor; got "
                                     f"{getattr(value, 'dtype', type(value).__name__)}"}
                reported[key] = value.detach().to(torch.float32).numpy()
            return reported

        run.__name__ = name
        return run

    return adapt


def outputs_of(out: object, name: str, shapes: dict[str, tuple[int, ...]],
               transposed: str) -> dict:
    """What the adapted function reported, checked: float tensors of these shapes (a result of
    the shape with its last two axes swapped gets ``transposed`` as its hint), and ``ops``."""
    out = reported(out, f"`{name}`")
    got: dict = {"ops": int(out.get("ops", 0))}
    for key, shape in shapes.items():
        value = np.asarray(out.get(key))
        if value.dtype.kind != "f":
            raise CheckFailed(f"`{name}` reported no {key}")
        if value.shape != shape:
            if value.shape == (*shape[:-2], shape[-1], shape[-2]):
                raise CheckFailed(f"`{name}` returns {key} of shape {value.shape} instead of "
                                  f"(batch, tgt_len, src_len) = {shape}: {transposed}")
            raise CheckFailed(f"`{name}` must return {key} of shape {shape}; got {value.shape}")
        got[key] = torch.as_tensor(value, dtype=torch.float32)
    return got


def loop_over_steps(module: Attention, S: torch.Tensor, H: torch.Tensor,
                    mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor,
                                                              torch.Tensor]:
    """The reference: the library's ``module`` called once per decoder step. Returns the
    energies, the weights (``(batch, tgt_len, src_len)`` each) and the contexts
    (``(batch, tgt_len, encoder_dim)``)."""
    energies, weights, contexts = [], [], []
    with torch.no_grad():
        keys = module.project_keys(H)
        for t in range(S.shape[1]):
            energies.append(module.energies(S[:, t], keys))
            context, alpha = module(S[:, t], H, mask)
            weights.append(alpha)
            contexts.append(context)
    return torch.stack(energies, 1), torch.stack(weights, 1), torch.stack(contexts, 1)


def per_step_loop(ops: dict[str, int], name: str) -> str | None:
    """The hint for a function whose number of torch operations grew with the number of decoder
    steps or of sentences (``ops`` maps ``"small"``, ``"long"`` (more steps) and ``"wide"``
    (more sentences) to the counts), or ``None``."""
    if ops["long"] > ops["small"]:
        what = "decoder step"
    elif ops["wide"] > ops["small"]:
        what = "sentence of the batch"
    else:
        return None
    return (f"the numbers are right, but `{name}` makes more torch operations on a longer "
            f"target or a larger batch: it loops over each {what}. This part asks for every "
            "step of every sentence at once, one batched product or broadcast (the library "
            "already has the step-by-step form); half the points")

"""Checks for exercise E10.2: vanilla seq2seq against Bahdanau attention on Multi30k.

Part 1 has two sides. The fixed-context ("Day 7 style") decoder is new and graded: a subclass
of the library's :class:`~course_utils.models.VanillaDecoder`, ``FixedContextDecoder``, with its
own ``context``. Its recurrent step is the one every library decoder shares
(:meth:`~course_utils.models.GRUDecoder.step`), which the student already wrote for the
attention model in notebook 3: asking for it again would grade a transcription of the library.
The check, ``vanilla_context``, builds a small model with random weights and inputs (fresh in
each grading run), loads the same weights into the student's class and compares:
``context(state, memory)`` must give the encoder's final states, ``[forward at the last real
token; backward at the first]``, read from ``memory.encoder_outputs`` and ``memory.mask`` (the
check hides ``memory.summary``, which is the library's answer), the same vector at every step,
no attention weights and a gradient back to the encoder outputs; and in the whole model, the
logits, greedy translations and a second batch's logits must equal the library's (a context
saved on ``self`` between calls fails there).

Under ``course-grade`` it is judged in the grader: its ``adapt``
(:mod:`course_utils.checks.decoders`) runs the student's class in the kernel on the run's seed
and reports plain data; the grader rebuilds the same library model from the seed and decides.

The attention model is the one the student wrote in notebooks 2 and 3 (``MyBahdanauAttention``,
``Decoder.step``, ``TeacherForcing.forward``), kept by the lecture's checks when they passed and
assembled again here by :func:`course_utils.checks.yours.your_attention_decoder`, with no
paste; it earns no points here, as it did in the lecture.

Parts 3 and 4 (BLEU against sentence length as a curve, the paper's Figure 2, and its chart)
are judged by :mod:`course_utils.checks.e10_2.bleu_curve`, Part 6's ``word_differences`` (the
raw material of the error analysis) by :mod:`course_utils.checks.e10_2.word_errors`; the
grader's answers for fresh inputs are :mod:`course_utils.checks.e10_2.hidden`. The library holds
none of these answers. The comparison and the error analysis are graded by hand.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from course_utils.checks.calling import CheckFailed, reported
from course_utils.checks.decoders import (
    GIVEN,
    SHUFFLED,
    adapt_context,
    close,
    fresh_model,
    memory_of,
)
from course_utils.checks.e10_2.bleu_curve import (
    CURVE_POINTS,
    PLOT_POINTS,
    judge_bleu_curve,
    judge_plot_curves,
)
from course_utils.checks.e10_2.word_errors import HIDDEN, judge_word_differences
from course_utils.checks.framework import Exercise
from course_utils.checks.hints import raise_named
from course_utils.checks.probes import fresh_seed
from course_utils.decoding import greedy_decode
from course_utils.models import (
    DecoderMemory,
    Seq2Seq,
    VanillaDecoder,
)

#: the grader's answers (checks/e10_2/hidden.py, absent from a handout): calling them earns nothing
GRADERS = (HIDDEN.__name__,) if HIDDEN else ()

__all__ = [
    "EXERCISE",
    "check_bleu_curve",
    "check_plot_curves",
    "check_vanilla_context",
    "check_word_differences",
    "vanilla_decoder_to_train",
]

EXERCISE = Exercise("E10.2", "Vanilla seq2seq against Bahdanau attention")

# ---------------------------------------------------- the grader's side: expected, and judged


def _tensor(value: object) -> torch.Tensor | None:
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return torch.as_tensor(value, dtype=torch.float32)
    return None


def _judge_context(raw: object, seed: int) -> str:
    raw = reported(raw, "FixedContextDecoder")
    if not raw.get("pair"):
        raise CheckFailed(f"`context` must return a pair (context, weights): (the fixed "
                          f"context, None); got {str(raw.get('type'))[:80]}")
    if raw.get("hidden"):
        raise CheckFailed("`context` returns `memory.summary`: that is the library's answer, "
                          "and this check hides it. Read the final states from "
                          "`memory.encoder_outputs`, with `memory.mask`")
    library, src, lengths, tgt_in = fresh_model(seed)
    memory = memory_of(library, src, lengths)
    expected = memory.summary
    context = _tensor(raw.get("context"))
    if not raw.get("tensor") or context is None:
        raise CheckFailed(f"the context must be a torch tensor (it goes on into the GRU cell); "
                          f"got {str(raw.get('type'))[:120]}")
    if context.shape != expected.shape:
        raise CheckFailed(f"the context should be (batch, 2 * hidden_dim) = "
                          f"{tuple(expected.shape)} for {GIVEN}; got {tuple(context.shape)}")
    if not close(_tensor(raw.get("again")), context):
        raise CheckFailed("the context changes with the decoder state: the vanilla decoder's "
                          "context is the same vector at every step, whatever the state")
    if not close(context, expected):
        raise_named(context, _context_mistakes(memory, lengths), close)
        raise CheckFailed(f"the context differs from the encoder's final states for {GIVEN}: "
                          "[forward half at the last real token; backward half at position 0]")
    # the values are right: each fault that is left costs part of the points, and is named
    faults: list[tuple[int, str]] = []
    if raw.get("weights_none") is not True:
        faults.append((POINTS - 1, "the vanilla decoder has no attention weights: return None "
                                   "as the second value"))
    if raw.get("grad_error"):
        faults.append((POINTS - 2, str(raw["grad_error"])[:300]))
    elif not _reads_back(_tensor(raw.get("grad")), memory.encoder_outputs, lengths):
        faults.append((POINTS - 2, "no gradient flows back from your context to the encoder "
                                   "outputs (`.detach()`, `.numpy()`, `.data` or a new tensor "
                                   "built from numbers?): training could not teach the encoder "
                                   "anything through it"))
    whole = _judge_sentences(raw, library, src, lengths, tgt_in)
    if whole:
        faults.append((POINTS - 3, whole))
    if faults:
        raise CheckFailed("right values, but " + "; and ".join(message for _, message in faults),
                          points=min(points for points, _ in faults))
    return ("the encoder's final states, read from its outputs; in the whole model, the same "
            "logits and greedy translations as the library's vanilla decoder")


def _reads_back(grad: torch.Tensor | None, outputs: torch.Tensor, lengths: torch.Tensor) -> bool:
    """Whether the gradient of the context's sum reaches the encoder outputs it was read from:
    the grader knows which (:func:`.hidden.context_read`); a handout, without that module,
    checks that it is 1 at as many numbers per sentence as the context has, and 0 elsewhere."""
    if grad is None or grad.shape != outputs.shape:
        return False
    if HIDDEN is not None:
        return close(grad, HIDDEN.context_read(outputs, lengths))
    ones = torch.isclose(grad, torch.ones_like(grad))
    return bool((ones | (grad == 0)).all() and (ones.sum((1, 2)) == outputs.shape[-1]).all())


def _judge_sentences(raw: dict, library: Seq2Seq, src: torch.Tensor, lengths: torch.Tensor,
                     tgt_in: torch.Tensor) -> str | None:
    """What is wrong with the whole model's outputs (:func:`decoders.sentences_raw`), if
    anything: there the library's shared step calls the student's ``context`` at every step."""
    if raw.get("sentences_error"):
        return f"over whole sentences your decoder fails: {str(raw['sentences_error'])[:300]}"
    if raw.get("later_error"):
        return (f"{str(raw['later_error'])[:300]}. The first batch worked, so `context` seems "
                "to keep something of its own between calls (e.g. a context saved on `self`): "
                "compute it from its arguments every time")
    with torch.no_grad():
        want_logits, _ = library(src, lengths, tgt_in)
        want_tokens = greedy_decode(library, src, lengths, max_len=8).tokens
        few = slice(1, 3)
        want_few, _ = library(src[few, :int(lengths[few].max())], lengths[few], tgt_in[few])
        want_shuffled, _ = library(src[SHUFFLED], lengths[SHUFFLED], tgt_in[SHUFFLED])
    if not close(_tensor(raw.get("logits")), want_logits) or not _same_tokens(
            raw.get("tokens"), want_tokens) or not close(_tensor(raw.get("few")), want_few) \
            or not close(_tensor(raw.get("shuffled")), want_shuffled):
        return ("over whole sentences your decoder's outputs differ from the library's: does "
                "`context` keep something of its own between calls (e.g. a context saved on "
                "`self` for the next step or batch), or does your class change the shared "
                "`step`? Compute the context from `memory` every time")
    return None


def _context_mistakes(memory: DecoderMemory, lengths: torch.Tensor) -> list[tuple[torch.Tensor,
                                                                                    str]]:
    outputs, summary = memory.encoder_outputs, memory.summary
    half = outputs.shape[-1] // 2
    final_states = "the encoder's final states, [forward at the last real token; backward at " \
                   "the first]"
    return [
        (torch.cat([summary[:, half:], summary[:, :half]], -1),
         "wrong concatenation order: the forward state comes first, then the backward one"),
        *(HIDDEN.context_slips(outputs, lengths) if HIDDEN is not None else []),
        (outputs[:, 0], "the forward half at position 0 has read only the first token: the "
                        "forward GRU's final state sits at each sentence's last real token"),
        (outputs[:, -1], "column -1 is padding (zeros) for every sentence shorter than the "
                         "batch: use `memory.mask` to find each sentence's last real token"),
        (torch.cat([outputs[:, -1, :half], summary[:, half:]], -1),
         "the backward half is right, but the forward half comes from column -1, which is "
         "padding for every sentence shorter than the batch: take it at each sentence's last "
         "real token (from `memory.mask`)"),
        (outputs.sum(1) / lengths[:, None], f"that is the mean of the encoder outputs, not "
                                            f"{final_states}"),
        (outputs.mean(1), f"that is the mean of the encoder outputs (padding included), not "
                          f"{final_states}"),
    ]


#: the fixed-context decoder's points: its one method, checked alone and in the whole model
POINTS = 5


@EXERCISE.check("vanilla_context", points=POINTS, target="FixedContextDecoder",
                adapt=adapt_context, own_work=GRADERS)
def check_vanilla_context(run: Callable) -> str:
    seed = fresh_seed(80)
    return _judge_context(run(seed), seed)


def _same_tokens(got: object, want: list[list[int]]) -> bool:
    return (isinstance(got, list) and len(got) == len(want)
            and all(isinstance(row, list) and all(type(t) is int for t in row)
                    and row == list(w) for row, w in zip(got, want)))


def vanilla_decoder_to_train(decoder_class: object) -> type[VanillaDecoder]:
    """The decoder class to train the vanilla model with: the student's ``FixedContextDecoder``
    once its check passes; until then the library's :class:`VanillaDecoder`, with a printed
    note, so the rest of the notebook can run."""
    if check_vanilla_context(decoder_class).passed:
        print("vanilla model: your FixedContextDecoder")
        return decoder_class  # type: ignore[return-value]
    print("vanilla model: the library's VanillaDecoder, because your FixedContextDecoder does "
          "not pass its checks yet (Part 1). Fix it, then run this cell again to train yours.")
    return VanillaDecoder


# ------------------------------------------------- Parts 3 and 4 (e10_2/bleu_curve.py)

# the window and its scoring are the student's: the library's metrics (corpus_bleu and the
# bucket scores) do part of it, and the check's module stores its fixed case's curves, so a
# function that uses either earns no points
check_bleu_curve = EXERCISE.check("bleu_curve", points=CURVE_POINTS, target="bleu_curve",
                                  own_work=("course_utils.metrics",
                                            "course_utils.checks.e10_2.bleu_curve", *GRADERS),
                                  write_with="sacrebleu and Python")(judge_bleu_curve)
# a chart that hands the drawing to the library's plotting earns nothing
check_plot_curves = EXERCISE.check("plot_bleu_curves", points=PLOT_POINTS,
                                   target="plot_bleu_curves",
                                   own_work=("course_utils.plotting",),
                                   write_with="matplotlib")(judge_plot_curves)

# ------------------------------------------------- Part 6 (e10_2/word_errors.py)

check_word_differences = EXERCISE.check("word_differences", points=3,
                                        target="word_differences",
                                        own_work=("course_utils.metrics", *GRADERS),
                                        write_with="Python")(judge_word_differences)

EXERCISE.manual_question(
    "comparison",
    points=3,
    prompt="Your two trained models compared with your numbers: test BLEU, where the loss "
           "curves part; your BLEU curves against the paper's Figure 2 (which falls faster "
           "with length, over which lengths the curves have points and why not beyond); the "
           "gain per length bucket with its interval and what the long bucket's interval "
           "allows you to conclude; what your table's row for notebook 4's budget changes "
           "(BLEU only).",
)
EXERCISE.manual_question(
    "errors",
    points=5,
    prompt="Error analysis of your own translations: at least six errors found with your "
           "word_differences, each quoted and classified (omission, repetition, wrong word, "
           "word order, other); which look like attention errors and why, with your heatmap "
           "as evidence; which are the fixed context's, and which both models share.",
)

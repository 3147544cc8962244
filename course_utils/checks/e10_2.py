"""Checks for exercise E10.2: vanilla seq2seq against Bahdanau attention on Multi30k.

Students write the fixed-context ("Day 7 style") decoder as a subclass of the library's
:class:`~course_utils.models.VanillaDecoder`, ``FixedContextDecoder``, with its own ``context``
and ``step``. The checks build a small model with random weights and inputs (fresh in each
grading run), load the same weights into the student's decoder and compare outputs:

- ``vanilla_context``: ``context(state, memory)`` must give the encoder's final states,
  ``[forward at the last real token; backward at the first]``, read from
  ``memory.encoder_outputs`` and ``memory.mask`` (the check hides ``memory.summary``, which is
  the library's answer), the same vector at every step, and no attention weights;
- ``vanilla_step``: ``step(embedded, state, memory)`` must give the library's ``(s_i, c_i,
  None)``, so that the whole model's logits and greedy outputs equal the library's.

Under ``course-grade`` both decoder parts are judged in the grader: their ``adapt``
(:mod:`course_utils.checks.decoders`) runs the student's class in the kernel on the run's seed
and reports plain data (the context and state tensors as arrays, logits, greedy tokens,
gradients, whether the weights are ``None``); the grader rebuilds the same library model from
the seed, computes every expected value and decides. For the step, the kernel also runs the
student's ``step`` with a right context standing in, and the grader uses that run when the
student's context does not pass.

Then three functions, called on small, known inputs:

- ``bleu_by_bucket(hypotheses, references, source_lengths)``: corpus BLEU per source-length
  bucket (``"< 10"``, ``"10-20"``, ``"> 20"``), ``None`` for an empty bucket;
- ``plot_bleu_by_length(scores)``: a grouped bar chart, one group per bucket, one bar per model;
- ``plot_loss_curves(histories)``: training and validation loss of every model in one figure.

The written comparison is graded by hand.
"""

from __future__ import annotations

from collections.abc import Callable

import matplotlib.pyplot as plt
import numpy as np
import sacrebleu
import torch
from matplotlib.figure import Figure

from course_utils.checks.calling import CheckFailed, call_student
from course_utils.checks.decoders import (
    GIVEN,
    adapt_context,
    adapt_step,
    close,
    decoder_states,
    fresh_model,
    memory_of,
)
from course_utils.checks.framework import Exercise
from course_utils.checks.hints import raise_named
from course_utils.checks.probes import AxesData, FigureData, describe_figure, fresh_seed
from course_utils.decoding import greedy_decode
from course_utils.metrics import LENGTH_BUCKETS
from course_utils.models import DecoderMemory, VanillaDecoder
from course_utils.training import History

__all__ = [
    "EXERCISE",
    "check_bleu_by_bucket",
    "check_loss_curves",
    "check_plot_bleu",
    "check_vanilla_context",
    "check_vanilla_step",
    "vanilla_decoder_to_train",
]

EXERCISE = Exercise("E10.2", "Vanilla seq2seq against Bahdanau attention")
BUCKETS = tuple(name for name, _, _ in LENGTH_BUCKETS)  # the lesson's buckets, one home

# ---------------------------------------------------- the grader's side: expected, and judged


def _tensor(value: object) -> torch.Tensor | None:
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return torch.as_tensor(value, dtype=torch.float32)
    return None


def _result(raw: object) -> dict:
    if not isinstance(raw, dict):
        raise CheckFailed("FixedContextDecoder reported no result")
    if raw.get("not_implemented"):
        raise NotImplementedError
    _raise_reported(raw, "error")
    return raw


def _raise_reported(raw: dict, key: str) -> None:
    """Fail with the error the kernel reported under ``key``, if any."""
    if raw.get(key):
        raise CheckFailed(str(raw[key])[:1000])


def _require_no_weights(raw: dict, right: str, position: str) -> None:
    """The vanilla decoder returns ``None`` for the attention weights: one point less if not."""
    if raw.get("weights_none") is not True:
        raise CheckFailed(f"{right}, but the vanilla decoder has no attention weights: return "
                          f"None as the {position} value", points=1)


def _judge_context(raw: object, seed: int) -> str:
    raw = _result(raw)
    if not raw.get("pair"):
        raise CheckFailed(f"`context` must return a pair (context, weights): (the fixed "
                          f"context, None); got {str(raw.get('type'))[:80]}")
    if raw.get("hidden"):
        raise CheckFailed("`context` returns `memory.summary`: that is the library's answer, "
                          "and this check hides it. Read the final states from "
                          "`memory.encoder_outputs`, with `memory.mask`")
    library, src, lengths, _ = fresh_model(seed)
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
    _require_no_weights(raw, "right context", "second")
    _raise_reported(raw, "grad_error")
    outputs = memory.encoder_outputs
    half = outputs.shape[-1] // 2
    want = torch.zeros_like(outputs)  # 1 at the positions read, 0 elsewhere
    want[torch.arange(len(lengths)), lengths - 1, :half] = 1
    want[:, 0, half:] = 1
    if not close(_tensor(raw.get("grad")), want):
        raise CheckFailed("right values, but no gradient flows back from your context to the "
                          "encoder outputs (`.detach()`, `.numpy()`, `.data` or a new tensor "
                          "built from numbers?): training could not teach the encoder anything "
                          "through it", points=1)
    return "the encoder's final states, read from its outputs"


def _context_mistakes(memory: DecoderMemory, lengths: torch.Tensor) -> list[tuple[torch.Tensor,
                                                                                    str]]:
    outputs, summary = memory.encoder_outputs, memory.summary
    half = outputs.shape[-1] // 2
    rows = torch.arange(outputs.shape[0])
    last = outputs[rows, lengths - 1]  # the whole vector at the last real token
    final_states = "the encoder's final states, [forward at the last real token; backward at " \
                   "the first]"
    return [
        (torch.cat([summary[:, half:], summary[:, :half]], -1),
         "wrong concatenation order: the forward state comes first, then the backward one"),
        (last, "you forgot the backward direction: at the last token its half of the output has "
               "read only that token. The backward GRU reads right to left, so its final state "
               "sits at position 0"),
        (outputs[:, 0], "the forward half at position 0 has read only the first token: the "
                        "forward GRU's final state sits at each sentence's last real token"),
        (outputs[:, -1], "column -1 is padding (zeros) for every sentence shorter than the "
                         "batch: use `memory.mask` to find each sentence's last real token"),
        (torch.cat([outputs[:, -1, :half], summary[:, half:]], -1),
         "the backward half is right, but the forward half comes from column -1, which is "
         "padding for every sentence shorter than the batch: take it at each sentence's last "
         "real token (from `memory.mask`)"),
        (torch.cat([last[:, half:], outputs[:, 0, :half]], -1),
         "the halves are swapped: take the first half (forward) at the last real token and the "
         "second half (backward) at position 0"),
        (outputs.sum(1) / lengths[:, None], f"that is the mean of the encoder outputs, not "
                                            f"{final_states}"),
        (outputs.mean(1), f"that is the mean of the encoder outputs (padding included), not "
                          f"{final_states}"),
    ]


@EXERCISE.check("vanilla_context", points=2, target="FixedContextDecoder",
                adapt=adapt_context)
def check_vanilla_context(run: Callable) -> str:
    seed = fresh_seed(80)
    return _judge_context(run(seed), seed)


def _swapped_step(self, embedded, state, memory):
    context, _ = self.context(state, memory)
    return self.cell(torch.cat([context, embedded], -1), state), context, None


@EXERCISE.check("vanilla_step", points=2, target="FixedContextDecoder", adapt=adapt_step)
def check_vanilla_step(run: Callable) -> str:
    seed = fresh_seed(90)
    runs = run(seed)
    if not isinstance(runs, dict):
        raise CheckFailed("FixedContextDecoder reported no result")
    try:
        own_context = bool(_judge_context(runs.get("context"), seed))
    except (CheckFailed, NotImplementedError):
        own_context = False
    # judge the step alone when the context is wrong: a right one stands in for the student's
    raw = _result(runs.get("own" if own_context else "alone"))
    if not raw.get("triple"):
        raise CheckFailed(f"`step` must return three values (s_i, c_i, None); got "
                          f"{str(raw.get('type'))[:80]}"
                          + (f" of {raw['length']}" if isinstance(raw.get("length"), int)
                             else ""))
    library, src, lengths, tgt_in = fresh_model(seed)
    memory = memory_of(library, src, lengths)
    embedded = library.decoder.embedding(tgt_in[:, 0]).detach()
    state = decoder_states(seed, 1)[0]
    with torch.no_grad():
        want_state, want_context, _ = library.decoder.step(embedded, state, memory)
        mistakes = [
            (_swapped_step(library.decoder, embedded, state, memory)[0],
             "wrong concatenation order: the GRU cell reads [y_(i-1); c], the embedded word "
             "first, then the context"),
            (state, "the state never changes: s_i = self.cell(input, s_(i-1)) is the new state "
                    "to return"),
        ]
    new_state = _tensor(raw.get("state"))
    if not close(_tensor(raw.get("context")), want_context):
        raise CheckFailed("the second value must be this step's context c_i (from "
                          "`self.context(state, memory)`)")
    if not close(new_state, want_state):
        raise_named(new_state, mistakes, close)
        raise CheckFailed("the new state s_i differs from the library's: "
                          "s_i = GRUCell([y_(i-1); c], s_(i-1))")
    _require_no_weights(raw, "right state and context", "third")
    _raise_reported(raw, "sentences_error")
    if raw.get("later_error"):
        raise CheckFailed(f"{str(raw['later_error'])[:300]}. The first batch worked, so `step` "
                          "seems to keep anything of its own between calls (e.g. a context "
                          "saved on `self`): compute everything from its arguments")
    with torch.no_grad():
        want_logits, _ = library(src, lengths, tgt_in)
        want_tokens = greedy_decode(library, src, lengths, max_len=8).tokens
        few = slice(1, 3)
        want_few, _ = library(src[few, :int(lengths[few].max())], lengths[few], tgt_in[few])
    tokens = raw.get("tokens")
    if not close(_tensor(raw.get("logits")), want_logits) or not _same_tokens(
            tokens, want_tokens) or not close(_tensor(raw.get("few")), want_few):
        raise CheckFailed("one step is right, but over whole sentences your decoder's outputs "
                          "differ from the library's: does `step` keep anything of its own "
                          "between calls (e.g. a context saved on `self`), or change `state` "
                          "(an input) in place? Return new tensors")
    if not own_context:
        return ("`step` is right (judged with a right context standing in for yours, which "
                "does not pass its check yet)")
    return "same logits and greedy translations as the library's vanilla decoder"


def _same_tokens(got: object, want: list[list[int]]) -> bool:
    return (isinstance(got, list) and len(got) == len(want)
            and all(isinstance(row, list) and all(type(t) is int for t in row)
                    and row == list(w) for row, w in zip(got, want)))


def vanilla_decoder_to_train(decoder_class: object) -> type[VanillaDecoder]:
    """The decoder class to train the vanilla model with: the student's ``FixedContextDecoder``
    once both its checks pass; until then the library's :class:`VanillaDecoder`, with a printed
    note, so the rest of the notebook can run."""
    results = [check(decoder_class) for check in (check_vanilla_context, check_vanilla_step)]
    if all(r.passed for r in results):
        print("vanilla model: your FixedContextDecoder")
        return decoder_class  # type: ignore[return-value]
    print("vanilla model: the library's VanillaDecoder, because your FixedContextDecoder does "
          "not pass its checks yet (Part 1). Fix it, then run this cell again to train yours.")
    return VanillaDecoder


# --------------------------------------------------------------------------- BLEU by length

_WORDS = "a man in a blue shirt is riding a bike down the street while two dogs run behind".split()


def _sentence(length: int, seed: int, noise: float) -> tuple[str, str]:
    """A reference of ``length`` words and a hypothesis with some words changed."""
    rng = np.random.default_rng(fresh_seed(seed))
    reference = [_WORDS[(seed + i) % len(_WORDS)] for i in range(length)]
    hypothesis = [w if rng.random() > noise else "xyz" for w in reference]
    return " ".join(hypothesis), " ".join(reference)


def _cases():
    lengths = [3, 9, 9, 10, 15, 20, 20, 21, 30, 6]
    pairs = [_sentence(n, seed, noise=0.3) for seed, n in enumerate(lengths)]
    return [h for h, _ in pairs], [r for _, r in pairs], lengths


_BOUNDS = [(low, high) for _, low, high in LENGTH_BUCKETS]


def _expected(hypotheses, references, lengths, bounds=_BOUNDS):
    out: dict[str, float | None] = {}
    for name, (low, high) in zip(BUCKETS, bounds):
        chosen = [i for i, n in enumerate(lengths) if low <= n <= high]
        out[name] = (sacrebleu.corpus_bleu([hypotheses[i] for i in chosen],
                                           [[references[i] for i in chosen]]).score
                     if chosen else None)
    return out


def _numbers(got: dict, where: str) -> dict:
    """The student's scores as floats (None stays None), or a failed check saying why not."""
    out: dict[str, float | None] = {}
    for bucket, value in got.items():
        if value is None:
            out[bucket] = None
            continue
        if hasattr(value, "score") and not isinstance(value, (int, float, np.number)):
            raise CheckFailed(f"bucket {bucket!r} ({where}) holds a sacreBLEU "
                              f"{type(value).__name__} object: return its `.score`, a number")
        try:
            out[bucket] = float(value)
        except (TypeError, ValueError):
            raise CheckFailed(f"bucket {bucket!r} ({where}) must hold a number (or None when "
                              f"empty); got {type(value).__name__}") from None
    return out


@EXERCISE.check("bleu_by_bucket", points=3, target="bleu_by_bucket")
def check_bleu_by_bucket(bleu_by_bucket: Callable) -> str:
    hypotheses, references, lengths = _cases()
    full = f"{len(lengths)} sentences of {min(lengths)} to {max(lengths)} tokens"
    got = call_student(bleu_by_bucket, list(hypotheses), list(references), list(lengths),
                       given=full)
    if not isinstance(got, dict):
        raise CheckFailed(f"bleu_by_bucket must return a dict; got {type(got).__name__}")
    if set(got) != set(BUCKETS):
        raise CheckFailed(f"the keys must be {list(BUCKETS)}; got {sorted(got)}")
    got = _numbers(got, full)
    expected = _expected(hypotheses, references, lengths)
    wrong = [b for b in BUCKETS
             if got[b] is None or not np.isclose(float(got[b]), expected[b], atol=1e-6)]
    if wrong:
        off_by_one = [
            (((0, 10), (11, 20), (21, 10**9)), "exactly 10 tokens belongs to '10-20'"),
            (((0, 9), (10, 21), (22, 10**9)), "exactly 21 tokens belongs to '> 20'"),
            (((0, 9), (10, 19), (20, 10**9)), "exactly 20 tokens belongs to '10-20'"),
        ]
        for shift, hint in off_by_one:
            other = _expected(hypotheses, references, lengths, shift)
            if all(got[b] is not None and np.isclose(float(got[b]), other[b]) for b in BUCKETS):
                raise CheckFailed(f"bucket boundaries are off: a sentence of {hint}")
        averages = {}
        for name, (low, high) in zip(BUCKETS, ((0, 9), (10, 20), (21, 10**9))):
            chosen = [i for i, n in enumerate(lengths) if low <= n <= high]
            averages[name] = np.mean([sacrebleu.sentence_bleu(hypotheses[i], [references[i]]).score
                                      for i in chosen])
        if all(got[b] is not None and np.isclose(float(got[b]), averages[b]) for b in BUCKETS):
            raise CheckFailed("that is the average of sentence BLEU scores; BLEU is a corpus "
                              "statistic: score each bucket's sentences together")
        raise CheckFailed(f"BLEU is off for bucket(s) {', '.join(repr(b) for b in wrong)}: "
                          "use sacrebleu.corpus_bleu(hypotheses, [references]) per bucket")
    few = "2 sentences of 3 and 9 tokens (so the '10-20' and '> 20' buckets are empty)"
    empty = call_student(bleu_by_bucket, hypotheses[:2], references[:2], lengths[:2], given=few)
    if not isinstance(empty, dict) or empty.get("> 20", "missing") is not None:
        raise CheckFailed("right on full buckets, but an empty bucket must map to None",
                          points=2)
    return "corpus BLEU per bucket, with the lesson's boundaries"


_SCORES = {"vanilla": {"< 10": 30.5, "10-20": 22.0, "> 20": 12.5},
           "attention": {"< 10": 36.0, "10-20": 31.5, "> 20": 25.0}}


def _figure(result: object, what: str) -> AxesData:
    """The one chart of the student's figure, described as data (:class:`FigureData`, which
    is also what the grader receives from the kernel); the figure itself is closed."""
    if isinstance(result, Figure):
        data = describe_figure(result)
        plt.close(result)
        result = data
    if not isinstance(result, FigureData):
        raise CheckFailed(f"{what} must return the matplotlib Figure (e.g. `return fig`); "
                          f"got {type(result).__name__}")
    if len(result.axes) != 1:
        raise CheckFailed(f"{what} should draw one chart (one Axes); got {len(result.axes)}")
    ax = result.axes[0]
    missing = [name for name, text in [("a title", ax.title),
                                       ("a y-axis label", ax.ylabel)] if not text]
    if missing:
        raise CheckFailed(f"the chart needs {' and '.join(missing)}")
    if ax.legend is None:
        raise CheckFailed("the chart needs a legend naming the models")
    return ax


@EXERCISE.check("plot_bleu_by_length", points=2, target="plot_bleu_by_length")
def check_plot_bleu(plot_bleu_by_length: Callable) -> str:
    ax = _figure(plot_bleu_by_length({k: dict(v) for k, v in _SCORES.items()}),
                 "plot_bleu_by_length")
    bars = [(x, width, height) for x, width, height in ax.bars if height > 0]
    heights = sorted(round(height, 6) for _, _, height in bars)
    expected = sorted(v for scores in _SCORES.values() for v in scores.values())
    if heights != expected:
        raise CheckFailed(f"expected one bar per model and bucket ({len(expected)} bars "
                          f"with the given scores); found {len(heights)} bars"
                          + ("" if len(heights) != len(expected) else " with other heights"))
    legend = list(ax.legend or ())
    if sorted(legend) != sorted(_SCORES):
        raise CheckFailed(f"the legend should name the models {sorted(_SCORES)}; got {legend}")
    centres = {round(x + width / 2, 6) for x, width, _ in bars}
    if len(centres) < len(expected):
        raise CheckFailed("some bars are drawn on top of each other: in each group, shift "
                          "each model's bars sideways (x + offset, width / number of models)")
    ticks = " ".join(ax.xticklabels)
    if not all(bucket in ticks for bucket in BUCKETS):
        raise CheckFailed("label each group of bars with its bucket ('< 10', '10-20', '> 20')")
    return "one group per bucket, one bar per model, labelled"


def _history(offset: float) -> History:
    return History(epoch=[1, 2, 3], train_loss=[4.0 + offset, 3.0 + offset, 2.5 + offset],
                   val_loss=[3.8 + offset, 3.1 + offset, 2.9 + offset],
                   val_token_accuracy=[0.3, 0.4, 0.5], val_exact_match=[0, 0, 0],
                   seconds=[1, 2, 3])


@EXERCISE.check("plot_loss_curves", points=2, target="plot_loss_curves")
def check_loss_curves(plot_loss_curves: Callable) -> str:
    histories = {"vanilla": _history(0.5), "attention": _history(0.0)}
    ax = _figure(plot_loss_curves(histories), "plot_loss_curves")
    lines = [(label, ys) for label, ys in ax.lines if not label.startswith("_")]
    if len(lines) != 4:
        raise CheckFailed(f"expected 4 labelled lines (training and validation loss of each "
                          f"model); found {len(lines)}")
    wanted = [list(h.train_loss) for h in histories.values()] + [
        list(h.val_loss) for h in histories.values()]
    drawn = [list(np.round(np.asarray(ys, dtype=float), 6)) for _, ys in lines]
    if sorted(drawn) != sorted(wanted):
        raise CheckFailed("the lines should be each model's train_loss and val_loss per epoch")
    for (name, _), ydata in zip(lines, drawn):  # each label must say what its line shows
        label = name.lower()
        for model, history in histories.items():
            for kind, values, words in [("training", history.train_loss, ("train",)),
                                        ("validation", history.val_loss, ("val", "held"))]:
                if ydata == list(values) and (model not in label
                                              or not any(w in label for w in words)):
                    raise CheckFailed(f"the line labelled {name!r} shows the {kind} loss of "
                                      f"the {model} model: its label should name both")
    if not ax.xlabel:
        raise CheckFailed("label the x axis (epoch)")
    return "training and validation loss of both models, labelled"


EXERCISE.manual_question(
    "comparison",
    points=3,
    prompt="Compare the two models with your numbers: test BLEU, training curves, and the "
           "gain on short against long sentences, with its intervals; what the long bucket's "
           "interval allows you to conclude, and what the larger budget of notebook 4 changes.",
)
EXERCISE.manual_question(
    "why",
    points=2,
    prompt="Why would you expect the fixed-context model to fall behind most on long sentences "
           "(the bottleneck of notebook 1, the decoder you wrote in Part 1)? Do your numbers, "
           "with their intervals, show it? If not, why not at this budget?",
)

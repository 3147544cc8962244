"""Checks for exercise E10.2: vanilla seq2seq against Bahdanau attention on Multi30k.

Students write both decoders (Part 1). The fixed-context ("Day 7 style") one is a subclass of
the library's :class:`~course_utils.models.VanillaDecoder`, ``FixedContextDecoder``, with its
own ``context`` and ``step``; the attention one is ``AdditiveAttention`` (``project_keys``,
``attend``) and ``BahdanauDecoder(AttentionDecoder)`` (``prepare``, ``step``), whose given
constructors keep the library's parameter names. The checks build a small model with random
weights and inputs (fresh in each grading run), load the same weights into the student's
classes and compare outputs:

- ``vanilla_context``: ``context(state, memory)`` must give the encoder's final states,
  ``[forward at the last real token; backward at the first]``, read from
  ``memory.encoder_outputs`` and ``memory.mask`` (the check hides ``memory.summary``, which is
  the library's answer), the same vector at every step, and no attention weights;
- ``vanilla_step``: ``step(embedded, state, memory)`` must give the library's ``(s_i, c_i,
  None)``, so that the whole model's logits and greedy outputs equal the library's;
- ``attention``: the keys ``W_h h``; the context and weights from given keys, with the mask
  applied before the softmax; and the keys it is given are the ones it uses;
- ``attention_step``: ``prepare`` puts the keys in the memory once per batch; ``step`` attends
  with ``s_(i-1)`` using ``memory.keys`` (handed keys that are not ``W_h h``, so recomputing
  them shows), then updates the state from ``[E y_(i-1); c_i]``; whole sentences and greedy
  decoding equal the library's. The known wrong formulas are named by
  :mod:`course_utils.checks.attention_hints`.

Under ``course-grade`` the four decoder parts are judged in the grader: their ``adapt``
(:mod:`course_utils.checks.decoders`, :mod:`course_utils.checks.attention_decoder`) runs the
student's class in the kernel on the run's seed and reports plain data; the grader rebuilds the
same library model from the seed, computes every expected value and decides. For each step the
kernel also runs the student's ``step`` with a right context (or attention) standing in, which
the grader judges when the student's own does not pass. While the student's classes run, the
library's attention and decoders refuse to work, and code that uses the library's attention
(``course_utils.attention``, ``course_utils.scores``, the attention decoders) earns nothing.

Parts 3 to 5 (BLEU by length, its chart, the loss curves) are judged by
:mod:`course_utils.checks.bleu_by_length`. The written comparison is graded by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import torch

from course_utils.checks.attention_decoder import (
    adapt_attention,
    adapt_decoder,
    attention_inputs,
    other_keys,
)
from course_utils.checks.attention_hints import attention_mistakes, step_mistakes
from course_utils.checks.bleu_by_length import (
    BUCKETS,
    judge_bleu_by_bucket,
    judge_loss_curves,
    judge_plot_bleu,
)
from course_utils.checks.calling import CheckFailed
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
from course_utils.checks.hints import named_mistake, raise_named
from course_utils.checks.probes import fresh_seed
from course_utils.decoding import greedy_decode
from course_utils.models import AttentionDecoder, DecoderMemory, VanillaDecoder

__all__ = [
    "BUCKETS",
    "EXERCISE",
    "attention_decoder_to_train",
    "check_attention",
    "check_attention_step",
    "check_bleu_by_bucket",
    "check_loss_curves",
    "check_plot_bleu",
    "check_vanilla_context",
    "check_vanilla_step",
    "vanilla_decoder_to_train",
]

EXERCISE = Exercise("E10.2", "Vanilla seq2seq against Bahdanau attention")

# ---------------------------------------------------- the grader's side: expected, and judged


def _tensor(value: object) -> torch.Tensor | None:
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return torch.as_tensor(value, dtype=torch.float32)
    return None


def _result(raw: object, name: str = "FixedContextDecoder") -> dict:
    if not isinstance(raw, dict):
        raise CheckFailed(f"{name} reported no result")
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


# ------------------------------------------------ Part 1c and 1d: the attention decoder


def _same(got: object, want: torch.Tensor) -> bool:
    """``close``, with NaN equal to NaN (a softmax over the wrong axis gives NaN)."""
    return (isinstance(got, torch.Tensor) and got.shape == want.shape
            and bool(torch.allclose(got.float(), want.float(), atol=1e-5, equal_nan=True)))


def _same_pair(got: tuple, want: tuple) -> bool:
    return all(_same(g, w) for g, w in zip(got, want))


def _pair(value: object) -> tuple[torch.Tensor | None, ...]:
    return tuple(_tensor(v) for v in value) if isinstance(value, list) and len(value) == 2 \
        else (None, None)


def _judge_attention(raw: object, seed: int) -> str:
    raw = _result(raw, "AdditiveAttention")
    library, *_, memory = attention_inputs(seed)
    attention, state = library.decoder.attention, decoder_states(seed, 1)[0]
    outputs, mask, keys = memory.encoder_outputs, memory.mask, memory.keys
    got_keys = _tensor(raw.get("keys"))
    keys_right = close(got_keys, keys)
    keys_note = "`project_keys` is right, but " if keys_right else ""
    if not raw.get("pair"):
        problem = (f"{keys_note}`attend` must return a pair (context, weights); got "
                   f"{str(raw.get('type'))[:80]}")
    else:
        with torch.no_grad():
            want = attention.attend(state, outputs, keys, mask)
            other = other_keys(keys, seed)
            want_other = attention.attend(state, outputs, other, mask)
        got = _pair(raw.get("right"))
        if not _same_pair(got, want):
            named = named_mistake(got, attention_mistakes(attention.W_s, attention.W_h,
                                                          attention.v, state, outputs, mask),
                                  _same_pair)
            problem = keys_note + (named or (
                f"`attend` gives another context and weights than e = v^T tanh(W_s s + keys), "
                f"alpha = masked softmax(e), c = sum_j alpha_j h_j for {GIVEN}: the weights "
                f"should be {tuple(want[1].shape)} and the context {tuple(want[0].shape)}"))
        elif not _same_pair(_pair(raw.get("other")), want_other):
            problem = (f"{keys_note}`attend` does not use the keys it is given (does it compute "
                       "W_h h again?): the keys come from `project_keys`, once per batch, and "
                       "every step reads them")
            if keys_right:
                raise CheckFailed(problem, points=2)
        elif keys_right:
            return "same keys, weights and context as the library's Bahdanau attention"
        else:
            problem = ""
    if not keys_right:
        shape = tuple(got_keys.shape) if got_keys is not None else str(raw.get("keys"))[:40]
        keys_problem = (f"`project_keys` must return the keys W_h h_j of every source position, "
                        f"(batch, src_len, attention_dim) = {tuple(keys.shape)}; got "
                        f"{shape}" + (f". And {problem}" if problem else ""))
        raise CheckFailed(keys_problem, points=0 if problem else 2)
    raise CheckFailed(problem, points=1)


@EXERCISE.check("attention", points=3, target="AdditiveAttention", adapt=adapt_attention)
def check_attention(run: Callable) -> str:
    seed = fresh_seed(100)
    return _judge_attention(run(seed), seed)


@EXERCISE.check("attention_step", points=3, target="BahdanauDecoder", adapt=adapt_decoder)
def check_attention_step(run: Callable) -> str:
    seed = fresh_seed(110)
    runs = run(seed)
    if not isinstance(runs, dict):
        raise CheckFailed("BahdanauDecoder reported no result")
    try:
        own_attention = bool(_judge_attention(runs.get("attention"), seed))
    except (CheckFailed, NotImplementedError):
        own_attention = False
    # judge prepare and step alone when the attention is wrong: a right one stands in
    raw = _result(runs.get("own" if own_attention else "alone"), "BahdanauDecoder")
    library, src, lengths, tgt_in, memory = attention_inputs(seed)
    assert memory.keys is not None
    got_keys = _tensor(raw.get("keys"))
    real = memory.mask.unsqueeze(-1).expand_as(memory.keys)
    if (raw.get("memory") == "DecoderMemory" and got_keys is not None
            and got_keys.shape == memory.keys.shape and not close(got_keys, memory.keys)
            and close(got_keys[real], memory.keys[real])):
        raise CheckFailed("`prepare`'s keys are right at real tokens but not at padding: set the "
                          "padded positions of encoder_outputs to 0 first (the mask is True at "
                          "real tokens), so that whatever the encoder left there reaches no key "
                          "and no context")
    if raw.get("memory") != "DecoderMemory" or not close(got_keys, memory.keys):
        raise CheckFailed("`prepare` must return the DecoderMemory with the keys W_h h_j of "
                          "every source position in `keys` (computed once per batch, by your "
                          f"attention's `project_keys`); got a {str(raw.get('memory'))[:80]}"
                          + ("" if raw.get("memory") != "DecoderMemory" else
                             " whose keys differ"))
    if not raw.get("triple"):
        raise CheckFailed(f"`step` must return three values (s_i, c_i, weights); got "
                          f"{str(raw.get('type'))[:80]}")
    stepped = replace(memory, keys=other_keys(memory.keys, seed))
    decoder = library.decoder
    embedded = decoder.embedding(tgt_in[:, 0]).detach()
    state = decoder_states(seed, 1)[0]
    with torch.no_grad():
        want = decoder.step(embedded, state, stepped)
    got = tuple(_tensor(raw.get(key)) for key in ("state", "context", "weights"))
    if not (close(got[0], want[0]) and close(got[1], want[1])):
        named = named_mistake(got[:2], step_mistakes(decoder.cell, decoder.attention, embedded,
                                                     state, stepped.encoder_outputs,
                                                     stepped.keys, stepped.mask), _same_pair)
        raise CheckFailed(named or "the new state s_i or the context c_i differs from the "
                                   "library's: c_i = attention(s_(i-1), memory), then "
                                   "s_i = GRUCell([E y_(i-1); c_i], s_(i-1))")
    if not close(got[2], want[2]):
        raise CheckFailed("right state and context, but the third value must be this step's "
                          "attention weights alpha_i, (batch, src_len)", points=2)
    _raise_reported(raw, "sentences_error")
    with torch.no_grad():
        want_logits, _ = library(src, lengths, tgt_in)
        want_tokens = greedy_decode(library, src, lengths, max_len=8).tokens
        few = slice(1, 3)
        want_few, _ = library(src[few, :int(lengths[few].max())], lengths[few], tgt_in[few])
    if not close(_tensor(raw.get("logits")), want_logits) or not _same_tokens(
            raw.get("tokens"), want_tokens) or not close(_tensor(raw.get("few")), want_few):
        raise CheckFailed("one step is right, but over whole sentences your decoder's outputs "
                          "differ from the library's: does `step` keep anything of its own "
                          "between calls, or change `state` in place? Return new tensors")
    if not own_attention:
        return ("`prepare` and `step` are right (judged with a right attention standing in "
                "for your AdditiveAttention, which does not pass its check yet)")
    return "same logits and greedy translations as the library's attention decoder"


def attention_decoder_to_train(attention_class: object,
                               decoder_class: object) -> type[AttentionDecoder]:
    """The decoder class to train the attention model with: the student's ``BahdanauDecoder``
    once it and their ``AdditiveAttention`` pass their checks; until then the library's
    :class:`AttentionDecoder`, with a printed note."""
    results = [check_attention(attention_class), check_attention_step(decoder_class)]
    if all(r.passed for r in results):
        print("attention model: your BahdanauDecoder with your AdditiveAttention")
        return decoder_class  # type: ignore[return-value]
    print("attention model: the library's AttentionDecoder, because your AdditiveAttention or "
          "BahdanauDecoder does not pass its checks yet (Part 1). Fix them, then run this cell "
          "again to train yours.")
    return AttentionDecoder


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


# ------------------------------------------------- Parts 3 to 5 (checks/bleu_by_length.py)

# bucketing and scoring are the student's: the library's metrics (bleu_by_length, bucket_of,
# corpus_bleu) hold the answer, so a function that uses them earns no points
check_bleu_by_bucket = EXERCISE.check("bleu_by_bucket", points=3, target="bleu_by_bucket",
                                      own_work=("course_utils.metrics",),
                                      write_with="sacrebleu and Python")(
    judge_bleu_by_bucket)
check_plot_bleu = EXERCISE.check("plot_bleu_by_length", points=2,
                                 target="plot_bleu_by_length")(judge_plot_bleu)
check_loss_curves = EXERCISE.check("plot_loss_curves", points=2, target="plot_loss_curves")(
    judge_loss_curves)

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
    prompt="Your two models on the three longest test sentences: where does each go wrong "
           "(quoted)? Which of the vanilla model's errors does your Part 1 decoder's fixed "
           "context explain, and which errors do both models make? Do your Part 3 numbers, with "
           "their intervals, show the vanilla model falling further behind on long sentences? "
           "If not, why not at this budget?",
)

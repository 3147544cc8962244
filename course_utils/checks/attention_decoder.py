"""A student's Bahdanau attention and attention decoder, run on fresh weights (E10.2's kernel side).

E10.2 asks for two classes beside the fixed-context decoder:

- ``AdditiveAttention(nn.Module)``, whose given ``__init__`` creates ``W_s``, ``W_h`` and ``v``
  exactly as :class:`course_utils.attention.BahdanauAttention` names and shapes them, with the
  student's ``project_keys(encoder_outputs)`` (``W_h h_j``, once per batch) and
  ``attend(decoder_state, encoder_outputs, keys, mask)`` -> ``(context, weights)``;
- ``BahdanauDecoder(AttentionDecoder)``, whose given ``__init__`` puts the student's
  ``AdditiveAttention`` in ``self.attention`` (the library's is never built), with the
  student's ``prepare`` (the keys into :attr:`DecoderMemory.keys`) and ``step``.

The parameter names equal the library's :class:`~course_utils.models.AttentionDecoder`'s, so a
library model's weights load into the student's (the checks) and the student's trained weights
into a library model (E10.3 reads the checkpoint).

As :mod:`course_utils.checks.decoders` does for the vanilla decoder, this module builds a
small library attention model from the run's seed, loads its weights into the student's
classes and reports only plain data (arrays, tokens, flags); :mod:`course_utils.checks.e10_2`
judges it in the grader. While the student's code runs, the library's attention and attention
decoder refuse to work (:func:`attention_refused`), and a class whose code refers to the
library's attention (:data:`FORBIDDEN`) is refused before it runs (:func:`own_work`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import torch
from torch import nn

from course_utils.attention import Attention, BahdanauAttention
from course_utils.checks.attention_hints import additive_attention
from course_utils.checks.calling import CheckFailed, call_student
from course_utils.checks.decoders import (
    CONFIG,
    GIVEN,
    as_data,
    decoder_states,
    fresh_model,
    library_steps_refused,
    memory_of,
    reported,
)
from course_utils.checks.own_work import (
    library_methods,
    module_files,
    references_to,
    watch_calls,
)
from course_utils.decoding import greedy_decode
from course_utils.models import AttentionDecoder, LuongDecoder, Seq2Seq, build_model

ATTENTION_CONFIG = replace(CONFIG, attention=True)
#: The library modules that hold the answer: a student's class that uses them earns nothing.
FORBIDDEN = ("course_utils.attention", "course_utils.scores")
#: What ``prepare`` is handed at padded positions of the encoder outputs (it must zero them).
PADDING_NOISE = 3.0
#: What the student's class must not inherit or call: the library's attention decoders.
_DECODERS = (AttentionDecoder, LuongDecoder)
_REFUSED: list[tuple[type, str]] = [(cls, name) for cls in (Attention, BahdanauAttention)
            for name in ("forward", "attend", "project_keys", "energies")]
_REFUSED += [(AttentionDecoder, name) for name in ("prepare", "context", "step")]


def _write_it(where: str, what: str) -> str:
    return (f"`{where}` {what}: that is the course's own attention, which this check compares "
            "against, so this part earns no points. Write it yourself with torch operations")


def own_work(cls: type, name: str) -> None:
    """Refuse a class whose methods (or helpers they call) use the library's attention, its
    scores or its attention decoders by name, or that takes a library method as its own."""
    borrowed = library_methods(cls)
    if borrowed:
        raise CheckFailed(_write_it(name, f"takes the library's code as its own: {borrowed[0]}"))
    for attribute, value in vars(cls).items():
        function = getattr(value, "__func__", value)
        if not (callable(function) and hasattr(function, "__code__")):
            continue
        used = references_to(function, FORBIDDEN)
        if used:
            raise CheckFailed(_write_it(f"{name}.{attribute}", used[0]))
        names = inspect.getclosurevars(function)
        for bound, target in {**names.globals, **names.nonlocals}.items():
            if isinstance(target, type) and target in _DECODERS:
                raise CheckFailed(_write_it(f"{name}.{attribute}", f"uses `{bound}`, the "
                                            f"library's `{target.__name__}`"))


@contextmanager
def attention_refused() -> Iterator[list[str]]:
    """While the student's classes run: the library's attention modules and attention decoder
    (and, as for the vanilla decoder, ``GRUDecoder.step``) fail with a message instead of doing
    the work, and every call into :data:`FORBIDDEN` is recorded in the list this yields."""
    saved = [(cls, name, vars(cls)[name]) for cls, name in _REFUSED if name in vars(cls)]

    def refuse(cls: type, what: str):
        def refused(self, *args, **kwargs):
            raise CheckFailed(f"your code calls the library's `{cls.__name__}.{what}`: "
                              "write it yourself")
        return refused

    for cls, name, _ in saved:
        setattr(cls, name, refuse(cls, name))
    try:
        with library_steps_refused(), watch_calls(module_files(FORBIDDEN)) as entered:
            yield entered
    finally:
        for cls, name, method in saved:
            setattr(cls, name, method)


def _refuse_entered(entered: list[str], name: str) -> None:
    if entered:
        raise CheckFailed(_write_it(name, f"calls `{entered[0]}`"))


def attention_class(student: object) -> type:
    if not isinstance(student, type) or not issubclass(student, nn.Module):
        raise CheckFailed("AdditiveAttention must be a class that subclasses `nn.Module`: "
                          "`class AdditiveAttention(nn.Module):`")
    if issubclass(student, Attention):
        raise CheckFailed("AdditiveAttention subclasses the library's attention, the answer "
                          "this check compares against: subclass `nn.Module` and write "
                          "`project_keys` and `attend` yourself")
    own_work(student, "AdditiveAttention")
    return student


def decoder_class(student: object) -> type:
    if not isinstance(student, type) or not issubclass(student, AttentionDecoder) \
            or issubclass(student, LuongDecoder):
        raise CheckFailed("BahdanauDecoder must be a class that subclasses the library's "
                          "attention decoder: `class BahdanauDecoder(AttentionDecoder):`")
    own_work(student, "BahdanauDecoder")
    return student


def _require(cls: type, method: str, name: str) -> None:
    if method not in vars(cls):
        raise CheckFailed(f"{name} does not define `{method}`: write it in the class")


def other_keys(keys: torch.Tensor, seed: int) -> torch.Tensor:
    """Keys that are not ``W_h h``, drawn from ``seed``: a step or ``attend`` that recomputes
    the keys instead of using those it is given shows on them."""
    generator = torch.Generator().manual_seed(seed + 2)
    return keys + torch.randn(keys.shape, generator=generator)


def attention_inputs(seed: int):
    """The library attention model of this seed, its batch and its memory (both sides use it)."""
    library, src, lengths, tgt_in = fresh_model(seed, ATTENTION_CONFIG)
    memory = memory_of(library, src, lengths)
    assert memory.keys is not None
    return library, src, lengths, tgt_in, memory


# ------------------------------------------------------------------- AdditiveAttention


def attention_raw(cls: type, seed: int) -> dict:
    """The student's ``project_keys`` and ``attend`` on this seed's batch, as plain data:
    the keys; the context and weights from the right keys; and from other keys."""
    library, _, _, _, memory = attention_inputs(seed)
    source = library.decoder.attention
    try:
        module = cls(source.encoder_dim, source.decoder_dim, source.attention_dim)
    except Exception as error:
        raise CheckFailed(f"building AdditiveAttention(encoder_dim, decoder_dim, "
                          f"attention_dim) failed with {type(error).__name__}: {error}: keep "
                          "the given __init__") from None
    try:
        module.load_state_dict(source.state_dict())
    except RuntimeError as error:
        raise CheckFailed("the library's W_s, W_h and v do not load into your "
                          "AdditiveAttention: keep the given __init__ "
                          f"({str(error).splitlines()[0]})") from None
    for method in ("project_keys", "attend"):
        _require(cls, method, "AdditiveAttention")
    state = decoder_states(seed, 1)[0]
    outputs, mask, keys = memory.encoder_outputs, memory.mask, memory.keys
    assert keys is not None
    given = f"{GIVEN}, encoder outputs (4, 7, {source.encoder_dim})"
    raw: dict = {}
    with torch.no_grad(), attention_refused() as entered:
        raw["keys"] = as_data(call_student(module.project_keys, outputs, given=given))
        for key, with_keys in (("right", keys), ("other", other_keys(keys, seed))):
            result = call_student(module.attend, state, outputs, with_keys, mask, given=given)
            if not (isinstance(result, tuple) and len(result) == 2):
                return {**raw, "pair": False, "type": type(result).__name__[:80]}
            raw[key] = [as_data(result[0]), as_data(result[1])]
    _refuse_entered(entered, "AdditiveAttention")
    return {**raw, "pair": True}


def adapt_attention(student: object) -> Callable:
    cls = attention_class(student)

    def run(seed: int) -> dict:
        return reported(lambda: attention_raw(cls, seed))

    run.__name__ = "AdditiveAttention"
    return run


# ---------------------------------------------------------------------- BahdanauDecoder


class RightAttention(nn.Module):
    """Stands in for a student's attention that does not pass its check yet, so that their
    decoder's ``prepare`` and ``step`` are judged on their own (the same W_s, W_h, v)."""

    def __init__(self, source: Any) -> None:
        super().__init__()
        self.W_s: nn.Module = source.W_s
        self.W_h: nn.Module = source.W_h
        self.v: nn.Module = source.v

    def project_keys(self, encoder_outputs: torch.Tensor) -> torch.Tensor:
        return self.W_h(encoder_outputs)  # (batch, src_len, attention_dim)

    def attend(self, decoder_state, encoder_outputs, keys, mask=None):
        return additive_attention(self.W_s, self.W_h, self.v, decoder_state, encoder_outputs,
                                  mask, keys)


def student_decoder_model(cls: type, library: Seq2Seq) -> Seq2Seq:
    try:
        model = build_model(ATTENTION_CONFIG, decoder_class=cls).eval()
    except Exception as error:
        raise CheckFailed(f"building your BahdanauDecoder like the library's decoder failed "
                          f"with {type(error).__name__}: {error}: keep the given __init__"
                          ) from None
    attention = getattr(model.decoder, "attention", None)
    if isinstance(attention, Attention) or not isinstance(attention, nn.Module):
        raise CheckFailed("`self.attention` must be your AdditiveAttention, not the library's: "
                          "keep the given __init__")
    try:
        model.load_state_dict(library.state_dict())
    except RuntimeError as error:
        raise CheckFailed("the library's weights do not load into your BahdanauDecoder: keep "
                          f"its layers as they are and add none ({str(error).splitlines()[0]})"
                          ) from None
    return model


def decoder_raw(cls: type, seed: int, stand_in: bool) -> dict:
    """The student's ``prepare`` and ``step`` (one step given other keys, whole sentences,
    greedy decoding, a second batch) on this seed's batch, as plain data; with ``stand_in``, a
    right attention stands in for the student's."""
    library, src, lengths, tgt_in, memory = attention_inputs(seed)
    model = student_decoder_model(cls, library)
    for method in ("prepare", "step"):
        _require(cls, method, "BahdanauDecoder")
    if stand_in:
        model.decoder.attention = RightAttention(model.decoder.attention)
    outputs, summary, mask = library.encode(src, lengths)
    # whatever an encoder leaves at padding must not reach a key or a context: prepare zeroes it
    outputs = outputs.masked_fill(~mask.unsqueeze(-1), PADDING_NOISE)
    assert memory.keys is not None
    stepped = replace(memory, keys=other_keys(memory.keys, seed))
    embedded = library.decoder.embedding(tgt_in[:, 0]).detach()
    state = decoder_states(seed, 1)[0]
    given = f"{GIVEN} and one step's embedded previous words"
    raw: dict = {}
    with torch.no_grad(), attention_refused() as entered:
        prepared = call_student(model.decoder.prepare, outputs, summary, mask, given=GIVEN)
        raw["keys"] = as_data(getattr(prepared, "keys", None))
        raw["memory"] = type(prepared).__name__[:80]
        result = call_student(model.decoder.step, embedded, state, stepped, given=given)
        raw.update(triple=isinstance(result, tuple) and len(result) == 3,
                   type=type(result).__name__[:80])
        if not raw["triple"]:
            return raw
        raw.update(zip(("state", "context", "weights"), (as_data(r) for r in result)))
        try:
            raw["logits"] = as_data(call_student(model, src, lengths, tgt_in, given=given)[0])
            raw["tokens"] = call_student(lambda: greedy_decode(model, src, lengths,
                                                               max_len=8).tokens,
                                         given=f"{GIVEN}, decoded greedily")
            few = slice(1, 3)
            raw["few"] = as_data(call_student(model, src[few, :int(lengths[few].max())],
                                            lengths[few], tgt_in[few],
                                            given="a second batch of 2 sentences")[0])
        except CheckFailed as failed:
            raw["sentences_error"] = failed.message
    _refuse_entered(entered, "BahdanauDecoder")
    return raw


def adapt_decoder(student: object) -> Callable:
    """The decoder's runs: as written (``own``), with a right attention standing in
    (``alone``), and the attention's own run, from which the grader decides which to judge."""
    cls = decoder_class(student)

    def run(seed: int) -> dict:
        def attention() -> dict:
            library, *_ = attention_inputs(seed)
            model = student_decoder_model(cls, library)
            return attention_raw(attention_class(type(model.decoder.attention)), seed)

        return {"attention": reported(attention),
                "own": reported(lambda: decoder_raw(cls, seed, stand_in=False)),
                "alone": reported(lambda: decoder_raw(cls, seed, stand_in=True))}

    run.__name__ = "BahdanauDecoder"
    return run

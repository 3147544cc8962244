"""A student's decoder class, run against the library's on fresh weights (E10.2's kernel side).

E10.2 asks for a decoder that subclasses the library's :class:`~course_utils.models.VanillaDecoder`
and writes its own ``context``; its recurrent step is the one every library decoder shares
(:meth:`~course_utils.models.GRUDecoder.step`, which the student wrote for the attention model
in notebook 3). The check builds a small library model with random weights from a seed
(:func:`fresh_model`), loads those weights into the student's class (:func:`student_model`),
and runs it on a padded batch: one call of ``context``, and the whole model over sentences,
greedily and on two more batches. This module is what runs in the student's kernel (the
part's ``adapt``, :func:`adapt_context`): it reports plain data (tensors as arrays, tokens,
whether the weights are ``None``), which :mod:`course_utils.checks.e10_2` judges in the grader
after rebuilding the same model from the seed. While the student's decoder runs, the library's
own ``context`` refuses to do the work (:func:`library_context_refused`), and in the single
call ``memory.summary``, the library's answer, is hidden (:class:`Hidden`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import replace

import torch

from course_utils.checks.calling import CheckFailed, call_student
from course_utils.checks.own_work import library_methods
from course_utils.data import Vocab
from course_utils.decoding import greedy_decode
from course_utils.models import (
    DecoderMemory,
    ModelConfig,
    Seq2Seq,
    VanillaDecoder,
    build_model,
)

CONFIG = ModelConfig(src_vocab_size=23, tgt_vocab_size=19, embed_dim=8, hidden_dim=6,
                      attention_dim=6, attention=False, dropout=0.0, maxout_dim=4)
LENGTHS = (7, 3, 1, 5)  # padded to 7: one full row, a one-token sentence, two in between
GIVEN = "a batch of 4 sentences of 7, 3, 1 and 5 tokens (padded to 7)"
SHUFFLED = torch.tensor([2, 0, 3, 1])  # the same batch in another order: new rows, same size


class Hidden(torch.Tensor):
    """Stands in for ``memory.summary`` in the context check: any use of it fails, naming why."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        raise CheckFailed("`context` reads `memory.summary`: that is the library's answer (the "
                          "encoder computed it), and this check hides it. Read the final states "
                          "from `memory.encoder_outputs`, using `memory.mask` to find each "
                          "sentence's last real token")


_GLOBAL_GENERATOR = threading.Lock()


def fresh_model(seed: int, config: ModelConfig = CONFIG):
    """A library model (vanilla unless ``config`` says attention) with random weights, and a
    padded batch for it."""
    generator = torch.Generator().manual_seed(seed)
    # the layers draw their weights from PyTorch's global generator: seed it for this model
    # alone, one thread at a time (the grader judges submissions in threads), and put it back
    with _GLOBAL_GENERATOR, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        library = build_model(config).eval()
    lengths = torch.tensor(LENGTHS)
    width = max(LENGTHS)
    src = torch.randint(4, config.src_vocab_size, (len(LENGTHS), width), generator=generator)
    src[torch.arange(width)[None, :] >= lengths[:, None]] = Vocab.pad_id
    tgt_in = torch.randint(4, config.tgt_vocab_size, (len(LENGTHS), 6), generator=generator)
    tgt_in[:, 0] = Vocab.bos_id
    return library, src, lengths, tgt_in


def student_class(decoder_class: object) -> type:
    if not isinstance(decoder_class, type) or not issubclass(decoder_class, VanillaDecoder):
        raise CheckFailed("FixedContextDecoder must be a class that subclasses the library's "
                          "decoder: `class FixedContextDecoder(VanillaDecoder):`")
    borrowed = library_methods(decoder_class)
    if borrowed:
        raise CheckFailed(f"in FixedContextDecoder, {borrowed[0]}, the library's own code: "
                          "write the method yourself")
    return decoder_class


def student_model(decoder_class: object, library: Seq2Seq) -> Seq2Seq:
    """``decoder_class`` built like the library's decoder, holding the library's weights."""
    decoder_class = student_class(decoder_class)
    try:
        model = build_model(CONFIG, decoder_class=decoder_class).eval()
    except Exception as error:
        raise CheckFailed(f"building your decoder like the library's failed with "
                          f"{type(error).__name__}: {error}: keep VanillaDecoder's constructor "
                          "(do not override __init__)") from None
    try:
        model.load_state_dict(library.state_dict())
    except RuntimeError as error:
        raise CheckFailed("the library's weights do not load into your decoder: keep its layers "
                          f"as they are and add none ({str(error).splitlines()[0]})") from None
    return model


def memory_of(library: Seq2Seq, src: torch.Tensor, lengths: torch.Tensor) -> DecoderMemory:
    with torch.no_grad():
        outputs, summary, mask = library.encode(src, lengths)
        return library.decoder.prepare(outputs, summary, mask)


@contextmanager
def library_context_refused():
    """While the student's decoder runs, the library's own ``context`` (reached by ``super()``)
    fails with a message instead of doing the work."""
    saved = VanillaDecoder.context

    def refused(self, *args, **kwargs):
        raise CheckFailed("your decoder calls the library's `context` (through `super()`): "
                          "write it yourself")

    setattr(VanillaDecoder, "context", refused)  # noqa: B010 (mypy: no method assignment)
    try:
        yield
    finally:
        setattr(VanillaDecoder, "context", saved)  # noqa: B010


def require_method(decoder_class: type, method: str) -> None:
    if method not in vars(decoder_class):
        raise CheckFailed(f"FixedContextDecoder does not define `{method}`: write it in the class")


def close(a: object, b: torch.Tensor) -> bool:
    return (isinstance(a, torch.Tensor) and a.shape == b.shape
            and bool(torch.allclose(a.float(), b.float(), atol=1e-5)))


def hidden_summary() -> torch.Tensor:
    return torch.empty(0).as_subclass(Hidden)


def decoder_states(seed: int, n: int) -> torch.Tensor:
    """``n`` decoder states for the batch, drawn from ``seed`` (the same in both processes)."""
    generator = torch.Generator().manual_seed(seed + 1)
    return torch.randn(n, len(LENGTHS), CONFIG.hidden_dim, generator=generator)


def as_data(value: object) -> object:
    """A tensor the student's code returned, as a plain array for the grader (``None`` for
    anything else: the grader then names what it expected)."""
    if isinstance(value, torch.Tensor) and not isinstance(value, Hidden):
        return value.detach().float().cpu().numpy()
    return None


# -------------------------------------------------- the kernel's side: the student's class, run


def context_raw(decoder_class: type, seed: int) -> dict:
    """The student's ``context`` on this seed's batch, as plain data: the pair it returned,
    the context for two different decoder states, whether the weights are ``None``, the
    gradient its context passes back to the encoder outputs, and the whole model's outputs
    (:func:`sentences_raw`)."""
    library, src, lengths, tgt_in = fresh_model(seed)
    model = student_model(decoder_class, library)
    require_method(decoder_class, "context")
    memory = memory_of(library, src, lengths)
    hidden = replace(memory, summary=hidden_summary())
    states = decoder_states(seed, 2)
    got = []
    with torch.no_grad(), library_context_refused():
        for state in states:
            got.append(call_student(model.decoder.context, state, hidden, given=GIVEN))
    result = got[0]
    raw: dict = {"pair": isinstance(result, tuple) and len(result) == 2,
                 "type": type(result).__name__[:80]}
    if not raw["pair"]:
        return raw
    context, weights = result
    again = got[1][0] if isinstance(got[1], tuple) and got[1] else None
    raw.update(hidden=isinstance(context, Hidden), tensor=isinstance(context, torch.Tensor),
               type=f"{type(context).__module__}.{type(context).__name__}"[:120],
               context=as_data(context), again=as_data(again), weights_none=weights is None)
    if raw["hidden"] or not raw["tensor"]:
        return raw
    # training needs the context to pass gradients back to the encoder outputs it read
    outputs = memory.encoder_outputs.detach().clone().requires_grad_(True)
    hidden = replace(memory, encoder_outputs=outputs, summary=hidden_summary())
    try:
        with torch.enable_grad(), library_context_refused():
            context, _ = call_student(model.decoder.context, states[0], hidden, given=GIVEN)
            if isinstance(context, torch.Tensor) and context.requires_grad:
                context.sum().backward()
    except CheckFailed as failed:
        raw["grad_error"] = failed.message
    raw["grad"] = as_data(outputs.grad)
    raw.update(sentences_raw(model, src, lengths, tgt_in))
    return raw


def sentences_raw(model: Seq2Seq, src: torch.Tensor, lengths: torch.Tensor,
                  tgt_in: torch.Tensor) -> dict:
    """The student's decoder in the whole model, with the library's shared step calling its
    ``context`` at every step: the teacher-forced logits, the greedy translations, and the
    logits of two more batches (a smaller one; one of the same size, its rows shuffled), as
    plain data."""
    raw: dict = {}
    with torch.no_grad(), library_context_refused():
        try:
            raw["logits"] = as_data(call_student(model, src, lengths, tgt_in,
                                                 given=f"{GIVEN}, teacher-forced")[0])
        except CheckFailed as failed:
            raw["sentences_error"] = failed.message
            return raw
        # a context that keeps anything of its own between calls (saved on `self` at the first
        # step, a counter) shows in a batch of the same size with other rows, in greedy decoding
        # (which drops finished sentences, so the batch shrinks) or in a smaller batch
        few = slice(1, 3)
        try:
            raw["shuffled"] = as_data(call_student(model, src[SHUFFLED], lengths[SHUFFLED],
                                                   tgt_in[SHUFFLED],
                                                   given="the batch with its rows shuffled")[0])
            raw["tokens"] = call_student(lambda: greedy_decode(model, src, lengths,
                                                               max_len=8).tokens,
                                         given=f"{GIVEN}, decoded greedily")
            raw["few"] = as_data(call_student(model, src[few, :int(lengths[few].max())],
                                            lengths[few], tgt_in[few],
                                            given="a second batch of 2 sentences")[0])
        except CheckFailed as failed:
            raw["later_error"] = failed.message
    return raw


def reported(raw: Callable[[], dict]) -> dict:
    """``raw()`` in the kernel, with the check's own refusals as data (``error``) and an
    unwritten part as ``not_implemented``."""
    try:
        return raw()
    except NotImplementedError:
        return {"not_implemented": True}
    except CheckFailed as failed:
        return {"error": failed.message}


def adapt_context(decoder_class: object) -> Callable:
    student_class(decoder_class)

    def run(seed: int) -> dict:
        return reported(lambda: context_raw(decoder_class, seed))  # type: ignore[arg-type]

    run.__name__ = "FixedContextDecoder"
    return run

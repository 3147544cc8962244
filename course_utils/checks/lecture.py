"""Checks for the lecture's "your turn" cells: notebook 2's attention and notebook 3's decoder step.

They are not graded. Each runs the student's class in the kernel against the library's on the
same random weights, prints one line (what passed, or what is wrong, naming a known mistake when
the result equals one: :mod:`course_utils.checks.attention_hints`) and returns ``True`` or
``False``. They never raise, so that *Run All* goes on: the notebook then uses its worked version
(a collapsed cell under the check) until the student's passes. Code that hands the work to the
library's attention or decoder is refused, as in the graded exercises.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from course_utils.attention import BahdanauAttention
from course_utils.checks.attention_hints import attention_mistakes, step_mistakes
from course_utils.checks.calling import CheckFailed, call_student
from course_utils.checks.decoders import close
from course_utils.checks.hints import raise_named
from course_utils.checks.own_work import module_files, references_to, watch_calls
from course_utils.models import DecoderMemory, ModelConfig, Seq2Seq, build_model

__all__ = ["check_attention_module", "check_decoder_step"]

#: The library modules that hold the answers: calling them is not writing the code.
LIBRARY = ("course_utils.attention", "course_utils.scores", "course_utils.models")
#: A padded batch: a full sentence, one of 3 tokens and one of a single token.
LENGTHS = (5, 3, 1)
ATTENTION_SIZES = {"encoder_dim": 6, "decoder_dim": 4, "attention_dim": 5}
# embed_dim == encoder_dim, so that the two halves of the GRU's input can be swapped without a
# shape error, and the mistake is named instead
DECODER_CONFIG = ModelConfig(src_vocab_size=11, tgt_vocab_size=13, embed_dim=6, hidden_dim=3,
                             attention_dim=5, attention=True, dropout=0.0, maxout_dim=2)
FALLBACK = ("Until it passes, the cells below use the worked version (the collapsed cell under "
            "this one).")


def close_pair(got: object, wrong: tuple[torch.Tensor, torch.Tensor]) -> bool:
    return isinstance(got, tuple) and len(got) >= 2 and all(map(close, got[:2], wrong))


def _report(name: str, problems: Callable[[], str]) -> bool:
    """Run ``problems`` (which returns what passed, or raises), print one verdict, return it."""
    try:
        passed = problems()
    except NotImplementedError:
        print(f"✗ {name} is not written yet: write it in the cell above, run that cell, then "
              f"this one. {FALLBACK}")
        return False
    except CheckFailed as failed:
        print(f"✗ {name}: {failed.message}\n{FALLBACK}")
        return False
    print(f"✓ {name}: {passed}")
    return True


def _own_work(function: Callable, what: str) -> None:
    if str(getattr(function, "__module__", "")).startswith("course_utils."):
        raise CheckFailed(f"{what} is the library's own `{function.__qualname__}`: write it "
                          "yourself")
    used = references_to(function, LIBRARY)
    if used:
        raise CheckFailed(f"{what} {used[0]}: that is the library's answer; write it yourself")


def _run(function: Callable, *args: object, given: str) -> object:
    """The student's code on ``args``, refusing it if it enters the library's attention."""
    with watch_calls(module_files(LIBRARY)) as entered:
        result = call_student(function, *args, given=given)
    library = [name for name in entered if not name.endswith(".__init__")]
    if library:
        raise CheckFailed(f"it calls `{library[0]}`, the library's own version: write it yourself")
    return result


def _pair(result: object, first: str, shapes: tuple[tuple[int, ...], ...]) -> tuple:
    names = ("context", "weights") if first == "context" else ("s_i", "c_i", "alpha_i")
    if not isinstance(result, tuple) or len(result) != len(shapes):
        raise CheckFailed(f"return a tuple ({', '.join(names)}); got {type(result).__name__}"
                          + (f" of {len(result)}" if isinstance(result, tuple) else ""))
    for name, value, shape in zip(names, result, shapes):
        if not isinstance(value, torch.Tensor) or tuple(value.shape) != shape:
            got = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
            raise CheckFailed(f"`{name}` should be a tensor of shape {shape}; got {got}")
    return result


# ------------------------------------------------------------------------- notebook 2


def _attention_case() -> tuple[BahdanauAttention, torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(2)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(2)
        library = BahdanauAttention(**ATTENTION_SIZES)
    batch, width = len(LENGTHS), max(LENGTHS)
    # padded positions hold numbers too, as an encoder may leave there: only a mask hides them
    encoder_outputs = torch.randn(batch, width, ATTENTION_SIZES["encoder_dim"], generator=generator)
    decoder_state = torch.randn(batch, ATTENTION_SIZES["decoder_dim"], generator=generator)
    mask = torch.arange(width)[None, :] < torch.tensor(LENGTHS)[:, None]
    return library, decoder_state, encoder_outputs, mask


def _attention_problems(module_class: object) -> str:
    if not isinstance(module_class, type) or not issubclass(module_class, torch.nn.Module):
        raise CheckFailed("pass the class itself: check_attention_module(MyBahdanauAttention)")
    _own_work(module_class.forward, "`forward`")
    library, state, outputs, mask = _attention_case()
    try:
        mine = module_class(**ATTENTION_SIZES)
        mine.load_state_dict(library.state_dict())
    except Exception as error:  # noqa: BLE001 - any failure here is the constructor's
        raise CheckFailed(f"building it and loading the library's weights failed "
                          f"({type(error).__name__}: {str(error).splitlines()[0][:200]}): keep "
                          "the given constructor") from None
    batch, width = mask.shape
    given = (f"a batch of {batch} sentences of {', '.join(map(str, LENGTHS))} tokens "
             f"(padded to {width})")
    shapes = ((batch, ATTENTION_SIZES["encoder_dim"]), (batch, width))
    with torch.no_grad():
        got = _pair(_run(mine, state, outputs, mask, given=given), "context", shapes)
        expected = library(state, outputs, mask=mask)
        if bool(got[1].isnan().any()):
            raise CheckFailed("some weights are NaN: a softmax over a row whose energies are all "
                              "minus infinity. Is the mask inverted? It is True at real tokens, "
                              "and only the padded positions are hidden")
        if bool(got[1].isinf().any()):
            raise CheckFailed("some weights are infinite: the masked energies went on without a "
                              "softmax. Turn the energies into weights with a softmax over the "
                              "source positions, after the mask")
        if not close(got[1], expected[1]):
            raise_named(got, attention_mistakes(library.W_s, library.W_h, library.v, state,
                                                outputs, mask), close_pair)
            raise CheckFailed(f"the weights differ from e = v^T tanh(W_s s + W_h h_j), softmax "
                              f"over the source positions, for {given}")
        if not close(got[0], expected[0]):
            raise CheckFailed("right weights, but the context differs: it is sum_j alpha_j h_j, "
                              "the weights times the encoder outputs (torch.bmm)")
        unmasked = _pair(_run(mine, state, outputs, given=given + ", mask=None"), "context", shapes)
        if not close_pair(unmasked, library(state, outputs)):
            raise CheckFailed("right with a mask, wrong without one (mask=None): then every "
                              "position is a real token")
        other = torch.randn(outputs.shape, generator=torch.Generator().manual_seed(3))
        keys = library.W_h(other)  # keys that are not W_h of these outputs
        with_keys = _pair(_run(mine, state, outputs, mask, keys,
                               given=given + " and precomputed keys"), "context", shapes)
        if close_pair(with_keys, expected):
            raise CheckFailed("your forward ignores the `keys` it is given and computes W_h h_j "
                              "itself: when keys is not None, use it (a decoder computes the keys "
                              "once per sentence and passes them to every step)")
        if not close_pair(with_keys, library(state, outputs, mask=mask, keys=keys)):
            raise CheckFailed("wrong when `keys` is given: use them in place of W_h h_j")
    context, _ = mine(state, outputs, mask=mask)
    context.pow(2).sum().backward()
    frozen = [name for name in ("W_s", "W_h", "v")
              if getattr(mine, name).weight.grad is None
              or not bool(getattr(mine, name).weight.grad.abs().sum() > 0)]
    if frozen:
        raise CheckFailed(f"no gradient reaches {', '.join(frozen)}: compute with the layers' "
                          "tensors (no .detach(), .numpy() or new tensors), or training cannot "
                          "learn them")
    return (f"same context and weights as course_utils.BahdanauAttention on {given}, with a mask, "
            "without one and with precomputed keys; gradients reach W_s, W_h and v.")


def check_attention_module(module_class: object) -> bool:
    """Notebook 2: the student's ``MyBahdanauAttention`` against the library's module."""
    return _report("MyBahdanauAttention", lambda: _attention_problems(module_class))


# ------------------------------------------------------------------------- notebook 3


def _decoder_case() -> tuple[Seq2Seq, DecoderMemory, torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(4)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(4)
        library = build_model(DECODER_CONFIG).eval()
    lengths = torch.tensor(LENGTHS)
    src = torch.randint(4, DECODER_CONFIG.src_vocab_size, (len(LENGTHS), max(LENGTHS)),
                        generator=generator)
    src[torch.arange(max(LENGTHS))[None, :] >= lengths[:, None]] = 0
    with torch.no_grad():
        outputs, summary, mask = library.encode(src, lengths)
        memory = library.decoder.prepare(outputs, summary, mask)
        state = torch.randn(len(LENGTHS), DECODER_CONFIG.hidden_dim, generator=generator)
        embedded = library.decoder.embedding(torch.randint(4, DECODER_CONFIG.tgt_vocab_size,
                                                           (len(LENGTHS),), generator=generator))
    return library, memory, embedded, state, lengths


def _step_problems(decoder_class: object) -> str:
    if not isinstance(decoder_class, type) or not issubclass(decoder_class, torch.nn.Module):
        raise CheckFailed("pass the class itself: check_decoder_step(Decoder)")
    _own_work(decoder_class.step, "`step`")  # type: ignore[attr-defined]
    library, memory, embedded, state, _ = _decoder_case()
    config = DECODER_CONFIG
    encoder_dim = 2 * config.hidden_dim
    try:
        mine = decoder_class(config.tgt_vocab_size, config.embed_dim, config.hidden_dim,
                             encoder_dim, config.attention_dim, config.maxout_dim).eval()
        mine.load_state_dict(library.decoder.state_dict())
    except Exception as error:  # noqa: BLE001 - any failure here is the constructor's
        raise CheckFailed(f"building the decoder and loading the library's weights failed "
                          f"({type(error).__name__}: {str(error).splitlines()[0][:200]}): keep "
                          "the given constructor and layers") from None
    # keys that are not W_h h_j of these outputs: a step must read them from memory
    assert memory.keys is not None, "the library's prepare() computes the keys"
    noise = torch.randn(memory.keys.shape, generator=torch.Generator().manual_seed(5))
    keys = memory.keys + 0.5 * noise
    memory = DecoderMemory(memory.encoder_outputs, memory.summary, memory.mask, keys)
    step: Callable = mine.step  # type: ignore[assignment]
    cell: torch.nn.Module = library.decoder.cell
    attention: torch.nn.Module = library.decoder.attention  # type: ignore[assignment]
    library_step: Callable = library.decoder.step
    batch = len(LENGTHS)
    given = (f"a batch of {batch} sentences of {', '.join(map(str, LENGTHS))} source tokens, "
             "one step")
    shapes = ((batch, config.hidden_dim), (batch, encoder_dim), (batch, max(LENGTHS)))
    with torch.no_grad():
        got = _pair(_run(step, embedded, state, memory, given=given), "s_i", shapes)
        expected = library_step(embedded, state, memory)
        if not (close(got[0], expected[0]) and close(got[1], expected[1])):
            raise_named(got, step_mistakes(cell, attention, embedded, state,  # type: ignore[arg-type]
                                           memory.encoder_outputs, keys, memory.mask), close_pair)
            if not close(got[1], expected[1]):
                raise CheckFailed("the context c_i differs: attend with s_prev, over "
                                  "memory.encoder_outputs with memory.keys and memory.mask")
            raise CheckFailed("right context, but the new state differs: s_i is the GRU cell "
                              "on [y_prev; c_i] from s_prev")
        if not close(got[2], expected[2]):
            raise CheckFailed("right state and context, but alpha_i is not the attention "
                              "weights that gave c_i")
    return (f"same s_i, c_i and alpha_i as course_utils's attention decoder on {given}, "
            "attending with s_(i-1) and reading the keys from memory.")


def check_decoder_step(decoder_class: object) -> bool:
    """Notebook 3: the student's ``Decoder.step`` against the library's attention decoder."""
    return _report("Decoder.step", lambda: _step_problems(decoder_class))

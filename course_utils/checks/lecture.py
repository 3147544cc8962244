"""Checks for the lecture's "your turn" cells: notebook 2's attention, notebook 3's decoder.

They are not graded. Each runs the student's class in the kernel against the library's on the
same random weights, prints one verdict (what passed, or what is wrong, naming a known mistake
when the result equals one: :mod:`course_utils.checks.attention_hints`) and returns the class
the rest of the notebook uses: the student's once it passes, otherwise one that falls back to
the library's piece, so that *Run All* goes on. They never raise. After an attempt that ran and
was wrong, the verdict says how to ask for the worked version (:mod:`course_utils.checks.worked`);
no notebook cell holds it. Code that hands the work to the library's version is refused, as in
the graded exercises.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

import torch

from course_utils.attention import BahdanauAttention
from course_utils.checkpoints import display_path
from course_utils.checks.attention_hints import attention_mistakes, step_mistakes
from course_utils.checks.calling import CheckFailed, call_student
from course_utils.checks.decoders import close
from course_utils.checks.hints import raise_named
from course_utils.checks.own_work import module_files, references_to, watch_calls
from course_utils.checks.worked import WORKED, attempt_failed, show_hint, show_worked
from course_utils.checks.yours import forget, keep
from course_utils.config import wrap_text
from course_utils.models import (
    AttentionDecoder,
    DecoderMemory,
    GRUDecoder,
    ModelConfig,
    Seq2Seq,
    build_model,
)

__all__ = ["check_attention_module", "check_decoder_step", "check_teacher_forcing", "show_hint",
           "show_worked"]

#: The library modules that hold the answers: calling them is not writing the code.
LIBRARY = ("course_utils.attention", "course_utils.scores", "course_utils.models")
#: A padded batch: a full sentence, one of 3 tokens and one of a single token.
LENGTHS = (5, 3, 1)
#: Target lengths of the teacher-forcing check's batch (padded to the longest).
TARGET_LENGTHS = (4, 2, 3)
ATTENTION_SIZES = {"encoder_dim": 6, "decoder_dim": 4, "attention_dim": 5}
# embed_dim == encoder_dim, so that the two halves of the GRU's input can be swapped without a
# shape error, and the mistake is named instead
DECODER_CONFIG = ModelConfig(src_vocab_size=11, tgt_vocab_size=13, embed_dim=6, hidden_dim=3,
                             attention_dim=5, attention=True, dropout=0.0, maxout_dim=2)
#: What notebook 3's student writes: calling the library's own version of it is not writing it.
#: (The step may call ``self.attention``, notebook 2's module, given; the teacher-forcing pass
#: may call ``step``, ``prepare``, ``embed``, ``initial_state`` and ``predict``.)
STEP_ANSWERS = ("course_utils.models.GRUDecoder.step",
                "course_utils.models.AttentionDecoder.context",
                "course_utils.models.LuongDecoder.step")
FORWARD_ANSWERS = ("course_utils.models.GRUDecoder.forward",)


def close_pair(got: object, wrong: tuple[torch.Tensor, torch.Tensor]) -> bool:
    return isinstance(got, tuple) and len(got) >= 2 and all(map(close, got[:2], wrong))


def _say(text: str) -> None:
    """Print ``text`` with each of its lines broken between words at the notebook's width."""
    print(wrap_text(text, indent="  "))


def _report(name: str, piece: str, fallback: str, problems: Callable[[], str]) -> bool:
    """Run ``problems`` (which returns what passed, or raises), print one verdict, return it.

    ``piece`` is the key of :data:`course_utils.checks.worked.WORKED`; ``fallback`` names what
    the cells below use until the student's version passes."""
    using = f"Until yours passes, the cells below use {fallback}."
    try:
        passed = problems()
    except NotImplementedError:
        _say(f"✗ {name} is not written yet: write it in the cell above, run that cell, then "
             f"this one. {using}")
        return False
    except CheckFailed as failed:
        attempt_failed(piece)
        _say(f"✗ {name}: {failed.message.rstrip('.')}.\n{using} Stuck? "
             f"show_hint({piece!r}) gives the order of the computation in words, and "
             f"show_worked({piece!r}) a worked version.")
        return False
    _say(f"✓ {name}: {passed} The cells below use yours.")
    return True


def _kept(piece: str, cls: type, passed: bool) -> None:
    """Keep the class whose check of ``piece`` passed for the later notebooks (say where), or
    forget the piece kept before (:mod:`course_utils.checks.yours`)."""
    if not passed:
        forget(piece)
        return
    path = keep(piece, cls)
    if path is not None:
        _say(f"Kept for the later notebooks: {display_path(path)}.")


def _own_work(function: Callable, what: str, modules: Collection[str] = LIBRARY) -> None:
    if str(getattr(function, "__module__", "")).startswith("course_utils."):
        raise CheckFailed(f"{what} is the library's own `{function.__qualname__}`: write it "
                          "yourself")
    used = references_to(function, modules)
    if used:
        raise CheckFailed(f"{what} {used[0]}: that is the library's answer; write it yourself")


def _run(function: Callable, *args: object, given: str,
         answers: Collection[str] | None = None) -> object:
    """The student's code on ``args``, refusing it if it enters the library's version.

    ``answers``: the dotted names whose call is refused (default: any function of
    :data:`LIBRARY` but a constructor)."""
    with watch_calls(module_files(LIBRARY)) as entered:
        result = call_student(function, *args, given=given)
    refused = [name for name in entered
               if (name in answers if answers is not None else not name.endswith(".__init__"))]
    if refused:
        raise CheckFailed(f"it calls `{refused[0]}`, the library's own version: write it yourself")
    return result


def _pair(result: object, first: str, shapes: tuple[tuple[int, ...], ...]) -> tuple:
    names = {"context": ("context", "weights"), "s_i": ("s_i", "c_i", "alpha_i"),
             "logits": ("logits", "weights")}[first]
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


def check_attention_module(module_class: object) -> type:
    """Notebook 2, section 3: the student's ``MyBahdanauAttention`` against the library's.

    Returns the class the notebook goes on with: ``module_class`` once it passes, otherwise
    :class:`course_utils.BahdanauAttention`."""
    passed = _report("MyBahdanauAttention", "attention", "course_utils.BahdanauAttention",
                     lambda: _attention_problems(module_class))
    _kept("attention", module_class, passed)  # type: ignore[arg-type]
    return module_class if passed else BahdanauAttention  # type: ignore[return-value]


# ------------------------------------------------------------------------- notebook 3


def _decoder_case() -> tuple[Seq2Seq, DecoderMemory, torch.Tensor, torch.Tensor]:
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
    return library, memory, embedded, state


def _student_decoder(decoder_class: object, call: str, method: str,
                     answers: Collection[str]) -> tuple[Seq2Seq, AttentionDecoder]:
    """The library's model and the student's decoder on the library's weights."""
    if not (isinstance(decoder_class, type) and issubclass(decoder_class, AttentionDecoder)):
        raise CheckFailed(f"pass your class itself, a subclass of AttentionDecoder: {call}")
    _own_work(getattr(decoder_class, method), f"`{method}`", ("course_utils.models",))
    library = _decoder_case()[0]
    try:
        mine = build_model(DECODER_CONFIG, decoder_class=decoder_class).decoder
        mine.load_state_dict(library.decoder.state_dict())
    except Exception as error:  # noqa: BLE001 - any failure here is the constructor's
        raise CheckFailed(f"building the decoder and loading the library's weights failed "
                          f"({type(error).__name__}: {str(error).splitlines()[0][:200]}): keep "
                          "AttentionDecoder's constructor and layers") from None
    return library, mine.eval()  # type: ignore[return-value]


def _step_problems(decoder_class: object) -> str:
    library, mine = _student_decoder(decoder_class, "check_decoder_step(Decoder)", "step",
                                     STEP_ANSWERS)
    _, memory, embedded, state = _decoder_case()
    config = DECODER_CONFIG
    encoder_dim = 2 * config.hidden_dim
    # keys that are not W_h h_j of these outputs: a step must read them from memory
    assert memory.keys is not None, "the library's prepare() computes the keys"
    noise = torch.randn(memory.keys.shape, generator=torch.Generator().manual_seed(5))
    keys = memory.keys + 0.5 * noise
    memory = DecoderMemory(memory.encoder_outputs, memory.summary, memory.mask, keys)
    cell: torch.nn.Module = library.decoder.cell
    attention: torch.nn.Module = library.decoder.attention  # type: ignore[assignment]
    library_step: Callable = library.decoder.step
    batch = len(LENGTHS)
    given = (f"a batch of {batch} sentences of {', '.join(map(str, LENGTHS))} source tokens, "
             "one step")
    shapes = ((batch, config.hidden_dim), (batch, encoder_dim), (batch, max(LENGTHS)))
    with torch.no_grad():
        got = _pair(_run(mine.step, embedded, state, memory, given=given, answers=STEP_ANSWERS),
                    "s_i", shapes)
        expected = library_step(embedded, state, memory)
        if not (close(got[0], expected[0]) and close(got[1], expected[1])):
            raise_named(got, step_mistakes(cell, attention, embedded, state,  # type: ignore[arg-type]
                                           memory.encoder_outputs, keys, memory.mask), close_pair)
            unmasked = attention(state, memory.encoder_outputs, keys=keys)
            if close(got[1], unmasked[0]):
                raise CheckFailed("the context c_i gives the padded positions weight: pass "
                                  "mask=memory.mask to the attention")
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


def _fallback(decoder_class: type, method: str) -> type:
    """``decoder_class`` with the library's ``method`` in place of the student's."""
    return type(decoder_class.__name__, (decoder_class,),
                {method: getattr(AttentionDecoder, method), "__module__": __name__,
                 "__doc__": f"{decoder_class.__name__} with course_utils's {method}"})


def check_decoder_step(decoder_class: object) -> type:
    """Notebook 3, section 2: the student's ``Decoder.step`` against the library's decoder.

    Returns the class the notebook goes on with: ``decoder_class`` once its step passes,
    otherwise ``decoder_class`` with :class:`course_utils.models.AttentionDecoder`'s step."""
    return _decoder_to_go_on_with(decoder_class, "Decoder.step", "step", "step",
                                  lambda: _step_problems(decoder_class))


def _decoder_to_go_on_with(decoder_class: object, name: str, piece: str, method: str,
                           problems: Callable[[], str]) -> type:
    """The verdict on the student's ``method`` of ``decoder_class`` (:func:`_report`), the class
    kept or forgotten; returned as it is once it passes, otherwise with the library's
    ``method`` of :class:`course_utils.models.AttentionDecoder` (:func:`_fallback`)."""
    passed = _report(name, piece, f"AttentionDecoder's own {method} (course_utils)", problems)
    _kept(piece, decoder_class, passed)  # type: ignore[arg-type]
    if passed or not (isinstance(decoder_class, type)
                      and issubclass(decoder_class, AttentionDecoder)):
        return decoder_class  # type: ignore[return-value]
    return _fallback(decoder_class, method)


def _target_case() -> tuple[torch.Tensor, torch.Tensor]:
    """A padded target batch ``tgt_in`` (starting with <bos>, id 2) and its real positions."""
    generator = torch.Generator().manual_seed(6)
    lengths = torch.tensor(TARGET_LENGTHS)
    tgt_in = torch.randint(4, DECODER_CONFIG.tgt_vocab_size, (len(lengths), max(TARGET_LENGTHS)),
                           generator=generator)
    tgt_in[:, 0] = 2
    positions = torch.arange(max(TARGET_LENGTHS))[None, :] < lengths[:, None]
    tgt_in[~positions] = 0
    return tgt_in, positions


def _forward_mistakes(decoder: GRUDecoder, tgt_in: torch.Tensor, outputs: torch.Tensor,
                      summary: torch.Tensor, mask: torch.Tensor):
    """``((logits, weights), hint)`` for the known mistakes of a teacher-forcing pass."""
    memory = decoder.prepare(outputs, summary, mask)
    y = decoder.embed(tgt_in)
    s0 = decoder.initial_state(summary)

    def run(start: torch.Tensor, carry: bool = True, shift: int = 0):
        s, states, contexts, weights = start, [], [], []
        for i in range(tgt_in.shape[1]):
            j = min(max(i + shift, 0), tgt_in.shape[1] - 1)
            s, c, alpha = decoder.step(y[:, j], s if carry else start, memory)
            assert alpha is not None, "an attention decoder's step returns its weights"
            states.append(s)
            contexts.append(c)
            weights.append(alpha)
        return (decoder.predict(torch.stack(states, 1), torch.stack(contexts, 1), y),
                torch.stack(weights, 1))

    yield run(s0, carry=False), ("every step starts from s_0: carry the state, pass the s that "
                                 "step i returns to step i + 1")
    yield run(torch.zeros_like(s0)), ("the first state is zeros: start from "
                                      "self.initial_state(summary), the bridge s_0")
    yield run(s0, shift=1), ("step i is fed y_i instead of y_(i-1): tgt_in already starts with "
                             "<bos>, so step i reads y[:, i]")


def _forward_problems(decoder_class: object) -> str:
    library, mine = _student_decoder(decoder_class, "check_teacher_forcing(TeacherForcing)",
                                     "forward", FORWARD_ANSWERS)
    lengths = torch.tensor(LENGTHS)
    generator = torch.Generator().manual_seed(7)
    src = torch.randint(4, DECODER_CONFIG.src_vocab_size, (len(LENGTHS), max(LENGTHS)),
                        generator=generator)
    src[torch.arange(max(LENGTHS))[None, :] >= lengths[:, None]] = 0
    tgt_in, positions = _target_case()
    batch, tgt_len = tgt_in.shape
    vocab = DECODER_CONFIG.tgt_vocab_size
    given = (f"a batch of {batch} targets of {', '.join(map(str, TARGET_LENGTHS))} tokens "
             f"(padded to {tgt_len}) over sources of {', '.join(map(str, LENGTHS))}")
    shapes = ((batch, tgt_len, vocab), (batch, tgt_len, max(LENGTHS)))
    with torch.no_grad():
        outputs, summary, mask = library.encode(src, lengths)
        args = (tgt_in, outputs, summary, mask)
        try:
            got = _run(mine, *args, given=given, answers=FORWARD_ANSWERS)
        except CheckFailed as failed:
            if "RuntimeError" not in failed.message:
                raise
            raise CheckFailed(f"{failed.message.rstrip('.')}. Check the shapes: `step` takes the "
                              "embedded word y[:, i], (B, embed), not token ids; stack the "
                              "steps along the time axis, dim=1, so that S, C and Y are all "
                              "(B, T_y, ...)") from None
        if isinstance(got, tuple) and len(got) == 2 and isinstance(got[0], torch.Tensor) and (
                tuple(got[0].shape) == (tgt_len, batch, vocab)):
            raise CheckFailed(f"the logits are (tgt_len, batch, vocab) = {tuple(got[0].shape)}: "
                              "stack the steps along dim=1, batch first")
        got = _pair(got, "logits", shapes)
        expected = library.decoder(*args)
        if not close_pair(got, expected):
            raise_named(got, _forward_mistakes(library.decoder, *args), close_pair)
            if close(got[1], expected[1]):
                raise CheckFailed("right weights, but the logits differ: predict from the stacked "
                                  "states, contexts and embedded inputs, "
                                  "self.predict(S, C, y, positions)")
            raise CheckFailed(f"the logits and weights differ from the library's on {given}: "
                              "one step per target position, fed y_(i-1) = y[:, i] and the "
                              "state the previous step returned")
        sparse = _run(mine, *args, positions, given=given + ", with positions",
                      answers=FORWARD_ANSWERS)
        n = int(positions.sum())
        if not (isinstance(sparse, tuple) and len(sparse) == 2
                and isinstance(sparse[0], torch.Tensor) and sparse[0].shape == (n, vocab)):
            shape = (tuple(sparse[0].shape) if isinstance(sparse, tuple) and sparse
                     and isinstance(sparse[0], torch.Tensor) else type(sparse).__name__)
            raise CheckFailed(f"with `positions` given, the logits are only those of the True "
                              f"positions, (positions.sum(), vocab) = ({n}, {vocab}) here; yours "
                              f"are {shape}: pass positions on to self.predict")
        if not close_pair(sparse, library.decoder(*args, positions)):
            raise CheckFailed("right without `positions`, wrong with it: pass positions on to "
                              "self.predict, which keeps the steps where it is True")
    return (f"same logits and weights as course_utils's decoder on {given}, with and without "
            "positions.")


def check_teacher_forcing(decoder_class: object) -> type:
    """Notebook 3, section 2: the student's teacher-forcing ``forward`` against the library's.

    Returns the class the notebook trains: ``decoder_class`` once its forward passes,
    otherwise ``decoder_class`` with :class:`course_utils.models.AttentionDecoder`'s forward."""
    return _decoder_to_go_on_with(decoder_class, "TeacherForcing.forward", "teacher forcing",
                                  "forward", lambda: _forward_problems(decoder_class))


assert set(WORKED) == {"attention", "step", "teacher forcing"}, "one check per worked piece"

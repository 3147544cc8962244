"""The lecture's "your turn" checks (notebooks 2 and 3): the worked versions pass, the usual
mistakes are named, an unwritten cell and the library's own code are refused, and a check
never raises: it returns the class the notebook goes on with (the student's once it passes,
else one that falls back to the library's piece), so that Run All goes on."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from course_utils.attention import BahdanauAttention
from course_utils.checks.lecture import (
    check_attention_module,
    check_decoder_step,
    check_teacher_forcing,
)
from course_utils.checks.worked import WORKED, show_worked
from course_utils.config import TEXT_WIDTH
from course_utils.models import AttentionDecoder, DecoderMemory, GRUDecoder


def said(capsys) -> str:
    """What the check printed, its line breaks (made between words) read as spaces."""
    return " ".join(capsys.readouterr().out.split())


def passes(check, cls) -> bool:
    """The check keeps the student's class (it passed) rather than a fallback."""
    return check(cls) is cls


class Given(nn.Module):
    """Notebook 2's given constructor."""

    def __init__(self, encoder_dim, decoder_dim, attention_dim):
        super().__init__()
        self.W_s = nn.Linear(decoder_dim, attention_dim, bias=False)
        self.W_h = nn.Linear(encoder_dim, attention_dim, bias=False)
        self.v = nn.Linear(attention_dim, 1, bias=False)


def attention(fill=float("-inf"), *, mask_after=False, axis=-1, softmax=True, use_keys=True,
              invert=False):
    """Notebook 2's forward, right by default, with one mistake switched on."""

    class Written(Given):
        def forward(self, decoder_state, encoder_outputs, mask=None, keys=None):
            if keys is None or not use_keys:
                keys = self.W_h(encoder_outputs)
            query = self.W_s(decoder_state).unsqueeze(1)
            energies = self.v(torch.tanh(query + keys)).squeeze(-1)
            if mask is not None and not mask_after:
                energies = energies.masked_fill(mask if invert else ~mask, fill)
            weights = torch.softmax(energies, dim=axis) if softmax else energies
            if mask is not None and mask_after:
                weights = weights * mask
            context = torch.bmm(weights.unsqueeze(1), encoder_outputs).squeeze(1)
            return context, weights

    return Written


def test_the_worked_attention_passes(capsys):
    assert passes(check_attention_module, attention())
    assert said(capsys).startswith("✓ MyBahdanauAttention")


@pytest.mark.parametrize(("mistake", "hint"), [
    ({"mask_after": True}, "after the softmax"),
    ({"fill": 0.0}, "minus infinity"),
    ({"invert": True}, "inverted"),
    ({"axis": 0}, "source positions"),
    ({"softmax": False}, "softmax"),
    ({"use_keys": False}, "ignores the `keys`"),
])
def test_a_mistake_is_named_and_the_notebook_goes_on(mistake, hint, capsys):
    assert not passes(check_attention_module, attention(**mistake))
    out = said(capsys)
    assert out.startswith("✗ MyBahdanauAttention") and hint in out, out
    assert "worked version" in out


def test_no_mask_at_all_is_named(capsys):
    class NoMask(attention()):
        def forward(self, decoder_state, encoder_outputs, mask=None, keys=None):
            return super().forward(decoder_state, encoder_outputs, None, keys)

    assert not passes(check_attention_module, NoMask)
    assert "padding" in said(capsys)


def test_an_unwritten_forward_says_so(capsys):
    class Unwritten(Given):
        def forward(self, decoder_state, encoder_outputs, mask=None, keys=None):
            raise NotImplementedError

    assert not passes(check_attention_module, Unwritten)
    assert "not written yet" in said(capsys)


def test_the_librarys_module_is_not_the_students_work(capsys):
    class Delegates(Given):
        def forward(self, decoder_state, encoder_outputs, mask=None, keys=None):
            return BahdanauAttention.forward(self, decoder_state, encoder_outputs, mask, keys)

    assert not passes(check_attention_module, Delegates)
    assert "write it yourself" in said(capsys)


def test_a_crash_in_the_students_code_is_reported_not_raised(capsys):
    class Crashes(Given):
        def forward(self, decoder_state, encoder_outputs, mask=None, keys=None):
            return self.W_s(encoder_outputs) + self.W_h(decoder_state)

    assert not passes(check_attention_module, Crashes)
    assert "✗" in said(capsys)


# ------------------------------------------------------------------ notebook 3's decoder step


def decoder(step):
    """Notebook 3's ``Decoder``: a subclass of the library's AttentionDecoder with ``step``."""
    return type("Decoder", (AttentionDecoder,), {"step": step})


def right(self, y_prev, s_prev, memory):
    c, alpha = self.attention(s_prev, memory.encoder_outputs, mask=memory.mask, keys=memory.keys)
    return self.cell(torch.cat([y_prev, c], dim=-1), s_prev), c, alpha


def attends_with_the_new_state(self, y_prev, s_prev, memory):
    c, _ = self.attention(s_prev, memory.encoder_outputs, mask=memory.mask, keys=memory.keys)
    s = self.cell(torch.cat([y_prev, c], dim=-1), s_prev)
    c, alpha = self.attention(s, memory.encoder_outputs, mask=memory.mask, keys=memory.keys)
    return s, c, alpha


def context_first(self, y_prev, s_prev, memory):
    c, alpha = self.attention(s_prev, memory.encoder_outputs, mask=memory.mask, keys=memory.keys)
    return self.cell(torch.cat([c, y_prev], dim=-1), s_prev), c, alpha


def recomputes_keys(self, y_prev, s_prev, memory):
    keys = self.attention.W_h(memory.encoder_outputs)
    c, alpha = self.attention(s_prev, memory.encoder_outputs, mask=memory.mask, keys=keys)
    return self.cell(torch.cat([y_prev, c], dim=-1), s_prev), c, alpha


def test_the_worked_step_passes(capsys):
    assert passes(check_decoder_step, decoder(right))
    assert said(capsys).startswith("✓ Decoder.step")


@pytest.mark.parametrize(("step", "hint"), [
    (attends_with_the_new_state, "s_(i-1)"),
    (context_first, "order"),
    (recomputes_keys, "memory.keys"),
])
def test_a_step_mistake_is_named(step, hint, capsys):
    assert not passes(check_decoder_step, decoder(step))
    out = said(capsys)
    assert hint in out, out


def test_an_unwritten_step_says_so(capsys):
    def unwritten(self, y_prev, s_prev, memory):
        raise NotImplementedError

    assert not passes(check_decoder_step, decoder(unwritten))
    assert "not written yet" in said(capsys)


def test_the_step_reads_the_memory_record_the_library_uses():
    assert {"encoder_outputs", "keys", "mask"} <= set(DecoderMemory.__dataclass_fields__)


# ------------------------------------------------ the worked versions and the fallbacks


def worked_class(piece: str, base: type, given: str = "") -> type:
    namespace: dict = {"torch": torch, "nn": nn, "Base": base}
    exec(f"class Mine(Base):\n{given}{WORKED[piece].code}", namespace)  # noqa: S102
    return namespace["Mine"]


def test_the_worked_pieces_pass_their_checks():
    assert passes(check_attention_module, worked_class("attention", Given))
    step = worked_class("step", AttentionDecoder)
    assert passes(check_decoder_step, step)
    assert passes(check_teacher_forcing, worked_class("teacher forcing", step))


def test_an_unwritten_piece_falls_back_to_the_librarys_and_says_so(capsys):
    class Unwritten(Given):
        def forward(self, decoder_state, encoder_outputs, mask=None, keys=None):
            raise NotImplementedError

    assert check_attention_module(Unwritten) is BahdanauAttention
    assert "use course_utils.BahdanauAttention" in said(capsys)

    def unwritten(self, y_prev, s_prev, memory):
        raise NotImplementedError

    fallback = check_decoder_step(decoder(unwritten))
    assert fallback.step is GRUDecoder.step and issubclass(fallback, AttentionDecoder)
    assert "AttentionDecoder's own step" in said(capsys)


def test_the_worked_version_opens_only_after_a_failed_attempt(capsys):
    from course_utils.checks import worked

    worked._failed.discard("attention")
    show_worked("attention")
    assert "Try MyBahdanauAttention.forward first" in said(capsys)
    assert not passes(check_attention_module, attention(mask_after=True))
    assert "show_worked('attention')" in said(capsys)
    show_worked("attention")
    assert "masked_fill" in said(capsys)
    with pytest.raises(ValueError, match="show_worked takes one of"):
        show_worked("decoder")


def forward_with(*, carry=True, zeros=False, stack_dim=1, pass_positions=True):
    """Notebook 3's teacher-forcing pass, right by default, with one mistake switched on."""

    def forward(self, tgt_in, encoder_outputs, summary, mask, positions=None):
        memory = self.prepare(encoder_outputs, summary, mask)
        y = self.embed(tgt_in)
        s0 = self.initial_state(summary)
        s0 = torch.zeros_like(s0) if zeros else s0
        s, states, contexts, weights = s0, [], [], []
        for i in range(tgt_in.shape[1]):
            s, c, alpha = self.step(y[:, i], s if carry else s0, memory)
            states.append(s)
            contexts.append(c)
            weights.append(alpha)
        if stack_dim == 0:
            return (self.predict(torch.stack(states), torch.stack(contexts), y.transpose(0, 1)),
                    torch.stack(weights))
        logits = self.predict(torch.stack(states, 1), torch.stack(contexts, 1), y,
                              positions if pass_positions else None)
        return logits, torch.stack(weights, 1)

    return type("TeacherForcing", (AttentionDecoder,), {"forward": forward})


@pytest.mark.parametrize(("mistake", "hint"), [
    ({"carry": False}, "carry the state"),
    ({"zeros": True}, "initial_state"),
    ({"stack_dim": 0}, "dim=1"),
    ({"pass_positions": False}, "positions"),
])
def test_a_teacher_forcing_mistake_is_named(mistake, hint, capsys):
    assert passes(check_teacher_forcing, forward_with())
    capsys.readouterr()
    fallback = check_teacher_forcing(forward_with(**mistake))
    assert fallback.forward is GRUDecoder.forward
    out = said(capsys)
    assert out.startswith("✗ TeacherForcing.forward") and hint in out, out


def test_the_librarys_forward_is_not_the_students_work(capsys):
    def forward(self, *args, **kwargs):
        return super(type(self), self).forward(*args, **kwargs)

    assert not passes(check_teacher_forcing,
                      type("TeacherForcing", (AttentionDecoder,), {"forward": forward}))
    assert "write it yourself" in said(capsys)
    assert not passes(check_teacher_forcing, AttentionDecoder)


def test_naming_a_mistake_leaves_autograd_on():
    import gc

    assert not passes(check_attention_module, attention(mask_after=True))
    assert not passes(check_decoder_step, decoder(context_first))
    gc.collect()  # an abandoned generator of wrong formulas is finalised here
    assert torch.is_grad_enabled()


def test_a_step_that_forgets_the_mask_is_told_so(capsys):
    def no_mask(self, y_prev, s_prev, memory):
        c, alpha = self.attention(s_prev, memory.encoder_outputs, keys=memory.keys)
        return self.cell(torch.cat([y_prev, c], dim=-1), s_prev), c, alpha

    assert not passes(check_decoder_step, decoder(no_mask))
    assert "mask=memory.mask" in said(capsys)


def test_token_ids_fed_to_the_step_get_a_shape_hint(capsys):
    def forward(self, tgt_in, encoder_outputs, summary, mask, positions=None):
        memory = self.prepare(encoder_outputs, summary, mask)
        s, states = self.initial_state(summary), []
        for i in range(tgt_in.shape[1]):
            s, c, alpha = self.step(tgt_in[:, i], s, memory)
            states.append(s)
        return states, None

    assert not passes(check_teacher_forcing,
                      type("TeacherForcing", (AttentionDecoder,), {"forward": forward}))
    assert "not token ids" in said(capsys)


def test_a_verdict_breaks_its_lines_between_words_at_the_notebooks_width(capsys):
    from course_utils.checks import lecture

    lecture._say("✗ Decoder.step: " + "the decoder's state has the wrong shape " * 6
                 + "`course_utils.attention.BahdanauAttention.forward_with_a_long_name`.\nNext.")
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 3 and lines[-1] == "Next."
    assert all(len(line) <= TEXT_WIDTH for line in lines[:-2])  # a long name stays whole
    assert any("`course_utils.attention.BahdanauAttention.forward_with_a_long_name`." in line
               for line in lines)

"""The lecture's "your turn" checks (notebooks 2 and 3): the worked versions pass, the usual
mistakes are named, an unwritten cell and the library's own code are refused, and a check
never raises (so that Run All goes on with the worked version)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from course_utils.attention import BahdanauAttention
from course_utils.checks.lecture import check_attention_module, check_decoder_step
from course_utils.models import DecoderMemory


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
    assert check_attention_module(attention()) is True
    assert capsys.readouterr().out.startswith("✓ MyBahdanauAttention")


@pytest.mark.parametrize(("mistake", "hint"), [
    ({"mask_after": True}, "after the softmax"),
    ({"fill": 0.0}, "minus infinity"),
    ({"invert": True}, "inverted"),
    ({"axis": 0}, "source positions"),
    ({"softmax": False}, "softmax"),
    ({"use_keys": False}, "ignores the `keys`"),
])
def test_a_mistake_is_named_and_the_notebook_goes_on(mistake, hint, capsys):
    assert check_attention_module(attention(**mistake)) is False
    out = capsys.readouterr().out
    assert out.startswith("✗ MyBahdanauAttention") and hint in out, out
    assert "worked version" in out


def test_no_mask_at_all_is_named(capsys):
    class NoMask(attention()):
        def forward(self, decoder_state, encoder_outputs, mask=None, keys=None):
            return super().forward(decoder_state, encoder_outputs, None, keys)

    assert check_attention_module(NoMask) is False
    assert "padding" in capsys.readouterr().out


def test_an_unwritten_forward_says_so(capsys):
    class Unwritten(Given):
        def forward(self, decoder_state, encoder_outputs, mask=None, keys=None):
            raise NotImplementedError

    assert check_attention_module(Unwritten) is False
    assert "not written yet" in capsys.readouterr().out


def test_the_librarys_module_is_not_the_students_work(capsys):
    class Delegates(Given):
        def forward(self, decoder_state, encoder_outputs, mask=None, keys=None):
            return BahdanauAttention.forward(self, decoder_state, encoder_outputs, mask, keys)

    assert check_attention_module(Delegates) is False
    assert "write it yourself" in capsys.readouterr().out


def test_a_crash_in_the_students_code_is_reported_not_raised(capsys):
    class Crashes(Given):
        def forward(self, decoder_state, encoder_outputs, mask=None, keys=None):
            return self.W_s(encoder_outputs) + self.W_h(decoder_state)

    assert check_attention_module(Crashes) is False
    assert "✗" in capsys.readouterr().out


# ------------------------------------------------------------------ notebook 3's decoder step


class Attention(nn.Module):  # notebook 3's given attention: forward(s_prev, H, keys, mask)
    def __init__(self, encoder_dim, decoder_dim, attention_dim):
        super().__init__()
        self.W_s = nn.Linear(decoder_dim, attention_dim, bias=False)
        self.W_h = nn.Linear(encoder_dim, attention_dim, bias=False)
        self.v = nn.Linear(attention_dim, 1, bias=False)

    def forward(self, s_prev, H, keys, mask):
        energies = self.v(torch.tanh(self.W_s(s_prev).unsqueeze(1) + keys)).squeeze(-1)
        weights = torch.softmax(energies.masked_fill(~mask, float("-inf")), dim=-1)
        return torch.bmm(weights.unsqueeze(1), H).squeeze(1), weights


class DeepOutput(nn.Module):
    def __init__(self, input_dim, l, vocab_size):
        super().__init__()
        self.l = l
        self.pre = nn.Linear(input_dim, 2 * l)
        self.proj = nn.Linear(l, vocab_size)


def decoder(step):
    class Decoder(nn.Module):
        def __init__(self, vocab_size, embed_dim, hidden_dim, encoder_dim, attention_dim, l):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=0)
            self.bridge = nn.Linear(encoder_dim, hidden_dim)
            self.cell = nn.GRUCell(embed_dim + encoder_dim, hidden_dim)
            self.attention = Attention(encoder_dim, hidden_dim, attention_dim)
            self.out = DeepOutput(hidden_dim + encoder_dim + embed_dim, l, vocab_size)

    Decoder.step = step
    return Decoder


def right(self, y_prev, s_prev, memory):
    c, alpha = self.attention(s_prev, memory.encoder_outputs, memory.keys, memory.mask)
    return self.cell(torch.cat([y_prev, c], dim=-1), s_prev), c, alpha


def attends_with_the_new_state(self, y_prev, s_prev, memory):
    c, _ = self.attention(s_prev, memory.encoder_outputs, memory.keys, memory.mask)
    s = self.cell(torch.cat([y_prev, c], dim=-1), s_prev)
    c, alpha = self.attention(s, memory.encoder_outputs, memory.keys, memory.mask)
    return s, c, alpha


def context_first(self, y_prev, s_prev, memory):
    c, alpha = self.attention(s_prev, memory.encoder_outputs, memory.keys, memory.mask)
    return self.cell(torch.cat([c, y_prev], dim=-1), s_prev), c, alpha


def recomputes_keys(self, y_prev, s_prev, memory):
    keys = self.attention.W_h(memory.encoder_outputs)
    c, alpha = self.attention(s_prev, memory.encoder_outputs, keys, memory.mask)
    return self.cell(torch.cat([y_prev, c], dim=-1), s_prev), c, alpha


def test_the_worked_step_passes(capsys):
    assert check_decoder_step(decoder(right)) is True
    assert capsys.readouterr().out.startswith("✓ Decoder.step")


@pytest.mark.parametrize(("step", "hint"), [
    (attends_with_the_new_state, "s_(i-1)"),
    (context_first, "order"),
    (recomputes_keys, "memory.keys"),
])
def test_a_step_mistake_is_named(step, hint, capsys):
    assert check_decoder_step(decoder(step)) is False
    out = capsys.readouterr().out
    assert hint in out, out


def test_an_unwritten_step_says_so(capsys):
    def unwritten(self, y_prev, s_prev, memory):
        raise NotImplementedError

    assert check_decoder_step(decoder(unwritten)) is False
    assert "not written yet" in capsys.readouterr().out


def test_the_step_reads_the_memory_record_the_library_uses():
    assert {"encoder_outputs", "keys", "mask"} <= set(DecoderMemory.__dataclass_fields__)


# ------------------------------------------------------- the notebooks' own worked versions


def _namespace_of(notebook: str, *markers: str) -> dict:
    """Run the code cells of ``notebook`` that contain one of ``markers``, in order."""
    import nbformat

    from tests.helpers import ROOT

    nb = nbformat.read(ROOT / "notebooks" / notebook, as_version=4)
    namespace: dict = {"torch": torch, "nn": nn, "DecoderMemory": DecoderMemory,
                       "yours_pass": True}
    exec("from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence", namespace)
    for cell in nb.cells:
        if cell.cell_type == "code" and any(marker in cell.source for marker in markers):
            exec(cell.source, namespace)  # noqa: S102 - the course's own notebook
    return namespace


def test_notebook_2s_worked_version_passes_its_check_and_the_skeleton_does_not(capsys):
    ns = _namespace_of("02_bahdanau_attention_in_pytorch.ipynb", "class MyBahdanauAttention",
                       "class WorkedBahdanauAttention")
    assert check_attention_module(ns["WorkedBahdanauAttention"]) is True
    assert check_attention_module(ns["MyBahdanauAttention"]) is False  # as committed: unwritten
    assert "not written yet" in capsys.readouterr().out


def test_notebook_3s_worked_step_passes_its_check_and_the_skeleton_does_not(capsys):
    ns = _namespace_of("03_reversal_task.ipynb", "class Attention(nn.Module)", "class Decoder(",
                       "class WorkedDecoder")
    assert check_decoder_step(ns["WorkedDecoder"]) is True
    assert check_decoder_step(ns["Decoder"]) is False
    assert "not written yet" in capsys.readouterr().out


def test_naming_a_mistake_leaves_autograd_on():
    import gc

    assert check_attention_module(attention(mask_after=True)) is False
    assert check_decoder_step(decoder(context_first)) is False
    gc.collect()  # an abandoned generator of wrong formulas is finalised here
    assert torch.is_grad_enabled()

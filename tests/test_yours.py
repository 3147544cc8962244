"""The student's attention model, carried from notebook to notebook: a "your turn" check that
passes keeps the class as text in the runs folder, a check that fails forgets it, and notebook 3
and exercise E10.2 build the attention model from what was kept, the library's piece standing
in for one never kept. The model keeps the library's parameter names, equals the library's model
on the same weights, and its checkpoint loads into the library's model (E10.3 reads it)."""

import importlib.util
import io
from contextlib import redirect_stdout

import pytest
import torch

from course_utils.attention import BahdanauAttention
from course_utils.checkpoints import load_checkpoint, save_checkpoint
from course_utils.checks.cells import cell_digest
from course_utils.checks.lecture import check_decoder_step
from course_utils.checks.worked import WORKED
from course_utils.checks.yours import (
    forget,
    keep,
    kept,
    origin,
    uses_only_yours,
    with_your_attention,
    your_attention_decoder,
)
from course_utils.data import Vocab
from course_utils.models import AttentionDecoder, ModelConfig, build_model

CONFIG = ModelConfig(src_vocab_size=17, tgt_vocab_size=15, embed_dim=6, hidden_dim=5,
                     attention_dim=4, dropout=0.0, maxout_dim=3)

#: The three pieces as a student writes them: notebook 2's constructor, the worked methods.
PIECES = f'''import torch
from torch import nn

from course_utils.models import AttentionDecoder


class MyBahdanauAttention(nn.Module):
    def __init__(self, encoder_dim, decoder_dim, attention_dim):
        super().__init__()
        self.W_s = nn.Linear(decoder_dim, attention_dim, bias=False)
        self.W_h = nn.Linear(encoder_dim, attention_dim, bias=False)
        self.v = nn.Linear(attention_dim, 1, bias=False)

{WORKED["attention"].code}

class Decoder(AttentionDecoder):
{WORKED["step"].code}

class TeacherForcing(Decoder):
{WORKED["teacher forcing"].code}

class WrongDecoder(AttentionDecoder):
    def step(self, y_prev, s_prev, memory):
        c, alpha = self.attention(s_prev, memory.encoder_outputs, mask=memory.mask,
                                  keys=memory.keys)
        return self.cell(torch.cat([c, y_prev], dim=-1), s_prev), c, alpha
'''


@pytest.fixture
def written(tmp_path, monkeypatch):
    """The pieces, as classes whose source Python can read (a file, as a kernel's cell is)."""
    monkeypatch.setenv("COURSE_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.delenv("COURSE_QUICK", raising=False)
    path = tmp_path / "cells.py"
    path.write_text(PIECES)
    spec = importlib.util.spec_from_file_location("student_cells", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def batch():
    generator = torch.Generator().manual_seed(0)
    lengths = torch.tensor([5, 2, 4])
    src = torch.randint(4, CONFIG.src_vocab_size, (3, 5), generator=generator)
    src[torch.arange(5)[None, :] >= lengths[:, None]] = Vocab.pad_id
    tgt_in = torch.randint(4, CONFIG.tgt_vocab_size, (3, 4), generator=generator)
    return src, lengths, tgt_in


def keep_all(module):
    for piece, name in (("attention", "MyBahdanauAttention"), ("step", "Decoder"),
                        ("teacher forcing", "TeacherForcing")):
        assert keep(piece, getattr(module, name)) is not None


def test_a_kept_piece_is_its_class_as_text_and_loads_back_with_its_origin(written, tmp_path):
    path = keep("attention", written.MyBahdanauAttention)
    assert path == tmp_path / "runs" / "yours" / "attention.py"
    text = path.read_text()
    assert text.startswith("# Your MyBahdanauAttention, kept by course_utils when its check passed")
    assert f"# cell sha256: {cell_digest(PIECES)}" in text
    assert "class MyBahdanauAttention(nn.Module):" in text and "class Decoder" not in text
    loaded = kept("attention")
    assert loaded is not None and loaded is not written.MyBahdanauAttention
    assert origin(loaded) == {"piece": "attention", "file": str(path), "cell": cell_digest(PIECES)}
    forget("attention")
    assert not path.exists() and kept("attention") is None


def test_e10_2_builds_the_students_model_from_the_kept_pieces(written, tmp_path):
    keep_all(written)
    out = io.StringIO()
    with redirect_stdout(out):
        assembled = your_attention_decoder()
    assert "yours (MyBahdanauAttention, Decoder.step, TeacherForcing.forward)" in out.getvalue()
    assert uses_only_yours(assembled)
    torch.manual_seed(1)
    library = build_model(CONFIG).eval()
    yours = build_model(CONFIG, decoder_class=assembled).eval()
    assert type(yours.decoder.attention).__name__ == "MyBahdanauAttention"
    assert yours.state_dict().keys() == library.state_dict().keys()  # E10.3 loads it
    yours.load_state_dict(library.state_dict())
    with torch.no_grad():
        for got, want in zip(yours(*batch()), library(*batch())):
            assert torch.allclose(got, want, atol=1e-6)
    src_vocab, tgt_vocab = (Vocab.build([[f"w{i}" for i in range(n - 4)]])  # 4 specials
                            for n in (CONFIG.src_vocab_size, CONFIG.tgt_vocab_size))
    loaded = load_checkpoint(save_checkpoint(tmp_path / "attention.pt", yours, src_vocab,
                                             tgt_vocab)).model
    assert type(loaded.decoder) is AttentionDecoder
    with torch.no_grad():
        assert torch.allclose(loaded.eval()(*batch())[0], yours(*batch())[0], atol=1e-6)


def test_nothing_kept_gives_the_librarys_model_and_says_so(written):
    out = io.StringIO()
    with redirect_stdout(out):
        assembled = your_attention_decoder()
        notebook_3 = with_your_attention(AttentionDecoder)
    said = out.getvalue()
    assert "attention model: the library's" in said
    assert "attention: the library's BahdanauAttention" in said
    assert not uses_only_yours(assembled) and assembled.yours == ()
    for decoder_class in (assembled, notebook_3):
        model = build_model(CONFIG, decoder_class=decoder_class).eval()
        assert type(model.decoder.attention) is BahdanauAttention
        with torch.no_grad():
            logits, weights = model(*batch())
        assert logits.shape == (3, 4, CONFIG.tgt_vocab_size) and weights.shape == (3, 4, 5)


def test_a_check_that_fails_forgets_the_piece_and_the_librarys_stands_in(written):
    keep_all(written)
    with redirect_stdout(io.StringIO()) as out:
        check_decoder_step(written.WrongDecoder)
        assembled = your_attention_decoder()
    said = out.getvalue()
    assert "✗ Decoder.step" in said and "show_hint('step')" in said
    assert "the library's stands in for Decoder.step" in said
    assert assembled.yours == ("MyBahdanauAttention", "TeacherForcing.forward")


def test_notebook_3_puts_the_kept_attention_in_its_own_decoder(written):
    keep("attention", written.MyBahdanauAttention)
    with redirect_stdout(io.StringIO()) as out:
        decoder_class = with_your_attention(written.TeacherForcing)
    assert "attention: your MyBahdanauAttention from notebook 2" in out.getvalue()
    assert decoder_class.yours == ("MyBahdanauAttention", "Decoder.step",
                                   "TeacherForcing.forward")
    model = build_model(CONFIG, decoder_class=decoder_class)
    assert origin(type(model.decoder.attention))["piece"] == "attention"
    with pytest.raises(TypeError, match="subclass of AttentionDecoder"):
        with_your_attention(BahdanauAttention)


def test_a_kept_file_that_no_longer_loads_is_not_used(written, tmp_path):
    path = keep("attention", written.MyBahdanauAttention)
    path.write_text(path.read_text() + "\ndef broken(:\n")
    with redirect_stdout(io.StringIO()) as out:
        assert kept("attention") is None
    assert "does not load: SyntaxError" in out.getvalue()

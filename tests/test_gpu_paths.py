"""The GPU paths, on a CPU: CUDA's presence, a card's name, memory and compute capability are
mocked, and what would run on the card runs on the CPU in the same precision. No GPU was at
hand when these were written (docs/benchmarks.md says so); each line that only a GPU reaches is
run here.

- a CUDA runtime picks CUDA and the GPU presets (``scaled``, the reversal and Multi30k configs);
- a T4 (compute capability 7.5, no bfloat16 tensor cores) trains in float16 with loss scaling,
  an A100 or H100 (8.0, 9.0) in bfloat16, a CPU asked for mixed precision in bfloat16;
- float16 with a GradScaler trains (on the CPU here) and keeps its scale across the run;
- batches reach CUDA from pinned memory with non-blocking copies;
- on Colab with a GPU, the setup cell names the card and its precision.
"""

import types
from unittest import mock

import pytest
import torch

from course_utils import config, precision, reversal, setup, training, translation_setup
from course_utils.data import Batch, iterate_batches, make_batches
from course_utils.models import ModelConfig, build_model
from course_utils.precision import Precision, choose_precision, describe_device
from course_utils.reversal import make_reversal_pairs, reversal_vocab
from course_utils.training import TrainConfig, seed_everything, train

T4 = {"name": "Tesla T4", "total_memory": 15_828_320_256, "capability": (7, 5)}
A100 = {"name": "NVIDIA A100-SXM4-40GB", "total_memory": 42_298_834_944, "capability": (8, 0)}


@pytest.fixture
def cuda(monkeypatch):
    """CUDA present, with the card given to the returned function (a T4 by default)."""
    def use(card=T4):
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None:
                            card["capability"])
        monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device=None:
                            types.SimpleNamespace(name=card["name"],
                                                  total_memory=card["total_memory"]))
    monkeypatch.delenv("COURSE_DEVICE", raising=False)
    monkeypatch.delenv("COURSE_QUICK", raising=False)
    use()
    return use


def test_a_cuda_runtime_picks_cuda_and_the_gpu_presets(cuda):
    assert config.get_device() == torch.device("cuda")
    assert config.scaled(quick=1, cpu=2, gpu=3) == 3
    assert reversal.reversal_config() is reversal.GPU
    assert translation_setup.multi30k_config() is translation_setup.GPU
    assert translation_setup.GPU.train.bf16 and translation_setup.GPU.train.batch_size == 128


def test_without_cuda_a_cuda_device_is_refused_and_the_cpu_presets_apply(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.delenv("COURSE_QUICK", raising=False)
    with pytest.raises(ValueError, match="requested but CUDA is not available"):
        config.get_device("cuda")
    assert config.scaled(quick=1, cpu=2, gpu=3, device=torch.device("cpu")) == 2


@pytest.mark.parametrize("card, expected", [
    (T4, Precision("cuda", torch.float16, scaled=True)),
    (A100, Precision("cuda", torch.bfloat16)),
    ({**A100, "capability": (9, 0)}, Precision("cuda", torch.bfloat16)),
])
def test_the_precision_suits_the_card(cuda, card, expected):
    cuda(card)
    assert choose_precision("cuda", mixed=True) == expected
    assert choose_precision("cuda", mixed=False) == Precision("cuda")
    assert precision.has_bf16_tensor_cores("cuda") is (card["capability"][0] >= 8)


def test_a_cpu_asked_for_mixed_precision_uses_bfloat16_and_mps_float32():
    assert choose_precision("cpu", True) == Precision("cpu", torch.bfloat16)
    assert choose_precision("cpu", False).autocast().__class__.__name__ == "nullcontext"
    assert choose_precision("mps", True) == Precision("mps")
    assert Precision("cpu", torch.float16, True).name == "float16 mixed precision with loss scaling"


def test_the_device_is_described_with_the_card_and_its_precision(cuda):
    assert describe_device("cuda") == ("cuda (Tesla T4, 15.8 GB, compute capability 7.5: "
                                       "float16 mixed precision with loss scaling)")
    cuda(A100)
    assert describe_device("cuda").endswith("compute capability 8.0: bfloat16 mixed precision)")
    assert describe_device("cpu") == "cpu"


def test_on_colab_with_a_gpu_the_setup_cell_names_it(cuda, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(setup, "runtime", lambda: "colab")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COURSE_RUNS_DIR", raising=False)
    import matplotlib as mpl

    with mpl.rc_context():
        setup.ready()
    out = capsys.readouterr().out
    assert "Device: cuda (Tesla T4, 15.8 GB, compute capability 7.5: float16" in out


def tiny_run(precision_used: Precision | None, epochs: int = 3):
    """A small reversal model trained with ``precision_used`` (None: as train() chooses)."""
    vocab = reversal_vocab(8)
    pairs = make_reversal_pairs(96, 3, 6, vocab, seed=1)
    seed_everything(0)
    model = build_model(ModelConfig(len(vocab), len(vocab), embed_dim=8, hidden_dim=16,
                                    attention_dim=16, maxout_dim=8))
    cfg = TrainConfig(epochs=epochs, batch_size=32, lr=1e-2, measure_exact_match=False)
    if precision_used is None:
        return train(model, pairs[:64], pairs[64:], cfg, progress=False)
    with mock.patch.object(training, "choose_precision", return_value=precision_used):
        return train(model, pairs[:64], pairs[64:], cfg, progress=False)


def test_float16_with_loss_scaling_trains_as_on_a_t4(monkeypatch):
    """The T4's path, run on the CPU: float16 autocast and one GradScaler for the run, whose
    scale carries from step to step; the model learns."""
    scalers = []
    real = Precision.scaler

    def recorded(self):
        scalers.append(real(self))
        return scalers[-1]

    monkeypatch.setattr(Precision, "scaler", recorded)
    history = tiny_run(Precision("cpu", torch.float16, scaled=True), epochs=4)
    assert len(scalers) == 1 and scalers[0].is_enabled()  # one scaler, kept for the run
    assert scalers[0].get_scale() != 2.0 ** 16 or scalers[0]._growth_tracker > 0
    assert history.val_loss[-1] < history.val_loss[0]
    assert history.val_loss != tiny_run(None, epochs=4).val_loss  # float16 arithmetic ran


def test_a_training_step_without_the_runs_scaler_makes_its_own():
    vocab = reversal_vocab(8)
    batch = make_batches(make_reversal_pairs(8, 3, 5, vocab, seed=2), 8, shuffle=False)[0]
    seed_everything(0)
    model = build_model(ModelConfig(len(vocab), len(vocab), embed_dim=8, hidden_dim=16,
                                    attention_dim=16, maxout_dim=8))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss = training.training_step(model, batch, optimizer, clip=1.0,
                                  precision=Precision("cpu", torch.float16, scaled=True))
    assert torch.isfinite(loss) and not loss.requires_grad


def test_batches_reach_cuda_from_pinned_memory_without_blocking():
    vocab = reversal_vocab(8)
    batch = make_batches(make_reversal_pairs(4, 3, 5, vocab, seed=3), 4, shuffle=False)[0]
    with (mock.patch.object(Batch, "pin_memory", autospec=True, side_effect=lambda b: b) as pin,
          mock.patch.object(Batch, "to", autospec=True, side_effect=lambda b, *a, **k: b) as to):
        moved = list(iterate_batches([batch], torch.device("cuda")))
    assert moved == [batch] and pin.call_count == 1
    assert to.call_args.kwargs == {"non_blocking": True}

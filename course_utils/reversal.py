"""The sequence-reversal task of notebook 3: its configurations, in one place.

Reversal has a known correct alignment, so it shows what attention learns: output step i
must read source position ``n - 1 - i``, the anti-diagonal. Notebook 3 and the benchmarks
use these settings; :func:`reversal_config` picks the one for the current scale.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from course_utils.config import scaled
from course_utils.data import Vocab
from course_utils.models import ModelConfig

__all__ = ["BOTTLENECK", "REVERSAL", "ReversalConfig", "bottleneck_config", "reversal_config"]


@dataclass(frozen=True)
class ReversalConfig:
    n_symbols: int = 20  # distinct symbols a, b, c, ...
    min_len: int = 5
    max_len: int = 20
    n_train: int = 12_000
    n_val: int = 1_000
    embed_dim: int = 32
    hidden_dim: int = 96
    attention_dim: int = 96
    batch_size: int = 64
    lr: float = 3e-3
    epochs: int = 6

    @property
    def model_sizes(self) -> dict:
        return dict(embed_dim=self.embed_dim, hidden_dim=self.hidden_dim,
                    attention_dim=self.attention_dim)

    def model_config(self, vocab: Vocab, attention: bool = True) -> ModelConfig:
        return ModelConfig(len(vocab), len(vocab), attention=attention, **self.model_sizes)


#: The CPU configuration: >= 99% held-out exact match in well under a minute on 2 cores.
REVERSAL = ReversalConfig()

#: Smoke-test scale (COURSE_QUICK): seconds.
QUICK = replace(REVERSAL, max_len=10, n_train=600, n_val=100, embed_dim=16, hidden_dim=32,
                attention_dim=32, epochs=2)

#: On a GPU: more data and larger batches, same task.
GPU = replace(REVERSAL, n_train=50_000, batch_size=256, hidden_dim=128, attention_dim=128,
              epochs=8)


def reversal_config() -> ReversalConfig:
    """The configuration for the current scale: quick, CPU or GPU."""
    return scaled(quick=QUICK, cpu=REVERSAL, gpu=GPU)


#: The bottleneck experiment: attention and vanilla models, same budget, lengths up to 32.
BOTTLENECK = replace(REVERSAL, min_len=2, max_len=32, n_train=16_000, n_val=2_000)
BOTTLENECK_QUICK = replace(QUICK, min_len=2, max_len=12, epochs=1)
BOTTLENECK_GPU = replace(GPU, min_len=2, max_len=40, n_val=2_000, n_train=60_000)


def bottleneck_config() -> ReversalConfig:
    """Settings for comparing the vanilla and attention models as sequences grow."""
    return scaled(quick=BOTTLENECK_QUICK, cpu=BOTTLENECK, gpu=BOTTLENECK_GPU)

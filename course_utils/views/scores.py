"""Notebook 6's Multi30k comparison drawn the way its prose reads it: the paired gains.

The conclusion of a paired bootstrap rests on the *difference* between two models measured on
the same resampled sentences, not on whether their own intervals overlap (two intervals can
overlap while the paired gain's interval leaves out 0), so the gains are what the figure draws.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

if TYPE_CHECKING:
    from course_utils.metrics import BleuComparison
    from course_utils.training import History

_MARKERS = "osD^v"


def plot_bleu_gains(
    histories: Mapping[str, History],
    comparison: BleuComparison,
    colours: Mapping[str, str],
    *,
    title: str = "Same budget, three scores",
) -> Figure:
    """Two panels: each model's validation loss per epoch, and each model's BLEU gain over the
    comparison's baseline with its paired-bootstrap interval (a line at 0: an interval that
    leaves it out is a difference larger than the luck of the test sentences drawn)."""
    others = [m for m in comparison.models if m != comparison.baseline]
    if not histories or not others:
        raise ValueError("give at least one history and a comparison of two or more models; got "
                         f"{len(histories)} histories and models {comparison.models}")
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 3.8), layout="constrained",
                                   gridspec_kw={"width_ratios": [3, 2]})
    for k, (name, history) in enumerate(histories.items()):
        ax1.plot(history.epoch, history.val_loss, _MARKERS[k % len(_MARKERS)] + "-",
                 color=colours.get(name, f"C{k}"), label=name)
    epochs = sorted({e for h in histories.values() for e in h.epoch})
    ax1.set(xlabel="epoch", ylabel="validation loss per token", xticks=epochs, title=title)
    ax1.legend()
    markers = dict(zip(comparison.models, _MARKERS))
    for x, name in enumerate(others):
        gain = comparison.gain[name]
        ax2.errorbar([x], [gain.value], yerr=[[gain.value - gain.low], [gain.high - gain.value]],
                     fmt=markers[name], color=colours.get(name, f"C{x + 1}"), capsize=6, ms=8)
    ax2.axhline(0, color="k", lw=0.8, ls="--")
    low = min(0.0, *(comparison.gain[m].low for m in others))
    high = max(0.0, *(comparison.gain[m].high for m in others))
    pad = 0.15 * (high - low) or 0.5
    level = f"{comparison.confidence:.0%}"
    ax2.set(xticks=range(len(others)), xticklabels=others, xlim=(-0.5, len(others) - 0.5),
            ylim=(low - pad, high + pad),
            ylabel=f"BLEU gain over {comparison.baseline} ({level} interval)",
            title=f"Paired-bootstrap gain\nover {comparison.baseline} (test 2016)")
    return fig

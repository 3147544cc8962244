"""Plots every notebook shares: attention heatmaps and bar charts of weights.

Each function draws on ``ax`` when given (so notebooks can build grids) and returns the
matplotlib ``Figure``, which tests inspect and notebooks can save.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure

__all__ = ["plot_attention", "plot_weights"]


def _as_numpy(array) -> np.ndarray:
    if hasattr(array, "detach"):  # a torch tensor
        array = array.detach().float().cpu().numpy()
    return np.asarray(array, dtype=float)


def _check_labels(name: str, labels: Sequence[str] | None, expected: int, axis: str) -> None:
    if labels is not None and len(labels) != expected:
        raise ValueError(
            f"{name} must have one label per {axis} ({expected}); got {len(labels)}"
        )


def plot_attention(
    weights,
    source_tokens: Sequence[str] | None = None,
    target_tokens: Sequence[str] | None = None,
    *,
    ax: Axes | None = None,
    title: str = "Attention weights",
    annotate: bool | None = None,
    cmap: str = "viridis",
    colorbar: bool = True,
) -> Figure:
    """Heatmap of an attention matrix: row i is output step i, column j source position j.

    Args:
        weights: ``(tgt_len, src_len)`` array or tensor; each row a distribution.
        source_tokens: ``src_len`` labels for the columns.
        target_tokens: ``tgt_len`` labels for the rows.
        annotate: write each weight in its cell; by default only when the matrix is small
            enough to read (at most 12 x 12).
    """
    weights = _as_numpy(weights)
    if weights.ndim != 2:
        raise ValueError(f"weights must be (tgt_len, src_len); got {weights.shape}")
    tgt_len, src_len = weights.shape
    _check_labels("source_tokens", source_tokens, src_len, "column")
    _check_labels("target_tokens", target_tokens, tgt_len, "row")
    if annotate is None:
        annotate = max(tgt_len, src_len) <= 12

    if ax is None:
        width = min(2.0 + 0.55 * src_len, 16.0)
        height = min(1.5 + 0.45 * tgt_len, 14.0)
        fig, ax = plt.subplots(figsize=(width, height), layout="constrained")
    fig = ax.figure
    sns.heatmap(
        weights,
        ax=ax,
        vmin=0.0,
        vmax=1.0,
        cmap=cmap,
        square=src_len <= 30 and tgt_len <= 30,
        annot=annotate,
        fmt=".2f",
        annot_kws={"fontsize": 8},
        cbar=colorbar,
        cbar_kws={"label": "attention weight α"} if colorbar else None,
        xticklabels=list(source_tokens) if source_tokens is not None else True,
        yticklabels=list(target_tokens) if target_tokens is not None else True,
        linewidths=0.5 if annotate else 0.0,
        linecolor="white",
    )
    ax.set_xlabel("source position j")
    ax.set_ylabel("output step i")
    ax.set_title(title)
    ax.tick_params(axis="x", labelrotation=60 if src_len > 8 else 0)
    ax.tick_params(axis="y", labelrotation=0)
    return fig


def plot_weights(
    weights,
    labels: Sequence[str] | None = None,
    *,
    ax: Axes | None = None,
    title: str = "Attention weights",
    ylabel: str = "weight α",
    annotate: bool = True,
    highlight_max: bool = True,
    ylim: tuple[float, float] | None = (0.0, 1.0),
) -> Figure:
    """Bar chart of one vector of weights (or energies), the largest bar highlighted."""
    values = _as_numpy(weights)
    if values.ndim != 1:
        raise ValueError(f"weights must be a vector (src_len,); got shape {values.shape}")
    _check_labels("labels", labels, values.shape[0], "bar")
    labels = list(labels) if labels is not None else [f"{j + 1}" for j in range(len(values))]

    if ax is None:
        fig, ax = plt.subplots(figsize=(1.0 + 0.6 * len(values), 3.2), layout="constrained")
    fig = ax.figure
    colors = ["tab:blue"] * len(values)
    if highlight_max and len(values):
        colors[int(np.argmax(values))] = "tab:orange"
    bars = ax.bar(range(len(values)), values, color=colors)
    ax.set_xticks(range(len(values)), labels)
    if annotate:
        ax.bar_label(bars, fmt="%.2f", fontsize=8, padding=2)
    if ylim is not None:
        top = max(ylim[1], float(values.max()) * 1.15 if len(values) else ylim[1])
        ax.set_ylim(min(ylim[0], float(values.min()) * 1.15), top)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return fig

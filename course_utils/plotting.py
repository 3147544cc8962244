"""Plots every notebook shares: attention heatmaps and bar charts of weights.

Each function draws on ``ax`` when given (so notebooks can build grids) and returns the
matplotlib ``Figure``, which tests inspect and notebooks can save.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any, cast

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from numpy.typing import ArrayLike

from course_utils.tensors import to_numpy

__all__ = ["plot_attention", "plot_attention_grid", "plot_weights"]


def _as_numpy(array: object) -> np.ndarray:
    return to_numpy(array).astype(float)  # a tensor on any device, or an array


def _check_labels(name: str, labels: Sequence[str] | None, expected: int, axis: str) -> None:
    if labels is not None and len(labels) != expected:
        raise ValueError(
            f"{name} must have one label per {axis} ({expected}); got {len(labels)}"
        )


def _tick_fontsize(n: int) -> float:
    return 10.0 if n <= 15 else 9.0 if n <= 25 else 8.0


def plot_attention(
    weights: ArrayLike,
    source_tokens: Sequence[str] | None = None,
    target_tokens: Sequence[str] | None = None,
    *,
    ax: Axes | None = None,
    title: str = "Attention weights",
    annotate: bool | None = None,
    cmap: str = "viridis",
    colorbar: bool = True,
    mark_alignment: bool = False,
    highlight_rows: Sequence[int] = (),
    highlight_cells: Sequence[tuple[int, int]] = (),
) -> Figure:
    """Heatmap of an attention matrix: row i is output step i, column j source position j.

    Readable up to about 40 tokens a side: the figure grows with the sentence, source labels
    turn vertical past 10 tokens (or when a word is long) and the font shrinks past 15 and 25.

    Args:
        weights: ``(tgt_len, src_len)`` array or tensor; each row a distribution.
        source_tokens: ``src_len`` labels for the columns.
        target_tokens: ``tgt_len`` labels for the rows.
        annotate: write each weight in its cell; by default only when the matrix is small
            enough to read (at most 12 x 12).
        mark_alignment: mark each row's largest weight (the hard alignment) with a dot.
        highlight_rows: output steps to outline (such as the current step of decoding).
        highlight_cells: ``(row, column)`` cells to outline (such as a pattern's words).
    """
    weights = _as_numpy(weights)
    if weights.ndim != 2 or 0 in weights.shape:
        raise ValueError(f"weights must be a non-empty (tgt_len, src_len) matrix; "
                         f"got shape {weights.shape}")
    tgt_len, src_len = weights.shape
    _check_labels("source_tokens", source_tokens, src_len, "column")
    _check_labels("target_tokens", target_tokens, tgt_len, "row")
    bad_rows = [r for r in highlight_rows if not 0 <= r < tgt_len]
    bad_cells = [c for c in highlight_cells if not (0 <= c[0] < tgt_len and 0 <= c[1] < src_len)]
    if bad_rows or bad_cells:
        raise ValueError(f"highlighted rows/cells outside the {tgt_len} x {src_len} matrix: "
                         f"{bad_rows + bad_cells}")
    if annotate is None:
        annotate = max(tgt_len, src_len) <= 12

    if ax is None:
        cell = 0.42  # inches per token: room for a 10-point label
        width = min(2.6 + cell * src_len, 18.0)
        height = min(1.8 + cell * tgt_len, 16.0)
        fig, ax = plt.subplots(figsize=(width, height), layout="constrained")
    fig = cast(Figure, ax.figure)
    sns.heatmap(
        weights,
        ax=ax,
        vmin=0.0,
        vmax=1.0,
        cmap=cmap,
        square=True,
        annot=annotate,
        fmt=".2f",
        annot_kws={"fontsize": 8},
        cbar=colorbar,
        cbar_kws={"label": "attention weight α", "shrink": 0.8} if colorbar else None,
        xticklabels=list(source_tokens) if source_tokens is not None else True,
        yticklabels=list(target_tokens) if target_tokens is not None else True,
        linewidths=0.5 if annotate else 0.0,
        linecolor="white",
    )
    if mark_alignment:
        rows = np.arange(tgt_len)
        ax.scatter(weights.argmax(axis=1) + 0.5, rows + 0.5, s=14, c="white",
                   edgecolors="black", linewidths=0.6, zorder=3, label="hard alignment")
    for row in highlight_rows:
        ax.add_patch(plt.Rectangle((0, row), src_len, 1, fill=False, edgecolor="tab:red",
                                   linewidth=2.0, zorder=4))
    for row, column in highlight_cells:
        ax.add_patch(plt.Rectangle((column, row), 1, 1, fill=False, edgecolor="tab:red",
                                   linewidth=2.0, zorder=4))
    ax.set_xlabel("source position j")
    ax.set_ylabel("output step i")
    # a long title (such as a whole translation) wraps to the heatmap's width
    ax.set_title(textwrap.fill(title, width=max(32, int(4.2 * src_len))))
    longest = max((len(str(t)) for t in source_tokens), default=0) if source_tokens else 0
    upright = src_len > 10 or longest > 5  # long words would collide side by side
    ax.tick_params(axis="x", labelrotation=90 if upright else 0,
                   labelsize=_tick_fontsize(src_len))
    ax.tick_params(axis="y", labelrotation=0, labelsize=_tick_fontsize(tgt_len))
    return fig


def _attention_item(item: Any) -> tuple:
    """``(weights, source_tokens, row_labels)`` from a Translation or a tuple."""
    if hasattr(item, "attention") and hasattr(item, "source_tokens"):
        if item.attention is None:
            raise ValueError("a translation without attention (vanilla model) has no heatmap")
        labels = getattr(item, "row_labels", None) or item.output_tokens
        return item.attention, item.source_tokens, labels
    if isinstance(item, tuple) and len(item) == 3:
        return item
    raise TypeError("each item must be a Translation or a (weights, source_tokens, "
                    f"target_tokens) tuple; got {type(item).__name__}")


def plot_attention_grid(
    items: Sequence,
    *,
    titles: Sequence[str] | None = None,
    ncols: int = 2,
    mark_alignment: bool = False,
    highlight_cells: Sequence[Sequence[tuple[int, int]]] | None = None,
    cmap: str = "viridis",
) -> Figure:
    """Heatmaps of several sentences side by side, sharing one colour scale.

    Args:
        items: Translations (from :mod:`course_utils.translation`) or
            ``(weights, source_tokens, target_tokens)`` tuples.
        titles: one title per item.
        highlight_cells: per item, ``(row, column)`` cells to outline.
    """
    items = [_attention_item(item) for item in items]
    if not items:
        raise ValueError("items is empty: give at least one attention matrix to plot")
    if titles is not None and len(titles) != len(items):
        raise ValueError(f"titles must have one entry per item ({len(items)}); got {len(titles)}")
    if highlight_cells is not None and len(highlight_cells) != len(items):
        raise ValueError(f"highlight_cells must have one entry per item ({len(items)}); "
                         f"got {len(highlight_cells)}")
    if ncols < 1:
        raise ValueError(f"ncols must be >= 1; got {ncols}")
    ncols = min(ncols, len(items))
    nrows = -(-len(items) // ncols)
    shapes = [_as_numpy(w).shape for w, _, _ in items]
    cell = 0.36
    width = ncols * (1.6 + cell * max(s[1] for s in shapes)) + 1.2
    height = nrows * (1.9 + cell * max(s[0] for s in shapes))
    fig, axes = plt.subplots(nrows, ncols, figsize=(min(width, 22), min(height, 30)),
                             layout="constrained", squeeze=False)
    for n, (weights, source, target) in enumerate(items):
        ax = axes[n // ncols][n % ncols]
        plot_attention(weights, source, target, ax=ax, colorbar=False, cmap=cmap,
                       annotate=False, mark_alignment=mark_alignment,
                       title=titles[n] if titles is not None else f"sentence {n + 1}",
                       highlight_cells=highlight_cells[n] if highlight_cells else ())
    for ax in axes.flat[len(items):]:
        ax.set_visible(False)
    mappable = plt.cm.ScalarMappable(plt.Normalize(0.0, 1.0), cmap=cmap)
    fig.colorbar(mappable, ax=axes, shrink=0.6, label="attention weight α")
    return fig


def plot_weights(
    weights: ArrayLike,
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
    fig = cast(Figure, ax.figure)
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

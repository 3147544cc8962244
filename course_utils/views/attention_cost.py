"""What masking and attention cost, measured: notebook 2's sections 5 to 7 in one call each.

- :func:`show_padding_masks` (section 5): a padded batch attended with and without its mask;
  without it, padding takes weight; with it, padding gets exactly 0 and a padded sentence gets
  the context of the same sentence alone.
- :func:`time_keys_once` (section 6): attention over a whole decode with the keys ``W_h h_j``
  recomputed at every step against computed once: identical weights, less work.
- :func:`time_attention_grid` and :func:`plot_attention_cost` (section 7, an extension): the
  time of a whole decode over a grid of source and target lengths, and its fitted growth in
  ``T_y * T_x`` (Bahdanau, Cho and Bengio 2015, section 3.1: every step scores every source
  position).

The notebook shows what each one finds; the code that attends is the student's module (or
:class:`course_utils.attention.BahdanauAttention`), passed in.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.colors import LogNorm, PowerNorm
from matplotlib.figure import Figure
from torch import nn
from tqdm import tqdm  # text: a saved notebook keeps the final line (a widget keeps its first)

from course_utils.attention import BahdanauAttention
from course_utils.colours import BLUE
from course_utils.plotting import plot_attention

__all__ = ["CostGrid", "KeysTiming", "plot_attention_cost", "show_padding_masks",
           "time_attention_grid", "time_keys_once"]


def _seconds(fn: Callable[[], object], repeats: int, device: torch.device) -> float:
    """Mean wall time of ``fn`` over ``repeats`` calls, after one warm-up call."""
    fn()
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / repeats


# ------------------------------------------------------------------------- section 5


def show_padding_masks(attention_class: type[nn.Module] = BahdanauAttention,
                       lengths: Sequence[int] = (6, 4, 2), seed: int = 0) -> Figure:
    """Attend over a padded batch with and without its mask; draw both, print what differs.

    ``attention_class`` is built as ``attention_class(encoder_dim, decoder_dim, attention_dim)``
    and called as ``(decoder_state, encoder_outputs, mask=None)``, like notebook 2's module.
    Prints the range of the weights and the weight each sentence gives to padding without the
    mask, the shortest sentence's weights with it, whether every padded
    position gets exactly 0 with it, and whether the shortest sentence, padded and masked, gets
    the context it gets alone.
    """
    if not lengths or min(lengths) < 1:
        raise ValueError(f"lengths must be one or more positive sentence lengths; got {lengths}")
    enc_dim, dec_dim, attn_dim = 6, 4, 3
    generator = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        attention = attention_class(enc_dim, dec_dim, attn_dim)
    width = max(lengths)
    sizes = torch.tensor(list(lengths))
    mask = torch.arange(width)[None, :] < sizes[:, None]  # (B, T_x), True at real tokens
    states = torch.randn(len(lengths), width, enc_dim, generator=generator)
    queries = torch.randn(len(lengths), dec_dim, generator=generator)
    with torch.no_grad():
        _, unmasked = attention(queries, states)
        _, masked = attention(queries, states, mask=mask)
        shortest = int(sizes.argmin())
        n = int(sizes[shortest])
        alone, _ = attention(queries[shortest:shortest + 1], states[shortest:shortest + 1, :n])
        padded, _ = attention(queries[shortest:shortest + 1], states[shortest:shortest + 1],
                              mask=mask[shortest:shortest + 1])
    columns = [f"x{j + 1}" for j in range(width)]
    rows = [f"sentence {b + 1} (len {k})" for b, k in enumerate(lengths)]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 5.4), layout="constrained")
    plot_attention(unmasked, columns, rows, ax=top, title="No mask: padding takes weight",
                   colorbar=False)
    plot_attention(masked, columns, rows, ax=bottom, title="With mask: padding weight is 0",
                   colorbar=False)
    for ax in (top, bottom):
        ax.set_ylabel("")
    # one colour bar for both maps, on their square-root scale (plot_attention's)
    fig.colorbar(plt.cm.ScalarMappable(PowerNorm(0.5, vmin=0.0, vmax=1.0), cmap="viridis"),
                 ax=[top, bottom], shrink=0.8, label="attention weight α (square-root scale)")
    on_padding = (unmasked * ~mask).sum(dim=1)  # (B,)
    print(f"without the mask, every cell's weight lies between {unmasked.min():.2f} and "
          f"{unmasked.max():.2f}; on padding, per sentence:", on_padding.numpy().round(2))
    print(f"with the mask, sentence {shortest + 1}'s real tokens take",
          ", ".join(f"{w:.2f}" for w in masked[shortest, :n].tolist()))
    print("with the mask, every padded position has weight exactly 0:",
          bool((masked[~mask] == 0).all()))
    print(f"sentence {shortest + 1}, padded and masked, gets the context it gets alone:",
          torch.allclose(padded, alone, atol=1e-7))
    return fig


# ------------------------------------------------------------------------- section 6


@dataclass(frozen=True)
class KeysTiming:
    """Attention over a whole decode, keys recomputed at every step against computed once."""

    sizes: dict[str, int]
    device: str
    identical: bool
    seconds_every_step: float
    seconds_once: float

    @property
    def speedup(self) -> float:
        return self.seconds_every_step / self.seconds_once

    def __str__(self) -> str:
        return (f"sizes: {self.sizes}, device: {self.device}\n"
                f"identical weights: {self.identical}\n"
                f"keys recomputed every step: {1e3 * self.seconds_every_step:.1f} ms;  keys once: "
                f"{1e3 * self.seconds_once:.1f} ms;  speed-up {self.speedup:.1f}x")


def time_keys_once(quick: bool, device: torch.device | None = None,
                   repeats: int | None = None) -> KeysTiming:
    """Time attention for every step of a decode, with ``keys=`` given and without.

    Sizes: a batch of 64 sentences of 50 source and 50 target positions, an encoder of 512 and a
    decoder and alignment space of 256 (``quick``: 16, 30, 256, 128). The weights of the two
    ways are compared exactly.
    """
    sizes = (dict(batch=16, src_len=30, tgt_len=30, enc_dim=256, dec_dim=128, attn_dim=128)
             if quick else
             dict(batch=64, src_len=50, tgt_len=50, enc_dim=512, dec_dim=256, attn_dim=256))
    device = device or torch.device("cpu")
    repeats = repeats or (2 if quick else 10)
    attention = BahdanauAttention(sizes["enc_dim"], sizes["dec_dim"], sizes["attn_dim"]).to(device)
    H = torch.randn(sizes["batch"], sizes["src_len"], sizes["enc_dim"], device=device)
    S = torch.randn(sizes["tgt_len"], sizes["batch"], sizes["dec_dim"], device=device)

    def decode(precompute: bool) -> torch.Tensor:  # (B, T_y, T_x)
        keys = attention.project_keys(H) if precompute else None
        return torch.stack([attention(S[i], H, keys=keys)[1] for i in range(len(S))], dim=1)

    with torch.no_grad():
        identical = torch.equal(decode(True), decode(False))
        every = _seconds(lambda: decode(False), repeats, device)
        once = _seconds(lambda: decode(True), repeats, device)
    return KeysTiming(sizes, device.type, identical, every, once)


# ------------------------------------------------------------------------- section 7


@dataclass(frozen=True)
class CostGrid:
    """Seconds of attention over a whole decode of a batch, per (source, target) length."""

    lengths: tuple[int, ...]
    seconds: np.ndarray  # (target length, source length)
    batch: int
    device: str

    @property
    def products(self) -> np.ndarray:
        """``T_y * T_x`` of every cell, flattened like :attr:`seconds`."""
        return np.outer(self.lengths, self.lengths).ravel()

    @property
    def exponent(self) -> float:
        """The slope of log time against log ``T_y * T_x`` (1: time proportional to it)."""
        return float(np.polyfit(np.log(self.products), np.log(self.seconds.ravel()), 1)[0])

    def doublings(self) -> list[tuple[int, int, float]]:
        """Along the diagonal ``T_y = T_x``: ``(L, 2L, time(2L) / time(L))`` for each length
        whose double is in the grid (4 where the time is exactly proportional to
        ``T_y * T_x``)."""
        index = {n: i for i, n in enumerate(self.lengths)}
        return [(n, 2 * n, float(self.seconds[index[2 * n], index[2 * n]]
                                 / self.seconds[index[n], index[n]]))
                for n in self.lengths if 2 * n in index]

    def describe(self) -> str:
        """The fitted exponent, the diagonal's times and what each doubling multiplied them by."""
        diagonal = ", ".join(f"{n} x {n}: {1e3 * self.seconds[i, i]:.0f} ms"
                             for i, n in enumerate(self.lengths))
        ratios = ", ".join(f"x{ratio:.1f} ({short} to {long})"
                           for short, long, ratio in self.doublings())
        return (f"fitted exponent: {self.exponent:.2f} (1.0 would be exactly proportional to "
                f"T_y * T_x)\nT_y = T_x, ms per batch of {self.batch}: {diagonal}\n"
                f"doubling both lengths multiplied the time by {ratios or '-'} "
                "(x4 if exactly proportional)")


def time_attention_grid(lengths: Sequence[int], width: int = 256, batch: int = 32,
                        device: torch.device | None = None, repeats: int = 5) -> CostGrid:
    """Attention over a whole decode (keys once) for every pair of ``lengths``, timed."""
    if len(lengths) < 2 or min(lengths) < 1:
        raise ValueError(f"lengths must hold two or more positive lengths; got {list(lengths)}")
    device = device or torch.device("cpu")
    attention = BahdanauAttention(width, width, width).to(device)
    seconds = np.zeros((len(lengths), len(lengths)))
    pairs = [(t, s) for t in range(len(lengths)) for s in range(len(lengths))]
    with torch.no_grad():
        for t, s in tqdm(pairs, desc="timing the grid", unit="size"):
            H = torch.randn(batch, lengths[s], width, device=device)
            S = torch.randn(lengths[t], batch, width, device=device)

            def run(H: torch.Tensor = H, S: torch.Tensor = S) -> None:
                keys = attention.project_keys(H)
                for query_state in S:  # one attention call per decoder step
                    attention(query_state, H, keys=keys)

            seconds[t, s] = _seconds(run, repeats, device)
    return CostGrid(tuple(lengths), seconds, batch, device.type)


def plot_attention_cost(grid: CostGrid) -> Figure:
    """Time against ``T_y * T_x`` on log axes with the fitted line, and the grid as a map with
    every cell's milliseconds printed (a logarithmic colour scale: the times span orders of
    magnitude)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.8), layout="constrained")
    products, ms = grid.products, 1e3 * grid.seconds.ravel()
    order = np.argsort(products)
    fit = np.exp(np.polyval(np.polyfit(np.log(products), np.log(ms), 1), np.log(products)))
    left.loglog(products, ms, "o", color="0.6", label="every pair of lengths")
    left.loglog(products[order], fit[order], "k--",
                label=f"fit: time ∝ $(T_y T_x)^{{{grid.exponent:.2f}}}$")
    # the diagonal T_y = T_x, each doubling labelled with the factor it multiplied the time by
    diagonal = np.array([1e3 * grid.seconds[i, i] for i in range(len(grid.lengths))])
    squares = np.array(grid.lengths, dtype=float) ** 2
    left.loglog(squares, diagonal, "o-", color=BLUE, label="$T_y = T_x$")
    index = {n: i for i, n in enumerate(grid.lengths)}
    for short, long, ratio in grid.doublings():
        middle = np.sqrt(squares[index[short]] * squares[index[long]])
        height = np.sqrt(diagonal[index[short]] * diagonal[index[long]])
        left.annotate(f"×{ratio:.1f}", (middle, height), textcoords="offset points",
                      xytext=(-4, 6), ha="right", fontsize=9, color=BLUE)
    left.set(xlabel="$T_y \\cdot T_x$", ylabel=f"ms per batch of {grid.batch}",
             title=f"Attention over a whole decode ({grid.device})")
    left.legend()
    table = 1e3 * grid.seconds  # rows: T_y, columns: T_x
    image = right.imshow(table, origin="lower", cmap="viridis",
                         norm=LogNorm(table.min(), table.max()))
    for (row, col), value in np.ndenumerate(table):
        dark = image.norm(value) < 0.6  # white text on the dark end of viridis
        right.text(col, row, f"{value:.0f}", ha="center", va="center", fontsize=9,
                   color="white" if dark else "black")
    ticks = range(len(grid.lengths))
    right.set(xticks=ticks, xticklabels=grid.lengths, yticks=ticks, yticklabels=grid.lengths,
              xlabel="source length $T_x$", ylabel="target length $T_y$",
              title="ms per batch (log colour scale)")
    fig.colorbar(image, ax=right)
    return fig

"""E10.1's known mistakes, each a wrong answer computed on the check's inputs, and its hint.

E10.1 asks for the batched form (a batch of ``B`` sentences padded to ``T_x`` positions, one
decoder state each), so there are two kinds of mistake:

- the formula's own, as notebook 1 writes it for one sentence (the tanh missing, ``v`` inside
  it, a projection left out or transposed, ...): :data:`ENERGY_MISTAKES`, written for one
  sentence and applied to each sentence in turn (:func:`per_sentence`);
- the batch's: the query not given an axis for the positions, the keys or the query
  multiplied along the wrong axis (:data:`BATCH_ENERGY_MISTAKES`), the softmax over the wrong
  axis or with the mask ignored, applied late, inverted or as 0 (:func:`softmax_mistakes`), the
  context summed without the weights (:func:`context_mistakes`).

Every wrong answer here is built from the library's one-sentence NumPy reference
(:mod:`course_utils.attention`) one sentence at a time, or from plain loops, never from the
batched answer the student writes: the handout ships this module. Hints say what is wrong and
quote the sizes of the inputs, never the expected numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from course_utils.attention import additive_attention
from course_utils.attention import softmax as reference_softmax
from course_utils.checks.hints import named_mistake

__all__ = ["BATCH_ENERGY_MISTAKES", "ENERGY_MISTAKES", "EXTREME_ENERGIES", "SHIFT", "TOLERANCE",
           "close", "context_mistakes", "context_shape_hint", "energy_mistakes", "per_sentence",
           "per_sentence_energies", "per_sentence_weights", "right_shapes", "sizes",
           "softmax_hint", "softmax_mistakes", "wrong_entries"]

Arrays = dict[str, np.ndarray]

#: How far a number may be from the expected one.
TOLERANCE = 1e-6


def close(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=0, atol=TOLERANCE,
                                                   equal_nan=True))


def wrong_entries(got: np.ndarray, expected: np.ndarray, symbol: str) -> str:
    """Which entries are off: ``e_11, e_13`` for a batch of one (the course's e_1j; ``c_1``
    for a context, one vector), else which sentences of the batch."""
    off = ~np.isclose(got, expected, rtol=0, atol=TOLERANCE, equal_nan=True)
    if len(got) == 1 and symbol == "c":
        return "c_1 is off"
    if len(got) == 1:
        return ", ".join(f"{symbol}_1{j + 1}" for j in np.flatnonzero(off[0])) + " are off"
    rows = [str(b + 1) for b in np.flatnonzero(off.reshape(len(off), -1).any(axis=1))]
    return f"sentence{'s' if len(rows) > 1 else ''} {', '.join(rows)} of {len(got)} are off"


def sizes(inputs: Arrays) -> dict[str, int]:
    """The sizes the hints quote: batch, src_len (T_x), enc_dim, attn_dim, dec_dim."""
    batch, src_len, enc_dim = inputs["encoder_states"].shape
    attn_dim, dec_dim = inputs["W_s"].shape
    return {"batch": batch, "src_len": src_len, "enc_dim": enc_dim, "attn_dim": attn_dim,
            "dec_dim": dec_dim}


def right_shapes(inputs: dict[str, np.ndarray]) -> str:
    """How the shapes fit together in e_bj = v^T tanh(W_s s_b + W_h h_bj), for these inputs."""
    n = sizes(inputs)
    return (
        f"the queries W_s s_b, one per sentence, are (B, attn_dim) = ({n['batch']}, "
        f"{n['attn_dim']}); the keys W_h h_bj are (B, T_x, attn_dim) = ({n['batch']}, "
        f"{n['src_len']}, {n['attn_dim']}); each sentence's query is added to each of its own "
        f"keys, tanh applies entry by entry, and the product with v leaves one energy per "
        f"sentence and position, (B, T_x) = ({n['batch']}, {n['src_len']})"
    )


# ------------------------------------------------- the library, one sentence at a time


def per_sentence_energies(S: np.ndarray, H: np.ndarray, W_s: np.ndarray, W_h: np.ndarray,
                          v: np.ndarray) -> np.ndarray:
    """``(B, T_x)``: the library's :func:`additive_attention`, called for each sentence."""
    return np.stack([additive_attention(s, h, W_s, W_h, v).energies for s, h in zip(S, H)])


def per_sentence_weights(energies: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``(B, T_x)``: the library's softmax of each sentence's energies over its real tokens
    (``mask`` True), 0 at its padding; NaN for a sentence with no real token at all."""
    weights = np.zeros(energies.shape)
    for b, (row, real) in enumerate(zip(energies, mask)):
        if real.any():
            weights[b, real] = reference_softmax(row[real])
        else:
            weights[b] = np.nan
    return weights


def per_sentence(formula: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """A one-sentence formula ``(s, H, W_s, W_h, v) -> (T_x,)`` applied to each sentence of a
    batch ``(B, dec_dim)``, ``(B, T_x, enc_dim)``: ``(B, T_x)``."""
    def batched(S: np.ndarray, H: np.ndarray, W_s: np.ndarray, W_h: np.ndarray,
                v: np.ndarray) -> np.ndarray:
        return np.stack([np.asarray(formula(s, h, W_s, W_h, v), dtype=float)
                         for s, h in zip(S, H)])
    return batched


# ------------------------------------------------------------------------------ energies

# The formula's usual mistakes, for one sentence s (dec_dim,) and H (T_x, enc_dim). The hints are
# formatted with the sizes of the inputs the mistake was seen on.
ENERGY_MISTAKES: list[tuple[str, Callable[..., np.ndarray]]] = [
    ("the tanh is missing: e_j = v^T tanh(W_s s + W_h h_j)",
     lambda s, H, W_s, W_h, v: (W_s @ s + H @ W_h.T) @ v),
    ("v is inside the tanh: first squash the alignment vector W_s s + W_h h_j with tanh, "
     "then reduce it to one number with v (e_j = v^T tanh(...)); multiplying by v before the "
     "tanh changes what gets squashed",
     lambda s, H, W_s, W_h, v: np.tanh((W_s @ s + H @ W_h.T) * v).sum(axis=1)),
    ("v is inside the tanh: first squash the alignment vector W_s s + W_h h_j with tanh, "
     "then take its dot product with v (e_j = v^T tanh(...)), not tanh of that dot product",
     lambda s, H, W_s, W_h, v: np.tanh((W_s @ s + H @ W_h.T) @ v)),
    ("v is not used: reduce the alignment vector with v, not with a plain sum",
     lambda s, H, W_s, W_h, v: np.tanh(W_s @ s + H @ W_h.T).sum(axis=1)),
    ("the projections are left out: tanh(s + h_j) adds the raw states, but the query is "
     "W_s s and the keys are W_h h_j. Only the projections bring both into the same "
     "{attn_dim}-d alignment space; E10.1's identity matrices hide this",
     lambda s, H, W_s, W_h, v: np.tanh(s + H) @ v),
    ("W_s is left out: the query is W_s s, not s (E10.1's W_s = I hides this)",
     lambda s, H, W_s, W_h, v: np.tanh(s + H @ W_h.T) @ v),
    ("W_h is left out: the keys are W_h h_j, not h_j (E10.1's W_h = I hides this)",
     lambda s, H, W_s, W_h, v: np.tanh(W_s @ s + H) @ v),
    ("`encoder_states @ W_h` needs a transpose: encoder_states is (B, T_x, enc_dim) = "
     "({batch}, {src_len}, {enc_dim}) and W_h is (attn_dim, enc_dim) = ({attn_dim}, "
     "{enc_dim}). Each key is W_h h_j; with the h_j as rows, @ multiplies a row by the matrix "
     "on its right, so the keys need W_h's transpose there, giving (B, T_x, attn_dim) = "
     "({batch}, {src_len}, {attn_dim}). Without it the product only fits when enc_dim = "
     "attn_dim, and then it computes the wrong keys (h_j^T W_h); E10.1's W_h = I hides this",
     lambda s, H, W_s, W_h, v: np.tanh(W_s @ s + H @ W_h) @ v),
    ("the query is s^T W_s (`decoder_states @ W_s`) but should be W_s s: W_s is (attn_dim, "
     "dec_dim) = ({attn_dim}, {dec_dim}) and multiplies each state from the left; with the "
     "states as rows, that is a product with W_s's transpose on the right (E10.1's W_s = I "
     "hides this)",
     lambda s, H, W_s, W_h, v: np.tanh(s @ W_s + H @ W_h.T) @ v),
    ("W_s and W_h are swapped: W_s projects the decoder state s, W_h the encoder states h_j",
     lambda s, H, W_s, W_h, v: np.tanh(W_h @ s + H @ W_s.T) @ v),
    ("these are weights, not energies: return the energies before the softmax",
     lambda s, H, W_s, W_h, v: reference_softmax(np.tanh(W_s @ s + H @ W_h.T) @ v)),
]

#: The batch's own mistakes, on S (B, dec_dim) and H (B, T_x, enc_dim): each runs only on some
#: shapes (a batch as large as the sentence is long, or square matrices), and there its
#: numbers name it.
BATCH_ENERGY_MISTAKES: list[tuple[str, Callable[..., np.ndarray]]] = [
    ("the queries are not broadcast over the positions: the queries are (B, attn_dim) = "
     "({batch}, {attn_dim}) and the keys (B, T_x, attn_dim) = ({batch}, {src_len}, "
     "{attn_dim}). NumPy lines shapes up from the right, so (B, attn_dim) + (B, T_x, "
     "attn_dim) pairs query b with position b of every sentence; it fails when B and T_x "
     "differ, and is silently wrong when they are equal (with B = 1, as in E10.1, it happens "
     "to work). Give the queries a length-1 axis for the positions, (B, 1, attn_dim), so that "
     "sentence b's query is added to each of sentence b's keys",
     lambda S, H, W_s, W_h, v: np.tanh(
         np.stack([W_s @ s for s in S]) + np.stack([h @ W_h.T for h in H])) @ v),
    ("the keys are projected along the wrong axis: `W_h @ encoder_states` multiplies W_h with "
     "the (T_x, enc_dim) = ({src_len}, {enc_dim}) matrix of each sentence, mixing its "
     "positions, instead of with each state h_j. Each key is W_h h_j, one per position: "
     "(B, T_x, attn_dim) = ({batch}, {src_len}, {attn_dim})",
     lambda S, H, W_s, W_h, v: np.tanh(
         np.stack([W_s @ s for s in S])[:, None, :] + np.stack([W_h @ h for h in H])) @ v),
    ("the queries are projected along the wrong axis: `W_s @ decoder_states` multiplies W_s "
     "with the (B, dec_dim) = ({batch}, {dec_dim}) matrix of all the states, mixing the "
     "sentences. Each query is W_s s_b, one per sentence: (B, attn_dim) = ({batch}, "
     "{attn_dim})",
     lambda S, H, W_s, W_h, v: np.tanh(
         (W_s @ S)[:, None, :] + np.stack([h @ W_h.T for h in H])) @ v),
]


def energy_mistakes(args: list[np.ndarray]) -> Iterator[tuple[np.ndarray, str]]:
    """``(wrong energies, hint)`` for every known mistake that can run on ``args`` (the
    decoder states, encoder states, W_s, W_h, v), computed lazily. The hints are not formatted
    yet."""
    formulas = [(hint, per_sentence(f)) for hint, f in ENERGY_MISTAKES] + BATCH_ENERGY_MISTAKES
    for hint, formula in formulas:
        try:
            with np.errstate(all="ignore"):
                wrong = np.asarray(formula(*[a.copy() for a in args]), dtype=float)
        except ValueError:  # this mistake cannot run on these shapes
            continue
        if wrong.shape == args[1].shape[:2]:
            yield wrong, hint


# ------------------------------------------------------------------------------- softmax

_NO_MASK = ("padded positions get weight: the mask is not applied. Padding must count as if "
            "it were not there: its energies must not enter the softmax at all (what number "
            "x makes exp(x) exactly 0?)")


def softmax_mistakes(energies: np.ndarray, mask: np.ndarray) -> Iterator[tuple[np.ndarray, str]]:
    """``(wrong weights, hint)`` for the softmax's known mistakes on ``energies`` and ``mask``
    (a row of NaN where a mistake divides 0 by 0)."""
    with np.errstate(all="ignore"):
        masked = np.where(mask, energies, -np.inf)
        yield reference_softmax(energies, axis=1), _NO_MASK
        yield reference_softmax(energies, axis=1) * mask, (
            "the mask is applied after the softmax: the padding's weights are 0, but the real "
            "tokens' weights no longer sum to 1. Mask the energies before the softmax")
        yield per_sentence_weights(energies, ~mask), (
            "the mask is the wrong way round: True marks a real token, which keeps its "
            "energy; the padded positions (False) are the ones to leave out")
        yield reference_softmax(np.where(mask, energies, 0.0), axis=1), (
            "the padding's energies are set to 0, and exp(0) = 1, so padding still gets "
            "weight. Which energy gives a weight of exactly 0?")
        over_columns = ("the softmax runs over the wrong axis: each column sums to 1 (over "
                        "the sentences of the batch) instead of each row (over the positions "
                        "of one sentence). Sum and take maxima along axis 1, the positions")
        yield reference_softmax(masked, axis=0), over_columns
        yield reference_softmax(energies, axis=0), over_columns


SHIFT = ("Subtract each sentence's largest energy first: softmax does not change when every "
          "energy of a sentence shifts by the same amount, and after that shift every exponent "
          "is at most 0, so each exp() lies between 0 and 1 and the largest is exactly 1")

#: Energies a softmax must survive (all real tokens), and what goes wrong when it does not.
#: Subtracting each row's largest energy passes all of them; subtracting nothing fails the
#: first, the smallest energy (or the mean) a wide spread, and the largest of the whole batch
#: the last.
EXTREME_ENERGIES = [
    (np.array([[1000.0, 1001.0, 1002.0]]),
     "on energies near 1000, [1000, 1001, 1002], exp() overflows (exp(1000) is infinite in "
     "floating point)"),
    (np.array([[0.0, 1000.0]]),
     "on energies far apart, [0, 1000], exp() still overflows: shifting by the smallest "
     "energy leaves the largest one at 1000"),
    (np.array([[-1500.0, 0.0, 1500.0]]),
     "on energies far apart, [-1500, 0, 1500], exp() still overflows: shifting by the mean "
     "(or the smallest energy) leaves the largest one huge"),
    (np.array([[-1002.0, -1001.0, -1000.0]]),
     "on very negative energies, [-1002, -1001, -1000], every exp() underflows to 0 and the "
     "division is 0 / 0"),
    (np.array([[0.0, 1.0, 2.0], [1000.0, 1001.0, 1002.0]]),
     "on a batch of two sentences whose energies lie far apart, [0, 1, 2] and [1000, 1001, "
     "1002], one shift for the whole batch is not enough: shifted by the batch's largest "
     "energy, the first sentence's exp() all underflow to 0, and its weights are 0 / 0"),
]


def softmax_hint(got: np.ndarray, energies: np.ndarray, mask: np.ndarray) -> str:
    """Why ``got`` is not the masked softmax of ``energies``, as far as it can be told."""
    hint = named_mistake(got, softmax_mistakes(energies, mask), close)
    if hint is not None:
        return hint
    if not np.all(np.isfinite(got)):
        return "some weights are NaN or infinite"
    if np.any(got < 0):
        return "some weights are negative: exp(e) is never negative"
    if np.any(got[~mask] != 0):
        return "padded positions get weight: each weight at padding must be exactly 0"
    totals = got.sum(axis=1)
    off = np.flatnonzero(np.abs(totals - 1.0) > TOLERANCE)
    if off.size:
        b = int(off[0])
        return (f"the weights of sentence {b + 1} sum to {totals[b]:.4f}, not 1: divide each "
                "sentence's exponentials by their own sum")
    return (f"{wrong_entries(got, per_sentence_weights(energies, mask), 'alpha')}: alpha_bj = "
            "exp(e_bj) / sum_k exp(e_bk), the sum over sentence b's real tokens k")


# ------------------------------------------------------------------------------- context


def context_mistakes(weights: np.ndarray, H: np.ndarray) -> Iterator[tuple[np.ndarray, str]]:
    """``(wrong contexts, hint)`` for the context's known mistakes: the states averaged or
    summed without their weights."""
    real = weights > 0
    yield np.stack([h[r].mean(axis=0) for h, r in zip(H, real)]), (
        "that is the plain average of the (real) tokens' states: weight each h_bj by alpha_bj")
    yield H.mean(axis=1), ("that is the plain average of every position's state, padding "
                           "included: weight each h_bj by alpha_bj")
    yield H.sum(axis=1), "that is the unweighted sum of the states: weight each h_bj by alpha_bj"


def context_shape_hint(shape: tuple[int, ...], batch: int, src_len: int,
                       enc_dim: int) -> str | None:
    """What a context of the wrong ``shape`` most likely did, or None."""
    if shape == (batch, batch, enc_dim):
        return (f"`weights @ encoder_states` multiplies the (B, T_x) = ({batch}, {src_len}) "
                "matrix of every sentence's weights with each sentence's (T_x, enc_dim) = "
                f"({src_len}, {enc_dim}) states, (B, B, enc_dim) in all: each sentence's weights "
                "belong with its own states only. Multiply them position by position (the "
                "weights need an axis for enc_dim), then sum over the positions")
    if shape == (batch, src_len) and src_len != enc_dim:
        return ("one number per position: the sum ran over the states' entries; the context "
                "sums over the positions j, leaving one enc_dim vector per sentence")
    if shape == (src_len, enc_dim) and src_len != batch:
        return ("one vector per position: the sum ran over the sentences of the batch; the "
                "context sums over the positions j of each sentence")
    return None

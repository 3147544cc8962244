"""Worked versions of the lecture's "your turn" cells, shown only after an attempt has failed.

Notebooks 2 and 3 ask the student to write three pieces from the equations and the shapes:
the attention module's ``forward`` (notebook 2, section 3), the decoder's ``step`` and its
teacher-forcing ``forward`` (notebook 3, section 2). No cell of those notebooks holds the worked
code. The checks of :mod:`course_utils.checks.lecture` record a failed attempt (a check that ran
the student's code and found it wrong, not one that found it unwritten); only then does
:func:`show_worked` print the worked version, so that it helps a student who is stuck without
replacing the attempt.

Each piece is one entry of :data:`WORKED`; the day plan (``benchmarks/day_plan.py``) counts its
lines as the student's writing time, and ``tests/test_your_turn.py`` proves that no cell or
output of a notebook shows those lines before the cell that asks for them.
"""

from __future__ import annotations

from dataclasses import dataclass

from course_utils.config import wrap_text

__all__ = ["WORKED", "Worked", "attempt_failed", "show_hint", "show_worked"]


@dataclass(frozen=True)
class Worked:
    """One "your turn" piece: where it is asked, its worked code, and a hint: the order of the
    computation in words, offered before the code."""

    title: str
    where: str
    code: str
    hint: str = ""


WORKED: dict[str, Worked] = {
    "attention": Worked(
        "MyBahdanauAttention.forward",
        "notebook 2, section 3",
        '''\
    def forward(self, decoder_state, encoder_outputs, mask=None, keys=None):
        if keys is None:
            keys = self.W_h(encoder_outputs)                        # (B, T_x, attn_dim)
        query = self.W_s(decoder_state).unsqueeze(1)                # (B, 1, attn_dim)
        energies = self.v(torch.tanh(query + keys)).squeeze(-1)     # (B, T_x)
        if mask is not None:
            energies = energies.masked_fill(~mask, float("-inf"))   # before the softmax
        weights = torch.softmax(energies, dim=-1)                   # (B, T_x), over j
        context = torch.bmm(weights.unsqueeze(1), encoder_outputs)  # (B, 1, enc_dim)
        return context.squeeze(1), weights
''',
        "In order: the keys W_h h_j for every position (unless `keys` is given); the query W_s s "
        "with a length-1 position axis, so that it broadcasts against the keys; the energies "
        "v^T tanh(query + keys), one per position; -inf at the padded positions; the softmax "
        "over the positions; the weighted sum of the encoder outputs."),
    "step": Worked(
        "Decoder.step",
        "notebook 3, section 2",
        '''\
    def step(self, y_prev, s_prev, memory):
        c, alpha = self.attention(s_prev, memory.encoder_outputs,
                                  mask=memory.mask, keys=memory.keys)  # 1. attend with s_(i-1)
        s = self.cell(torch.cat([y_prev, c], dim=-1), s_prev)        # 2. s_i from [y_(i-1); c_i]
        return s, c, alpha
''',
        "Two calls, in the equations' order: the attention module with the previous state as "
        "the query, over memory's encoder outputs, with its mask and keys, gives c_i and "
        "alpha_i; the GRU cell then takes the word and that context side by side, "
        "[y_(i-1); c_i], and the previous state, and gives s_i."),
    "teacher forcing": Worked(
        "TeacherForcing.forward",
        "notebook 3, section 2",
        '''\
    def forward(self, tgt_in, encoder_outputs, summary, mask, positions=None):
        memory = self.prepare(encoder_outputs, summary, mask)   # the keys, once per batch
        y, s = self.embed(tgt_in), self.initial_state(summary)  # (B, T_y, embed), s_0
        steps = []
        for i in range(tgt_in.shape[1]):                        # y[:, i] is y_(i-1) of step i
            s, c, alpha = self.step(y[:, i], s, memory)
            steps.append((s, c, alpha))
        S, C, weights = (torch.stack(x, dim=1) for x in zip(*steps))  # (B, T_y, ...) each
        return self.predict(S, C, y, positions), weights
''',
        "Once per batch: prepare the memory (the keys), embed the whole target, and compute "
        "s_0 with the bridge. Then a loop over the target positions: step i + 1 gets the "
        "embedded column i and the state the previous step returned. Stack the states, "
        "contexts and weights along the time axis (dim=1), and call the output layer once, on "
        "all steps, passing positions on."),
}

#: The pieces whose check has seen a wrong attempt in this kernel.
_failed: set[str] = set()


def attempt_failed(name: str) -> None:
    """Record that the check of ``name`` (a key of :data:`WORKED`) ran a wrong attempt."""
    if name not in WORKED:
        raise KeyError(f"no worked piece {name!r}; expected one of {sorted(WORKED)}")
    _failed.add(name)


def _opened(name: str, what: str) -> Worked | None:
    """The piece ``name``, once its check has seen an attempt fail; before that, say so."""
    if name not in WORKED:
        raise ValueError(f"{what} takes one of {', '.join(map(repr, WORKED))}; got {name!r}")
    piece = WORKED[name]
    if name not in _failed:
        kind = "hint" if what == "show_hint" else "worked version"
        print(f"Try {piece.title} first ({piece.where}): the {kind} opens once the check under "
              "your cell has run an attempt of yours and found it wrong.")
        return None
    return piece


def show_hint(name: str) -> None:
    """Print the order of the computation of ``name`` (one of :data:`WORKED`'s keys), in
    words, once its check has seen an attempt of yours fail: the step before the worked code."""
    piece = _opened(name, "show_hint")
    if piece is not None:
        print(f"A hint for {piece.title} ({piece.where}):\n")
        print(wrap_text(piece.hint))
        print(f"\nStill stuck? show_worked({name!r}) prints a worked version.")


def show_worked(name: str) -> None:
    """Print the worked version of ``name`` (one of :data:`WORKED`'s keys) once its check has
    seen an attempt of yours fail; before that, say so and print nothing of it."""
    piece = _opened(name, "show_worked")
    if piece is not None:
        print(f"A worked {piece.title} ({piece.where}). Compare it with yours line by line, fix "
              "yours, and run your cell and the check again:\n")
        print(piece.code)

"""An interactive explorer: type an English sentence, read the German output and its attention.

Taught in notebook 5, section 6 ("The explorer").

In JupyterLab, :func:`explore` shows widgets: a text box for the sentence, greedy or beam
search, a slider (with a play button) that steps through decoding, the German output with
the current word marked and the English words shaded by how much that word attends to
them, and the heatmap with the current step outlined.

Where widgets cannot work (``ipywidgets`` missing, no Jupyter kernel, ``COURSE_QUICK`` set as
under nbval, or ``COURSE_WIDGETS=0``) it shows the same information as a static figure and
a line of text per decoding step.
"""

from __future__ import annotations

import html
import io
import os
import textwrap
from typing import TYPE_CHECKING, Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from course_utils.config import quick_mode
from course_utils.plotting import NOTEBOOK_WIDTH, plot_attention, plot_weights
from course_utils.tensors import to_numpy

if TYPE_CHECKING:
    from course_utils.translation import Translation, Translator

__all__ = ["AttentionExplorer", "describe_steps", "explore", "plot_decoding",
           "widgets_available"]

# What a saved notebook shows where the widgets cannot render: the kernel is not running, or
# (in a fresh clone) the notebook is not trusted yet. Say exactly what to do.
_PLAIN = ("Attention explorer (interactive): run this cell (Shift+Enter) to type a sentence and "
          "step through decoding. If this text shows instead of the explorer after you ran it, "
          "trust the notebook (command palette: Trust Notebook) and run the cell again.")


def widgets_available() -> tuple[bool, str]:
    """``(True, "")`` when interactive widgets can work here, else ``(False, why not)``."""
    if quick_mode():
        return False, "COURSE_QUICK is set (smoke-test run)"
    if os.environ.get("COURSE_WIDGETS", "1").strip() == "0":
        return False, "COURSE_WIDGETS=0"
    try:
        import ipywidgets  # noqa: F401
        from IPython import get_ipython
    except ImportError:
        return False, "ipywidgets is not installed"
    shell = get_ipython()
    if shell is None or not hasattr(shell, "kernel"):
        return False, "not running in a Jupyter kernel"
    return True, ""


def _attention(translation: Translation) -> np.ndarray:
    """The translation's attention as an array; a clear error for a vanilla model's."""
    if getattr(translation, "attention", None) is None:
        raise ValueError("the explorer needs an attention model's translation; "
                         "this one has no attention (a vanilla seq2seq model?)")
    return to_numpy(translation.attention)


def describe_steps(translation: Translation, top: int = 3) -> list[str]:
    """One line per decoding step: the output word and the source words it reads most."""
    weights = _attention(translation)
    lines = []
    for step, (word, row) in enumerate(zip(translation.row_labels, weights)):
        best = np.argsort(row)[::-1][:top]
        reads = ", ".join(f"{translation.source_tokens[j]} {row[j]:.2f}" for j in best)
        lines.append(f"step {step + 1:2d}  {word:>16s}  <-  {reads}")
    return lines


def plot_decoding(translation: Translation, step: int | None = None) -> Figure:
    """The heatmap (hard alignment marked, ``step`` outlined) above a bar chart of the
    weights of decoding step ``step`` (0-based; default: the first)."""
    weights = _attention(translation)
    rows = weights.shape[0]
    step = 0 if step is None else step
    if not 0 <= step < rows:
        raise ValueError(f"step must be in [0, {rows - 1}]; got {step}")
    src_len = weights.shape[1]
    width = min(3.0 + 0.42 * src_len, NOTEBOOK_WIDTH)  # wider would shrink its text
    cell = (width - 3.0) / src_len  # inches per token, the same across and down
    height = min(2.0 + cell * rows, 14.0) + 2.6
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(width, height), layout="constrained",
        gridspec_kw={"height_ratios": [max(rows, 3), 4]})
    labels = translation.row_labels
    plot_attention(weights, translation.source_tokens, labels, ax=top, mark_alignment=True,
                   highlight_rows=[step], annotate=False,
                   title=textwrap.fill(f"“{translation.text}”", int(width * 9)))
    plot_weights(weights[step], translation.source_tokens, ax=bottom, annotate=src_len <= 16,
                 title=f"step {step + 1}: “{labels[step]}” reads these English words")
    bottom.tick_params(axis="x", labelrotation=90 if src_len > 10 else 0)
    return fig


def _figure_png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    plt.close(fig)
    return buffer.getvalue()


class AttentionExplorer:
    """The widgets of :func:`explore`; ``set_sentence`` and ``step`` drive it from code too."""

    def __init__(self, translator: Translator, sentence: str, beam_size: int = 1) -> None:
        import ipywidgets as widgets

        if not translator.model.uses_attention:
            raise ValueError("the explorer needs an attention model; this translator's "
                             "model is a vanilla seq2seq model")
        self.translator = translator
        self.translation: Translation | None = None
        self.text = widgets.Text(value=sentence, description="English:",
                                 continuous_update=False,
                                 layout=widgets.Layout(width="70%"))
        self.search = widgets.ToggleButtons(options=[("greedy", 1), ("beam 5", 5)],
                                            value=1 if beam_size == 1 else 5,
                                            description="decoding:")
        self.slider = widgets.IntSlider(value=1, min=1, max=1, description="step:")
        self.play = widgets.Play(value=1, min=1, max=1, interval=900, description="play")
        widgets.jslink((self.play, "value"), (self.slider, "value"))
        self.sentence_html = widgets.HTML()
        self.image = widgets.Image(format="png")
        self.status = widgets.HTML()
        self.widget = widgets.VBox([
            widgets.HBox([self.text, self.search]),
            self.sentence_html,
            widgets.HBox([self.play, self.slider]),
            self.image,
            self.status,
        ])
        self.text.observe(lambda change: self.set_sentence(change["new"]), names="value")
        self.search.observe(lambda change: self.set_sentence(self.text.value), names="value")
        self.slider.observe(lambda change: self._show_step(change["new"] - 1), names="value")
        self.set_sentence(sentence)

    # ------------------------------------------------------------------ state

    @property
    def step(self) -> int:
        """The current decoding step, 0-based."""
        return self.slider.value - 1

    @step.setter
    def step(self, value: int) -> None:
        self.slider.value = value + 1  # the observer redraws

    def set_sentence(self, sentence: str) -> None:
        if self.text.value != sentence:
            self.text.value = sentence  # its observer calls back here
            return
        if not sentence.strip():
            self.status.value = "<b>Type an English sentence and press Enter.</b>"
            return
        try:
            translation = self.translator.translate([sentence], beam_size=self.search.value)[0]
        except ValueError as error:
            self.status.value = f"<b>Cannot translate:</b> {html.escape(str(error))}"
            return
        self.translation = translation
        assert translation.attention is not None  # an attention model (checked on creation)
        rows = translation.attention.shape[0]
        unknown = translation.unknown
        self.status.value = (
            "Not in the vocabulary (read as &lt;unk&gt;): " + html.escape(", ".join(unknown))
            if unknown else "")
        self.slider.max = self.play.max = rows
        if self.slider.value == 1:
            self._show_step(0)
        else:
            self.slider.value = 1  # the observer redraws

    # ------------------------------------------------------------------ drawing

    def sentence_markup(self, step: int) -> str:
        """German output with word ``step`` marked; English words shaded by its weights."""
        translation = self.translation
        if translation is None or translation.attention is None:
            return ""
        row = translation.attention[step].numpy()
        source = " ".join(
            f'<span title="{w:.2f}" style="background: rgba(255, 140, 0, {w:.2f}); '
            f'padding: 1px 3px; border-radius: 3px">{html.escape(token)}</span>'
            for token, w in zip(translation.source_tokens, row))
        target = " ".join(
            f'<b style="color: #c00; text-decoration: underline">{html.escape(word)}</b>'
            if i == step else html.escape(word)
            for i, word in enumerate(translation.row_labels))
        return (f'<div style="font-size: 110%; line-height: 1.9">'
                f"<div><b>EN</b> {source}</div><div><b>DE</b> {target}</div></div>")

    def _show_step(self, step: int) -> None:
        translation = self.translation
        if (translation is None or translation.attention is None
                or not 0 <= step < translation.attention.shape[0]):
            return
        self.sentence_html.value = self.sentence_markup(step)
        self.image.value = _figure_png(plot_decoding(translation, step))

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = _PLAIN
        return bundle


def explore(translator: Translator, sentence: str, *, beam_size: int = 1,
            interactive: bool | None = None, step: int | None = None) -> object:
    """Explore one sentence's translation and attention.

    Interactive (widgets) where they can work, else a static figure and a text line per
    step; ``interactive`` forces one or the other. Returns the :class:`AttentionExplorer`
    (interactive) or ``None`` (static: the figure and text are displayed).
    """
    if not isinstance(sentence, str):
        raise TypeError(f"sentence must be a string; got {type(sentence).__name__}")
    available, reason = widgets_available()
    if interactive is None:
        interactive = available
    elif interactive and not available:
        raise RuntimeError(f"interactive widgets are not available here: {reason}")
    if interactive:
        return AttentionExplorer(translator, sentence, beam_size)
    from IPython.display import display

    translation = translator.translate([sentence], beam_size=beam_size)[0]
    _attention(translation)  # a clear error for a vanilla model
    if reason:
        print(f"Static view ({reason}); in JupyterLab this cell is interactive.")
    print(f"EN: {sentence}\nDE: {translation.text}")
    if translation.unknown:
        print("not in the vocabulary (read as <unk>):", ", ".join(translation.unknown))
    fig = plot_decoding(translation, step)
    display(fig)
    plt.close(fig)
    print("\n".join(describe_steps(translation)))
    return None

"""E10.2 Parts 3 and 4: BLEU against sentence length as a curve (the paper's Figure 2) and its
chart. Each usual mistake is named, partial answers get partial points, the library's code
earns nothing, and the handout's stored answers are the grader's."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
import sacrebleu
from helpers import ROOT, judged_by_grader, notebook_functions

from course_utils.checks import e10_2 as checks
from course_utils.checks.e10_2 import bleu_curve as part
from course_utils.checks.e10_2 import hidden

SOLUTION = ROOT / "solutions" / "E10.2-vanilla-vs-attention.ipynb"
RIGHT_LENGTHS = [int(n) for n in part.KNOWN["right"][0]]  # a copy: not the check's own data


def curve(strict=False, half_open=False, strict_min=False, no_min=False, only_present=False,
          average=False, fixed=None, descending=False, late_start=False, short_range=False):
    """A student's ``bleu_curve``, right unless told to make one mistake."""
    def bleu_curve(hyps, refs, lengths, window, min_sentences):
        if fixed:
            window, min_sentences = fixed
        out = {}
        for centre in range(min(lengths), max(lengths) + (not short_range)):
            if only_present and centre not in lengths:
                continue
            top = centre + window - (strict or half_open)
            bottom = centre - window + (strict or late_start)
            chosen = [i for i, n in enumerate(lengths) if bottom <= n <= top]
            if not chosen or (not no_min and (len(chosen) <= min_sentences if strict_min
                                              else len(chosen) < min_sentences)):
                continue
            if average:
                out[centre] = float(np.mean([sacrebleu.sentence_bleu(hyps[i], [refs[i]]).score
                                             for i in chosen]))
            else:
                out[centre] = sacrebleu.corpus_bleu([hyps[i] for i in chosen],
                                                    [[refs[i] for i in chosen]]).score
        return dict(reversed(out.items())) if descending else out
    return bleu_curve


def test_the_curve_is_corpus_bleu_over_each_window():
    """The lesson's definition: window 0 is BLEU per exact length; a window wider than the
    lengths' range pools every sentence at every point; a point needs min_sentences."""
    hyps, refs, lengths = part._cases()
    exact = hidden.bleu_curve(hyps, refs, lengths, 0, 1)
    assert sorted(exact) == sorted(set(lengths))
    for n, value in exact.items():
        chosen = [i for i, k in enumerate(lengths) if k == n]
        assert value == sacrebleu.corpus_bleu([hyps[i] for i in chosen],
                                              [[refs[i] for i in chosen]]).score
    everything = sacrebleu.corpus_bleu(hyps, [refs]).score
    wide = hidden.bleu_curve(hyps, refs, lengths, max(lengths), len(lengths))
    assert list(wide) == list(range(min(lengths), max(lengths) + 1))
    assert all(np.isclose(v, everything) for v in wide.values())
    assert hidden.bleu_curve(hyps, refs, lengths, 0, 2) == {
        n: v for n, v in exact.items() if lengths.count(n) >= 2}
    with pytest.raises(ValueError, match="mistake must be one of"):
        hidden.bleu_curve(hyps, refs, lengths, 1, 1, mistake="typo")


def test_the_handouts_stored_answers_are_the_graders():
    hyps, refs, lengths = part._cases()
    for call, (window, least) in enumerate(part.CALLS):
        assert part.KNOWN["right"][call] == hidden.bleu_curve(hyps, refs, lengths, window,
                                                                    least)
    assert set(part.MISTAKES) == set(hidden.MISTAKES) == set(part.KNOWN) - {"right"}
    for mistake in part.MISTAKES:  # each differs from the right curve on the fixed case
        stored = part.KNOWN[mistake][0]
        assert stored == hidden.bleu_curve(hyps, refs, lengths, *part.CALLS[0],
                                                 mistake=mistake)
        assert stored != part.KNOWN["right"][0], mistake


@pytest.mark.parametrize(
    "student, points, expected",
    [
        (curve(), 4, "sliding window"),
        (curve(strict=True), 0, "includes both of its ends"),
        (curve(half_open=True), 0, "stops one short of its upper end"),
        (curve(late_start=True), 0, "the window starts one too late"),
        (curve(short_range=True), 0, "should have points at lengths [3, 4, 5"),
        (curve(strict_min=True), 0, "exactly `min_sentences` sentences is enough"),
        (curve(no_min=True), 0, "gets no point: leave it out"),
        (curve(only_present=True), 0, "also at lengths no sentence has exactly"),
        (curve(average=True), 0, "BLEU is a corpus statistic"),
        (curve(fixed=(2, 20)), 0, "your curve is empty; it should have 17 points"),
        (curve(fixed=(2, 3)), 2, "right for window=2, min_sentences=3, but not for window=1"),
        (curve(descending=True), 3, "not in increasing order"),
        (lambda h, r, n, w, m: [1, 2], 0, "must return a dict {length: BLEU}; got list"),
        (lambda h, r, n, w, m: {"short": 1.0}, 0, "keys are lengths, whole numbers"),
        (lambda h, r, n, w, m: {3: sacrebleu.corpus_bleu(h, [r])}, 0,
         "sacreBLEU BLEUScore object: return its `.score`"),
        (lambda h, r, n, w, m: dict.fromkeys(RIGHT_LENGTHS, 50.0), 0,
         "BLEU is off at length(s) [3, 4"),
        (lambda h, r, n, w, m: {3: 1.0, 4: 2.0}, 0, "should have points at lengths [3, 4, 5"),
    ],
)
def test_curve_mistakes_are_named_with_their_points(student, points, expected):
    result = checks.check_bleu_curve(student)
    assert result.points == points and expected in result.message, result
    graded = judged_by_grader(checks.check_bleu_curve, student, seed=11)
    assert graded.points == points, graded  # on fresh sentences, the same verdict


def test_a_crash_names_the_input_the_student_was_given():
    def crashes(h, r, n, w, m):
        return {k: sacrebleu.corpus_bleu([h[k]], [[r[k]]]).score for k in range(min(n), max(n))}

    result = checks.check_bleu_curve(crashes)
    assert result.points == 0 and "raised IndexError" in result.message
    assert "when given 18 sentences of 3 to 24 tokens, window=2, min_sentences=3" in \
        result.message


def test_scoring_handed_to_the_librarys_metrics_scores_zero():
    from course_utils import metrics

    def bleu_curve(hypotheses, references, source_lengths, window, min_sentences):
        out = {}
        for length in range(min(source_lengths), max(source_lengths) + 1):
            near = [i for i, n in enumerate(source_lengths) if abs(n - length) <= window]
            if len(near) >= min_sentences:
                out[length] = metrics.corpus_bleu([hypotheses[i] for i in near],
                                                  [references[i] for i in near]).score
        return out

    result = checks.check_bleu_curve(bleu_curve)
    assert result.points == 0 and "course_utils.metrics" in result.message, result.message
    assert judged_by_grader(checks.check_bleu_curve, bleu_curve).points == 0


def test_the_checks_stored_curves_read_from_its_module_score_zero():
    from course_utils.checks.e10_2.bleu_curve import CALLS, KNOWN

    def bleu_curve(hypotheses, references, source_lengths, window, min_sentences):
        return dict(KNOWN["right"][CALLS.index((window, min_sentences))])

    result = checks.check_bleu_curve(bleu_curve)
    assert result.points == 0 and "course_utils.checks.e10_2.bleu_curve." in result.message, result
    right, calls = KNOWN["right"], {(2, 3): 0, (1, 2): 1}

    def one_level_down(hypotheses, references, source_lengths, window, min_sentences):
        return dict(right[calls[window, min_sentences]])

    result = checks.check_bleu_curve(one_level_down)
    assert result.points == 0 and "KNOWN`'s data" in result.message, result
    assert judged_by_grader(checks.check_bleu_curve, one_level_down).points == 0


def test_an_attribute_named_like_a_library_import_is_not_a_use_of_it():
    # the notebook imports course_utils.metrics.corpus_bleu; sacrebleu.corpus_bleu in the
    # student's function is sacrebleu's, not the library's
    namespace = dict(notebook_functions(SOLUTION))
    from course_utils.metrics import corpus_bleu

    namespace["corpus_bleu"] = corpus_bleu
    honest = type(namespace["bleu_curve"])(namespace["bleu_curve"].__code__, namespace)
    assert checks.check_bleu_curve(honest).passed


def test_a_recited_answer_passes_the_fixed_case_only_and_the_handout_names_mistakes(
        monkeypatch):
    """A handout has no checks/e10_2/hidden.py: the check runs the fixed case against its
    stored answers, names the known mistakes there and says the grader adds fresh sentences.
    A function that recites the stored answers fails once graded."""
    pasted = {call: dict(curve) for call, curve in zip(part.CALLS, part.KNOWN["right"])}

    def recited(h, r, n, window, least):  # the stored numbers, pasted
        return dict(pasted[(window, least)])

    assert checks.check_bleu_curve(recited).passed
    assert judged_by_grader(checks.check_bleu_curve, recited, seed=7).points == 0
    monkeypatch.setattr(part, "HIDDEN", None)
    result = checks.check_bleu_curve(notebook_functions(SOLUTION)["bleu_curve"])
    assert result.passed and "when graded, it also runs on fresh sentences" in result.message
    assert checks.check_bleu_curve(recited).passed
    for student, hint in [(curve(strict=True), "includes both of its ends"),
                          (curve(only_present=True), "no sentence has exactly"),
                          (curve(average=True), "corpus statistic")]:
        result = checks.check_bleu_curve(student)
        assert result.points == 0 and hint in result.message, result


def lines(swap=False, positions=False, legend=True, title="BLEU", xlabel="length", models=None,
          scatter=False):
    """A student's ``plot_bleu_curves``, right unless told otherwise."""
    def plot_bleu_curves(curves):
        fig, ax = plt.subplots()
        for name in list(curves)[:models]:
            xs, ys = list(curves[name]), list(curves[name].values())
            if positions:
                xs = list(range(len(ys)))
            if swap:
                xs, ys = ys, xs
            if scatter:
                ax.scatter(xs, ys, label=name)
            else:
                ax.plot(xs, ys, "o-", label=name)
        ax.set(title=title, xlabel=xlabel, ylabel="BLEU")
        if legend:
            ax.legend()
        return fig
    return plot_bleu_curves


@pytest.mark.parametrize(
    "student, points, expected",
    [
        (lines(), 3, "a line per model"),
        (lines(swap=True), 0, "BLEU on the x axis and the lengths on the y axis"),
        (lines(positions=True), 0, "x values are 0, 1, 2, ... (the points' positions)"),
        (lines(models=1), 0, "expected one labelled line per model (2"),
        (lines(scatter=True), 0, "points or bars draw no line: use `ax.plot`"),
        (lines(title="  "), 2, "the chart needs a title"),
        (lines(legend=False), 2, "the chart needs a legend naming the models"),
        (lines(title="", xlabel=""), 2, "needs a title and an x-axis label"),
        (lambda curves: None, 0, "must return the matplotlib Figure"),
    ],
)
def test_plot_mistakes_are_named_with_their_points(student, points, expected):
    result = checks.check_plot_curves(student)
    assert result.points == points and expected in result.message, result
    # the grader judges the figure from its description as data, to the same verdict
    assert judged_by_grader(checks.check_plot_curves, student).message == result.message


def test_a_chart_handed_to_the_librarys_plotting_scores_zero():
    from course_utils import plotting

    def plot_bleu_curves(curves):
        histories = {name: type("H", (), {"epoch": list(c), "train_loss": list(c.values()),
                                          "val_loss": list(c.values())})()
                     for name, c in curves.items()}
        return plotting.plot_loss_curves(histories)

    result = checks.check_plot_curves(plot_bleu_curves)
    assert result.points == 0 and "course_utils.plotting" in result.message, result.message

"""BLEU by length with bootstrap intervals: the point values are the corpus scores, the
intervals behave as intervals should, and bad input is refused by name."""

import numpy as np
import pytest
import sacrebleu
from sacrebleu.metrics import BLEU

from course_utils.metrics import (
    Interval,
    _sentence_statistics,
    bleu_by_length,
    compare_bleu,
    compare_by_length,
    length_buckets,
)

WORDS = "a man in a blue shirt rides a bike down a busy street while two small dogs run".split()


def corpus(n=120, noise=0.3, seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, 30, n).tolist()
    refs = [" ".join(WORDS[(i + k) % len(WORDS)] for k in range(m)) for i, m in enumerate(lengths)]
    hyps = [" ".join(w if rng.random() > noise else "zz" for w in r.split()) for r in refs]
    return hyps, refs, lengths


def test_summed_sentence_statistics_give_sacrebleus_corpus_score():
    hyps, refs, _ = corpus()
    bleu = BLEU(lowercase=True)
    summed = _sentence_statistics(bleu, hyps, refs).sum(0)
    score = bleu._compute_score_from_stats([int(x) for x in summed]).score
    assert score == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs], lowercase=True).score)


def test_point_values_are_the_bucket_corpus_scores_and_intervals_contain_them():
    hyps, refs, lengths = corpus()
    worse = corpus(noise=0.5)[0]
    result = compare_by_length({"worse": worse, "better": hyps}, refs, lengths)
    plain = bleu_by_length(hyps, refs, lengths)
    for bucket, expected in plain.items():
        got = result.bleu["better"][bucket]
        assert got.value == pytest.approx(expected.score)
        assert got.low <= got.value <= got.high and got.low < got.high
        assert result.counts[bucket] == expected.n
        gain = result.gain["better"][bucket]
        assert gain.value == pytest.approx(got.value - result.bleu["worse"][bucket].value)
    growth = result.gain_growth["better"]
    assert growth.value == pytest.approx(result.gain["better"]["> 20"].value
                                         - result.gain["better"]["< 10"].value)
    assert growth.low <= growth.value <= growth.high
    assert result.baseline == "worse" and "worse" not in result.gain  # no gain over itself
    assert "95% bootstrap intervals" in str(result)


def test_a_model_against_itself_gains_exactly_zero_and_a_clear_gain_excludes_zero():
    hyps, refs, lengths = corpus(300)
    same = compare_by_length({"a": hyps, "b": list(hyps)}, refs, lengths)
    assert all(g == Interval(0.0, 0.0, 0.0) for g in same.gain["b"].values())
    garbled = corpus(300, noise=0.9)[0]
    clear = compare_by_length({"bad": garbled, "good": hyps}, refs, lengths)
    assert all(g.excludes(0.0) and g.value > 0 for g in clear.gain["good"].values())


def test_fewer_sentences_give_wider_intervals_and_a_seed_repeats_them():
    hyps, refs, lengths = corpus(400)
    big = compare_by_length({"m": hyps}, refs, lengths)
    small = compare_by_length({"m": hyps[:60]}, refs[:60], lengths[:60])
    width = lambda r: r.bleu["m"]["10-20"].high - r.bleu["m"]["10-20"].low  # noqa: E731
    assert width(small) > width(big)
    assert compare_by_length({"m": hyps}, refs, lengths, seed=3) == \
        compare_by_length({"m": hyps}, refs, lengths, seed=3)


def test_an_empty_bucket_is_none_not_a_crash():
    hyps, refs, lengths = corpus()
    short = [i for i, n in enumerate(lengths) if n < 10]
    result = compare_by_length({"a": [hyps[i] for i in short], "b": [hyps[i] for i in short]},
                               [refs[i] for i in short], [lengths[i] for i in short])
    assert result.bleu["a"]["> 20"] is None and result.gain["b"]["> 20"] is None
    assert result.gain_growth["b"] is None
    assert "-" in str(result)


def test_buckets_of_any_width_reach_the_longest_inputs():
    """Notebook 4's long inputs: buckets of 10 tokens to 60 and beyond, each scored alone."""
    hyps, refs, lengths = corpus(300)
    lengths = [n * 4 for n in lengths]  # sources up to about 100 tokens
    buckets = length_buckets(10, 60)
    assert [b[0] for b in buckets] == ["0-9", "10-19", "20-29", "30-39", "40-49", "50-59", "60+"]
    result = compare_by_length({"a": hyps, "b": hyps}, refs, lengths, buckets=buckets)
    assert list(result.counts) == [b[0] for b in buckets]
    assert sum(result.counts.values()) == len(hyps)
    for name, shortest, longest in buckets:
        chosen = [i for i, n in enumerate(lengths) if shortest <= n <= longest]
        if chosen:
            alone = bleu_by_length([hyps[i] for i in chosen], [refs[i] for i in chosen],
                                   [5] * len(chosen))["< 10"]
            assert result.bleu["a"][name].value == pytest.approx(alone.score)


@pytest.mark.parametrize("buckets, message", [
    ((), "at least one"),
    ((("a", 0, 9), ("a", 10, 19)), "names must differ"),
    ((("a", 0, 9), ("b", 5, 19)), "not overlap"),
    ((("a", 9, 0),), "shortest <= longest"),
])
def test_bad_buckets_are_refused_by_name(buckets, message):
    with pytest.raises(ValueError, match=message):
        compare_by_length({"a": ["x y"]}, ["x y"], [2], buckets=buckets)
    with pytest.raises(ValueError, match="multiple"):
        length_buckets(10, 65)


@pytest.mark.parametrize("kwargs, message", [
    ({"hypotheses": {}}, "at least one model"),
    ({"hypotheses": {"a": ["x"]}}, "model 'a' has 1 hypotheses for 2 references"),
    ({"source_lengths": [3]}, "1 source lengths for 2 references"),
    ({"confidence": 95}, "confidence must be between 0 and 1"),
    ({"resamples": 0}, "resamples must be at least 1"),
    ({"baseline": "c"}, "baseline 'c' is not one of the models"),
])
def test_bad_input_is_refused_by_name(kwargs, message):
    args = {"hypotheses": {"a": ["x y", "z"]}, "references": ["x y", "z"],
            "source_lengths": [2, 1], **kwargs}
    with pytest.raises(ValueError, match=message):
        compare_by_length(args.pop("hypotheses"), args.pop("references"),
                          args.pop("source_lengths"), **args)


# ------------------------------------------------------------- overall BLEU, paired bootstrap


def test_compare_bleu_points_are_sacrebleus_corpus_scores_and_intervals_contain_them():
    hyps, refs, _ = corpus(n=200)
    worse = corpus(n=200, noise=0.5)[0]
    result = compare_bleu({"worse": worse, "better": hyps}, refs, resamples=300)
    for name, outputs in [("worse", worse), ("better", hyps)]:
        expected = sacrebleu.corpus_bleu(outputs, [refs]).score
        assert result.bleu[name].value == pytest.approx(expected)
        assert result.bleu[name].low <= expected <= result.bleu[name].high
    gain = result.gain["better"]
    assert gain.value == pytest.approx(result.bleu["better"].value - result.bleu["worse"].value)
    assert gain.excludes(0) and gain.low > 0  # clearly better on every resample
    assert "worse" not in result.gain and "gain over worse" in str(result)


def test_compare_bleu_identical_models_gain_exactly_zero_and_pairing_narrows_the_gain():
    hyps, refs, _ = corpus(n=200)
    same = compare_bleu({"a": hyps, "b": list(hyps)}, refs, resamples=200)
    assert (same.gain["b"].low, same.gain["b"].value, same.gain["b"].high) == (0, 0, 0)
    # a slightly noisier copy: each score's interval is wide, the paired gain's much narrower
    other = [h if i % 10 else "zz " + h for i, h in enumerate(hyps)]
    close = compare_bleu({"a": hyps, "b": other}, refs, resamples=300)
    width = close.bleu["a"].high - close.bleu["a"].low
    assert close.gain["b"].high - close.gain["b"].low < width / 2


def test_compare_bleu_intervals_shrink_with_more_sentences():
    small = compare_bleu({"m": corpus(n=60)[0]}, corpus(n=60)[1], resamples=300)
    big = compare_bleu({"m": corpus(n=600)[0]}, corpus(n=600)[1], resamples=300)
    width = lambda r: r.bleu["m"].high - r.bleu["m"].low  # noqa: E731
    assert width(big) < width(small)


@pytest.mark.parametrize("kwargs, message", [
    (dict(hypotheses={}), "at least one model"),
    (dict(hypotheses={"m": ["a"]}), "1 hypotheses for 2 references"),
    (dict(baseline="x"), "baseline 'x'"),
    (dict(confidence=95), "between 0 and 1"),
    (dict(resamples=0), "at least 1"),
])
def test_compare_bleu_refuses_bad_input_by_name(kwargs, message):
    args = dict(hypotheses={"m": ["a b", "c d"]}, references=["a b", "c d"])
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        compare_bleu(args.pop("hypotheses"), args.pop("references"), **args)

"""benchmarks/score_comparison_results.py: notebook 6's measurements become docs tables, and
smoke-scale or malformed measurements are refused."""

import json
import sys

from helpers import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import score_comparison_results as script  # noqa: E402

SCORES = ("additive", "dot", "general", "scaled_dot")


def record(quick=False):
    runs = [{"score": s, "order": o, "seed": seed, "steps_to_99": None if s == "dot" else 63 * 3,
             "exact": 0.5 + 0.1 * seed, "alignment": 0.4, "entropy": 0.8, "seconds": 20.0,
             "near": {"-1": 0.2, "0": 0.5, "1": 0.2}}
            for o in ("bahdanau", "luong") for s in SCORES for seed in (0, 1, 2)]
    ablation = [{"seed": seed, "exact": 0.9, "alignment": 0.7,
                 "near": {"-1": 0.01, "0": 0.7, "1": 0.25}} for seed in (0, 1, 2)]
    interval = {"value": 12.0, "low": 11.0, "high": 13.0}
    return {"measured": "2026-11-23", "quick": quick, "device": "cpu", "torch": "2.13.0+cpu",
            "threads": 2,
            "reversal": {"config": "scores", "steps_per_epoch": 63, "epochs": 8,
                         "seeds": [0, 1, 2], "uniform_entropy": 2.5, "runs": runs,
                         "ablation": ablation},
            "step_cost": {"batch": 64, "size": 256, "source_lengths": [8, 16],
                          "microseconds": {s: [100.0, 200.0] if s == "additive" else [25.0, 40.0]
                                           for s in SCORES}},
            "multi30k": {"config": "cpu-scores", "sentences": 10000, "epochs": 3,
                         "minutes": {"additive": 1.5, "general": 1.2},
                         "signature": "nrefs:1|case:lc", "test_sentences": 1000,
                         "bleu": {"additive": interval, "general": interval},
                         "gain": {"general": {"value": 0.4, "low": -0.5, "high": 1.3}}}}


def test_tables_hold_the_measurements_and_other_sections_survive(tmp_path):
    path, out = tmp_path / "results.json", tmp_path / "results.md"
    path.write_text(json.dumps(record()))
    out.write_text("<!-- begin multi30k -->\nnotebook 4's tables\n<!-- end multi30k -->\n")
    assert script.main(["--results", str(path), "--out", str(out)]) == 0
    text = out.read_text()
    assert "notebook 4's tables" in text  # another script's section is kept
    assert "| bahdanau | dot | -, -, - | 60.0 [50.0, 70.0] | 0.40 | 0.80 | 20 |" in text
    assert "| bahdanau | additive | 189, 189, 189 |" in text
    assert "| forward only | 90.0 | 0.70 | 0.01 [0.01, 0.01, 0.01] |" in text
    assert "| 8 | 100 | 25 | 25 | 25 | 4.0x |" in text
    assert "| general | 12.0 [11.0, 13.0] | +0.4 [-0.5, +1.3] | 1.2 |" in text
    # the measurements are kept beside the page, for tracing its numbers (test_prose_numbers)
    assert json.loads((tmp_path / "score_comparison.json").read_text()) == record()


def test_smoke_scale_missing_and_malformed_measurements_are_refused(tmp_path, capsys):
    path, out = tmp_path / "results.json", tmp_path / "results.md"
    assert script.main(["--results", str(path), "--out", str(out)]) == 2
    assert "run notebook 6" in capsys.readouterr().err
    path.write_text(json.dumps(record(quick=True)))
    assert script.main(["--results", str(path), "--out", str(out)]) == 2
    assert "smoke-test run" in capsys.readouterr().err
    path.write_text(json.dumps({"quick": False, "reversal": {}}))
    assert script.main(["--results", str(path), "--out", str(out)]) == 2
    assert "is not notebook 6's measurements" in capsys.readouterr().err
    assert not out.exists()  # nothing written on refusal

"""Write notebook 6's measurements into their section of docs/results.md.

    # 1. run notebook 6 in its real configuration; it saves its measurements in
    #    notebooks/runs/score-comparison/results.json
    MULTI30K_DIR=... course-execute notebooks/06_additive_vs_dot_product.ipynb
    # 2. turn the measurements into tables
    python benchmarks/score_comparison_results.py

Nothing is re-measured here: every number is the notebook's, and the section says when and where
it was measured. Smoke-scale measurements (COURSE_QUICK) are refused.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from course_utils.checkpoints import display_path  # noqa: E402
from course_utils.files import update_section, write_text_atomically  # noqa: E402
from course_utils.metrics import Interval  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "notebooks" / "runs" / "score-comparison" / "results.json"
SCORES = ("additive", "dot", "general", "scaled_dot")
ORDERS = ("bahdanau", "luong")


def _steps(values: list[int | None]) -> str:
    return ", ".join("-" if v is None else str(v) for v in values)


def report(record: dict) -> str:
    rev, cost, mt = record["reversal"], record["step_cost"], record["multi30k"]
    where = (f"{record['device']}, {record['threads']} threads, PyTorch {record['torch']}")
    lines = [
        "# Results: additive against multiplicative attention (notebook 6)",
        "",
        f"Measured {record['measured']} by `notebooks/06_additive_vs_dot_product.ipynb` ({where}); "
        "written by `python benchmarks/score_comparison_results.py`.",
        "",
        "## Reversal: four scores, two orders, three seeds",
        "",
        f"Configuration `{rev['config']}`: every model has the same encoder, a decoder state of "
        f"2n for every score, {rev['epochs']} epochs of {rev['steps_per_epoch']} steps, seeds "
        f"{', '.join(map(str, rev['seeds']))}. Steps to 99%: the first epoch end with at least "
        "99% of the held-out sequences reversed perfectly, per seed (-: not reached). Exact match: "
        "mean over seeds [lowest, highest]. Alignment (mean weight on the right source position) "
        f"and entropy (nats; uniform attention: {rev['uniform_entropy']:.2f}) are means over "
        "seeds.",
        "",
        "| order | score | steps to 99% | exact match (%) | alignment | entropy | s per model |",
        "|---|---|---|---|---|---|---|",
    ]
    runs = rev["runs"]
    for order in ORDERS:
        for score in SCORES:
            mine = [r for r in runs if r["order"] == order and r["score"] == score]
            exact = [100 * r["exact"] for r in mine]
            lines.append(
                f"| {order} | {score} | {_steps([r['steps_to_99'] for r in mine])} | "
                f"{np.mean(exact):.1f} [{min(exact):.1f}, {max(exact):.1f}] | "
                f"{np.mean([r['alignment'] for r in mine]):.2f} | "
                f"{np.mean([r['entropy'] for r in mine]):.2f} | "
                f"{np.mean([r['seconds'] for r in mine]):.0f} |")
    lines += [
        "",
        "## Ablation: a forward-only encoder (additive score, Bahdanau order)",
        "",
        "Mean weight per output step on the right source position j* and on its neighbours "
        "(means over the held-out set and the three seeds; per seed in brackets).",
        "",
        "| encoder | exact match (%) | alignment | weight on j*-1 | on j* | on j*+1 |",
        "|---|---|---|---|---|---|",
    ]
    bidirectional = [r for r in runs if r["order"] == "bahdanau" and r["score"] == "additive"]
    for name, group in [("bidirectional", bidirectional), ("forward only", rev["ablation"])]:
        near = {k: [r["near"][k] for r in group] for k in ("-1", "0", "1")}
        cells = [f"{np.mean(v):.2f} [{', '.join(f'{x:.2f}' for x in v)}]" for v in near.values()]
        lines.append(f"| {name} | {np.mean([100 * r['exact'] for r in group]):.1f} | "
                     f"{np.mean([r['alignment'] for r in group]):.2f} | " + " | ".join(cells)
                     + " |")
    lines += [
        "",
        f"## One attention step: batch {cost['batch']}, states and keys of {cost['size']}",
        "",
        "Median time of one step (energies, softmax, context; keys computed beforehand), "
        "`torch.utils.benchmark`, in microseconds.",
        "",
        "| source length | " + " | ".join(SCORES) + " | additive / dot |",
        "|---|" + "---|" * (len(SCORES) + 1),
    ]
    us = cost["microseconds"]
    for k, length in enumerate(cost["source_lengths"]):
        lines.append(f"| {length} | " + " | ".join(f"{us[s][k]:.0f}" for s in SCORES)
                     + f" | {us['additive'][k] / us['dot'][k]:.1f}x |")
    lines += [
        "",
        "## Multi30k on a small budget",
        "",
        f"Configuration `{mt['config']}`: {mt['sentences']:,} training sentences, "
        f"{mt['epochs']} epoch(s), one seed per score; BLEU on test_2016_flickr "
        f"({mt['test_sentences']} sentences, greedy) with 95% paired-bootstrap intervals over "
        f"the test sentences (`course_utils.metrics.compare_bleu`). Signature: "
        f"`{mt['signature']}`.",
        "",
        "| score | BLEU | gain over additive | training (min) |",
        "|---|---|---|---|",
    ]
    for score, value in mt["bleu"].items():
        gain = Interval(**mt["gain"][score]).format(sign=True) if score in mt["gain"] else "-"
        lines.append(f"| {score} | {Interval(**value).format()} | {gain} | "
                     f"{mt['minutes'][score]:.1f} |")
    lines += ["", "The intervals cover the choice of test sentences, not the seed of training: "
              "with one seed per score, a gain whose interval leaves out 0 is still not evidence "
              "that one score trains better than another."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=DEFAULT,
                        help=f"notebook 6's measurements (default: {display_path(DEFAULT)})")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results.md")
    args = parser.parse_args(argv)
    if not args.results.is_file():
        print(f"error: no measurements at {display_path(args.results)}: run notebook 6 in its "
              "real configuration first", file=sys.stderr)
        return 2
    try:
        record = json.loads(args.results.read_text(encoding="utf-8"))
        if record.get("quick"):
            print("error: these measurements come from a smoke-test run (COURSE_QUICK); run "
                  "notebook 6 without it", file=sys.stderr)
            return 2
        text = report(record)
    except (ValueError, KeyError, TypeError) as error:
        print(f"error: {display_path(args.results)} is not notebook 6's measurements "
              f"({type(error).__name__}: {error})", file=sys.stderr)
        return 2
    update_section(args.out, "score-comparison", text)
    # the measurements beside the page, so that its every number can be traced to them
    kept = args.out.with_name("score_comparison.json")
    write_text_atomically(kept, json.dumps(record, indent=1) + "\n")
    print(text)
    print(f"wrote {display_path(args.out)} and {display_path(kept)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

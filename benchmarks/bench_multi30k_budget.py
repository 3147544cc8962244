"""Notebook 4's training budget: the previous CPU configuration against today's, in one run.

    MULTI30K_DIR=... python benchmarks/bench_multi30k_budget.py   # ~45 min on a 2-core CPU
    python benchmarks/bench_multi30k_budget.py --quick             # seconds, on the sample

Both configurations train notebook 4's two models (attention, then vanilla) on the same data
with the same seeds, one configuration after the other in this process, and score each model
with greedy decoding on test_2016_flickr (sacreBLEU, same signature as notebook 4):

- **before**: the shallow output layer (logits straight from ``[s_i; c_i; y_{i-1}]`` onto the
  German vocabulary), the output layer run at every target slot including padding, and a
  greedy exact-match decoding of the validation set after every epoch; 5 epochs.
- **after**: ``course_utils.translation_setup.CPU`` as notebook 4 runs it: the paper's deep output
  layer (maxout of width ``l``, then the vocabulary projection), the output layer only at real
  target positions, no exact match.

Reported: minutes per model and per epoch (validation included, as notebook 4 sees it),
training tokens per second, BLEU, and the ratio of the two configurations' wall times. The
figures go to ``docs/benchmarks.md`` (section ``multi30k-budget``). ``--only after`` runs one
side (to try a configuration), without writing the report.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]

from report_page import measured_with, publish  # noqa: E402

from course_utils.config import get_device  # noqa: E402
from course_utils.models import build_model  # noqa: E402
from course_utils.training import History, seed_everything, train  # noqa: E402
from course_utils.translation import evaluate_bleu  # noqa: E402
from course_utils.translation_setup import CPU, QUICK, Multi30kConfig, prepare_data  # noqa: E402

SPLIT = "test_2016_flickr"
GPU_NOTE = ("GPU: not measured in this run (no GPU was available). The GPU configuration "
            "(`translation_setup.GPU`) uses the same model, with l = 256 for its hidden size of "
            "512.")


def configurations(quick: bool) -> dict[str, Multi30kConfig]:
    """``{label: config}``: the previous CPU budget and today's."""
    after = QUICK if quick else CPU
    before = after.replace(name=f"{after.name}-before", maxout_dim=0,
                           epochs=after.train.epochs if quick else max(after.train.epochs, 5),
                           measure_exact_match=True, skip_padding=False)
    return {"after": after, "before": before}


@dataclass
class Measured:
    label: str
    model: str
    params: int
    history: History
    tokens_per_epoch: int
    bleu: float

    @property
    def minutes(self) -> float:
        return self.history.seconds[-1] / 60

    @property
    def epoch_minutes(self) -> list[float]:
        s = self.history.seconds
        return [(b - a) / 60 for a, b in zip([0.0, *s[:-1]], s)]

    @property
    def tokens_per_second(self) -> float:
        return self.tokens_per_epoch * len(self.history.epoch) / self.history.seconds[-1]


def run(label: str, config: Multi30kConfig, data, device) -> list[Measured]:
    tokens = sum(len(t) + 1 for _, t in data.pairs["train"])  # + EOS
    results = []
    for name in ("attention", "vanilla"):
        seed_everything(0)
        model = build_model(config.model_config(data.src_vocab, data.tgt_vocab,
                                                attention=name == "attention"))
        history = train(model, data.pairs["train"], data.pairs["val"], config, device=device,
                        description=f"{label}: {name}")
        bleu = evaluate_bleu(model, data, SPLIT, device=device).bleu.score
        measured = Measured(label, name, sum(p.numel() for p in model.parameters()), history,
                            tokens, bleu)
        print(f"{label:6s} {name:9s} {measured.minutes:5.1f} min "
              f"({', '.join(f'{m:.2f}' for m in measured.epoch_minutes)} per epoch), "
              f"{measured.tokens_per_second:,.0f} tokens/s, val loss "
              f"{history.val_loss[-1]:.3f}, BLEU {bleu:.1f}", flush=True)
        results.append(measured)
    return results


def report(results: dict[str, list[Measured]], configs, vocab_size: int, device,
           quick: bool) -> str:
    before, after = results["before"], results["after"]
    total = {label: sum(m.minutes for m in rows) for label, rows in results.items()}
    ratio = total["after"] / total["before"]
    bleu = {(m.label, m.model): m.bleu for rows in results.values() for m in rows}
    gain = bleu["after", "attention"] - bleu["after", "vanilla"]
    a_cfg, b_cfg = configs["after"], configs["before"]
    lines = [
        "## Notebook 4's training budget",
        "",
        f"{measured_with(__file__, quick)} on {device} "
        f"({platform.machine()}, {torch.get_num_threads()} threads), PyTorch {torch.__version__}. "
        "Both configurations ran in this process, one after the other, on the same data and "
        "seeds; times include each epoch's validation, as notebook 4 sees them.",
        "",
        f"- **before**: output layer straight from `[s_i; c_i; y_(i-1)]` to the "
        f"{vocab_size:,}-word German vocabulary, run at every target slot "
        f"(padding too), greedy exact match after every epoch; {b_cfg.train.epochs} epochs.",
        f"- **after** (`translation_setup.CPU`): the paper's deep output layer (maxout to "
        f"l = {a_cfg.model.maxout_dim}, then the vocabulary projection), run only at real target "
        f"positions, no exact match; {a_cfg.train.epochs} epochs.",
        "",
        "| configuration | model | parameters | epochs | minutes | minutes per epoch "
        "| training tokens/s | BLEU (test_2016_flickr, greedy) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for rows in (before, after):
        for m in rows:
            lines.append(
                f"| {m.label} | {m.model} | {m.params / 1e6:.2f}M | {len(m.history.epoch)} "
                f"| {m.minutes:.1f} | {', '.join(f'{x:.2f}' for x in m.epoch_minutes)} "
                f"| {m.tokens_per_second:,.0f} | {m.bleu:.1f} |")
    speed = {m.model: m.tokens_per_second for m in after}
    speed_before = {m.model: m.tokens_per_second for m in before}
    lines += [
        "",
        f"Both models: {total['before']:.1f} min before, {total['after']:.1f} min after: "
        f"**{ratio:.2f}x** the wall time ({1 / ratio:.1f}x faster). Training tokens per second: "
        + ", ".join(f"{k} {speed[k] / speed_before[k]:.1f}x" for k in ("attention", "vanilla"))
        + ".",
        "",
        "Against the targets:",
        "",
        f"- both models in at most 0.5x the previous wall time: {ratio:.2f}x, "
        + ("reached." if ratio <= 0.5 else f"**not reached** (short by {ratio / 0.5:.2f}x)."),
        f"- attention at least 28 BLEU: {bleu['after', 'attention']:.1f}, "
        + ("reached." if bleu["after", "attention"] >= 28 else "**not reached**."),
        f"- attention at least 5 BLEU above vanilla: {gain:+.1f}, "
        + ("reached." if gain >= 5 else "**not reached**."),
    ]
    if device.type != "cuda":
        lines += ["", GPU_NOTE]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="the committed sample and the smoke-test sizes (seconds)")
    parser.add_argument("--only", choices=("before", "after"),
                        help="run one configuration; no report is written")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    device = get_device()
    configs = configurations(args.quick)
    data = prepare_data(configs["after"], splits=("train", "val", SPLIT))
    print(f"{len(data.pairs['train']):,} training pairs, {len(data.tgt_vocab):,} German tokens; "
          f"device {device}, {torch.get_num_threads()} threads", flush=True)
    results = {}
    for label in ("after", "before"):  # the new one first: its BLEU is known soonest
        if args.only and label != args.only:
            continue
        results[label] = run(label, configs[label], data, device)
    if args.json:
        args.json.write_text(json.dumps(
            {label: [dict(model=m.model, minutes=m.minutes, epoch_minutes=m.epoch_minutes,
                          tokens_per_second=m.tokens_per_second, bleu=m.bleu, params=m.params)
                     for m in rows] for label, rows in results.items()}, indent=1))
    if args.only:
        return 0
    return publish(args.out, "multi30k-budget",
                   report(results, configs, len(data.tgt_vocab), device, args.quick))


if __name__ == "__main__":
    sys.exit(main())

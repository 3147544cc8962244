"""Benchmarks for the seq2seq machinery, each against a reference in the same run.

    python benchmarks/bench_seq2seq.py            # full run, writes docs/benchmarks.md
    python benchmarks/bench_seq2seq.py --quick    # seconds, for a smoke test

1. Training throughput (target tokens per second): ``course_utils`` (keys once per batch,
   output layer once after the loop at real positions only, length-bucketed batches)
   against the per-step reference (``reference_seq2seq.py``), same model sizes, same data,
   same device. Two model sizes:
   the reversal notebook's, and one the size of a Multi30k model.
2. Greedy decoding of 1,000 sequences: batched against one sequence at a time.
3. Reversal: seconds to 99% exact match on held-out sequences with notebook 3's configuration.

Every figure is measured when the script runs; ratios compare runs made in the same process,
one after the other, because machines are noisy.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from reference_seq2seq import reference_train_epoch, reference_translate  # noqa: E402
from report_page import measured_with, publish  # noqa: E402

from course_utils.config import get_device  # noqa: E402
from course_utils.data import Vocab, iterate_batches, make_batches  # noqa: E402
from course_utils.decoding import greedy_decode_pairs  # noqa: E402
from course_utils.metrics import exact_match  # noqa: E402
from course_utils.models import ModelConfig, build_model  # noqa: E402
from course_utils.reversal import REVERSAL, make_reversal_pairs, reversal_vocab  # noqa: E402
from course_utils.training import TrainConfig, seed_everything, train  # noqa: E402


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def fast_train_epoch(model, pairs, batch_size, device, seed=0, bf16=False):
    """One epoch the way course_utils.training.train runs it (without evaluation)."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    model.train()
    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16)
    for batch in iterate_batches(make_batches(pairs, batch_size, seed=seed), device):
        real = batch.tgt_out != Vocab.pad_id  # the output layer only at real positions
        with autocast:
            logits, _ = model(batch.src, batch.src_lengths, batch.tgt_in, positions=real)
        loss = F.cross_entropy(logits.float(), batch.tgt_out[real])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()


def throughput(name, sizes, n_symbols, n_pairs, lengths, batch_size, device, repeats, bf16=False):
    """Target tokens per second of both implementations; the best of ``repeats`` epochs."""
    vocab = reversal_vocab(n_symbols)
    pairs = make_reversal_pairs(n_pairs, *lengths, vocab, seed=0)
    tokens = sum(len(t) + 1 for _, t in pairs)  # + EOS
    config = ModelConfig(len(vocab), len(vocab), **sizes)
    results = {}
    for label in ("reference", "course_utils"):
        seed_everything(0)
        model = build_model(config).to(device)
        best = float("inf")
        for r in range(repeats + 1):  # the first epoch warms up
            _sync(device)
            start = time.perf_counter()
            if label == "reference":
                optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
                reference_train_epoch(model, pairs, optimizer, batch_size, device, seed=r)
            else:
                fast_train_epoch(model, pairs, batch_size, device, seed=r, bf16=bf16)
            _sync(device)
            if r > 0 or repeats == 0:
                best = min(best, time.perf_counter() - start)
        results[label] = tokens / best
    ratio = results["course_utils"] / results["reference"]
    return {"name": name, "reference": results["reference"], "fast": results["course_utils"],
            "ratio": ratio}


def greedy_speed(n, device, quick):
    vocab = reversal_vocab(REVERSAL.n_symbols)
    pairs = make_reversal_pairs(n, REVERSAL.min_len, REVERSAL.max_len, vocab, seed=3)
    seed_everything(0)
    model = build_model(REVERSAL.model_config(vocab, vocab)).to(device)
    # A briefly trained model, so outputs have realistic lengths and stop at EOS.
    train(model, make_reversal_pairs(2000 if quick else 6000, REVERSAL.min_len, REVERSAL.max_len,
                                     vocab, seed=4),
          pairs[:200], TrainConfig(epochs=1 if quick else 2), device=device, progress=False)
    max_len = REVERSAL.max_len + 5
    _sync(device)
    start = time.perf_counter()
    batched = greedy_decode_pairs(model, pairs, device=device, max_len=max_len)
    _sync(device)
    t_batched = time.perf_counter() - start
    start = time.perf_counter()
    single = [reference_translate(model, source, device, max_len) for source, _ in pairs]
    _sync(device)
    t_single = time.perf_counter() - start
    agree = sum(a == b for a, b in zip(batched.tokens, single)) / n
    return {"n": n, "batched": t_batched, "single": t_single, "ratio": t_single / t_batched,
            "agree": agree, "exact": exact_match(batched, pairs)}


def seconds_to_99(device, quick):
    vocab = reversal_vocab(REVERSAL.n_symbols)
    n_train = 3000 if quick else REVERSAL.n_train
    train_pairs = make_reversal_pairs(n_train, REVERSAL.min_len, REVERSAL.max_len, vocab, seed=1)
    val_pairs = make_reversal_pairs(1000, REVERSAL.min_len, REVERSAL.max_len, vocab, seed=2)
    seed_everything(0)
    model = build_model(REVERSAL.model_config(vocab, vocab))
    start = time.perf_counter()
    config = REVERSAL.replace(epochs=1 if quick else REVERSAL.train.epochs,
                              target_exact_match=0.99)
    history = train(model, train_pairs, val_pairs, config, device=device, progress=False)
    return {"seconds": time.perf_counter() - start, "epochs": history.epoch[-1],
            "exact": history.val_exact_match[-1]}


def run(device: torch.device, quick: bool) -> dict:
    repeats = 0 if quick else 2
    small = dict(embed_dim=32, hidden_dim=96, attention_dim=96,
                 maxout_dim=REVERSAL.model.maxout_dim)
    large = dict(embed_dim=128, hidden_dim=256, attention_dim=256, maxout_dim=128)
    runs = [
        throughput("reversal model (hidden 96, 24 symbols, lengths 5-20)", small, 20,
                   300 if quick else 3000, (5, 20), 64, device, repeats),
        throughput("Multi30k-sized model (hidden 256, 8,000-token vocabulary, lengths 5-30)",
                   large, 7996, 100 if quick else 1000, (5, 30), 64, device, repeats),
    ]
    if device.type == "cuda":
        runs.append(throughput("Multi30k-sized model, bf16 autocast", large, 7996,
                               1000, (5, 30), 128, device, repeats, bf16=True))
    return {
        "device": device,
        "throughput": runs,
        "greedy": greedy_speed(100 if quick else 1000, device, quick),
        "to99": seconds_to_99(device, quick),
    }


def describe_device(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"CPU ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"


def report(results: dict, quick: bool) -> str:
    device = results["device"]
    lines = [
        "## Seq2seq training and decoding",
        "",
        f"{measured_with(__file__, quick)} on {describe_device(device)}, "
        f"PyTorch {torch.__version__}, Python {platform.python_version()}.",
        "Each ratio compares two runs made one after the other in the same process.",
        "",
        "### Training throughput (target tokens per second)",
        "",
        "`course_utils` (keys once per batch, output layer once after the loop and only at real",
        "target positions, length-bucketed batches) against the per-step reference of",
        "`benchmarks/reference_seq2seq.py` (keys and output layer at every step, random",
        "batches). Same model (deep output layer included), same data, same device; best of",
        "the timed epochs after one warm-up epoch. Target: at least 4x on CPU.",
        "",
        "| workload | reference | course_utils | speed-up |",
        "|---|---|---|---|",
    ]
    for r in results["throughput"]:
        lines.append(f"| {r['name']} | {r['reference']:,.0f} | {r['fast']:,.0f} | "
                     f"{r['ratio']:.1f}x |")
    g = results["greedy"]
    lines += [
        "",
        f"### Greedy decoding of {g['n']:,} sequences",
        "",
        "Batched decoding (`greedy_decode_pairs`, default batches of 256; each sequence stops",
        "at its own EOS and leaves the batch) against one sequence at a time (the reference",
        "notebook's accuracy loop), on the same briefly trained reversal model. Target: at",
        "least 20x.",
        "",
        "| one at a time | batched | speed-up | same outputs |",
        "|---|---|---|---|",
        f"| {g['single']:.2f} s | {g['batched']:.2f} s | {g['ratio']:.0f}x | "
        f"{g['agree']:.1%} |",
    ]
    t = results["to99"]
    lines += [
        "",
        "### Reversal: time to 99% held-out exact match",
        "",
        "Notebook 3's configuration, trained until validation exact match reaches 99%",
        "(evaluation after every epoch included in the time).",
        "",
        "| seconds | epochs | exact match reached |",
        "|---|---|---|",
        f"| {t['seconds']:.1f} | {t['epochs']} | {t['exact']:.1%} |",
        "",
        "### Against the targets",
        "",
    ]
    if device.type == "cpu":
        for r in results["throughput"]:
            lines.append(_verdict(f"Training throughput, {r['name']}", r["ratio"], 4))
    lines += [
        _verdict("Batched greedy decoding", g["ratio"], 20),
        "",
        "Where a target is missed, the reason is in the workload: in the small reversal model",
        "the GRU's own matrix products (forward and backward) dominate a training step, so",
        "removing the per-step key projection and output layer saves little; in batched decoding",
        "the `tanh` over the `(batch, src_len, attention_dim)` alignment tensor and the GRU",
        "products are real arithmetic that batching cannot remove, while one-at-a-time decoding",
        "is dominated by per-operation overhead.",
        "",
        "### GPU",
        "",
    ]
    if device.type == "cuda":
        lines.append(f"The figures above were measured on {describe_device(device)}.")
    else:
        lines.append("No GPU was available for this run; the GPU paths (CUDA, pinned memory, "
                     "non-blocking copies, bf16 autocast) were not measured here. Run this script "
                     "on a GPU machine to add them.")
    return "\n".join(lines) + "\n"


def _verdict(what: str, ratio: float, target: float) -> str:
    if ratio >= target:
        return f"- {what}: {ratio:.1f}x, target of {target:g}x reached."
    return (f"- {what}: {ratio:.1f}x, target of {target:g}x **not reached** "
            f"(short by a factor of {target / ratio:.2f}).")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, seconds (smoke test)")
    parser.add_argument("--device", default=None, help="default: cuda, then mps, then cpu")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md",
                        help="where to write the report (default docs/benchmarks.md)")
    args = parser.parse_args(argv)
    device = get_device(args.device)
    results = run(device, args.quick)
    return publish(args.out, "seq2seq", report(results, args.quick))


if __name__ == "__main__":
    raise SystemExit(main())

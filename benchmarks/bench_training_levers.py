"""Levers on notebook 4's training time, measured as training-step throughput on this CPU.

    MULTI30K_DIR=... python benchmarks/bench_training_levers.py   # ~10 minutes on a 2-core CPU
    python benchmarks/bench_training_levers.py --quick             # seconds, on the sample

Every variant trains notebook 4's model (``translation_setup.CPU``'s sizes) from the same initial
weights on the same training sentences, drawn at random once (``--sentences`` of them, plus
those of 3 untimed warm-up steps), cut into length-bucketed batches its own way. Reported:
target tokens per second (real tokens only, as the loss counts them), the best of ``--rounds``
passes over all variants in alternating order, and what that rate would make of notebook 4's
training of both models: its own run on this machine (from its checkpoints) scaled by the
rates, or without a run the training set's tokens over five epochs (a projection either way,
not a training run). The variants are the levers a 2-core CPU offers without changing the model:

- **threads**: PyTorch's intra-op threads, 2 (all the cores) or 1;
- **buckets**: batches sorted by source length (the course's) or by target length
  (``data.make_batches(sort_by="target")``: the decoder then steps through 3% padding, not 31%);
- **precision**: float32, or bf16 autocast where the CPU does bf16 arithmetic natively
  (``config.cpu_bf16``);
- **batch size**: 64 (the course's) or 128 (fewer, larger operations; the same epochs then make
  half the updates, so the learning rate would need re-tuning);
- **both models at once**: attention and vanilla trained at the same time in two processes of
  one thread each, over the same minute of wall time, instead of one after the other with two
  threads.

The figures go to ``docs/benchmarks.md`` (section ``training-levers``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]

from report_page import measured_with, publish  # noqa: E402

from course_utils.checkpoints import RunFolder, load_checkpoint  # noqa: E402
from course_utils.config import cpu_bf16  # noqa: E402
from course_utils.data import Vocab, iterate_batches, make_batches  # noqa: E402
from course_utils.models import build_model  # noqa: E402
from course_utils.training import seed_everything, training_step  # noqa: E402
from course_utils.translation_setup import CPU, QUICK, prepare_data  # noqa: E402

WARM_UP = 3
EPOCHS = CPU.train.epochs


@dataclass(frozen=True)
class Variant:
    threads: int = 2
    sort_by: str = "source"
    bf16: bool = False
    batch_size: int = 64
    model: str = "attention"

    @property
    def label(self) -> str:
        return (f"{self.model}, {self.threads} thread{'s' if self.threads > 1 else ''}, "
                f"by {self.sort_by}, {'bf16' if self.bf16 else 'float32'}, "
                f"batch {self.batch_size}")


def tokens_per_second(variant: Variant, pairs, data, config, window: tuple[float, float] | None
                      = None) -> float:
    """Real target tokens per second of ``variant``'s training steps (forward, backward, Adam)
    on ``pairs`` (every variant gets the same sentences, bucketed its own way): over all of them
    after the warm-up, or, with ``window = (start, end)`` (``time.time()`` values), over the
    steps made between those moments, going round the batches again if need be."""
    torch.set_num_threads(variant.threads)
    seed_everything(0)
    model = build_model(config.model_config(data.src_vocab, data.tgt_vocab,
                                            attention=variant.model == "attention"))
    optimizer = torch.optim.Adam(model.parameters(), lr=config.train.lr)
    model.train()
    batches = list(iterate_batches(make_batches(pairs, variant.batch_size, seed=1,
                                                sort_by=variant.sort_by), torch.device("cpu")))

    def step(batch) -> int:  # train()'s own step; returns the real target tokens it trained on
        training_step(model, batch, optimizer, clip=config.train.clip, bf16=variant.bf16)
        return int((batch.tgt_out != Vocab.pad_id).sum())

    for batch in batches[:WARM_UP]:
        step(batch)
    if window is None:
        start = time.perf_counter()
        tokens = sum(step(batch) for batch in batches[WARM_UP:])
        return tokens / (time.perf_counter() - start)
    begin, end = window
    time.sleep(max(0.0, begin - time.time()))
    start = time.time()  # begin, unless loading took longer (a loaded machine): then now
    tokens, k = 0, 0
    while k == 0 or time.time() < end:  # one step at least, even past the window
        tokens += step(batches[k % len(batches)])
        k += 1
    return tokens / (time.time() - start)


def notebook4_minutes() -> dict[str, float] | None:
    """Minutes notebook 4's run took per model, validation included, from its checkpoints in
    ``notebooks/runs/multi30k`` (its CPU configuration only); None without them."""
    run = RunFolder("multi30k", ROOT / "notebooks" / "runs")
    try:
        checkpoints = {m: load_checkpoint(run.checkpoint(m)) for m in ("attention", "vanilla")}
    except FileNotFoundError:
        return None
    if any(c.extra.get("config") != "cpu" for c in checkpoints.values()):
        return None
    return {m: c.history.seconds[-1] / 60 for m, c in checkpoints.items()}


def together(variants: list[Variant], quick: bool, sentences: int, seconds: float) -> list[float]:
    """Run the variants at the same time, one process each, over the same ``seconds`` of wall
    time (both start once both are ready); their tokens per second."""
    begin = time.time() + (6 if quick else 45)  # after both have loaded the data and warmed up
    command = [sys.executable, __file__, "--sentences", str(sentences), "--worker-window",
               f"{begin},{begin + seconds}"] + (["--quick"] if quick else [])
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    processes = [subprocess.Popen([*command, "--worker", json.dumps(vars(v))], env=env,
                                  stdout=subprocess.PIPE, text=True) for v in variants]
    try:
        rates = []
        for process in processes:
            out, _ = process.communicate()
            if process.returncode != 0:
                raise RuntimeError(f"a worker failed (exit {process.returncode})")
            rates.append(float(out.strip().splitlines()[-1]))
        return rates
    finally:
        for process in processes:  # one failed: stop the other too
            if process.poll() is None:
                process.kill()
                process.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sentences", type=int, default=3840,
                        help="training sentences per variant, after the warm-up")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # one variant, for together()
    parser.add_argument("--worker-window", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    config = QUICK if args.quick else CPU
    sentences = min(args.sentences, 128) if args.quick else args.sentences
    data = prepare_data(config, splits=("train",))
    # the same sentences for every variant: the warm-up's and the timed ones, drawn once
    pairs = random.Random(0).sample(data.pairs["train"], min(len(data.pairs["train"]),
                                                             sentences + WARM_UP * 128))
    if args.worker:
        variant = Variant(**json.loads(args.worker))
        begin, end = (float(x) for x in args.worker_window.split(","))
        print(tokens_per_second(variant, pairs, data, config, (begin, end)), flush=True)
        return 0
    threads = torch.get_num_threads()
    try:
        return measure(args, config, sentences, data, pairs)
    finally:
        torch.set_num_threads(threads)  # as it was (the tests run main() in their process)


def measure(args, config, sentences: int, data, pairs) -> int:
    bf16 = cpu_bf16()
    reference = Variant()
    variants = [
        reference,
        Variant(model="vanilla"),
        Variant(sort_by="target"),
        Variant(threads=1),
        Variant(threads=1, sort_by="target"),
        Variant(batch_size=128),
        Variant(batch_size=128, sort_by="target"),
    ]
    if bf16:
        variants += [
            Variant(bf16=True),
            Variant(sort_by="target", bf16=True),
            Variant(threads=1, sort_by="target", bf16=True),
            Variant(batch_size=128, sort_by="target", bf16=True),
            Variant(batch_size=128, sort_by="target", bf16=True, model="vanilla"),
        ]
    pair = [Variant(threads=1, model="attention"), Variant(threads=1, model="vanilla")]
    seconds = 3.0 if args.quick else 60.0
    rounds = 1 if args.quick else args.rounds
    best: dict[Variant, float] = {}
    best_pair = [0.0, 0.0]
    for r in range(rounds):  # alternate the order: drift on a noisy machine hits every variant
        for variant in (variants if r % 2 == 0 else variants[::-1]):
            rate = tokens_per_second(variant, pairs, data, config)
            best[variant] = max(rate, best.get(variant, 0.0))
            print(f"round {r + 1}: {variant.label}: {rate:,.0f} tokens/s", flush=True)
        rates = together(pair, args.quick, sentences, seconds)
        best_pair = [max(a, b) for a, b in zip(best_pair, rates)]
        print(f"round {r + 1}: both at once, one thread each: "
              f"{rates[0]:,.0f} and {rates[1]:,.0f} tokens/s", flush=True)
    vanilla_reference = best[Variant(model="vanilla")]
    rate_of = {"attention": best[reference], "vanilla": vanilla_reference}
    anchor = None if args.quick else notebook4_minutes()
    if anchor is None:  # no run of notebook 4 to scale: project the tokens of its epochs
        tokens = sum(len(t) + 1 for _, t in data.pairs["train"]) * EPOCHS  # + EOS
        anchor = {model: tokens / rate / 60 for model, rate in rate_of.items()}
        basis = (f"projects the rate onto {EPOCHS} epochs of the training set's target tokens "
                 "(training steps only, without validation)")
    else:
        basis = (f"scales notebook 4's own run on this machine, read from its checkpoints "
                 f"(attention {anchor['attention']:.1f} min, vanilla {anchor['vanilla']:.1f} "
                 "min, validation included), by the course's rate over the variant's: a "
                 "projection, not a training run")

    def project(model: str, rate: float) -> float:
        return anchor[model] * rate_of[model] / rate

    vanilla_of = {replace(v, model="vanilla"): r for v, r in best.items() if v.model == "vanilla"}

    def both(variant: Variant) -> float:
        vanilla = vanilla_of.get(replace(variant, model="vanilla"),
                                 vanilla_reference * best[variant] / best[reference])
        return project("attention", best[variant]) + project("vanilla", vanilla)

    lines = [
        "## Levers on notebook 4's training time",
        "",
        f"{measured_with(__file__, args.quick)} on CPU ({platform.machine()}, "
        f"{os.cpu_count()} cores; native bf16 arithmetic: {'yes' if bf16 else 'no'}), "
        f"PyTorch {torch.__version__}: training steps of notebook 4's models (embedding "
        f"{config.model.embed_dim}, hidden {config.model.hidden_dim}, "
        f"l = {config.model.maxout_dim}, "
        f"{len(data.tgt_vocab):,} German tokens) on the same {len(pairs):,} training sentences "
        f"(drawn at random once; {WARM_UP} warm-up steps untimed); best of {rounds} passes in "
        "alternating order. \"Both at once\" runs the two models in two processes of one thread "
        f"each over the same {seconds:.0f} s of wall time (going round their sentences again). "
        f"The last column {basis}; where a variant's vanilla rate was not measured, vanilla "
        "gains as much as attention.",
        "",
        f"| variant | tokens/s | vs. the course's "
        f"| both models, {EPOCHS} epochs (min, projected) |",
        "|---|---|---|---|",
    ]
    for variant in variants:
        rate = best[variant]
        shown = "(vanilla)" if variant.model == "vanilla" else f"{both(variant):.1f}"
        base = rate_of[variant.model]
        lines.append(f"| {variant.label} | {rate:,.0f} | {rate / base:.2f}x | {shown} |")
    a, v = best_pair
    at_once = max(project("attention", a), project("vanilla", v))
    lines.append(f"| both at once, one thread each (attention; vanilla) | {a:,.0f}; {v:,.0f} | "
                 f"{a / best[reference]:.2f}x; {v / vanilla_reference:.2f}x | "
                 f"{at_once:.1f} (the slower of the two) |")
    course = both(reference)
    fastest = min([at_once] + [both(k) for k in best if k.model == "attention"])
    lines += [
        "",
        f"The course's setting: {course:.1f} min for both models; the fastest variant here "
        f"projects to {fastest:.1f} min ({fastest / course:.2f}x). Against notebook 4's target "
        "of 8 minutes of training: "
        + ("within reach." if fastest <= 8 else f"**not reached** by any lever alone here "
                                               f"({fastest - 8:.1f} min over)."),
    ]
    return publish(args.out, "training-levers", "\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())

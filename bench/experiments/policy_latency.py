"""`python bench/experiments/policy_latency.py [--weights PATH] [--k 16] [--expansions 200] [--threads 1]`: neural policy benchmark: latency per expansion, FLOP floor, mutation validity, points-once ablation.

    python bench/experiments/policy_latency.py [--weights PATH] [--k 16] [--expansions 200] [--threads 1]

* latency: median milliseconds of one ``propose`` (K samples, 100 points, a state of ~20 nodes
  from a held-out in-domain dismantling path), of ``value`` on its children, and of ``prepare``;
* floor: the model's FLOPs for that expansion (``torch.utils.flop_counter``) over the measured
  single-thread fp32 matmul rate; the ratio says how far Python and small-kernel overheads are
  from the arithmetic;
* validity: over held-out states, % of sampled actions that are valid mutations, % rejected by the
  rules (size, nesting), % malformed, % duplicates, and the hit rate (the ground-truth next
  mutation's result is among the samples);
* points once per trial vs. per expansion: hit rate when the 100 points are encoded once (our
  default) vs. a fresh random 100 of the problem's 200 rows encoded at every expansion (the paper).
* re-ranking (``--rerank 32,64``): the network scores N uniform candidates in one batched pass and
  keeps K (:class:`dgsr.neural.policy.RerankPolicy`): latency, FLOP floor, and hit rates against the
  uniform policy's own K, with the true y and with y shuffled over the points.

Prints a Markdown table (paste into docs/notes/policy_bench.md) and a JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from dgsr.neural.policy import DEFAULT_WEIGHTS, NeuralPolicy, RerankPolicy
from dgsr.neural.sampling import points_ids, sample_mutations
from dgsr.policies.random import RandomPolicy
from dgsr.search.mutations import apply_mutation
from dgsr.training.corpus import load_heldout
from dgsr.training.dismantle import mutation_path


def matmul_rate(n: int = 1024, repeats: int = 5) -> float:
    """Measured fp32 GFLOP/s of an n x n x n matmul (best of ``repeats``)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = min(_timed(lambda: a @ b) for _ in range(repeats))
    return 2 * n**3 / best / 1e9


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def states_near(size: int, n: int, rng: np.random.Generator):
    """(problem, state, true mutation) triples: held-out path states within 2 nodes of ``size``."""
    out = []
    for item in load_heldout("in") + load_heldout("out"):
        path = mutation_path(item.expression, rng, 10)
        state, mutation = min(path, key=lambda sm: abs(sm[0].size - size))
        if abs(state.size - size) > 2:
            continue
        out.append((item, state, mutation))
        if len(out) >= n:
            break
    return out


def random_states(n: int, rng: np.random.Generator):
    """(problem, state, true mutation): one random step of each held-out problem's path."""
    out = []
    for item in load_heldout("in")[:n]:
        path = mutation_path(item.expression, rng, 10)
        state, mutation = path[int(rng.integers(len(path)))]
        out.append((item, state, mutation))
    return out


def latency(policy: NeuralPolicy, k: int, n: int, rng: np.random.Generator) -> dict:
    cases = states_near(20, n, np.random.default_rng(3))
    propose_ms, propose_cpu_ms, value_ms, prepare_ms, flops, sizes = [], [], [], [], [], []
    for item, state, _ in cases:
        X, y = item.X[:100], item.y[:100]
        t = time.perf_counter()
        ctx = policy.prepare(X, y, rng)
        prepare_ms.append(1e3 * (time.perf_counter() - t))
        t, c = time.perf_counter(), time.process_time()
        proposals = policy.propose(ctx, state, k, rng)
        propose_ms.append(1e3 * (time.perf_counter() - t))
        propose_cpu_ms.append(1e3 * (time.process_time() - c))
        children = [apply_mutation(state, p.mutation) for p in proposals]
        t = time.perf_counter()
        if children:
            policy.value(ctx, children)
        value_ms.append(1e3 * (time.perf_counter() - t))
        sizes.append(state.size)
        if len(flops) < 20:  # FLOPs of the same kind of expansion (counting slows it down)
            with FlopCounterMode(display=False) as counter:
                sample_mutations(policy.model, ctx.memory, state, k=k, n_features=X.shape[1],
                                 temperature=ctx.temperature, length_penalty=ctx.length_penalty,
                                 generator=torch.Generator().manual_seed(0))
            flops.append(counter.get_total_flops())
    return {"propose_ms": statistics.median(propose_ms), "propose_cpu_ms": statistics.median(propose_cpu_ms),
            "propose_p90_ms": float(np.percentile(propose_ms, 90)),
            "value_ms": statistics.median(value_ms), "prepare_ms": statistics.median(prepare_ms),
            "flops": statistics.median(flops), "state_size": statistics.median(sizes), "n": len(cases)}


def validity(policy: NeuralPolicy, k: int, n: int, rng: np.random.Generator, *, per_expansion: bool,
             rule_mask: bool = True) -> dict:
    """Sampling statistics over ``n`` held-out states (points re-encoded each time if ``per_expansion``)."""
    counts: Counter = Counter()
    hits = head_hits = 0
    cases = random_states(n, np.random.default_rng(1))
    for item, state, mutation in cases:
        rows = rng.choice(item.X.shape[0], 100, replace=False)
        X, y = item.X[rows], item.y[rows]
        ctx = policy.prepare(X, y, rng)
        if per_expansion:  # the paper: a fresh subset of points for this expansion
            rows = rng.choice(item.X.shape[0], 100, replace=False)
            with torch.inference_mode():
                ctx.memory = policy.model.encode_points(points_ids(item.X[rows], item.y[rows]))
        r = sample_mutations(policy.model, ctx.memory, state, k=k, n_features=X.shape[1],
                             temperature=ctx.temperature, length_penalty=ctx.length_penalty, generator=ctx.generator,
                             rule_mask=rule_mask)
        counts["sampled"] += r.n_sampled
        counts["valid"] += r.n_valid
        counts["rejected"] += sum(r.rejected.values())
        counts["malformed"] += r.n_decode_failures
        counts["duplicates"] += r.n_duplicates
        counts["distinct"] += len(r.samples)
        for reason, c in r.rejected.items():
            counts[f"rejected:{reason}"] += c
        target = apply_mutation(state, mutation).key(3)
        hits += any(s.result.key(3) == target for s in r.samples)
        head_hits += any((s.mutation.node, s.mutation.op) == (mutation.node, mutation.op) for s in r.samples)
    total = max(counts["sampled"], 1)
    out = {f"{key}_pct": 100.0 * v / total for key, v in counts.items() if key != "sampled"}
    out.update({"hit_rate_pct": 100.0 * hits / len(cases), "head_hit_rate_pct": 100.0 * head_hits / len(cases),
                "distinct_per_expansion": counts["distinct"] / len(cases),
                "n": len(cases)})
    return out


def rerank_latency(policy: RerankPolicy, k: int, n: int, rng: np.random.Generator) -> dict:
    """Median wall and CPU ms of one re-ranking ``propose`` and its FLOPs (same states as :func:`latency`)."""
    wall, cpu, flops = [], [], []
    for item, state, _ in states_near(20, n, np.random.default_rng(3)):
        ctx = policy.prepare(item.X[:100], item.y[:100], rng)
        t, c = time.perf_counter(), time.process_time()
        policy.propose(ctx, state, k, rng)
        wall.append(1e3 * (time.perf_counter() - t))
        cpu.append(1e3 * (time.process_time() - c))
        if len(flops) < 20:
            with FlopCounterMode(display=False) as counter:
                policy.propose(ctx, state, k, rng)
            flops.append(counter.get_total_flops())
    return {"propose_ms": statistics.median(wall), "propose_cpu_ms": statistics.median(cpu),
            "flops": statistics.median(flops)}


def proposal_hits(policy, k: int, n: int, *, shuffle_y: bool = False) -> dict:
    """Hit rates of any policy's K proposals on ``n`` held-out path states: the true next mutation's
    result among them, and its node and operator among them (y shuffled over the points if asked)."""
    hits = head_hits = 0
    rng = np.random.default_rng(2)
    cases = random_states(n, np.random.default_rng(1))
    for i, (item, state, mutation) in enumerate(cases):
        rows = rng.choice(item.X.shape[0], 100, replace=False)
        # its own generator: the runs with and without shuffling draw the same candidates
        y = np.random.default_rng([i, 5]).permutation(item.y[rows]) if shuffle_y else item.y[rows]
        ctx = policy.prepare(item.X[rows], y, rng)
        proposals = policy.propose(ctx, state, k, rng)
        target = apply_mutation(state, mutation).key(3)
        hits += any(apply_mutation(state, p.mutation).key(3) == target for p in proposals)
        head_hits += any((p.mutation.node, p.mutation.op) == (mutation.node, mutation.op) for p in proposals)
    return {"hit_rate_pct": 100.0 * hits / len(cases), "head_hit_rate_pct": 100.0 * head_hits / len(cases),
            "n": len(cases)}


def rerank_report(policy: NeuralPolicy, k: int, sizes: list[int], n_latency: int, n_hits: int, rate: float) -> dict:
    """Print the re-ranking tables; returns their figures."""
    out: dict = {"uniform": proposal_hits(RandomPolicy(), k, n_hits)}
    print(f"\n| policy (K={k}) | propose median ms (wall; CPU) | FLOPs | floor ms | CPU / floor "
          "| true next mutation among K | its node and operator among K | same, y shuffled |")
    print("|---|---|---|---|---|---|---|---|")
    u = out["uniform"]
    print(f"| uniform | - | - | - | - | {u['hit_rate_pct']:.1f}% | {u['head_hit_rate_pct']:.1f}% | - |")
    for size in sizes:
        rerank = RerankPolicy(policy, RandomPolicy(), n_candidates=size)
        lat = rerank_latency(rerank, k, n_latency, np.random.default_rng(0))
        hits, shuffled = proposal_hits(rerank, k, n_hits), proposal_hits(rerank, k, n_hits, shuffle_y=True)
        floor_ms = 1e3 * lat["flops"] / (rate * 1e9)
        out[f"rerank{size}"] = {**lat, "floor_ms": floor_ms, "hits": hits, "hits_shuffled_y": shuffled}
        print(f"| network re-ranks {size} uniform candidates | {lat['propose_ms']:.1f}; {lat['propose_cpu_ms']:.1f} "
              f"| {lat['flops'] / 1e6:.0f} M | {floor_ms:.2f} | {lat['propose_cpu_ms'] / floor_ms:.1f}x "
              f"| {hits['hit_rate_pct']:.1f}% | {hits['head_hit_rate_pct']:.1f}% "
              f"| {shuffled['head_hit_rate_pct']:.1f}% |")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--weights", default=str(DEFAULT_WEIGHTS))
    parser.add_argument("--k", type=int, default=16)
    parser.add_argument("--expansions", type=int, default=200)
    parser.add_argument("--latency-cases", type=int, default=60)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--temperature", type=float, default=None, help="fixed (default: paper's range per trial)")
    parser.add_argument("--rerank", default="32,64", help="candidate counts for the re-ranking rows ('' = none)")
    parser.add_argument("--only-rerank", action="store_true", help="skip the sampling measurements")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    kwargs = {} if args.temperature is None else {"temperature": args.temperature}
    policy = NeuralPolicy.from_checkpoint(args.weights, **kwargs)
    rng = np.random.default_rng(0)
    load = os.getloadavg()
    rate = matmul_rate()
    sizes = [int(x) for x in args.rerank.split(",") if x.strip()]
    if args.only_rerank:
        print(f"load average before: {load[0]:.2f}; matmul rate {rate:.1f} GFLOP/s; weights {Path(args.weights).name}")
        reranked = rerank_report(policy, args.k, sizes, args.latency_cases, args.expansions, rate)
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        print(json.dumps({"weights": args.weights, "k": args.k, "matmul_gflops": rate, "rerank": reranked}),
              file=sys.stderr)
        return 0
    lat = latency(policy, args.k, args.latency_cases, rng)
    floor_ms = 1e3 * lat["flops"] / (rate * 1e9)
    once = validity(policy, args.k, args.expansions, np.random.default_rng(2), per_expansion=False)
    fresh = validity(policy, args.k, args.expansions, np.random.default_rng(2), per_expansion=True)
    grammar_only = validity(policy, args.k, args.expansions, np.random.default_rng(2), per_expansion=False,
                            rule_mask=False)
    info = policy.info
    print(f"load average before: {load[0]:.2f}, after: {os.getloadavg()[0]:.2f}")
    print(f"weights: {Path(args.weights).name}, steps {info.get('steps')}, "
          f"{sum(p.numel() for p in policy.model.parameters()) / 1e6:.2f}M parameters, {args.threads} thread(s)")
    print("| measure | value |\n|---|---|")
    print(f"| propose, median ms per expansion (K={args.k}, 100 points, state size {lat['state_size']:.0f}) "
          f"| {lat['propose_ms']:.1f} (p90 {lat['propose_p90_ms']:.1f}) |")
    print(f"| propose, median CPU ms of this process (insensitive to other load) | {lat['propose_cpu_ms']:.1f} |")
    print(f"| value (critic on the expansion's children), median ms | {lat['value_ms']:.1f} |")
    print(f"| prepare (encode 100 points once per trial), median ms | {lat['prepare_ms']:.1f} |")
    print(f"| FLOPs per expansion (median) | {lat['flops'] / 1e6:.1f} M |")
    print(f"| matmul rate, 1024^3 fp32 | {rate:.1f} GFLOP/s |")
    print(f"| floor (FLOPs / rate) | {floor_ms:.2f} ms |")
    print(f"| measured / floor (wall; CPU) | {lat['propose_ms'] / floor_ms:.0f}x; "
          f"{lat['propose_cpu_ms'] / floor_ms:.0f}x |")
    for name, r in (("points once per trial", once), ("points per expansion (paper)", fresh),
                    ("grammar mask only (no nesting-rule mask), points once", grammar_only)):
        print(f"| {name}: valid / rejected by rules / malformed | {r.get('valid_pct', 0):.1f}% / "
              f"{r.get('rejected_pct', 0):.1f}% / {r.get('malformed_pct', 0):.1f}% |")
        print(f"| {name}: duplicates / distinct valid per expansion | {r.get('duplicates_pct', 0):.1f}% / "
              f"{r['distinct_per_expansion']:.1f} |")
        print(f"| {name}: hit rate: true next mutation among K; its node and operator among K | "
              f"{r['hit_rate_pct']:.1f}%; {r['head_hit_rate_pct']:.1f}% |")
    reranked = rerank_report(policy, args.k, sizes, args.latency_cases, args.expansions, rate) if sizes else {}
    print(json.dumps({"weights": args.weights, "steps": info.get("steps"), "k": args.k, "threads": args.threads,
                      "latency": lat, "matmul_gflops": rate, "floor_ms": floor_ms, "once": once, "fresh": fresh,
                      "grammar_only": grammar_only, "rerank": reranked}),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

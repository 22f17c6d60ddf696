"""`python bench/experiments/inner_fit_starts.py [--starts 40] [--steps 3,20] [--seed 0]`: how often an inner fit of a few steps reaches a law from a perturbed start, and what a fit costs: MINPACK (0.3.0's inner fit) and our Levenberg-Marquardt compiled by numba (its numpy twin is now the tests' oracle, tests/core/kernel_oracle.py).

For five structures with constants inside nonlinear parts (a shifted product in a sine, a damped
cosine, a bump, a shifted square beside a sine, an exponential scale), each start perturbs the
law's constants (scaled by U(0.5, 1.5), plus N(0, 0.2)); 64 rows, as the search's inner fit uses.
A fit "reaches" the law when the structure, with its fitted inner constants and closed-form
outer weights, explains more than 99.9% of y's variance. The MINPACK row is 0.3.0's inner fit
(``fit_constants(method="lm")`` on the weighted-sum model with ``max_iter = patience = steps``),
rebuilt here from the public functions it called. One thread.

    python bench/experiments/inner_fit_starts.py --starts 40 --steps 3,20
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import time

import numpy as np

from dgsr.core import inner_fit
from dgsr.core.constants import fit_constants
from dgsr.core.evaluate import as_columns, evaluate_columns
from dgsr.core.expression import Expression
from dgsr.core.linear_terms import additive_terms, fit_term_weights, weighted_sum
from dgsr.core.parser import parse

#: structure (constants as placeholders 1), the law's constants in the structure's order, the law.
LAWS = [
    ("sin(1*(x0 - 1)*(x1 + 1)) + x2", [1.3, 0.4, 0.7],
     lambda X: 2.5 * np.sin(1.3 * (X[:, 0] - 0.4) * (X[:, 1] + 0.7)) + X[:, 2]),
    ("exp(1*x0)*cos(1*x1 + 1)", [-0.8, 2.1, 0.3], lambda X: np.exp(-0.8 * X[:, 0]) * np.cos(2.1 * X[:, 1] + 0.3)),
    ("1/(1 + sq(x0 - 1) + sq(x1 - 1))", [1.0, 1.0, 1.5, -0.5],
     lambda X: 1 / (1 + (X[:, 0] - 1.5) ** 2 + (X[:, 1] + 0.5) ** 2)),
    ("sq(x0 - 1) + sin(1*x1)", [0.5, 1.7], lambda X: (X[:, 0] - 0.5) ** 2 + np.sin(1.7 * X[:, 1])),
    ("x0*exp(1*x1) + 1*x2", [0.6, 2.0], lambda X: X[:, 0] * np.exp(0.6 * X[:, 1]) + 2.0 * X[:, 2]),
]


def minpack_fit(expr: Expression, columns: np.ndarray, y: np.ndarray, steps: int) -> Expression:
    """0.3.0's inner fit: MINPACK on ``b + sum_i w_i * term_i`` from the closed-form weights."""
    terms = additive_terms(expr)
    varying = [t for _, t in terms if t.variables]
    with np.errstate(all="ignore"):
        values = np.stack([np.broadcast_to(evaluate_columns(t, columns), y.shape) for t in varying])
    start = fit_term_weights(values, y)
    if start is None:
        return expr
    model = weighted_sum(varying, *start[:2])
    fit = fit_constants(model, columns, y, method="lm", rng=None, batch_size=len(y), patience=steps,
                        max_iter=steps, y_var=float(np.var(y)), time_limit=1.0)
    if not fit.improved:
        return expr
    out, position = [], 0
    for _, term in terms:
        if term.variables:
            out.extend(fit.expression.constants[position + 1:position + 1 + term.n_constants])
            position += 1 + term.n_constants
        else:
            out.extend(term.constants)
    return expr.with_constants(out)


def ours(expr: Expression, columns: np.ndarray, y: np.ndarray, steps: int) -> Expression:
    """The search's inner fit (compiled)."""
    return inner_fit.fit_inner_constants(expr, columns, y, steps=steps).expression


def explained(expr: Expression, columns: np.ndarray, y: np.ndarray) -> float:
    """Share of y's variance the structure explains with closed-form outer weights."""
    with np.errstate(all="ignore"):
        values = np.stack([np.broadcast_to(evaluate_columns(t, columns), y.shape)
                           for _, t in additive_terms(expr) if t.variables])
    fit = fit_term_weights(values, y)
    return -np.inf if fit is None else 1.0 - fit[2] / float(np.var(y))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--starts", type=int, default=40)
    p.add_argument("--steps", default="3,20")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    fitters = {"MINPACK (0.3.0)": minpack_fit, "ours, numba": ours}
    ours(parse("sin(1*x0 + 1)"), np.ones((1, 8)), np.arange(8.0), 1)  # compile outside the timing
    rng = np.random.default_rng(args.seed)
    X = rng.uniform(-2, 2, size=(64, 3))
    columns = as_columns(X)
    print(f"{args.starts} perturbed starts per law, 64 rows; reached = R² > 0.999 after the fit; ms per fit")
    print("| steps | law | " + " | ".join(f"{name}: reached | ms" for name in fitters) + " |")
    print("|---|---|" + "---|---|" * len(fitters))
    for steps in (int(s) for s in args.steps.split(",")):
        for text, truth, law in LAWS:
            y = law(X)
            structure = parse(text)
            starts = [structure.with_constants(list(np.array(truth) * rng.uniform(0.5, 1.5, len(truth))
                                                    + rng.normal(0, 0.2, len(truth))))
                      for _ in range(args.starts)]
            cells = []
            for fit in fitters.values():
                t0 = time.perf_counter()
                fitted = [fit(s, columns, y, steps) for s in starts]
                ms = (time.perf_counter() - t0) / len(starts) * 1e3
                reached = sum(explained(f, columns, y) > 0.999 for f in fitted)
                cells.append(f"{reached}/{len(starts)} | {ms:.2f}")
            print(f"| {steps} | `{text}` | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

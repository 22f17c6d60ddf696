"""`python bench/experiments/custom_operator_speed.py [--rows 1000] [--repeat 2000]`: what a
user-defined operator costs in the compiled kernels, against the same function written with
Table 1's operators.

Times the two kernels a child of the search runs, on the same data and constants: the scoring
pass (:func:`dgsr.core.kernels.scoring.score_sum`) and the values-and-Jacobian pass of the inner
fit (:func:`dgsr.core.kernels.forward.run_encoded`), for ``2.5*gauss(1.3*x0 + 0.2) + x1`` with
``gauss(x) = exp(-x**2)`` defined by the user, and for the same formula as
``2.5*exp(-1*sq(1.3*x0 + 0.2)) + x1``. Prints microseconds per call (best of 5 rounds) and the
largest difference between the two formulas' values.

``--search N``: whole fits instead, at ``N`` evaluations (semantic policy, seeds 0 and 1), on
``y = exp(-x0**2)*x1 + x2**2`` (500 rows): Table 1 alone, ``exp`` replaced by a user-defined
``myexp(x) = exp(x)``, and Table 1 with ``gauss(x) = exp(-x**2)`` added. Prints evaluations per
CPU second: what the numpy backpropagation through a user operator costs the search.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dgsr.core.custom_operators import define_operator
from dgsr.core.kernels.codes import encode
from dgsr.core.kernels.forward import run_encoded
from dgsr.core.kernels.scoring import encode_sum, score_sum
from dgsr.core.parser import parse


def best_time(call, repeat: int) -> float:
    """Best of 5 rounds of ``repeat`` calls, in microseconds per call."""
    call()  # compiles on first use
    rounds = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(repeat):
            call()
        rounds.append((time.perf_counter() - start) / repeat * 1e6)
    return min(rounds)


def search_speed(evaluations: int) -> None:
    """Evaluations per CPU second of whole fits with and without user-defined operators."""
    import warnings

    from dgsr import SymbolicRegressor

    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (500, 3))
    y = np.exp(-X[:, 0] ** 2) * X[:, 1] + X[:, 2] ** 2
    table_one = ["sin", "exp", "log", "sqrt", "sq", "inv"]
    cases = {"Table 1": table_one, "myexp for exp": ["myexp(x) = exp(x)" if u == "exp" else u for u in table_one],
             "with gauss": [*table_one, "gauss(x) = exp(-x**2)"]}
    print(f"{evaluations} evaluations, 500 rows; evaluations per CPU second, seeds 0 / 1")
    for name, unary in cases.items():
        rates = []
        for seed in (0, 1):
            est = SymbolicRegressor(max_evaluations=evaluations, max_time=None, random_state=seed,
                                    unary_operators=unary, verbose=False)
            start = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(X, y)
            rates.append(est.n_evaluations_ / (time.process_time() - start))
        print(f"{name:<14} " + " / ".join(f"{r:,.0f}" for r in rates))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=2000)
    parser.add_argument("--search", type=int, default=0, help="evaluations of whole fits (0: kernels only)")
    args = parser.parse_args()
    if args.search:
        search_speed(args.search)
        return
    define_operator("gauss(x) = exp(-x**2)")
    columns = np.ascontiguousarray(np.random.default_rng(0).uniform(-2, 2, size=(2, args.rows)))
    y = np.zeros(args.rows)
    forms = {"user gauss": parse("2.5*gauss(1.3*x0 + 0.2) + x1", fold_constants=False),
             "Table 1": parse("2.5*exp(-1*sq(1.3*x0 + 0.2)) + x1", fold_constants=False)}
    values = {}
    print(f"{args.rows} rows; microseconds per call (best of 5 rounds of {args.repeat})")
    print(f"{'formula':<12} {'score_sum':>10} {'run_encoded':>12}")
    for name, expr in forms.items():
        encoded = encode_sum(expr.symbols)
        ops, program_args = encode(expr)
        theta = np.array(expr.constants)
        score = best_time(lambda e=encoded, x=expr: score_sum(e, x.constants, columns, y, False), args.repeat)
        forward = best_time(lambda o=ops, a=program_args, t=theta: run_encoded(o, a, t, columns), args.repeat)
        values[name] = run_encoded(ops, program_args, theta, columns)[0]
        print(f"{name:<12} {score:>10.1f} {forward:>12.1f}")
    print(f"largest difference of values: {np.max(np.abs(values['user gauss'] - values['Table 1'])):.2e}")


if __name__ == "__main__":
    main()

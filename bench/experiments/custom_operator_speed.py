"""`python bench/experiments/custom_operator_speed.py [--rows 1000] [--repeat 2000]`: what a
user-defined operator costs in the compiled kernels, against the same function written with
Table 1's operators.

Times the two kernels a child of the search runs, on the same data and constants: the scoring
pass (:func:`dgsr.core.kernels.scoring.score_sum`) and the values-and-Jacobian pass of the inner
fit (:func:`dgsr.core.kernels.forward.run_encoded`), for ``2.5*gauss(1.3*x0 + 0.2) + x1`` with
``gauss(x) = exp(-x**2)`` defined by the user, and for the same formula as
``2.5*exp(-1*sq(1.3*x0 + 0.2)) + x1``. Prints microseconds per call (best of 5 rounds) and the
largest difference between the two formulas' values.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()
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

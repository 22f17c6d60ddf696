"""The SRBench protocol: split, noise, metrics, model size and the symbolic-solution check.

CONTRACTS §3 and SRBench (La Cava et al., 2021): 75/25 split seeded by the run's seed, at most
10,000 training rows, Gaussian target noise of std ``level * RMS(y_train)`` on the training targets
only, R² on the test split, size = SymPy node count of the simplified model, and a model is an
exact solution when ``simplify(truth - model)`` is a constant or ``model / truth`` is a nonzero
constant after rounding floats. Every SymPy step runs under a time cap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dgsr.runtime.time_cap import TimeCapExceeded, run_capped

MAX_TRAIN_ROWS = 10_000
TEST_FRACTION = 0.25
NOISE_LEVELS = (0.0, 0.001, 0.01, 0.1)
SOLUTION_R2_GATE = 0.5  # SRBench only checks models with test R² above 0.5 for an exact match


@dataclass(frozen=True)
class Split:
    """Train/test arrays of one run. X_*: [N, D] DataFrames; y_*: [N]. ``y_train`` may carry noise."""

    X_train: pd.DataFrame
    y_train: np.ndarray
    X_test: pd.DataFrame
    y_test: np.ndarray
    #: The problem's name (set by the runner), for methods that look up what the data carry (units).
    dataset: str = ""


def make_split(X: pd.DataFrame, y: np.ndarray, seed: int, *, noise: float = 0.0,
               max_train: int = MAX_TRAIN_ROWS) -> Split:
    """75/25 split seeded by ``seed``; cap training rows; add target noise to training rows only."""
    rng = np.random.default_rng([int(seed), 75])  # own stream, so noise and cap do not shift the split
    n = len(y)
    order = rng.permutation(n)
    n_test = max(1, round(TEST_FRACTION * n))
    test, train = order[:n_test], order[n_test:]
    train = train[:max_train]  # the order is already random, so a prefix is a uniform subsample
    y_train = np.asarray(y[train], dtype=np.float64).copy()
    if noise > 0:
        rms = float(np.sqrt(np.mean(np.square(y_train))))
        y_train = y_train + rng.normal(0.0, noise * rms, size=len(y_train))
    return Split(
        X.iloc[train].reset_index(drop=True), y_train,
        X.iloc[test].reset_index(drop=True), np.asarray(y[test], dtype=np.float64),
    )


def r2_score(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Coefficient of determination; -inf if any prediction is non-finite (the model is unusable there)."""
    y_true = np.asarray(y_true, dtype=np.float64)
    y_pred = np.broadcast_to(np.asarray(y_pred, dtype=np.float64), y_true.shape)
    if not np.all(np.isfinite(y_pred)):
        return float("-inf")
    ss_res = float(np.sum((y_true - y_pred) ** 2))
    ss_tot = float(np.sum((y_true - y_true.mean()) ** 2))
    if ss_tot == 0.0:
        return 1.0 if ss_res == 0.0 else 0.0
    return 1.0 - ss_res / ss_tot


def expression_r2(expression, X: np.ndarray, y: np.ndarray, *, fallback: float | None = None) -> float:
    """Held-out R² of a dgsr :class:`~dgsr.core.expression.Expression` on the rows ``X``.

    Where the expression is not finite the prediction is ``fallback`` (the estimator's ``predict``
    falls back to the training mean); with ``fallback=None`` any non-finite value gives -inf.
    """
    from dgsr.core.evaluate import evaluate
    from dgsr.core.evaluate import r2_score as expression_r2_score

    with np.errstate(all="ignore"):
        pred = evaluate(expression, np.asarray(X, dtype=np.float64))
    if fallback is not None:
        pred = np.nan_to_num(pred, nan=fallback, posinf=fallback, neginf=fallback)
    elif not np.all(np.isfinite(pred)):
        return float("-inf")
    return float(expression_r2_score(y, pred))


def round_floats(expr, decimals: int = 6, *, keep_nonzero: bool = False):
    """Round every Float in ``expr`` to ``decimals`` decimal places (SRBench rounds to 6).

    ``keep_nonzero``: a nonzero Float that would round to 0 (``6.674e-11``) keeps ``decimals``
    significant digits instead, so rounding never deletes a coefficient (used for the size).
    """
    import sympy

    floats = expr.atoms(sympy.Float)
    if not floats:
        return expr

    def rounded(f):
        value = round(float(f), decimals)
        if keep_nonzero and value == 0.0 and float(f) != 0.0:
            value = float(f"{float(f):.{decimals}g}")
        return sympy.Float(value)

    return expr.xreplace({f: rounded(f) for f in floats})


def _exact_decimals(expr):
    """``expr`` with each Float replaced by the exact decimal it prints as (0.5 -> 1/2)."""
    import sympy

    return expr.xreplace({f: sympy.Rational(repr(float(f))) for f in expr.atoms(sympy.Float)})


def node_count(expr) -> int:
    """SRBench's size: every operator, variable and constant of the SymPy tree."""
    import sympy

    return sum(1 for _ in sympy.preorder_traversal(expr))


def simplify_capped(expr, seconds: float = 5.0):
    """``sympy.simplify(expr, ratio=1)`` (as SRBench) capped at ``seconds``; the input if it runs over."""
    import sympy

    try:
        finished, value = run_capped(lambda: sympy.simplify(expr, ratio=1), seconds)
        return value if finished else expr
    except Exception:  # noqa: BLE001  (SymPy raises assorted errors on odd inputs; keep the raw form)
        return expr


def model_size(expr, seconds: float = 5.0) -> int:
    """Node count of the simplified model with floats rounded, as SRBench reports it."""
    import sympy

    simplified = simplify_capped(expr, seconds)
    if not isinstance(simplified, sympy.Basic):  # not even converted to SymPy within the cap
        raise TimeCapExceeded(f"the model did not convert to SymPy within the {seconds:g} s time cap")
    # A tiny coefficient (G = 6.674e-11) is part of the model: rounding it to 0 would make a law size 1.
    return node_count(round_floats(simplified, keep_nonzero=True))


def _is_constant(expr) -> bool:
    # Free of symbols is the cheap and exact test for the expressions that matter after simplify.
    return not expr.free_symbols or bool(expr.is_constant(simplify=False))


def _as_sympy(value, other):
    """A SymPy expression; text goes through the checked parser (never a bare ``sympify``), with the
    names of ``other``'s symbols as its variables."""
    import sympy

    if not isinstance(value, str):
        return sympy.sympify(value)  # already an expression (or a number): nothing is parsed
    from .datasets import parse_formula

    names = [s.name for s in getattr(other, "free_symbols", ())] if not isinstance(other, str) else []
    return parse_formula(value, names)


def is_symbolic_solution(model, truth, seconds: float = 10.0) -> bool:
    """SRBench's exact-solution check, capped at ``seconds`` (False when it runs over).

    A solution differs from the truth by an additive constant (``simplify(truth - model)`` has no
    variable), or by a nonzero multiplicative constant (``simplify(model / truth)``), after
    rounding floats in both to 6 decimals. Named constants (pi) are compared as floats, so that a
    fitted 3.14159 matches the truth's pi; where the model writes pi itself, the check is also
    made with pi exact in both, as SymPy reads both formulas: with floats, ``1/(8*pi)`` and
    ``2*alpha/(8*pi)`` round to 0.039789 and 0.079578 on one side and 0.079577 on the other.
    Where the model has floats, it is also made with each rounded float as the exact decimal it
    is: SymPy does not cancel ``sin(0.5*u)`` against ``sin(u/2)``.
    """
    import sympy

    from dgsr.core.simplify import named_constants_as_floats

    def agree(m, t) -> bool:
        m, t = round_floats(m), round_floats(t)
        diff = round_floats(sympy.simplify(t - m, ratio=1))
        if _is_constant(diff):
            return bool(diff.is_finite is not False)
        if t == 0:
            return False
        ratio = round_floats(sympy.simplify(m / t, ratio=1))
        return bool(_is_constant(ratio) and ratio != 0 and ratio.is_finite is not False)

    def check() -> bool:
        m, t = _as_sympy(model, truth), _as_sympy(truth, model)
        m_floats, t_floats = named_constants_as_floats(m), named_constants_as_floats(t)
        if agree(m_floats, t_floats):
            return True
        if m.atoms(sympy.NumberSymbol) and agree(m, t):
            return True
        # SymPy keeps sin(0.5*u) and sin(u/2) apart; the rounded floats as the exact decimals they are do not.
        return bool(m.atoms(sympy.Float)) and agree(_exact_decimals(round_floats(m_floats)),
                                                    _exact_decimals(round_floats(t_floats)))

    try:
        finished, value = run_capped(check, seconds)
        return bool(finished and value)
    except Exception:  # noqa: BLE001  (unparseable or exotic models are simply not solutions)
        return False

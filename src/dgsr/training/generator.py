"""Random ground-truth expressions and input data for pre-training (Appendix A of the paper).

* Tree shapes: the unary-binary sampler of Lample & Charton (2019, "Deep learning for symbolic
  mathematics", Appendix C): for a given number of internal nodes every tree shape, unary and
  binary nodes distinguished, is equally likely.
* Operators are drawn uniformly per arity; a unary node below a transcendental one draws from
  the non-transcendental unary operators only, so the nesting rule (CONTRACTS §1) holds by
  construction instead of by rejection.
* Leaves: a variable ``x_d`` (d < D, not every variable need appear) or a N(0, 1) constant.
* Simplification: a cheap canonicaliser (constant folding and a few exact identities), fast
  enough for online generation; SymPy's ``simplify`` is optional (``simplify="sympy"``), capped
  in time, for comparison (docs/notes/corpus_bench.md has the measured difference).
* Inputs: a mixture of Gaussians with a random number of clusters, centres and rotated
  covariances, then standardised per column, as in Kamienny et al. (2022, E2E).

Everything draws from an explicit ``np.random.Generator``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Literal

import numpy as np

from dgsr.core.evaluate import evaluate
from dgsr.core.expression import Expression
from dgsr.core.operators import (
    BINARY,
    CONSTANT,
    MAX_VARIABLES,
    NUMPY_FUNCTIONS,
    OPERATORS,
    TRANSCENDENTAL,
    UNARY,
    variable_symbol,
)
from dgsr.search.mutations import MAX_SIZE, validity_violation


@dataclass(frozen=True)
class GeneratorConfig:
    """Parameters of the synthetic expression distribution (defaults: Appendix A of the paper)."""

    max_variables: int = MAX_VARIABLES  # D is uniform in 1..max_variables
    min_operators: int = 5  # internal nodes of the raw tree, uniform in [min, max]
    max_operators: int = 25  # the out-of-domain held-out set uses 40
    max_size: int = MAX_SIZE  # validity rule, checked after simplification
    constant_probability: float = 0.25  # a leaf is a N(0,1) constant, else a variable: few constants (App. A)
    unary_operators: tuple[str, ...] = UNARY
    binary_operators: tuple[str, ...] = BINARY
    simplify: Literal["cheap", "sympy"] = "cheap"  # "sympy" is ~1000x slower (docs/notes/corpus_bench.md)
    sympy_timeout: float = 1.0  # seconds; an expression whose SymPy simplification runs over is skipped
    max_clusters: int = 10  # mixture components of the inputs
    # Share of problems whose inputs are shifted to be positive. 0 is E2E's distribution, where
    # sqrt and log of a sign-changing argument make most draws containing them non-finite, so
    # few training targets contain them (docs/notes/corpus_bench.md measures it).
    positive_inputs: float = 0.0
    max_abs_value: float = 1e15  # targets beyond this are rejected (floats saturate at 1e100 anyway)
    max_tries: int = 1000  # draws before random_problem gives up (a config that never yields data)


#: The paper's distribution (Appendix A); also the default argument of the functions below.
DEFAULT_CONFIG = GeneratorConfig()


@dataclass(frozen=True)
class Problem:
    """A synthetic regression problem: ground truth, inputs [n_points, D] and targets [n_points]."""

    expression: Expression
    X: np.ndarray
    y: np.ndarray


class GenerationError(RuntimeError):
    """No acceptable expression was found within ``GeneratorConfig.max_tries`` draws."""


# ---------------------------------------------------------------------------- tree shapes
@lru_cache(maxsize=4)
def _shape_counts(max_ops: int) -> tuple[tuple[int, ...], ...]:
    """``D[n][e]``: number of unary-binary tree shapes with ``n`` internal nodes filling ``e`` slots.

    Lample & Charton's recurrence (with one leaf kind and one kind of each arity, since operators
    are drawn afterwards): the first open slot is a leaf, a unary or a binary node, so
    ``D(e, n) = D(e-1, n) + D(e, n-1) + D(e+1, n-1)``, ``D(0, n) = 0`` for n > 0, ``D(e, 0) = 1``.
    Python integers keep the counts exact.
    """
    width = max_ops + 2
    table = [[1] * (width + max_ops) for _ in range(max_ops + 1)]
    for n in range(1, max_ops + 1):
        row = [0] * (width + max_ops - n)
        prev = table[n - 1]
        for e in range(1, len(row)):
            row[e] = row[e - 1] + prev[e] + prev[e + 1]
        table[n] = row
    return tuple(tuple(r) for r in table)


_SHAPE_TABLE_OPS = 64  # one cached count table serves every tree up to this many operators


@cache
def _next_operator_cdf(n: int, e: int) -> np.ndarray:
    """Cumulative probabilities of (slot k, arity a) pairs, flattened as ``2k + a - 1``."""
    counts = _shape_counts(max(n, _SHAPE_TABLE_OPS))
    total = counts[n][e]
    weights = []
    for k in range(e):
        weights.append(counts[n - 1][e - k] / total)  # unary: e - k - 1 + 1 open slots remain
        weights.append(counts[n - 1][e - k + 1] / total)  # binary
    return np.cumsum(np.array(weights, dtype=np.float64))


def random_shape(rng: np.random.Generator, n_ops: int) -> list[int]:
    """Arities in prefix order of a uniformly drawn unary-binary tree with ``n_ops`` internal nodes.

    At each step, with ``e`` open slots and ``n`` operators left, the next operator goes to the
    ``k``-th open slot (the ``k`` before it become leaves) with arity ``a`` with probability
    ``D(e - k - 1 + a, n - 1) / D(e, n)`` (Lample & Charton 2019, Appendix C.2).
    """
    tree: list[int | None] = [None]  # None = open slot, 0 = leaf, 1/2 = operator arity
    pos, e = 0, 1
    for n in range(n_ops, 0, -1):
        cdf = _next_operator_cdf(n, e)
        choice = min(int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right")), len(cdf) - 1)
        k, a = divmod(choice, 2)
        a += 1
        skipped = 0
        while True:  # skip k open slots (they become leaves), stop at the next one
            if tree[pos] is None:
                if skipped == k:
                    break
                tree[pos] = 0
                skipped += 1
            pos += 1
        tree[pos] = a
        tree[pos + 1:pos + 1] = [None] * a
        pos += 1
        e = e - k - 1 + a
    return [0 if t is None else t for t in tree]


# ---------------------------------------------------------------------------- expressions
def random_tree(
    rng: np.random.Generator, n_ops: int, n_variables: int, config: GeneratorConfig = DEFAULT_CONFIG
) -> Expression:
    """An unsimplified random expression with exactly ``n_ops`` operators over ``n_variables`` inputs.

    The nesting rule holds by construction (no transcendental operator below another one).
    """
    shape = random_shape(rng, n_ops)
    unary = list(config.unary_operators)
    safe_unary = [u for u in unary if u not in TRANSCENDENTAL] or unary
    binary = list(config.binary_operators)
    symbols: list[str] = []
    constants: list[float] = []
    # all draws at once (one generator call each instead of one per node: 3x faster)
    pick = rng.random(len(shape)).tolist()  # which operator / variable
    kind = rng.random(len(shape)).tolist()  # constant or variable
    values = rng.normal(size=len(shape)).tolist()
    variables = [variable_symbol(i) for i in range(n_variables)]
    # one context flag per open slot: is there a transcendental operator above it?
    stack = [False]
    for i, a in enumerate(shape):
        inside = stack.pop()
        if a == 2:
            symbols.append(binary[int(pick[i] * len(binary))])
            stack += [inside, inside]
        elif a == 1:
            pool = safe_unary if inside else unary
            op = pool[int(pick[i] * len(pool))]
            symbols.append(op)
            stack.append(inside or op in TRANSCENDENTAL)
        elif kind[i] < config.constant_probability:
            symbols.append(CONSTANT)
            constants.append(values[i])
        else:
            symbols.append(variables[int(pick[i] * n_variables)])
    return Expression(tuple(symbols), tuple(constants))


def random_expression(
    rng: np.random.Generator, config: GeneratorConfig = DEFAULT_CONFIG, n_variables: int | None = None
) -> Expression:
    """A simplified, valid random expression (Appendix A), with at least one variable.

    ``n_variables`` (D) is drawn uniformly in ``1..config.max_variables`` when not given.
    Finiteness on data is checked by :func:`random_problem`, which has the inputs.
    """
    d = int(rng.integers(1, config.max_variables + 1)) if n_variables is None else n_variables
    for _ in range(config.max_tries):
        n_ops = int(rng.integers(config.min_operators, config.max_operators + 1))
        expr = simplify_expression(random_tree(rng, n_ops, d, config), config)
        if expr is None or not expr.variables or validity_violation(expr, max_size=config.max_size):
            continue
        return expr
    raise GenerationError(f"no valid expression in {config.max_tries} draws")


def simplify_expression(expr: Expression, config: GeneratorConfig = DEFAULT_CONFIG) -> Expression | None:
    """``expr`` simplified as ``config.simplify`` says; None if it is undefined or SymPy ran out of time."""
    if config.simplify == "sympy":
        return sympy_simplify(expr, config.sympy_timeout)
    return canonicalize(expr)


# ---------------------------------------------------------------------------- inputs and problems
def sample_inputs(rng: np.random.Generator, n_points: int, n_variables: int, max_clusters: int = 10) -> np.ndarray:
    """``n_points`` x ``n_variables`` inputs from a random Gaussian mixture (E2E, Kamienny et al. 2022).

    Random number of clusters, weights, centres N(0, 1) and per-cluster covariances (random
    scales, random rotation); the columns are then standardised to mean 0 and variance 1.
    """
    if n_points < 1 or n_variables < 1:
        raise ValueError(f"need at least one point and one variable, got {n_points} x {n_variables}")
    k = int(rng.integers(1, max_clusters + 1))
    weights = rng.uniform(0.1, 1.0, size=k)
    counts = rng.multinomial(n_points, weights / weights.sum())
    centres = rng.normal(size=(k, n_variables))
    scales = np.abs(rng.normal(size=(k, n_variables))) + 1e-3
    rotations, _ = np.linalg.qr(rng.normal(size=(k, n_variables, n_variables)))  # [k, D, D], orthogonal
    z = rng.normal(size=(n_points, n_variables))
    cluster = np.repeat(np.arange(k), counts)  # [n_points]
    # point i of cluster c: centre_c + R_c (s_c * z_i), a Gaussian with covariance R_c diag(s_c^2) R_c^T
    X = centres[cluster] + np.einsum("nij,nj->ni", rotations[cluster], z * scales[cluster])
    X = X[rng.permutation(n_points)]
    std = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(std > 0, std, 1.0)


def _inputs(rng: np.random.Generator, n_points: int, d: int, config: GeneratorConfig, positive: bool) -> np.ndarray:
    X = sample_inputs(rng, n_points, d, config.max_clusters)
    if positive:  # smallest value of each column lands in [0.05, 1]
        X = X - X.min(axis=0) + rng.uniform(0.05, 1.0, size=d)
    return X


def acceptable_targets(y: np.ndarray, max_abs_value: float = 1e15) -> bool:
    """Finite, bounded and not constant (a constant target teaches nothing about the inputs)."""
    if y.size == 0:
        return False
    if not np.all(np.isfinite(y)) or float(np.max(np.abs(y))) > max_abs_value:
        return False
    scale = max(1.0, float(np.max(np.abs(y))))
    return float(np.ptp(y)) > 1e-9 * scale


def random_problem(
    rng: np.random.Generator, config: GeneratorConfig = DEFAULT_CONFIG, n_points: int = 100
) -> Problem:
    """A random expression and data on which it is finite, bounded and non-constant."""
    d = int(rng.integers(1, config.max_variables + 1))
    # drawn only when enabled, so the default stream is unchanged by the option
    positive = config.positive_inputs > 0 and rng.random() < config.positive_inputs
    X = _inputs(rng, n_points, d, config, positive)
    for attempt in range(config.max_tries):
        if attempt and attempt % 50 == 0:  # maybe these inputs are hostile (e.g. all negative): redraw
            X = _inputs(rng, n_points, d, config, positive)
        expr = random_expression(rng, config, n_variables=d)
        y = evaluate(expr, X)
        if acceptable_targets(y, config.max_abs_value):
            return Problem(expr, X, y)
    raise GenerationError(f"no acceptable problem in {config.max_tries} draws")


# ---------------------------------------------------------------------------- cheap canonicaliser


def canonicalize(expr: Expression) -> Expression | None:
    """Cheap exact-ish simplification; None when a variable-free part is undefined (e.g. log(-1)).

    Rules, applied bottom-up: variable-free subtrees fold into one constant; ``A-A -> 0``,
    ``A/A -> 1``; additive/multiplicative identities (``A+0``, ``A*1``, ``A/1``, ``A*0``, ``0/A``);
    ``inv(inv(A)) -> A``, ``sq(sqrt(A)) -> A``, ``inv(A/B) -> B/A``; constants of ``c1 op (c2 op A)``
    chains merge for ``op`` in (add, mul). No SymPy: about 30 us per expression.
    """
    stack: list[tuple[tuple[str, ...], tuple[float, ...]]] = []
    ci = len(expr.constants)
    for s in reversed(expr.symbols):
        if s == CONSTANT:
            ci -= 1
            stack.append(((CONSTANT,), (expr.constants[ci],)))
        elif s not in NUMPY_FUNCTIONS:
            stack.append(((s,), ()))
        elif OPERATORS[s].arity == 1:
            node = _unary(s, stack.pop())
            if node is None:
                return None
            stack.append(node)
        else:
            left = stack.pop()
            right = stack.pop()
            node = _binary(s, left, right)
            if node is None:
                return None
            stack.append(node)
    symbols, constants = stack[0]
    return Expression(symbols, constants)


_Node = tuple[tuple[str, ...], tuple[float, ...]]


def _const(value: float) -> _Node | None:
    return ((CONSTANT,), (float(value),)) if math.isfinite(value) else None


def _is_const(node: _Node) -> bool:
    return node[0] == (CONSTANT,)


def _value(node: _Node) -> float:
    return node[1][0]


def _unary(op: str, a: _Node) -> _Node | None:
    if _is_const(a):
        with np.errstate(all="ignore"):
            return _const(float(NUMPY_FUNCTIONS[op](np.float64(_value(a)))))
    sa = a[0]
    if op == "inv" and sa[0] == "inv" or op == "sq" and sa[0] == "sqrt":
        return sa[1:], a[1]
    if op == "inv" and sa[0] == "div":
        e = Expression(sa, a[1])
        num, den = e.subtree(1), e.subtree(e.subtree_ends[1])
        return _binary("div", (den.symbols, den.constants), (num.symbols, num.constants))
    return (op,) + sa, a[1]


def _binary(op: str, a: _Node, b: _Node) -> _Node | None:
    ca, cb = _is_const(a), _is_const(b)
    if ca and cb:
        with np.errstate(all="ignore"):
            return _const(float(NUMPY_FUNCTIONS[op](np.float64(_value(a)), np.float64(_value(b)))))
    if a == b and op in ("sub", "div"):
        return _const(0.0 if op == "sub" else 1.0)
    va = _value(a) if ca else None
    vb = _value(b) if cb else None
    if op == "add" and (va == 0.0 or vb == 0.0):
        return b if va == 0.0 else a
    if op == "sub" and vb == 0.0:
        return a
    if op == "mul" and (va == 0.0 or vb == 0.0):
        return _const(0.0)
    if op == "mul" and (va == 1.0 or vb == 1.0):
        return b if va == 1.0 else a
    if op == "div" and vb == 1.0:
        return a
    if op == "div" and va == 0.0:
        return _const(0.0)
    if op in ("add", "mul") and (ca or cb):
        # c1 op (c2 op A) or (c2 op A) op c1 -> (c1 op c2) op A, keeping A's side
        c, other = (a, b) if ca else (b, a)
        so = other[0]
        if so[0] == op:
            e = Expression(so, other[1])
            left, right = e.subtree(1), e.subtree(e.subtree_ends[1])
            inner_c, rest, rest_right = None, None, False
            if left.symbols == (CONSTANT,):
                inner_c, rest, rest_right = left.constants[0], right, True
            elif right.symbols == (CONSTANT,):
                inner_c, rest, rest_right = right.constants[0], left, False
            if inner_c is not None:
                with np.errstate(all="ignore"):
                    merged = _const(float(NUMPY_FUNCTIONS[op](np.float64(_value(c)), np.float64(inner_c))))
                if merged is None:
                    return None
                rest_node = (rest.symbols, rest.constants)
                # through _binary again: the merged constant may be an identity (0 or 1)
                return _binary(op, merged, rest_node) if rest_right else _binary(op, rest_node, merged)
    return (op,) + a[0] + b[0], a[1] + b[1]


# ---------------------------------------------------------------------------- SymPy (optional)
def sympy_simplify(expr: Expression, timeout: float = 1.0) -> Expression | None:
    """``expr`` through SymPy's ``simplify`` (capped) and back; None if it ran over or left Table 1.

    Only for offline comparison and caches: about 0.1-1 s per expression.
    """
    from dgsr.core.parser import ParseError, parse
    from dgsr.core.simplify import simplify

    folded = canonicalize(expr)  # SymPy does not fold undefined constants for us
    if folded is None:
        return None
    start = time.perf_counter()
    result = simplify(folded.to_sympy(), timeout=timeout)
    if time.perf_counter() - start >= 0.95 * timeout:
        return None
    try:
        back = parse(str(result))
    except (ParseError, ValueError, RecursionError):
        return None
    return canonicalize(back)

"""The semantic policy: mutations aimed at the data in closed form, with no training.

For the expression to expand, the policy computes the *desired values* of its nodes by semantic
backpropagation (:mod:`dgsr.semantic_backprop`), turns them into the values an operand ``B``
should take for each binary mutation (``A + B = D`` gives ``B = D - A``, ``A * B = D`` gives
``B = D / A``, ...), and scores every operand of a library (:mod:`dgsr.operand_library`) against
every such target at once with matrix products: the score is the share of the target's variance
a least-squares line ``c*B + d`` leaves unexplained. Unary mutations are scored the same way on
their own values. The best-matching distinct valid mutations are proposed first, with priors
from their match quality; a share of uniformly random proposals keeps exploring.

When the position of ``B`` absorbs a scale (a chain of ``mul``/``div``/``inv``/``sq``/``sqrt``
up to the root, whose linear scaling the search fits for free; or a top-level sum, whose terms
the search reweights) the operand is proposed as it is; otherwise as ``c*B`` or ``c*B + d`` with
the fitted constants, so the inner constants a law needs arrive with it (the search refines
them by Levenberg-Marquardt when the child improves on the trial's best).

CONTRACTS §5: ``prepare`` (library and scoring rows, once per trial), ``propose``, ``value``
(NaN: nodes are valued by their accuracy, as for the random policy). Numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from .evaluate import as_columns
from .expression import Expression
from .mutations import InvalidMutation, Mutation, apply_mutation
from .operand_library import OperandLibrary, build_library
from .operators import BINARY, OPERATORS, UNARY, resolve_operators
from .policy import Proposal
from .random_policy import RandomPolicy
from .semantic_backprop import desired_values, node_values, parents, root_target

# Operators through which a constant factor on a subtree becomes a constant factor on the whole.
_SCALE_PASSING = frozenset({"mul", "div", "inv", "sq", "sqrt"})
_ADDITIVE = frozenset({"add", "sub"})
# Binary mutation kinds and how each turns desired values D and current values A into a target for B.
_MAX_PENDING = 5000  # expressions whose pending candidates a trial's context remembers
OPERATOR_FNS = {name: op.numpy_fn for name, op in OPERATORS.items()}


@dataclass
class SemanticContext:
    """Per-trial state: the scoring rows, the library and a random fallback's context."""

    columns: np.ndarray
    y: np.ndarray
    library: OperandLibrary
    n_features: int
    #: Per expanded expression: its ranked candidates not yet proposed, and the children already
    #: proposed. A node expanded again (progressive widening) gets the next-best candidates.
    pending: dict = field(default_factory=dict)


class SemanticPolicy:
    """Data-aware mutations by semantic backpropagation and library matching (no training).

    Parameters
    ----------
    n_rows:
        Rows (a random subset drawn per trial) on which desired values and operands are compared.
    random_share:
        Share of each expansion's proposals drawn by the uniform random policy (exploration).
    max_nodes:
        Nodes of the expression considered per expansion (the root always, the rest sampled).
    temperature:
        Priors are ``softmax(match / temperature)`` with ``match = -log10(unexplained share)``.
    max_size:
        Node limit proposals respect.
    operators:
        Table 1 operators the proposals may use, in mutations and operands (default: all); the
        estimator passes its ``operators`` / ``unary_operators`` / ``binary_operators`` here.
    """

    has_critic = False

    def __init__(self, n_rows: int = 100, random_share: float = 0.25, max_nodes: int = 6,
                 temperature: float = 1.0, max_size: int = 60, operators: Iterable[str] | None = None):
        if not 0.0 <= random_share <= 1.0:
            raise ValueError(f"random_share must be in [0, 1], got {random_share}")
        self.n_rows = n_rows
        self.random_share = random_share
        self.max_nodes = max_nodes
        self.temperature = temperature
        self.max_size = max_size
        allowed = resolve_operators(list(operators)) if operators is not None else None
        self.operators = frozenset(allowed) if allowed is not None else frozenset(UNARY + BINARY)
        self._random = RandomPolicy(max_size=max_size, operators=allowed)

    # ------------------------------------------------------------------ seam
    def prepare(self, X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> SemanticContext:
        """Draw the scoring rows and build the operand library on them."""
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        n = len(y)
        rows = np.sort(rng.choice(n, size=self.n_rows, replace=False)) if n > self.n_rows else np.arange(n)
        columns = as_columns(X[rows])
        y_rows = y[rows]
        library = build_library(columns, y_rows, allowed=self.operators)
        return SemanticContext(columns, y_rows, library, X.shape[1])

    def propose(self, context: SemanticContext, expression: Expression, k: int,
                rng: np.random.Generator) -> list[Proposal]:
        """Up to ``k`` distinct valid mutations of ``expression``, best-matching first."""
        n_random = round(k * self.random_share)
        key = expression.key()
        if key not in context.pending:
            if len(context.pending) >= _MAX_PENDING:
                context.pending.clear()
            context.pending[key] = (self._ranked(context, expression, rng), set())
        ranked, proposed = context.pending[key]
        found: dict[tuple, tuple[Mutation, float]] = {}
        while ranked and len(found) < k - n_random:
            match, build = ranked.pop()
            mutation = build()
            if mutation is not None:
                self._add(found, expression, mutation, match, proposed)
        # Exploration: uniform random proposals fill the rest (at a prior of the weakest match).
        floor = min((m for _, m in found.values()), default=0.0)
        for p in self._random.propose(context.n_features, expression, k - len(found) + 2, rng):
            if len(found) >= k:
                break
            self._add(found, expression, p.mutation, floor - 0.5, proposed)
        if not found:
            return []
        matches = np.array([m for _, m in found.values()])
        weights = np.exp((matches - matches.max()) / max(self.temperature, 1e-6))
        priors = weights / weights.sum()
        return [Proposal(mut, float(p)) for (mut, _), p in zip(found.values(), priors)]

    def value(self, context: SemanticContext, expressions: Sequence[Expression]) -> np.ndarray:
        """No critic: NaN for every expression (the search values nodes by their accuracy)."""
        return np.full(len(expressions), np.nan)

    # ------------------------------------------------------------------ internals
    def _add(self, found: dict, expression: Expression, mutation: Mutation, match: float,
             proposed: set) -> None:
        if not self._allowed(mutation):
            return
        try:
            child = apply_mutation(expression, mutation, max_size=self.max_size)
        except InvalidMutation:
            return
        key = child.key()
        if key not in found and key not in proposed:
            found[key] = (mutation, match)
            proposed.add(key)

    def _allowed(self, mutation: Mutation) -> bool:
        """Whether the mutation uses only allowed operators (its own and its operand's)."""
        if mutation.op != "root" and mutation.op.removeprefix("r") not in self.operators:
            return False
        operand = mutation.operand
        return operand is None or all(s in self.operators for s in operand.symbols if s in OPERATORS)

    def _ranked(self, context: SemanticContext, expression: Expression,
                rng: np.random.Generator) -> list[tuple[float, Callable[[], Mutation | None]]]:
        """Candidate mutations, best *last* (popped from the end): ``(match, build)`` where
        ``build()`` makes the mutation (or None); building is deferred because most candidates are
        never needed."""
        lib = context.library
        if expression.is_empty:
            targets = context.y[None, :]
            match = _match(targets, np.ones_like(targets, dtype=bool), lib).match
            order = np.argsort(-match[0], kind="stable")
            return [(float(match[0, j]), partial(Mutation, 0, "root", lib.expressions[j]))
                    for j in order[: 4 * self.max_nodes]][::-1]

        values = node_values(expression, context.columns)
        parent = parents(expression)
        roots = {flag: root_target(context.y, values[0], intercept=flag) for flag in (True, False)}
        positions = self._positions(expression, rng)
        target_rows: list[np.ndarray] = []
        meta: list[tuple[int, str, bool, bool]] = []  # position, kind, scale absorbed, offset absorbed
        unary: list[tuple[float, Callable[[], Mutation | None]]] = []
        for pos in positions:
            scale_path, additive_path = _absorbs(expression, parent, pos)
            # Through a chain of products up to the root, y's offset cannot be produced below:
            # aim at y ~ a*f there (an offset would leak into every quotient of the chain).
            desired = desired_values(expression, values, context.y, pos, parent, root=roots[not scale_path])
            current = values[pos]
            ok = np.isfinite(desired) & np.isfinite(current)
            if ok.sum() < max(5, len(desired) // 3):
                continue
            unary.extend(self._unary(pos, desired, current, ok))
            with np.errstate(all="ignore"):
                if additive_path:
                    # A term of a top-level sum gets its own weight from the search, so B should
                    # explain what a line in A leaves of the desired values (B - A is then the same).
                    kinds = {"add": _residual(desired, current, ok)}
                else:
                    kinds = {"add": desired - current, "rsub": desired + current}
                kinds.update({"mul": desired / current, "div": current / desired, "rdiv": desired * current})
            for kind, t in kinds.items():
                base_op = kind.removeprefix("r")
                if base_op not in self.operators:
                    continue
                target_rows.append(t)
                if kind in ("add", "rsub"):  # A + c*B is no rescaling of A + B: only separate terms absorb c
                    meta.append((pos, kind, additive_path, additive_path))
                else:  # A * (c*B) is a rescaling of A * B
                    meta.append((pos, kind, scale_path or additive_path, False))
        ranked = unary
        if target_rows:
            targets = np.array(target_rows)
            mask = np.isfinite(targets) & _not_extreme(targets)
            fit = _match(targets, mask, lib)
            match = fit.match
            n_top = min(match.size, 6 * self.max_nodes)
            flat = np.argpartition(-match.ravel(), n_top - 1)[:n_top] if match.size > n_top else np.arange(match.size)
            seen: set[tuple[int, float]] = set()
            for f in flat[np.argsort(-match.ravel()[flat], kind="stable")]:
                t, j = divmod(int(f), len(lib))
                if not np.isfinite(match[t, j]):
                    continue
                # The same operand matching equally well at several nodes (x0*x1*B at either
                # factor) gives equivalent children: propose it once.
                twin = (j, round(float(match[t, j]), 6))
                if twin in seen:
                    continue
                seen.add(twin)
                ranked.append((float(match[t, j]), partial(_mutation, meta[t], lib.expressions[j], fit.at(t, j))))
        ranked.sort(key=lambda r: r[0])
        return ranked

    def _unary(self, pos: int, desired: np.ndarray, current: np.ndarray,
               ok: np.ndarray) -> list[tuple[float, Callable[[], Mutation | None]]]:
        """Unary mutations of the node at ``pos``, matched on their own values; one that explains
        no more than the node already does ranks below every library match."""
        ops = [op for op in UNARY if op in self.operators]
        cur = current[ok]
        with np.errstate(all="ignore"):
            outs = np.array([OPERATOR_FNS[op](cur) for op in ops] + [cur])
            # An operator undefined where the node has values would make the child invalid.
            defined = np.isfinite(outs).all(axis=1)
            outs[~defined] = 0.0
            d = desired[ok] - desired[ok].mean()
            oc = outs - outs.mean(axis=1, keepdims=True)
            r2 = (oc @ d) ** 2 / (np.einsum("ij,ij->i", oc, oc) * float(d @ d))
            match = -np.log10(np.clip(1.0 - r2, 1e-12, 1.0))
        base = match[-1]
        out = []
        for i, op in enumerate(ops):
            if defined[i] and np.isfinite(match[i]):
                m = float(match[i]) if match[i] > base else float(match[i]) - 1.0
                out.append((m, partial(Mutation, pos, op)))
        return out

    def _positions(self, expression: Expression, rng: np.random.Generator) -> list[int]:
        if expression.size <= self.max_nodes:
            return list(range(expression.size))
        rest = rng.choice(np.arange(1, expression.size), size=self.max_nodes - 1, replace=False)
        return [0, *sorted(int(p) for p in rest)]




def _mutation(meta: tuple[int, str, bool, bool], expr: Expression,
              fit: tuple[float, float, float, float, float, float]) -> Mutation | None:
    pos, kind, scale_ok, offset_ok = meta
    proposal = _operand(expr, kind, fit, scale_ok, offset_ok)
    return None if proposal is None else Mutation(pos, proposal[0], proposal[1])


def _absorbs(expr: Expression, parent: list[int], position: int) -> tuple[bool, bool]:
    """Whether every ancestor of ``position`` passes a constant factor up to the root (first:
    the root's free linear scaling then absorbs it), and whether every ancestor is ``add`` or
    ``sub`` (second: the subtree is a term of a top-level sum, whose weight and offset the search
    fits for free)."""
    scale, offset = True, True
    p = parent[position]
    while p != -1:
        op = expr.symbols[p]
        if op not in _SCALE_PASSING:
            scale = False
        if op not in _ADDITIVE:
            offset = False
        p = parent[p]
    return scale, offset


def _row_medians(a: np.ndarray) -> np.ndarray:
    """Median of the finite entries of each row (NaN for a row with none), as ``[n_rows, 1]``."""
    finite = np.isfinite(a)
    counts = finite.sum(axis=1)
    ordered = np.sort(np.where(finite, a, np.inf), axis=1)
    idx = np.clip((counts - 1) // 2, 0, a.shape[1] - 1)
    med = ordered[np.arange(a.shape[0]), idx]
    return np.where(counts > 0, med, np.nan)[:, None]


def _not_extreme(targets: np.ndarray) -> np.ndarray:
    """False at rows whose target is far outside the bulk of its row (poles of a division)."""
    with np.errstate(all="ignore"):
        dev = np.abs(targets - _row_medians(targets))
        mad = _row_medians(dev)
        return ~(dev > 50.0 * np.where(mad > 0, mad, np.inf))


def _as_library(values: np.ndarray) -> OperandLibrary:
    """Rows of values as a (nameless) library, to reuse :func:`_match` on them."""
    finite = np.where(np.isfinite(values), values, 0.0)
    centered = finite - finite.mean(axis=1, keepdims=True)
    return OperandLibrary((), finite, centered, np.einsum("ij,ij->i", centered, centered))


def _mutation(meta: tuple[int, str, bool, bool], expr: Expression,
              fit: tuple[float, float, float, float, float, float]) -> Mutation | None:
    pos, kind, scale_ok, offset_ok = meta
    proposal = _operand(expr, kind, fit, scale_ok, offset_ok)
    return None if proposal is None else Mutation(pos, proposal[0], proposal[1])


def _absorbs(expr: Expression, parent: list[int], position: int) -> tuple[bool, bool]:
    """Whether every ancestor of ``position`` passes a constant factor up to the root (first:
    the root's free linear scaling then absorbs it), and whether every ancestor is ``add`` or
    ``sub`` (second: the subtree is a term of a top-level sum, whose weight and offset the search
    fits for free)."""
    scale, offset = True, True
    p = parent[position]
    while p != -1:
        op = expr.symbols[p]
        if op not in _SCALE_PASSING:
            scale = False
        if op not in _ADDITIVE:
            offset = False
        p = parent[p]
    return scale, offset


@dataclass(frozen=True)
class _Fit:
    """Least-squares fits of every target row by every library operand (``[n_targets, n_operands]``).

    ``match`` is ``-log10`` of the share of the target's variance that ``c*B + d`` leaves
    unexplained (-inf where undefined). The sums it came from are kept so that the constants of
    the few candidates actually proposed are computed on demand (:meth:`at`).
    """

    match: np.ndarray
    n: np.ndarray
    sy: np.ndarray
    syy: np.ndarray
    sx: np.ndarray
    sxx: np.ndarray
    sxy: np.ndarray

    def at(self, t: int, j: int) -> tuple[float, float, float, float, float, float]:
        """``c, d`` of ``c*B + d``, the slope ``c0`` through the origin, the residual sums of
        squares with and without ``d``, and the target's sum of squares, for one pair."""
        n, sy, syy = float(self.n[t, 0]), float(self.sy[t, 0]), float(self.syy[t, 0])
        sx, sxx, sxy = float(self.sx[t, j]), float(self.sxx[t, j]), float(self.sxy[t, j])
        with np.errstate(all="ignore"):
            var_x = sxx - sx * sx / n
            cov = sxy - sx * sy / n
            coef = cov / var_x if var_x > 0 else math.nan
            icpt = (sy - coef * sx) / n
            sse = max(syy - sy * sy / n - cov * coef, 0.0)
            coef0 = sxy / sxx if sxx > 0 else math.nan
            sse0 = max(syy - sxy * coef0, 0.0)
        return coef, icpt, coef0, sse, sse0, syy


def _match(targets: np.ndarray, mask: np.ndarray, lib: OperandLibrary) -> _Fit:
    """Fit every target row (on its ``mask``ed rows) by every library operand, from three matrix
    products (the library's sums restricted to each target's rows, and the cross products)."""
    with np.errstate(all="ignore"):
        m = mask.astype(np.float64)
        t = np.where(mask, targets, 0.0)
        n = m.sum(axis=1, keepdims=True)
        sy = t.sum(axis=1, keepdims=True)
        syy = (t * t).sum(axis=1, keepdims=True)
        sx = m @ lib.values.T
        sxx = m @ lib.squares.T
        sxy = t @ lib.values.T
        var_y = syy - sy * sy / n
        var_x = sxx - sx * sx / n
        cov = sxy - sx * sy / n
        r2 = cov * cov / (var_x * var_y)
        match = -np.log10(np.clip(1.0 - r2, 1e-12, 1.0))
        bad = ~(np.isfinite(match) & (var_x > 1e-12 * sxx) & (var_y > 0) & (n >= 5))
        match[bad] = -np.inf
    return _Fit(match, n, sy, syy, sx, sxx, sxy)


def _residual(target: np.ndarray, values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``target`` minus its least-squares line in ``values`` (fitted on ``rows``; NaN elsewhere)."""
    out = np.full_like(target, np.nan)
    t, v = target[rows], values[rows]
    vc = v - v.mean()
    vv = float(vc @ vc)
    slope = float(vc @ (t - t.mean())) / vv if vv > 0 else 0.0
    out[rows] = t - t.mean() - slope * vc
    return out


def _operand(expr: Expression, kind: str, fit: tuple[float, float, float, float, float, float],
             scale_ok: bool, offset_ok: bool) -> tuple[str, Expression] | None:
    """The mutation operator and operand ``B`` to propose for library entry ``expr`` and a target.

    ``B`` should take the values ``c*L + d`` (``L`` the entry's values, least squares on the
    target's rows; ``fit`` = ``c, d``, the slope through the origin ``c0``, the residual sums of
    squares with and without ``d``, and the target's sum of squares). Where the position absorbs
    the scale the entry goes in as ``L`` (or ``L + d/c``), otherwise as ``c*L`` (or ``c*L + d``);
    the offset is kept only where it is not absorbed and explains clearly more than a line through
    the origin. For ``add`` a negative ``c`` turns the mutation into ``sub``.
    """
    c, d, c0, sse_with, sse_without, tt = fit
    if not all(np.isfinite(x) for x in (c, d, c0, sse_with, sse_without)) or c == 0:
        return None
    # The offset goes in only where nothing absorbs it and it explains clearly more.
    use_offset = not offset_ok and sse_with < 0.9 * sse_without and sse_without > 1e-12 * tt
    coef = c if (offset_ok or use_offset) else c0
    if coef == 0 or not np.isfinite(coef):
        return None
    op = kind
    if kind == "add" and coef < 0:
        op, coef, d = "sub", -coef, -d  # A - (|c|*L - d)
    operand = expr
    if scale_ok:
        shift = d / coef if use_offset else 0.0
    else:
        operand = Expression.combine("mul", Expression.constant(_round4(coef)), expr)
        shift = d if use_offset else 0.0
    if shift != 0.0 and np.isfinite(shift):
        operand = Expression.combine("add", operand, Expression.constant(_round4(shift)))
    return op, operand


def _round4(value: float) -> float:
    return float(f"{value:.4g}")

"""What the semantic policy computes at each position of the expression it expands, before any
operand is matched: whether the position can be ranked, the match of every unary mutation there,
and the target and weight rows of every binary mutation kind.

For a position with desired values ``D`` (from semantic backpropagation), current values ``A``
and squared chain gradient ``g2``:

* unary ``op(A)`` is scored by the weighted error of ``op(A)`` against ``D``, with the free
  factor and offset the position absorbs (:func:`position_rows_numpy` spells it out);
* the binary kinds give the values an operand ``B`` should take and the weight of each row:
  ``add`` ``D - A`` (on a top-level sum: what a line in ``A`` leaves of ``D``), ``rsub`` ``D + A``,
  ``mul`` ``D / A`` (weights ``g2 A^2``), ``div`` ``A / D`` (``g2 D^4 / A^2``), ``rdiv`` ``D A``
  (``g2 / A^2``).

In numpy this is about forty calls on a hundred rows per position, and the calls, not the
arithmetic, cost (about a quarter of a millisecond per position). :func:`position_rows` does all
the positions of an expansion in one compiled call: the same elementwise arithmetic and the same
libm functions, with the sums taken in row order rather than numpy's pairwise and BLAS orders, so
the matches agree to rounding (about 1e-15 relative), not bit for bit. Without numba the numpy
definition runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dgsr.core.kernels.codes import CODES
from dgsr.core.kernels.compiler import compile_kernel
from dgsr.core.kernels.rows import unary_value_jit
from dgsr.core.operators import NUMPY_FUNCTIONS, UNARY
from dgsr.policies.semantic import compiled_backprop

#: The binary mutation kinds, in the order of :attr:`PositionRows.targets`' second axis.
KINDS: tuple[str, ...] = ("add", "rsub", "mul", "div", "rdiv")
_UNARY_CODES = {op: CODES[op] for op in UNARY}


@dataclass(frozen=True)
class PositionRows:
    """Per position ``i`` of an expansion: ``usable[i]`` (enough rows where ``D``, ``A`` and
    ``g2`` are finite: at least 5 and a third), ``unary[i, u]`` the match of the ``u``-th unary
    operator asked for (NaN where the operator is undefined on some row or the match is not
    finite), ``targets[i, k]`` and ``weights[i, k]`` the rows of kind ``KINDS[k]`` (``rsub`` is
    unused on a top-level sum). Rows of an unusable position are undefined."""

    usable: np.ndarray
    unary: np.ndarray
    targets: np.ndarray
    weights: np.ndarray


def position_rows(backprop, roots: tuple[np.ndarray, np.ndarray], spreads: tuple[float, float],
                  positions: list[int], scale_paths: list[bool], additive_paths: list[bool],
                  unary_ops: list[str]) -> PositionRows:
    """:class:`PositionRows` of ``positions``. ``roots``/``spreads`` are the root's desired values
    and their spread without and with an intercept (``roots[flag]`` with ``flag = not
    scale_path``, as the policy indexes them); ``scale_paths``/``additive_paths`` say what each
    position absorbs. Compiled when ``backprop`` is the compiled one."""
    if not isinstance(backprop, compiled_backprop.CompiledBackprop):
        return position_rows_numpy(backprop, roots, spreads, positions, scale_paths, additive_paths, unary_ops)
    custom = [op for op in unary_ops if op not in _UNARY_CODES]
    if custom:  # user-defined operators: Table 1's columns compiled, theirs in numpy
        table_ops = [op for op in unary_ops if op in _UNARY_CODES]
        rows = position_rows(backprop, roots, spreads, positions, scale_paths, additive_paths, table_ops)
        unary = np.full((len(positions), len(unary_ops)), np.nan)
        unary[:, [unary_ops.index(op) for op in table_ops]] = rows.unary
        at = [unary_ops.index(op) for op in custom]
        for i, pos in enumerate(positions):
            if rows.usable[i]:
                flag = not scale_paths[i]
                desired, current, g2, ok = _position_inputs(backprop, pos, roots[flag])
                unary[i, at] = _unary_matches(desired, current, g2, ok, spreads[flag], scale_paths[i],
                                              additive_paths[i], custom)
        return PositionRows(rows.usable, unary, rows.targets, rows.weights)
    n_pos, n = len(positions), backprop.values.shape[1]
    usable = np.zeros(n_pos, dtype=np.bool_)
    unary = np.empty((n_pos, len(unary_ops)))
    targets = np.empty((n_pos, len(KINDS), n))
    weights = np.empty((n_pos, len(KINDS), n))
    ops, parent, ends = backprop.tree
    _position_rows_jit(ops, parent, ends, backprop.values,
                       np.ascontiguousarray(roots[0], dtype=np.float64),
                       np.ascontiguousarray(roots[1], dtype=np.float64), float(spreads[0]), float(spreads[1]),
                       np.array(positions, dtype=np.int64), np.array(scale_paths, dtype=np.bool_),
                       np.array(additive_paths, dtype=np.bool_),
                       np.array([_UNARY_CODES[op] for op in unary_ops], dtype=np.int64),
                       usable, unary, targets, weights)
    return PositionRows(usable, unary, targets, weights)


def position_rows_numpy(backprop, roots: tuple[np.ndarray, np.ndarray], spreads: tuple[float, float],
                        positions: list[int], scale_paths: list[bool], additive_paths: list[bool],
                        unary_ops: list[str]) -> PositionRows:
    """:func:`position_rows` in numpy (the reference, and the path without numba)."""
    n_pos, n = len(positions), len(roots[0])
    usable = np.zeros(n_pos, dtype=np.bool_)
    unary = np.full((n_pos, len(unary_ops)), np.nan)
    targets = np.full((n_pos, len(KINDS), n), np.nan)
    weights = np.zeros((n_pos, len(KINDS), n))
    for i, pos in enumerate(positions):
        flag = not scale_paths[i]
        desired, current, g2, ok = _position_inputs(backprop, pos, roots[flag])
        if ok.sum() < max(5, len(desired) // 3):
            continue
        usable[i] = True
        unary[i] = _unary_matches(desired, current, g2, ok, spreads[flag], scale_paths[i], additive_paths[i],
                                  unary_ops)
        with np.errstate(all="ignore"):
            if additive_paths[i]:
                # A term of a top-level sum gets its own weight from the search, so B should
                # explain what a line in A leaves of the desired values (B - A is then the same).
                targets[i, 0] = _residual(desired, current, ok)
            else:
                targets[i, 0], targets[i, 1] = desired - current, desired + current
            a2 = current * current
            targets[i, 2], targets[i, 3], targets[i, 4] = desired / current, current / desired, desired * current
            for k, h in enumerate((1.0, 1.0, a2, desired**4 / a2, 1.0 / a2)):
                weights[i, k] = g2 * h
    return PositionRows(usable, unary, targets, weights)


def _position_inputs(backprop, pos: int, root: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A position's desired values ``D`` (from ``root``), current values ``A``, squared chain
    gradient ``g2`` (0 outside ``ok``) and ``ok``, the rows where all three are finite."""
    desired, current = backprop.desired(pos, root), backprop.values[pos]
    with np.errstate(all="ignore"):
        g2 = backprop.gradient(pos) ** 2
    ok = np.isfinite(desired) & np.isfinite(current) & np.isfinite(g2)
    return desired, current, np.where(ok, g2, 0.0), ok


def _unary_matches(desired: np.ndarray, current: np.ndarray, g2: np.ndarray, ok: np.ndarray, spread: float,
                   scale_path: bool, additive_path: bool, unary_ops: list[str]) -> np.ndarray:
    """The match of ``op(A)`` for each unary operator: the weighted error against the desired
    values with the free factor and offset the position absorbs, as ``-log10`` of its share of
    ``spread``; NaN where ``op`` is undefined on a row or the match is not finite."""
    if not unary_ops:
        return np.empty(0)
    cur, d, w = current[ok], desired[ok], g2[ok]
    sw = float(w.sum())
    if not sw > 0:  # the root does not move with this node on any row: nothing to match
        return np.full(len(unary_ops), np.nan)
    with np.errstate(all="ignore"):
        outs = np.array([NUMPY_FUNCTIONS[op](cur) for op in unary_ops])
        # An operator undefined where the node has values would make the child invalid.
        defined = np.isfinite(outs).all(axis=1)
        outs[~defined] = 0.0
        if additive_path:  # free c and d
            dm, om = float(w @ d) / sw, (outs @ w) / sw
            dc, oc = d - dm, outs - om[:, None]
            cov, var = (oc * w) @ dc, np.einsum("ij,ij,j->i", oc, oc, w)
            sse = float((w * dc) @ dc) - cov * cov / var
        elif scale_path:  # free c
            cov, var = (outs * w) @ d, np.einsum("ij,ij,j->i", outs, outs, w)
            sse = float((w * d) @ d) - cov * cov / var
        else:
            r = outs - d
            sse = np.einsum("ij,ij,j->i", r, r, w)
        match = -np.log10(np.clip(sse / spread, 1e-12, 1.0))
    if additive_path:
        # A constant op(A) is what a term's free offset gives already: no match (its centred
        # variance would be rounding noise, whose sign and size depend on the summation order).
        match[(outs == outs[:, :1]).all(axis=1)] = np.nan
    return np.where(defined & np.isfinite(match), match, np.nan)


def _residual(target: np.ndarray, values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``target`` minus its least-squares line in ``values`` (fitted on ``rows``; NaN elsewhere)."""
    out = np.full_like(target, np.nan)
    t, v = target[rows], values[rows]
    vc = v - v.mean()
    vv = float(vc @ vc)
    # No line in constant values (their centred sum of squares would be rounding noise).
    slope = float(vc @ (t - t.mean())) / vv if vv > 0 and not (v == v[0]).all() else 0.0
    # Nor in a slope that overflows: its sign pattern of infinities would depend on the order
    # of the sums (the compiled rows add in row order), so both paths leave the line out.
    slope = slope if math.isfinite(slope) else 0.0
    out[rows] = t - t.mean() - slope * vc
    return out


def _clip_share(x):  # pragma: no cover - compiled below
    """``np.clip(x, 1e-12, 1.0)`` of one value (NaN stays NaN)."""
    if np.isnan(x):
        return x
    return max(min(x, 1.0), 1e-12)


def _position_rows(ops, parent, ends, values, root_without, root_with, spread_without, spread_with, positions,
                   scale_paths, additive_paths, unary_codes, usable, unary, targets,
                   weights):  # pragma: no cover - compiled below
    """:func:`position_rows_numpy`, every position in one call."""
    n = values.shape[1]
    desired = np.empty(n)
    g2 = np.empty(n)
    ok = np.empty(n, dtype=np.bool_)
    outs = np.empty(n)
    for i in range(positions.shape[0]):
        pos = positions[i]
        scale_path, additive_path = scale_paths[i], additive_paths[i]
        root = root_with if not scale_path else root_without
        spread = spread_with if not scale_path else spread_without
        compiled_backprop.desired_jit(ops, parent, ends, values, root, pos, desired)
        compiled_backprop.gradient_jit(ops, parent, ends, values, pos, g2)
        count = _usable_rows_jit(desired, values[pos], g2, ok)
        usable[i] = count >= max(5, n // 3)
        if not usable[i]:
            continue
        _unary_row_matches_jit(desired, values[pos], g2, ok, spread, scale_path, additive_path, unary_codes, outs,
                               unary[i])
        _binary_rows_jit(desired, values[pos], g2, ok, count, additive_path, targets[i], weights[i])


def _usable_rows(desired, current, g2, ok):  # pragma: no cover - compiled below
    """Mark in ``ok`` the rows where ``D``, ``A`` and ``g2`` (the gradient, squared here in place;
    0 on the other rows) are finite; how many there are."""
    count = 0
    for r in range(current.shape[0]):
        g = g2[r] * g2[r]
        ok[r] = np.isfinite(desired[r]) and np.isfinite(current[r]) and np.isfinite(g)
        g2[r] = g if ok[r] else 0.0
        if ok[r]:
            count += 1
    return count


def _unary_row_matches(desired, current, g2, ok, spread, scale_path, additive_path, unary_codes, outs,
                       match):  # pragma: no cover - compiled below
    """:func:`_unary_matches` of one position, into ``match`` (``outs``: scratch, one value per row)."""
    n = current.shape[0]
    sw = 0.0
    swd = 0.0
    for r in range(n):
        if ok[r]:
            sw += g2[r]
            swd += g2[r] * desired[r]
    dm = swd / sw
    for u in range(unary_codes.shape[0]):
        match[u] = np.nan  # until a finite match is found below
    # The root does not move with this node on any row: nothing to match (see _unary_matches).
    for u in range(unary_codes.shape[0] if sw > 0 else 0):
        defined = True
        flat = True
        first = np.nan
        for r in range(n):
            if ok[r]:
                outs[r] = unary_value_jit(unary_codes[u], current[r])
                if not np.isfinite(outs[r]):
                    defined = False
                    break
                if np.isnan(first):
                    first = outs[r]
                elif outs[r] != first:
                    flat = False
        if not defined or (additive_path and flat):  # see _unary_matches
            continue
        sse = _unary_sse_jit(desired, g2, ok, outs, sw, dm, scale_path, additive_path)
        value = -np.log10(_clip_share_jit(sse / spread))
        match[u] = value if np.isfinite(value) else np.nan


def _unary_sse(desired, g2, ok, outs, sw, dm, scale_path, additive_path):  # pragma: no cover - compiled below
    """The weighted squared error of ``outs`` against ``D`` with the free factor and offset the
    position absorbs (``sw``, ``dm``: the sum of the weights and the weighted mean of ``D``)."""
    n = outs.shape[0]
    if additive_path:  # free c and d
        swo = 0.0
        for r in range(n):
            if ok[r]:
                swo += outs[r] * g2[r]
        om = swo / sw
        cov = 0.0
        var = 0.0
        sdd = 0.0
        for r in range(n):
            if ok[r]:
                oc = outs[r] - om
                dc = desired[r] - dm
                cov += oc * g2[r] * dc
                var += oc * oc * g2[r]
                sdd += g2[r] * dc * dc
        return sdd - cov * cov / var
    if scale_path:  # free c
        cov = 0.0
        var = 0.0
        sdd = 0.0
        for r in range(n):
            if ok[r]:
                cov += outs[r] * g2[r] * desired[r]
                var += outs[r] * outs[r] * g2[r]
                sdd += g2[r] * desired[r] * desired[r]
        return sdd - cov * cov / var
    sse = 0.0
    for r in range(n):
        if ok[r]:
            e = outs[r] - desired[r]
            sse += e * e * g2[r]
    return sse


def _binary_rows(desired, current, g2, ok, count, additive_path, targets, weights):  # pragma: no cover
    """The target and weight rows of each binary kind at one position (``targets``, ``weights``: [kind, row])."""
    n = current.shape[0]
    if additive_path:
        _residual_row_jit(desired, current, ok, count, targets[0])
        for r in range(n):
            targets[1, r] = np.nan
    else:
        for r in range(n):
            targets[0, r] = desired[r] - current[r]
            targets[1, r] = desired[r] + current[r]
    for r in range(n):
        d = desired[r]
        a = current[r]
        a2 = a * a
        w = g2[r]
        targets[2, r] = d / a
        targets[3, r] = a / d
        targets[4, r] = d * a
        weights[0, r] = w * 1.0
        weights[1, r] = w * 1.0
        weights[2, r] = w * a2
        weights[3, r] = w * (d**4.0 / a2)  # libm pow, as numpy's desired**4
        weights[4, r] = w * (1.0 / a2)


def _residual_row(desired, current, ok, count, out):  # pragma: no cover - compiled below
    """:func:`_residual` of ``D`` in ``A`` over the ``count`` usable rows, into ``out``."""
    n = current.shape[0]
    first_ok = 0
    while not ok[first_ok]:  # a usable position has at least five usable rows
        first_ok += 1
    tm = 0.0
    vm = 0.0
    for r in range(n):
        if ok[r]:
            tm += desired[r]
            vm += current[r]
    tm /= count
    vm /= count
    vv = 0.0
    tv = 0.0
    for r in range(n):
        if ok[r]:
            vc = current[r] - vm
            vv += vc * vc
            tv += vc * (desired[r] - tm)
    flat = True
    for r in range(n):
        if ok[r] and current[r] != current[first_ok]:
            flat = False
            break
    slope = tv / vv if vv > 0 and not flat else 0.0
    if not np.isfinite(slope):  # see _residual
        slope = 0.0
    for r in range(n):
        out[r] = desired[r] - tm - slope * (current[r] - vm) if ok[r] else np.nan


_clip_share_jit = compile_kernel(_clip_share)
_usable_rows_jit = compile_kernel(_usable_rows)
_unary_sse_jit = compile_kernel(_unary_sse)
_unary_row_matches_jit = compile_kernel(_unary_row_matches)
_residual_row_jit = compile_kernel(_residual_row)
_binary_rows_jit = compile_kernel(_binary_rows)
_position_rows_jit = compile_kernel(_position_rows)

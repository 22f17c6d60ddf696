"""Compiled analysis of a candidate's structure: its program, its additive terms, its inner-fit model.

Nine in ten children of an expansion have a structure the search has not met before, and each
new structure used to be taken apart in Python three times: the scan for its additive terms, the
scoring program cut out of its encoding, and the inner fit's model program and index plan. On a
750-row search that was about 250 of the 800-1,000 microseconds a child costs, more than both
compiled kernels together (docs/notes/speed_plan.md). Here it is one compiled pass over the
prefix op codes (:func:`structure`, memoised by structure), and the inner fit builds its model
program from the result in one compiled call and fits it with :func:`dgsr.core.kernels.fit.fit_jit`
(:func:`fit_structure`).

The results are those of the Python definitions they replace, bit for bit:
:func:`dgsr.core.linear_terms.term_spans` (the terms), :func:`dgsr.core.kernels.codes.encode_symbols`
(the program) and ``weighted_sum`` over the distinct varying terms (the inner fit's model, in
the layout ``w_0, <u_0's constants>, w_1, ..., b``); the tests hold them equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from dgsr.core.kernels.codes import (
    CODES,
    CODES_BINARY_LAST,
    CONST_CODE,
    OPERATOR_TABLE,
    VAR_CODE,
    prefix_codes,
)
from dgsr.core.kernels.compiler import compile_kernel
from dgsr.core.kernels.fit import fit_jit

__all__ = ["C0", "C1", "COLLINEAR", "END", "SIGN", "START", "VARYING", "Structure", "analyse_jit", "fit_structure",
           "model_jit", "structure"]

# Op codes (codes.CODES): add, sub, mul, div are 0-3; constants and variables are pushes.
_ADD, _SUB, _MUL, _DIV = 0, 1, 2, 3
_BINARY_LAST = CODES_BINARY_LAST
_CONST, _VAR = CONST_CODE, VAR_CODE
assert (CODES["add"], CODES["sub"], CODES["mul"], CODES["div"]) == (0, 1, 2, 3)

# Columns of the span table: the term's sign (+1/-1), its prefix span [start, end), its constants
# [c0, c1) (indices into the expression's constants), and 1 when it has a variable.
SIGN, START, END, C0, C1, VARYING = range(6)

#: :func:`fit_structure`'s status when the terms are numerically collinear (:func:`dgsr.core.kernels.fit.fit_jit`'s 2).
COLLINEAR = 2


@dataclass(frozen=True)
class Structure:
    """What the search needs of a structure (read-only arrays).

    ``ops``/``args``: the whole expression's postfix program (:func:`dgsr.core.kernels.codes.encode`);
    ``spans``: one row per top-level additive term (columns ``SIGN`` ... ``VARYING``);
    ``inner_count``: :func:`dgsr.core.inner_fit.inner_constant_count`; ``sum_ops``/``sum_args``:
    the terms' programs one after another, term ``i`` at ``starts[i]:starts[i + 1]``;
    ``depth``: the stack slots the longest term program needs; ``signs`` and ``lengths``: each
    term's sign and size; ``varying``: the terms with a variable; ``varying_size``: the size of
    ``weighted_sum`` over those (0 when there are none).
    """

    ops: np.ndarray
    args: np.ndarray
    spans: np.ndarray
    inner_count: int
    sum_ops: np.ndarray
    sum_args: np.ndarray
    starts: np.ndarray
    depth: int
    signs: np.ndarray
    lengths: np.ndarray
    varying: np.ndarray
    varying_size: int


def _subtree_end(codes, start):  # pragma: no cover - compiled below
    """One past the last symbol of the subtree that starts at ``start`` (prefix codes)."""
    need = 1
    end = start
    while need:
        op = codes[end] >> 32
        if op >= _CONST:
            need -= 1
        elif op <= _BINARY_LAST:
            need += 1
        end += 1
    return end


def _postfix(codes):  # pragma: no cover - compiled below
    """The whole expression's program (:func:`dgsr.core.kernels.codes.encode_symbols`) from its
    prefix codes: postfix is the prefix read backwards; a constant's argument is its index in
    prefix order."""
    n = codes.shape[0]
    ops = np.empty(n, dtype=np.int64)
    args = np.empty(n, dtype=np.int64)
    n_constants = 0
    for i in range(n):
        if codes[i] >> 32 == _CONST:
            n_constants += 1
    c = n_constants - 1
    for i in range(n):
        code = codes[n - 1 - i]
        op = code >> 32
        ops[i] = op
        if op == _CONST:
            args[i] = c
            c -= 1
        else:
            args[i] = code & 0xFFFFFFFF
    return ops, args


def _term_spans(codes):  # pragma: no cover - compiled below
    """The span table (columns ``SIGN`` ... ``VARYING``), one row per top-level additive term.

    A term starts wherever a node is not add/sub while every node above it is; its sign is the
    product of the sub right-hand sides it lies in (pending slots of the spine)."""
    n = codes.shape[0]
    spans = np.empty((n, 6), dtype=np.int64)
    slots = np.empty(n + 1, dtype=np.int64)
    slots[0] = 1
    top = 1
    m = 0
    constants = 0
    i = 0
    while i < n:
        top -= 1
        sign = slots[top]
        op = codes[i] >> 32
        if op == _ADD or op == _SUB:
            slots[top] = -sign if op == _SUB else sign  # the right operand, filled second
            slots[top + 1] = sign  # the left operand, filled first
            top += 2
            i += 1
            continue
        end = i
        need = 1
        first = constants
        varying = 0
        while need:
            o = codes[end] >> 32
            if o == _VAR:
                varying = 1
                need -= 1
            elif o == _CONST:
                constants += 1
                need -= 1
            elif o <= _BINARY_LAST:
                need += 1
            end += 1
        spans[m, 0] = sign
        spans[m, 1] = i
        spans[m, 2] = end
        spans[m, 3] = first
        spans[m, 4] = constants
        spans[m, 5] = varying
        m += 1
        i = end
    return spans[:m].copy()


def _inner_count(codes, spans):  # pragma: no cover - compiled below
    """The inner constants: a varying term's constants but its own coefficient (c*t, t*c, t/c, c/t)."""
    inner = 0
    for t in range(spans.shape[0]):
        start, end, c0, c1 = spans[t, 1], spans[t, 2], spans[t, 3], spans[t, 4]
        if spans[t, 5] and c1 > c0:
            own = 0
            op = codes[start] >> 32
            # c*t, c/t (a constant left operand), or t*c, t/c (the right operand one constant leaf)
            if (op == _MUL or op == _DIV) and (codes[start + 1] >> 32 == _CONST or (
                    codes[end - 1] >> 32 == _CONST and _subtree_end_jit(codes, start + 1) == end - 1)):
                own = 1
            inner += c1 - c0 - own
    return inner


def _term_programs(ops, args, spans):  # pragma: no cover - compiled below
    """The terms' programs one after another (each a contiguous block of the whole postfix
    program): ``(sum_ops, sum_args, starts, depth)``."""
    n = ops.shape[0]
    m = spans.shape[0]
    total = 0
    for t in range(m):
        total += spans[t, 2] - spans[t, 1]
    sum_ops = np.empty(total, dtype=np.int64)
    sum_args = np.empty(total, dtype=np.int64)
    starts = np.empty(m + 1, dtype=np.int64)
    starts[0] = 0
    position = 0
    depth = 0
    for t in range(m):
        height = 0
        for k in range(n - spans[t, 2], n - spans[t, 1]):
            op = ops[k]
            sum_ops[position] = op
            sum_args[position] = args[k]
            position += 1
            if op >= _CONST:
                height += 1
            elif op <= _BINARY_LAST:
                height -= 1
            depth = max(depth, height)
        starts[t + 1] = position
    return sum_ops, sum_args, starts, depth


def _term_fields(spans):  # pragma: no cover - compiled below
    """Each term's sign and size, the varying terms and the size of ``weighted_sum`` over them:
    ``(signs, lengths, varying, varying_size)``."""
    m = spans.shape[0]
    signs = np.empty(m)
    lengths = np.empty(m, dtype=np.int64)
    n_varying = 0
    for t in range(m):
        signs[t] = spans[t, 0]
        lengths[t] = spans[t, 2] - spans[t, 1]
        n_varying += spans[t, 5]
    varying = np.empty(n_varying, dtype=np.int64)
    varying_size = 1 if n_varying else 0  # weighted_sum's size: each term, its weight's 3 nodes, b
    v = 0
    for t in range(m):
        if spans[t, 5]:
            varying[v] = t
            varying_size += lengths[t] + 3
            v += 1
    return signs, lengths, varying, varying_size


def _analyse(codes):  # pragma: no cover - compiled below
    """The fields of :class:`Structure`, in its order, from the prefix codes (``op << 32 |
    column``, :data:`dgsr.core.kernels.codes.ENCODING`)."""
    ops, args = _postfix_jit(codes)
    spans = _term_spans_jit(codes)
    inner = _inner_count_jit(codes, spans)
    sum_ops, sum_args, starts, depth = _term_programs_jit(ops, args, spans)
    signs, lengths, varying, varying_size = _term_fields_jit(spans)
    return ops, args, spans, inner, sum_ops, sum_args, starts, depth, signs, lengths, varying, varying_size


def _same_term(ops, args, spans, theta, a, b):  # pragma: no cover - compiled below
    """Whether terms ``a`` and ``b`` are the same structure with the same constants."""
    n = ops.shape[0]
    length = spans[a, 2] - spans[a, 1]
    if spans[b, 2] - spans[b, 1] != length:
        return False
    ka, kb = n - spans[a, 2], n - spans[b, 2]
    for k in range(length):
        op = ops[ka + k]
        if ops[kb + k] != op:
            return False
        if op == _CONST:
            if theta[args[ka + k]] != theta[args[kb + k]]:
                return False
        elif args[ka + k] != args[kb + k]:
            return False
    return True


def _model(ops, args, spans, theta):  # pragma: no cover - compiled below
    """The inner fit's model ``b + sum_j w_j * u_j`` over the distinct varying terms ``u_j`` (a
    term repeated with the same constants is fitted once): the program ``weighted_sum`` would
    encode, its start (the expression's constants, 1 at the weights, 0 for ``b``), where the
    weights sit, and where each of the expression's constants is read back from the fitted ones
    (``constants[child_back] = fitted[model_back]``: every copy takes its one fitted copy's)."""
    n = ops.shape[0]
    m = spans.shape[0]
    owner = np.full(m, -1, dtype=np.int64)
    first = np.empty(m, dtype=np.int64)
    k = 0
    for t in range(m):
        if not spans[t, 5]:
            continue
        for q in range(k):
            if _same_term_jit(ops, args, spans, theta, t, first[q]):
                owner[t] = q
                break
        if owner[t] < 0:
            first[k] = t
            owner[t] = k
            k += 1
    # weighted_sum's layout: w_0, <u_0's constants>, w_1, <u_1's constants>, ..., b.
    weights_at = np.empty(k, dtype=np.int64)
    position = 0
    length = 1 + k
    for q in range(k):
        s = first[q]
        weights_at[q] = position
        position += 1 + spans[s, 4] - spans[s, 3]
        length += spans[s, 2] - spans[s, 1] + 2
    params = np.ones(position + 1)
    params[position] = 0.0
    for q in range(k):
        s = first[q]
        for i in range(spans[s, 4] - spans[s, 3]):
            params[weights_at[q] + 1 + i] = theta[spans[s, 3] + i]
    # Its postfix program: b, then each term's block (constants renumbered) times its weight, the
    # last term first, then the additions.
    model_ops = np.empty(length, dtype=np.int64)
    model_args = np.zeros(length, dtype=np.int64)
    model_ops[0] = _CONST
    model_args[0] = position
    p = 1
    for q in range(k - 1, -1, -1):
        s = first[q]
        shift = weights_at[q] + 1 - spans[s, 3]
        for j in range(n - spans[s, 2], n - spans[s, 1]):
            model_ops[p] = ops[j]
            model_args[p] = args[j] + shift if ops[j] == _CONST else args[j]
            p += 1
        model_ops[p] = _CONST
        model_args[p] = weights_at[q]
        model_ops[p + 1] = _MUL
        p += 2
    for j in range(k):
        model_ops[p + j] = _ADD
    back = 0
    for t in range(m):
        if owner[t] >= 0:
            back += spans[t, 4] - spans[t, 3]
    child_back = np.empty(back, dtype=np.int64)
    model_back = np.empty(back, dtype=np.int64)
    b = 0
    for t in range(m):
        q = owner[t]
        if q >= 0:
            for i in range(spans[t, 4] - spans[t, 3]):
                child_back[b] = spans[t, 3] + i
                model_back[b] = weights_at[q] + 1 + i
                b += 1
    return model_ops, model_args, params, weights_at, child_back, model_back


_subtree_end_jit = compile_kernel(_subtree_end)
_postfix_jit = compile_kernel(_postfix)
_term_spans_jit = compile_kernel(_term_spans)
_inner_count_jit = compile_kernel(_inner_count)
_term_programs_jit = compile_kernel(_term_programs)
_term_fields_jit = compile_kernel(_term_fields)
analyse_jit = compile_kernel(_analyse)
_same_term_jit = compile_kernel(_same_term)
model_jit = compile_kernel(_model)


@lru_cache(maxsize=1 << 15)
def structure(symbols: tuple[str, ...]) -> Structure:
    """The :class:`Structure` of a (non-empty, well-formed) prefix sequence (compiled).
    Memoised by structure: a child's inner fit and its scoring
    both read it."""
    fields = analyse_jit(prefix_codes(symbols))
    for field in fields:
        if isinstance(field, np.ndarray):
            field.setflags(write=False)
    ops, args, spans, inner, sum_ops, sum_args, starts, depth, signs, lengths, varying, varying_size = fields
    return Structure(ops, args, spans, int(inner), sum_ops, sum_args, starts, int(depth), signs, lengths, varying,
                     int(varying_size))


def fit_structure(shape: Structure, constants: tuple[float, ...], columns: np.ndarray, y: np.ndarray, steps: int,
                  *, tau: float, ftol: float, exact: float, rel_tol: float) -> tuple[np.ndarray | None, int, int]:
    """The inner fit of an expression of structure ``shape`` at ``constants`` on ``columns``
    (contiguous ``[n_features, n_rows]``) against ``y``: ``(fitted constants or None, passes,
    status)``; :data:`COLLINEAR` when the terms are numerically collinear (the caller then needs the
    minimum-norm least-squares start), 1 when a term is non-finite on some row."""
    theta = np.array(constants, dtype=np.float64)
    # The model is built in one compiled call and fitted by fit_jit in another: calling the
    # kernel from inside the first would compile the whole Levenberg-Marquardt loop a second time.
    model_ops, model_args, params, weights_at, child_back, model_back = model_jit(shape.ops, shape.args,
                                                                                  shape.spans, theta)
    best, improved, passes, status = fit_jit(model_ops, model_args, params, weights_at, columns, y, steps,
                                             tau, ftol, exact, rel_tol, OPERATOR_TABLE[0])
    if not improved:
        return None, int(passes), int(status)
    theta[child_back] = best[model_back]
    return theta, int(passes), int(status)

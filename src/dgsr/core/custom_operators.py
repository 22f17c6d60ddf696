"""User-defined operators, written as SymPy expressions: ``"gauss(x) = exp(-x**2)"``,
``"hyp(x, y) = sqrt(x**2 + y**2)"`` (PySR's spelling of a custom operator, in SymPy's syntax).

From the definition, dgsr derives everything the built-in operators have (:class:`Operator`):

* its value and its partial derivatives (SymPy's ``diff``), compiled to small postfix programs
  that the compiled kernels run like any other node (:mod:`dgsr.core.kernels.custom_rows`), and
  the same programs in numpy for the numpy paths, so both give the same values;
* an inverse for semantic backpropagation where SymPy's ``solve`` finds one (every branch: the
  one nearest the argument's current value is taken); where it finds none, the operator is
  opaque to backpropagation, and the policies still propose it;
* its SymPy form, an undefined function of its name (``gauss(x0)``: it prints under its name),
  and its body (:func:`expand`, for ``sympy(expand_operators=True)``);
* the nesting rule: it is transcendental when its body holds a function other than ``Abs`` and
  ``sign`` or a power with a variable exponent.

The operators of a process live in one table (:data:`dgsr.core.operators.OPERATORS`), so a name
means one operator for the life of the process: defining it again with the same body is a no-op
and with another body an error. An estimator keeps its definitions among its parameters and
defines them again wherever it is loaded (a pickle, a model file, a worker process).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import scipy.special
import sympy
from sympy.parsing.sympy_parser import parse_expr, standard_transformations

from dgsr.core.kernels.codes import (
    BODY_ARG0,
    BODY_ARG1,
    BODY_LIT,
    BODY_POW,
    BODY_UNARY,
    CODES,
    USER_BINARY_CODES,
    USER_UNARY_CODES,
    install_operator,
)
from dgsr.core.operators import (
    OPERATOR_ALIASES,
    OPERATORS,
    Operator,
    is_variable,
    register_operator,
)

__all__ = ["PYSR_OPERATORS", "Definition", "define_operator", "define_operators", "definition_of", "definitions_in", "expand", "is_custom", "parse_definition", "run_body",
           "split_operator_list", "uses_custom"]

_FORM = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(([^()]*)\)\s*=\s*(\S.*?)\s*$", re.DOTALL)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_FUNCTIONS = ("+ - * / ** exp log sin cos tan sqrt Abs tanh sinh cosh atan asin acos asinh erf sign")
# SymPy function -> Table 1 op code (the others are in codes.BODY_UNARY).
_TABLE_FUNCTIONS = {sympy.sin: CODES["sin"], sympy.cos: CODES["cos"], sympy.tan: CODES["tan"],
                    sympy.exp: CODES["exp"], sympy.log: CODES["log"]}
_NON_TRANSCENDENTAL = (sympy.Abs, sympy.sign)
#: PySR's operators beyond Table 1, by PySR's names, as the definitions they stand for: a name
#: alone (``unary_operators=["tanh", "cube"]``) defines the operator as if written out.
PYSR_OPERATORS: dict[str, str] = {
    "abs": "abs(x) = Abs(x)", "cube": "cube(x) = x**3", "neg": "neg(x) = -x", "sign": "sign(x) = sign(x)",
    "relu": "relu(x) = (x + Abs(x))/2", "tanh": "tanh(x) = tanh(x)", "sinh": "sinh(x) = sinh(x)",
    "cosh": "cosh(x) = cosh(x)", "atan": "atan(x) = atan(x)", "asin": "asin(x) = asin(x)",
    "acos": "acos(x) = acos(x)", "asinh": "asinh(x) = asinh(x)", "erf": "erf(x) = erf(x)",
    "log10": "log10(x) = log(x)/log(10)", "log2": "log2(x) = log(x)/log(2)", "exp2": "exp2(x) = 2**x",
    "pow": "pow(x, y) = x**y", "max": "max(x, y) = (x + y + Abs(x - y))/2",
    "min": "min(x, y) = (x + y - Abs(x - y))/2",
}
_MAX_SOLVE_OPS = 14  # SymPy's solve may take long on a large body: beyond this, no inverse
Instructions = list[tuple[int, float]]
#: The names of the user-defined operators of this process.
_CUSTOM: set[str] = set()


@dataclass(frozen=True)
class Definition:
    """A parsed definition: the operator's ``name``, its ``parameters`` (real SymPy symbols, as
    the user named them), its ``body`` over them and the ``text`` it was read from."""

    name: str
    parameters: tuple[sympy.Symbol, ...]
    body: sympy.Expr
    text: str


def _refuse(text: str, what: str, why: str) -> ValueError:
    return ValueError(f"{what}: cannot define the operator {text.strip()!r}: {why}")


def parse_definition(text: str, what: str = "operators") -> Definition:
    """The :class:`Definition` in ``text`` (``"name(x) = body"`` or ``"name(x, y) = body"``).

    Raises ValueError, one line naming the definition and the reason: not of that form, a name
    Table 1 or the variables use, a body SymPy cannot read, or one that uses other names."""
    match = _FORM.match(text)
    if match is None:
        raise _refuse(text, what, "write it as 'name(x) = expression' or 'name(x, y) = expression'")
    name, params, body_text = match.groups()
    reserved = set(OPERATORS) - set(_custom_names()) | set(OPERATOR_ALIASES) | {"c", "root"}
    if name.lower() in reserved or is_variable(name) or name.startswith("r") and name[1:] in OPERATORS:
        raise _refuse(text, what, f"{name!r} is taken by the expression language; choose another name")
    names = [p.strip() for p in params.split(",")]
    if not 1 <= len(names) <= 2 or not all(_NAME.match(p) for p in names) or len(set(names)) != len(names):
        raise _refuse(text, what, "an operator takes one or two arguments with distinct names, e.g. (x) or (x, y)")
    symbols = tuple(sympy.Symbol(p, real=True) for p in names)
    try:
        body = parse_expr(body_text, local_dict=dict(zip(names, symbols, strict=True)),
                          transformations=standard_transformations)
    except Exception as error:  # noqa: BLE001 - SymPy raises many kinds on bad text
        raise _refuse(text, what, f"SymPy cannot read {body_text!r} ({type(error).__name__})") from None
    if not isinstance(body, sympy.Expr):
        raise _refuse(text, what, f"{body_text!r} is not an expression")
    other = sorted(str(s) for s in body.free_symbols if s not in symbols)
    if other:
        raise _refuse(text, what, f"it uses {', '.join(other)} besides its arguments ({', '.join(names)})")
    unknown = sorted({type(f).__name__ for f in body.atoms(sympy.Function) if not _compilable(f)})
    if unknown:
        raise _refuse(text, what, f"dgsr cannot compile {', '.join(unknown)}; use {_FUNCTIONS}")
    return Definition(name, symbols, body, f"{name}({', '.join(names)}) = {body_text.strip()}")


def _compilable(f: sympy.Function) -> bool:
    return type(f) in _TABLE_FUNCTIONS or type(f).__name__ in BODY_UNARY


def _custom_names() -> list[str]:
    """The user-defined operators of this process, in the order they were defined."""
    return [name for name in OPERATORS if name in _CUSTOM]


def is_custom(name: str) -> bool:
    """Whether ``name`` is a user-defined operator of this process."""
    return name in _CUSTOM


def definition_of(item: str) -> str | None:
    """The definition an operator-list item stands for: the item itself when it is one
    (``"gauss(x) = exp(-x**2)"``), PySR's for a PySR name not defined yet (``"tanh"``), else None."""
    if "=" in item:
        return item
    name = item.strip().lower()
    return PYSR_OPERATORS[name] if name in PYSR_OPERATORS and name not in OPERATORS else None


def uses_custom(symbols: Iterable[str]) -> bool:
    """Whether a prefix sequence holds a user-defined operator (False at once when none is defined)."""
    return bool(_CUSTOM) and any(s in _CUSTOM for s in symbols)


def definitions_in(names: Iterable[str] | None) -> tuple[str, ...]:
    """The definitions of the user-defined operators among ``names`` (what a worker process
    needs to define them again)."""
    return tuple(OPERATORS[n].definition for n in (names or ()) if is_custom(n))  # type: ignore[misc]


def define_operator(text: str, what: str = "operators") -> str:
    """Define the operator of ``text`` in this process (:func:`parse_definition`) and return its
    name. The same definition again is a no-op; another one under a taken name is a ValueError."""
    definition = parse_definition(text, what)
    existing = OPERATORS.get(definition.name)
    if existing is not None:
        lam = existing.body
        same = (len(lam.variables) == len(definition.parameters)  # type: ignore[attr-defined]
                and sympy.simplify(lam(*definition.parameters) - definition.body) == 0)  # type: ignore[operator]
        if not same:
            raise _refuse(text, what, f"{definition.name!r} is already defined in this process as "
                                      f"{existing.definition!r}; give the new one another name")
        return definition.name
    arity = len(definition.parameters)
    taken = {CODES[n] for n in _custom_names()}
    free = [c for c in (USER_UNARY_CODES if arity == 1 else USER_BINARY_CODES) if c not in taken]
    if not free:
        raise _refuse(text, what, f"at most {len(USER_UNARY_CODES)} user-defined operators of each arity")
    value = _instructions(definition.body, definition.parameters, text, what)
    slopes = [_instructions(_derivative(definition.body, p), definition.parameters, text, what)
              for p in definition.parameters]
    install_operator(definition.name, free[0], (value, *slopes))
    body = definition.body
    # "tanh(x) = tanh(x)" is SymPy's own tanh: its SymPy form is that function, not a new one.
    own = isinstance(body, sympy.Function) and type(body).__name__ == definition.name \
        and body.args == definition.parameters
    register_operator(Operator(
        definition.name, arity, _numpy_function(value, arity), type(body) if own else sympy.Function(definition.name),
        _numpy_derivative(slopes), _inverse(definition),
        transcendental=_transcendental(definition.body), definition=definition.text,
        body=sympy.Lambda(definition.parameters, definition.body)))
    _CUSTOM.add(definition.name)
    return definition.name


def define_operators(*lists: object) -> tuple[str, ...]:
    """Define every definition (a string with ``=``) and PySR operator name (``"tanh"``) among the
    operator lists given (None and Table 1 names are skipped); returns their names. What a new
    process (a worker, an unpickled or loaded estimator) runs before it reads formulas that use them."""
    names = []
    for items in lists:
        if items is None or isinstance(items, str):
            continue
        texts = [definition_of(t) for t in items if isinstance(t, str)]  # type: ignore[attr-defined]
        names += [define_operator(text) for text in texts if text is not None]
    return tuple(names)


def split_operator_list(text: str) -> list[str]:
    """A comma-separated operator list (the CLI's ``--operators``) split at the commas outside
    parentheses, so a definition keeps its own: ``"+,hyp(x, y) = sqrt(x**2 + y**2)"``."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    return [*items, text[start:]]


def expand(expr: sympy.Expr) -> sympy.Expr:
    """``expr`` with every user-defined operator replaced by its body."""
    for name in _custom_names():
        expr = expr.replace(sympy.Function(name), OPERATORS[name].body)
    return expr


def _derivative(body: sympy.Expr, p: sympy.Symbol) -> sympy.Expr:
    """``d body / d p``, a point mass (the derivative of ``sign``) taken as 0."""
    d = sympy.diff(body, p)
    d = d.replace(lambda e: isinstance(e, sympy.DiracDelta), lambda e: sympy.Integer(0))
    return d.replace(lambda e: isinstance(e, sympy.Heaviside), lambda e: (sympy.sign(e.args[0]) + 1) / 2)


def _transcendental(body: sympy.Expr) -> bool:
    functions = [f for f in body.atoms(sympy.Function) if not isinstance(f, _NON_TRANSCENDENTAL)]
    powers = [p for p in body.atoms(sympy.Pow) if not p.exp.is_number]
    return bool(functions or powers)


def _instructions(expr: sympy.Expr, parameters: tuple[sympy.Symbol, ...], text: str, what: str) -> Instructions:
    """``expr`` as a body program (codes.BODY_*), the left operand of each binary node on top."""
    out: Instructions = []

    def fold(code: int, items: list[sympy.Expr]) -> None:
        if len(items) == 1:
            emit(items[0])
            return
        emit(items[-1])
        fold(code, items[:-1])
        out.append((code, 0.0))

    def emit(e: sympy.Expr) -> None:
        if e.is_number:
            value = complex(e.evalf())
            if value.imag != 0 or not np.isfinite(value.real):
                raise _refuse(text, what, f"its constant {e} is not a finite real number")
            out.append((BODY_LIT, value.real))
        elif e in parameters:
            out.append((BODY_ARG0 if e == parameters[0] else BODY_ARG1, 0.0))
        elif e.is_Add:
            fold(CODES["add"], list(e.args))
        elif e.is_Mul:
            num = [f for f in e.args if not (f.is_Pow and f.exp.is_number and f.exp < 0)]
            den = [f.base ** -f.exp for f in e.args if f.is_Pow and f.exp.is_number and f.exp < 0]
            if not den:
                fold(CODES["mul"], num)
                return
            fold(CODES["mul"], den)
            fold(CODES["mul"], num or [sympy.Integer(1)])
            out.append((CODES["div"], 0.0))
        elif e.is_Pow:
            simple = {2: ["sq"], sympy.Rational(1, 2): ["sqrt"], -1: ["inv"], sympy.Rational(-1, 2): ["sqrt", "inv"]}
            ops = simple.get(e.exp) if e.exp.is_number else None
            if ops is None:
                emit(e.exp)
                emit(e.base)
                out.append((BODY_POW, 0.0))
            else:
                emit(e.base)
                out.extend((CODES[op], 0.0) for op in ops)
        elif isinstance(e, sympy.Function) and _compilable(e) and len(e.args) == 1:
            emit(e.args[0])
            out.append((_TABLE_FUNCTIONS.get(type(e)) or BODY_UNARY[type(e).__name__], 0.0))
        else:
            raise _refuse(text, what, f"dgsr cannot compile {e}; use {_FUNCTIONS}")

    emit(expr)
    return out


_NUMPY_BINARY = {CODES["add"]: np.add, CODES["sub"]: np.subtract, CODES["mul"]: np.multiply,
                 CODES["div"]: np.divide, BODY_POW: np.power}
_NUMPY_UNARY = {**{CODES[n]: OPERATORS[n].numpy_fn for n in ("sin", "cos", "tan", "exp", "log", "sqrt", "inv", "sq")},
                BODY_UNARY["Abs"]: np.abs, BODY_UNARY["tanh"]: np.tanh, BODY_UNARY["sinh"]: np.sinh,
                BODY_UNARY["cosh"]: np.cosh, BODY_UNARY["atan"]: np.arctan, BODY_UNARY["asin"]: np.arcsin,
                BODY_UNARY["acos"]: np.arccos, BODY_UNARY["asinh"]: np.arcsinh, BODY_UNARY["erf"]: scipy.special.erf,
                BODY_UNARY["sign"]: np.sign}


def run_body(body: Instructions, a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    """A body program in numpy, the same operations as the compiled kernels (never warns)."""
    stack: list = []
    with np.errstate(all="ignore"):
        for code, literal in body:
            if code == BODY_ARG0:
                stack.append(np.asarray(a, dtype=np.float64))
            elif code == BODY_ARG1:
                stack.append(np.asarray(b, dtype=np.float64))
            elif code == BODY_LIT:
                stack.append(np.float64(literal))
            elif code in _NUMPY_BINARY:
                left = stack.pop()
                stack.append(_NUMPY_BINARY[code](left, stack.pop()))
            else:
                stack.append(_NUMPY_UNARY[code](stack.pop()))
        return stack[0] + np.zeros(np.shape(a)) if np.ndim(stack[0]) < np.ndim(a) else stack[0]


def _numpy_function(value: Instructions, arity: int) -> Callable[..., np.ndarray]:
    if arity == 1:
        return lambda a: run_body(value, a, a)
    return lambda a, b: run_body(value, a, b)


def _numpy_derivative(slopes: list[Instructions]) -> Callable:
    if len(slopes) == 1:
        return lambda a, out: run_body(slopes[0], a, a)
    return lambda a, b, out: (run_body(slopes[0], a, b), run_body(slopes[1], a, b))


def _solutions(definition: Definition, index: int) -> list[Instructions]:
    """Body programs of every solution of ``body = d`` for parameter ``index``, over ``d`` (the
    program's first argument) and the other parameter (its second); none when SymPy finds none."""
    if sympy.count_ops(definition.body) > _MAX_SOLVE_OPS:
        return []
    p = definition.parameters
    d = sympy.Symbol("desired_value", real=True)
    try:
        found = sympy.solve(sympy.Eq(definition.body, d), p[index])
    except Exception:  # noqa: BLE001 - SymPy gives up in many ways: the operator is then opaque
        return []
    arguments = (d,) if len(p) == 1 else (d, p[1 - index])
    out = []
    for solution in found:
        if not isinstance(solution, sympy.Expr) or solution.free_symbols - set(arguments):
            continue
        try:
            out.append(_instructions(solution, arguments, definition.text, ""))
        except ValueError:
            continue
    return out


def _inverse(definition: Definition) -> Callable | None:
    """The operator's inverse (:data:`dgsr.core.operators.UnaryInverse` / ``BinaryInverse``), or
    None when no argument has a solution."""
    if len(definition.parameters) == 1:
        branches = _solutions(definition, 0)
        if not branches:
            return None

        def unary(desired: np.ndarray, current: np.ndarray) -> np.ndarray:
            candidates = np.array([run_body(s, desired, desired) for s in branches])
            cur = np.where(np.isfinite(current), current, 0.0)
            with np.errstate(all="ignore"):
                distance = np.where(np.isfinite(candidates), np.abs(candidates - cur), np.inf)
            best = np.take_along_axis(candidates, np.argmin(distance, axis=0)[None], axis=0)[0]
            return np.where(np.isfinite(best), best, np.nan)
        return unary
    per_child = [_solutions(definition, 0), _solutions(definition, 1)]
    if not any(per_child):
        return None

    def binary(child: int, desired: np.ndarray, other: np.ndarray) -> np.ndarray:
        # No current value to be near: the first finite non-negative solution, else the first finite.
        out = np.full(np.shape(desired), np.nan)
        for wanted in (lambda v: np.isfinite(v) & (v >= 0), np.isfinite):
            for s in per_child[child]:
                values = run_body(s, desired, other)
                with np.errstate(invalid="ignore"):
                    out = np.where(np.isnan(out) & wanted(values), values, out)
        return out
    return binary

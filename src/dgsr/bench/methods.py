"""Method adapters: one function per method, registered by name.

An adapter takes a run's :class:`~dgsr.bench.protocol.Split` and :class:`RunBudget` and returns a
:class:`MethodResult`. Adding a method is one function and one :func:`register_method` call.
Optional dependencies (dgsr's estimator, pyoperon, gplearn) are imported inside the adapters.
Every run executes in its own process with one thread (CONTRACTS §2).

dgsr variants are also recognised by name: ``dgsr[-random|-neural][-const-never|best|all][-k<N>]``,
e.g. ``dgsr-random-k8``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dgsr.runtime.threads import pin_process_threads

from .datasets import parse_formula
from .protocol import Split, r2_score


@dataclass(frozen=True)
class RunBudget:
    """What a run may spend: wall seconds, evaluations (None = the method's default) and the seed."""

    time: float
    evaluations: int | None
    seed: int


@dataclass
class MethodResult:
    """What an adapter hands back. predictions: [N_test]; model: SymPy expression in the column names;
    fitted_model: the same model as the method evaluates it, where ``model`` is a rewriting of it
    (dgsr shows its formula simplified under the training columns' signs)."""

    predictions: np.ndarray
    model: Any = None
    n_evaluations: float | None = None
    curve: list[tuple[float, float]] | None = None  # (evaluations, best train R²), for Figure 4
    info: dict[str, Any] = field(default_factory=dict)
    fitted_model: Any = None


MethodFn = Callable[[Split, RunBudget], MethodResult]


@dataclass(frozen=True)
class Method:
    """A registered method; ``module`` is imported by a worker process to find ``fn`` again."""

    name: str
    fn: MethodFn
    module: str
    description: str = ""


METHODS: dict[str, Method] = {}


def register_method(name: str, fn: MethodFn, description: str = "", module: str | None = None) -> Method:
    """Register ``fn`` under ``name``. Worker processes re-import ``module`` (default: ``fn``'s module),
    so register at import time of a module a fresh process can import (spawn start method)."""
    method = Method(name, fn, module or getattr(fn, "__module__", __name__), description)
    METHODS[name] = method
    return method


_DGSR_NAME = re.compile(
    r"^dgsr((?:-(?:random|neural|semantic|learnedvalue|learned|noparam|param|const-(?:never|best|all)|sel-(?:best|accuracy|score|balanced|cv|validation)"
    r"|k\d+|inner\d+|cv\d+|nojit|nosum|nopowerchain|nopow|chainpair|nochain|nofree|nopair|nosnap|nogroups|noreduce|nodiff|target|ratio|units|invtrig|noindex|index|noprefactor|norational|nolinearized|nolinratio|nolinfactor))*)$")


def dgsr_options(name: str) -> dict[str, Any] | None:
    """Estimator keyword arguments of a dgsr variant name, or None if ``name`` is not one."""
    match = _DGSR_NAME.match(name)
    if match is None:
        return None
    options: dict[str, Any] = {}
    for token in re.findall(r"random|neural|semantic|learnedvalue|learned|noparam|param|const-[a-z]+|sel-[a-z]+"
                            r"|inner\d+|cv\d+|k\d+|nojit|nosum|nopowerchain|nopow|chainpair|nochain|nofree|nopair|nosnap|nogroups|noreduce|nodiff|target|ratio|units|invtrig|noindex|index|noprefactor|norational|nolinearized|nolinratio|nolinfactor",
                            match.group(1)):
        if token == "learnedvalue":  # the learned prior and the learned value (the paper's critic)
            options["policy"] = "learned"
            options["use_value"] = True
        elif token == "units":  # fit with the problem's physical units (Feynman: data/feynman/units.tsv)
            options["units"] = True
        elif token == "nosum":  # the semantic policy without sums of operands as first proposals
            options["additive_roots"] = False
        elif token == "nopowerchain":  # no powers of an argument times a chain over it
            options["power_chains"] = False
        elif token == "nopow":  # the semantic policy without power-law operands
            options["power_laws"] = False
        elif token == "chainpair":  # also the sums of two chains of one shape (off by default)
            options["chain_pairs"] = True
        elif token == "nochain":  # the semantic policy without chains op(a*x + b) in its library
            options["inner_chains"] = 0
        elif token == "nofree":  # power laws with half-integer exponents only
            options["free_exponents"] = False
        elif token == "nosnap":  # fitted constants as fitted, not snapped to simple values
            options["snap_constants"] = False
        elif token == "nogroups":  # with units, no chains over the dimensionless groups
            options["unit_chains"] = False
        elif token == "nodiff":  # with units, no differences of same-unit groups in the reduced search
            options["unit_differences"] = False
        elif token == "noreduce":  # with units, no first search on the pi-reduced problem
            options["reduce_units"] = False
        elif token == "target":  # chains fitted per expansion to a factor's target (off by default)
            options["target_chains"] = True
        elif token in ("index", "noindex"):  # chains also over the single-index monomial of y
            options["index_chains"] = token == "index"
        elif token == "norational":  # no ratios of small polynomials among the operands
            options["rational_operands"] = False
        elif token == "nolinearized":  # no powers of sums of products among the operands
            options["linearized_operands"] = False
        elif token == "nolinratio":  # the linearized operands without ratios of sums
            options["linearized_ratios"] = False
        elif token == "nolinfactor":  # the linearized operands without power factors divided out
            options["linearized_factors"] = False
        elif token == "noprefactor":  # no chains over the index times the power law beside it
            options["index_prefactors"] = False
        elif token == "ratio":  # without units, chains also over ratios and products of variables (off by default)
            options["ratio_chains"] = True
        elif token == "invtrig":  # Table 1's unary operators and asin, acos
            from dgsr.core.operators import UNARY

            options["unary_operators"] = [*UNARY, "asin", "acos"]
        elif token == "nopair":  # without the two-variable parametric forms and the bumps
            options["pair_operands"] = False
        elif token.startswith("cv"):  # the cross-validation regime of model_selection="cv"
            options["cv_max_rows"] = int(token[len("cv"):])
        elif token == "nojit":  # the numpy scoring and policy paths (dgsr.core.kernels.compiler.AVAILABLE)
            options["jit"] = False
        elif token in ("random", "neural", "semantic", "learned"):
            options["policy"] = token
        elif token in ("param", "noparam"):  # the semantic policy with or without parametric pair operands
            options["parametric_operands"] = token == "param"
        elif token.startswith("inner"):
            options["inner_fit_steps"] = int(token[len("inner"):])
        elif token.startswith("const-"):
            options["constant_fitting"] = token[len("const-"):]
        elif token.startswith("sel-"):
            options["model_selection"] = token[len("sel-"):]
        else:
            options["n_samples"] = int(token[1:])
    return options


def get_method(name: str) -> Method:
    """The registered method, or a dgsr variant built from its name."""
    if name in METHODS:
        return METHODS[name]
    options = dgsr_options(name)
    if options is not None:
        return Method(name, _dgsr_adapter(options), __name__, f"dgsr with {options}")
    raise KeyError(f"unknown method {name!r}; registered: {', '.join(sorted(METHODS))}")


def limit_threads() -> None:
    """One thread per run: libraries already imported are told directly, later ones read the env
    (:func:`dgsr.runtime.threads.pin_process_threads`; a run is a process of its own)."""
    pin_process_threads(1)


# ---------------------------------------------------------------- dgsr


def _dgsr_adapter(options: dict[str, Any]) -> MethodFn:
    def run(split: Split, budget: RunBudget) -> MethodResult:
        if options.get("policy") == "neural":
            # Imported first so its thread pool is sized to 1 below; the random policy never
            # loads torch, and its import (seconds on a busy machine) would count as fit time.
            from dgsr.neural import require_torch

            require_torch("the neural-policy benchmark method")
            import torch  # noqa: F401

        limit_threads()
        from dgsr import SymbolicRegressor

        kwargs: dict[str, Any] = {"max_time": budget.time, "random_state": budget.seed, "verbose": False, **options}
        if not kwargs.pop("jit", True):
            from dgsr.core.kernels import compiler

            compiler.AVAILABLE = False  # this run's own spawned process (runner.py): nothing else sees it
        # Tokens that set the semantic policy's own options (the rest keep its defaults).
        policy_options = {k: kwargs.pop(k) for k in ("parametric_operands", "additive_roots", "power_laws",
                                                      "inner_chains", "free_exponents", "pair_operands",
                                                      "chain_pairs", "unit_chains", "ratio_chains",
                                                      "target_chains", "index_chains", "index_prefactors",
                                                      "rational_operands", "power_chains", "linearized_operands",
                                                      "linearized_ratios", "linearized_factors")
                          if k in kwargs}
        if kwargs.pop("use_value", False):
            from dgsr.policies.learned.policy import LearnedPriorPolicy

            kwargs["policy"] = LearnedPriorPolicy(use_value=True, **policy_options)
        elif policy_options:
            from dgsr.policies.semantic.policy import SemanticPolicy

            kwargs["policy"] = SemanticPolicy(**policy_options)
        if budget.evaluations is not None:
            kwargs["max_evaluations"] = budget.evaluations
        units = problem_units(split) if kwargs.pop("units", False) else {}
        est = SymbolicRegressor(**kwargs)
        est.fit(split.X_train, split.y_train, **units)
        return MethodResult(
            predictions=np.asarray(est.predict(split.X_test), dtype=np.float64),
            model=est.sympy(),
            n_evaluations=float(getattr(est, "n_evaluations_", np.nan)),
            curve=_history_curve(getattr(est, "history_", None)),
            fitted_model=est.expression_.to_sympy(est.selected_features_),
        )

    return run


def problem_units(split: Split) -> dict[str, Any]:
    """``fit``'s ``X_units`` and ``y_units`` for the problem ``split`` comes from, from the packaged
    units table (:mod:`dgsr.bench.feynman_units`); a problem without units is a ValueError."""
    from dgsr.bench.feynman_units import load_units

    table = load_units().get(split.dataset)
    if table is None:
        raise ValueError(f"no units for {split.dataset!r}: the units table covers the Feynman and Strogatz problems")
    target = [s for s in table if s not in set(map(str, split.X_train.columns))]
    return {"X_units": [str(table[str(c)]) for c in split.X_train.columns],
            "y_units": str(table[target[0]]) if len(target) == 1 else None}


def _history_curve(history: Any) -> list[tuple[float, float]] | None:
    """(evaluations, best train R²) from ``history_`` entries, dicts or objects with those fields."""
    def field_of(entry: Any, name: str) -> float:
        return float(entry[name] if isinstance(entry, dict) else getattr(entry, name))

    try:
        curve = [(field_of(h, "evaluations"), field_of(h, "best_r2")) for h in history or []]
    except (KeyError, AttributeError, TypeError, ValueError):
        return None  # a curve is optional: never fail a run over its shape
    return curve or None


for _name in ("dgsr", "dgsr-random", "dgsr-neural", "dgsr-const-never", "dgsr-const-best", "dgsr-const-all",
              "dgsr-k8", "dgsr-k16"):
    register_method(_name, _dgsr_adapter(dgsr_options(_name) or {}), f"dgsr {dgsr_options(_name) or 'defaults'}",
                    module=__name__)


# ---------------------------------------------------------------- Operon


def _array(X) -> np.ndarray:
    """A writeable float64 copy: pyoperon rejects pandas' read-only views."""
    return np.array(X, dtype=np.float64, order="F", copy=True)

OPERON_SYMBOLS = "add,sub,mul,div,sin,cos,tan,exp,log,sqrt,square,constant,variable"
#: The operator set of CONTRACTS §3.
OPERON_STRONG_SYMBOLS = "add,sub,mul,div,constant,variable,sin,cos,exp,log,sqrt,square"


def run_operon(split: Split, budget: RunBudget) -> MethodResult:
    """pyoperon as configured before: its GP defaults (linear scaling, 1000 individuals, max length
    50), no local-search iterations, BIC model selection, one thread, stopped by ``max_time``.

    Kept beside :func:`run_operon_strong` for comparison with earlier runs: BIC selects smaller,
    less accurate models than Operon's default selection, so this configuration flatters dgsr.
    """
    return _run_operon(split, budget, symbols=OPERON_SYMBOLS,
                       model_selection_criterion="bayesian_information_criterion")


def run_operon_strong(split: Split, budget: RunBudget) -> MethodResult:
    """pyoperon as its strong users run it (CONTRACTS §3): ten Levenberg-Marquardt iterations per
    individual (``optimizer_iterations=10``), its default model selection, the full operator set
    ``add,sub,mul,div,constant,variable,sin,cos,exp,log,sqrt,square``, one thread."""
    return _run_operon(split, budget, symbols=OPERON_STRONG_SYMBOLS, optimizer_iterations=10)


def _run_operon(split: Split, budget: RunBudget, *, symbols: str, **options: Any) -> MethodResult:
    limit_threads()
    import sympy
    from pyoperon.sklearn import SymbolicRegressor

    est = SymbolicRegressor(allowed_symbols=symbols, max_evaluations=int(budget.evaluations or 1_000_000),
                            max_time=max(1, int(budget.time)), n_threads=1, random_state=budget.seed, **options)
    names = [str(c) for c in split.X_train.columns]
    est.fit(_array(split.X_train), split.y_train)
    # Column names are data, not code: Operon writes the model with placeholders x0, x1, ..., the
    # checked parser reads that, and the placeholders become Symbols of the real names afterwards.
    safe = [f"x{i}" for i in range(len(names))]
    model = parse_formula(est.get_model_string(est.model_, 12, safe), safe)
    model = model.xreplace({sympy.Symbol(s): sympy.Symbol(n) for s, n in zip(safe, names)})
    return MethodResult(
        predictions=np.asarray(est.predict(_array(split.X_test)), dtype=np.float64),
        model=model,
        # With several objectives Operon's CallCount stays 0; residual evaluations count every
        # evaluation of a model on the training rows, local-search steps included (CONTRACTS §2).
        n_evaluations=float(est.stats_["residual_evaluations"]),
        info={"generations": int(est.stats_["generations"]),
              "jacobian_evaluations": int(est.stats_["jacobian_evaluations"])},
    )


register_method("operon", run_operon, "pyoperon, BIC selection, no local search (the earlier configuration, 1 thread)")
register_method("operon-strong", run_operon_strong,
                "pyoperon, optimizer_iterations=10, default selection, full operators (CONTRACTS §3, 1 thread)")


# ---------------------------------------------------------------- gplearn

GPLEARN_FUNCTIONS = ("add", "sub", "mul", "div", "sin", "cos", "log", "sqrt")


def _gplearn_sympy(program: list, names: list[str]):
    """SymPy form of a gplearn prefix program; protected sqrt/log act on |x|, as gplearn computes them."""
    import sympy

    unary = {"sqrt": lambda a: sympy.sqrt(sympy.Abs(a)), "log": lambda a: sympy.log(sympy.Abs(a)),
             "sin": sympy.sin, "cos": sympy.cos, "tan": sympy.tan, "abs": sympy.Abs, "neg": lambda a: -a,
             "inv": lambda a: 1 / a}
    binary = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
              "div": lambda a, b: a / b, "max": sympy.Max, "min": sympy.Min}
    pos = 0

    def build():
        nonlocal pos
        node = program[pos]
        pos += 1
        if isinstance(node, (int, np.integer)):
            return sympy.Symbol(names[int(node)])
        if isinstance(node, (float, np.floating)):
            return sympy.Float(float(node))
        args = [build() for _ in range(node.arity)]
        return (unary[node.name] if node.arity == 1 else binary[node.name])(*args)

    return build()


def run_gplearn(split: Split, budget: RunBudget) -> MethodResult:
    """gplearn has no time limit: grow one generation at a time (warm start) until the budget is spent."""
    limit_threads()
    from gplearn.genetic import SymbolicRegressor

    population = 1000
    max_generations = max(1, int((budget.evaluations or 500_000) // population))
    est = SymbolicRegressor(population_size=population, generations=1, function_set=GPLEARN_FUNCTIONS,
                            metric="mse", parsimony_coefficient=0.001, warm_start=True, low_memory=True,
                            n_jobs=1, random_state=budget.seed)
    X_train, y_train = _array(split.X_train), split.y_train
    var_y = float(np.var(y_train)) or 1.0
    curve: list[tuple[float, float]] = []
    start, last_gen_time = time.perf_counter(), 0.0
    for generation in range(1, max_generations + 1):
        # Stop before a generation that would probably overrun the budget.
        elapsed = time.perf_counter() - start
        if generation > 1 and elapsed + last_gen_time > budget.time:
            break
        est.set_params(generations=generation)
        t0 = time.perf_counter()
        est.fit(X_train, y_train)
        last_gen_time = time.perf_counter() - t0
        curve.append((float(generation * population), 1.0 - float(est._program.raw_fitness_) / var_y))
    names = [str(c) for c in split.X_train.columns]
    predictions = np.asarray(est.predict(_array(split.X_test)), dtype=np.float64)
    return MethodResult(predictions=predictions, model=_gplearn_sympy(est._program.program, names),
                        n_evaluations=curve[-1][0], curve=curve, info={"generations": len(curve)})


register_method("gplearn", run_gplearn, "gplearn SymbolicRegressor, warm-started per generation")


# ---------------------------------------------------------------- reference points


def run_linear(split: Split, budget: RunBudget) -> MethodResult:
    """Ordinary least squares: a cheap floor for accuracy and a sanity check of the harness."""
    import sympy

    X = np.column_stack([split.X_train.to_numpy(), np.ones(len(split.y_train))])
    coef, *_ = np.linalg.lstsq(X, split.y_train, rcond=None)
    names = [str(c) for c in split.X_train.columns]
    model = sum(sympy.Float(c) * sympy.Symbol(n) for c, n in zip(coef[:-1], names)) + sympy.Float(coef[-1])
    predictions = np.column_stack([split.X_test.to_numpy(), np.ones(len(split.X_test))]) @ coef
    train_r2 = r2_score(split.y_train, X @ coef)
    return MethodResult(predictions=predictions, model=model, n_evaluations=1.0, curve=[(1.0, train_r2)])


register_method("linear", run_linear, "least-squares linear model (reference)")

"""The hyper-parameters of one fit, frozen: what :func:`dgsr.estimator.fit_front.fit_front` reads.

``SymbolicRegressor.fit`` builds a :class:`FitConfig` once from its parameters and passes it
down; nothing below the estimator reads the estimator itself. The fold searches of the
whole-search check (:mod:`dgsr.estimator.search_cv`) run on a derived config
(:meth:`FitConfig.for_fold_search`): one process, no expert iteration, silent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dgsr.estimator.cross_validation import CV_MAX_ROWS, CV_MIN_ROWS
from dgsr.estimator.search_cv import runs_search_cv


@dataclass(frozen=True)
class FitConfig:
    """The estimator's parameters as one fit uses them (see :class:`dgsr.SymbolicRegressor` for
    each one's meaning; the defaults are the estimator's)."""

    max_time: float | None = 60
    max_evaluations: int | None = 500000
    random_state: Any = None
    policy: Any = "semantic"
    n_samples: int = 16
    iterations_per_trial: int = 1000
    p_uct: float = 1.0
    constant_fitting: str | None = None
    max_size: int = 60
    inner_fit_steps: int = 3
    operators: Any = None
    unary_operators: Any = None
    binary_operators: Any = None
    target_r2: float | None = None
    model_selection: str = "cv"
    #: Estimators pickled before ``cv_max_rows`` existed read the former row limit.
    cv_max_rows: int = CV_MAX_ROWS
    verbose: bool = False
    max_features: int | None = None
    device: str = "cpu"
    warm_start: bool = False
    finetune: bool = False
    n_jobs: int | None = 1
    parallel_backend: str = "local"
    guesses: Any = None
    nested_constraints: Any = None
    constraints: Any = None
    maxdepth: int | None = None
    complexity_of_operators: Any = None
    complexity_of_constants: float | None = None
    complexity_of_variables: float | None = None
    batching: bool | None = None
    batch_size: int = 1000
    dimensional_constraint_penalty: float = 1000.0
    dimensionless_constants_only: bool = False
    snap_constants: bool = True
    reduce_units: bool = True
    unit_differences: bool = True
    #: ``fit``'s ``X_units`` and ``y_units`` (arguments of ``fit``, as in PySR, not parameters).
    x_units: Any = None
    y_units: Any = None
    #: The units as the search checks them (:class:`dgsr.core.units.UnitCheck`): set by ``fit_front``.
    search_units: Any = None
    #: The guesses as the search's roots, in its units and columns: set by ``fit_front``
    #: (:func:`dgsr.estimator.guesses.seeded`), not a parameter.
    search_roots: tuple = ()

    def allowed_operators(self) -> tuple[str, ...] | None:
        """The Table 1 operators the search may use (None: all), from the three operator parameters."""
        from dgsr.core.operators import resolve_operators

        return resolve_operators(self.operators, self.unary_operators, self.binary_operators)

    def formula_rules(self) -> Any:
        """The user's rules on formulas (:class:`dgsr.core.formula_rules.FormulaRules`), or None."""
        from dgsr.core.formula_rules import RULE_PARAMETERS, formula_rules

        return formula_rules({name: getattr(self, name) for name in RULE_PARAMETERS})

    def search_config(self) -> Any:
        """The MCTS settings (:class:`dgsr.search.mcts.SearchConfig`) these parameters name."""
        from dgsr.search.mcts import SearchConfig

        kwargs: dict[str, Any] = {"n_samples": self.n_samples, "p_uct": self.p_uct,
                                  "iterations_per_trial": self.iterations_per_trial,
                                  "max_size": self.max_size, "operators": self.allowed_operators(),
                                  "inner_fit_steps": self.inner_fit_steps, "rules": self.formula_rules(),
                                  "max_rows": None if self.batching is False else int(self.batch_size),
                                  "units": self.search_units}
        if self.constant_fitting is not None:
            kwargs["constant_fitting"] = self.constant_fitting
        if self.search_roots:
            kwargs["roots"] = self.search_roots
        return SearchConfig(**kwargs)

    def cross_validates(self, n_rows: int) -> bool:
        """Whether ``model_selection="cv"`` checks its pick on data of ``n_rows`` rows."""
        return self.model_selection == "cv" and CV_MIN_ROWS <= n_rows <= int(self.cv_max_rows)

    def cross_validates_search(self, n_rows: int) -> bool:
        """Whether the fit also cross-validates its whole search on ``n_rows`` rows (:mod:`dgsr.estimator.search_cv`)."""
        return runs_search_cv(self.model_selection, n_rows, int(self.cv_max_rows))

    def for_fold_search(self, seed: int, max_time: float | None, max_evaluations: float | None,
                        policy: Any) -> FitConfig:
        """The config of one fold search: this fit's, chosen by ``"balanced"``, on one process
        (the fold searches run one after another inside this fit), without expert iteration,
        a warm start or a progress line, with its own seed, time and evaluations and ``policy``."""
        return dataclasses.replace(
            self, model_selection="balanced", verbose=False, warm_start=False, finetune=False, n_jobs=1,
            parallel_backend="local", random_state=int(seed), max_time=max_time, policy=policy,
            max_evaluations=None if max_evaluations is None else max(int(max_evaluations), 1))


def config_from(params: Mapping[str, Any]) -> FitConfig:
    """The config of the parameters in ``params`` (an estimator's ``get_params()`` or its
    ``__dict__``; other keys are ignored, a missing parameter gets its default: an estimator
    unpickled from a version without it)."""
    return FitConfig(**{f.name: params[f.name] for f in dataclasses.fields(FitConfig) if f.name in params})

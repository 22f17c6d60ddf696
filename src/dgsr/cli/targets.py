"""Several targets on the command line: ``dgsr fit data.csv --target a,b`` fits one front per
target (one :class:`~dgsr.SymbolicRegressor` fit on a 2-D ``y``, :mod:`dgsr.estimator.multi_output`),
writes ``front_a.csv`` and ``front_b.csv`` (and plots) beside one ``model.json`` and ``model.pkl``;
``dgsr predict`` then writes one ``prediction_<target>`` column per target."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from dgsr.cli.errors import CLIError
from dgsr.cli.tables import column_list
from dgsr.estimator.multi_output import file_stem

if TYPE_CHECKING:
    from dgsr.estimator.regressor import SymbolicRegressor


class Target(NamedTuple):
    """One target of a run: its column name, its fitted single-output estimator, and the stem of
    its files (``front`` for a run of one target, ``front_<name>`` for several)."""

    name: str
    estimator: SymbolicRegressor
    stem: str


def target_columns(option: str | None, columns: Sequence[Any], path: Any) -> list[str]:
    """The target columns ``--target`` names: the last column when it is not given, a column of
    that exact name (a name may hold a comma), else a comma-separated list of columns."""
    names = [str(c) for c in columns]
    if option is None:
        return [names[-1]]
    if option in names:
        return [option]
    targets = [t.strip() for t in option.split(",") if t.strip()]
    missing = [t for t in targets if t not in names]
    if not targets or missing:
        what = f"target column {option!r}" if not targets or len(targets) == 1 else \
            f"target column(s) {column_list(missing)}"
        raise CLIError(f"{what} not found in {path}; columns: {column_list(columns)}")
    if len({file_stem(t) for t in targets}) != len(targets):
        raise CLIError(f"--target names a column twice, or two whose file names would be the same: {option!r}")
    return targets


def run_targets(est: SymbolicRegressor, targets: Sequence[str]) -> list[Target]:
    """The targets of fitted ``est``, each with its estimator and file stem."""
    if len(targets) == 1:
        return [Target(targets[0], est, "front")]
    return [Target(name, one, f"front_{file_stem(name)}") for name, one in zip(targets, est.estimators_)]


def run_file_names(targets: Sequence[str]) -> list[str]:
    """The files a run of ``targets`` writes in its folder."""
    if len(targets) == 1:
        return ["front.csv", "model.json", "model.pkl", "front.png"]
    stems = [f"front_{file_stem(t)}" for t in targets]
    return [*(f"{s}.csv" for s in stems), "model.json", "model.pkl", *(f"{s}.png" for s in stems)]

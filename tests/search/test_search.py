"""MCTS search: selection (equation 3), back-propagation, budgets, stop reasons, constant modes."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dgsr.core.budget import Budget
from dgsr.core.evaluate import evaluate, r2_score
from dgsr.core.expression import Expression
from dgsr.core.pareto import ParetoArchive
from dgsr.core.parser import parse
from dgsr.policies.random import RandomPolicy
from dgsr.search.evaluator import Evaluator
from dgsr.search.mcts import SearchConfig, accuracy_value, run_search
from dgsr.search.mutations import Mutation, apply_mutation
from dgsr.search.policy import Proposal
from dgsr.search.tree import Trial
from tests.ctrl_c import CTRL_C_SHAPES

pytestmark = pytest.mark.timeout(60, method="thread")


def _data(n: int = 200, d: int = 2, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(1, 3, size=(n, d))


class ScriptedPolicy:
    """Proposes fixed root operands on the empty expression and fixed mutations elsewhere."""

    has_critic = True
    max_variables = None

    def __init__(self, roots: list[tuple[Expression, float]], values: dict[str, float] | None = None,
                 grow: list[Mutation] | None = None):
        self.roots, self.values, self.grow = roots, values or {}, grow or []
        self.calls = 0

    def prepare(self, X, y, rng):
        return None

    def propose(self, context, expression, k, rng):
        self.calls += 1
        if expression.is_empty:
            return [Proposal(Mutation(0, "root", b), p) for b, p in self.roots[:k]]
        return [Proposal(m, 1.0 / len(self.grow)) for m in self.grow[:k]]

    def value(self, context, expressions):
        return np.array([self.values.get(str(e), 0.1) for e in expressions])


def test_finds_a_product_with_the_random_policy():
    X = _data()
    y = X[:, 0] * X[:, 1]
    result = run_search(X, y, RandomPolicy(), rng=0, budget=Budget(max_evaluations=20_000, target_r2=1 - 1e-10))
    assert result.stop_reason == "target"
    assert result.best.r2 >= 1 - 1e-10
    assert np.allclose(evaluate(result.best.expression, X), y)


def test_same_seed_same_search():
    X = _data(seed=1)
    y = np.sin(X[:, 0]) + X[:, 1] ** 2
    runs = [run_search(X, y, RandomPolicy(), rng=7, budget=Budget(max_evaluations=3000)) for _ in range(2)]
    assert runs[0].n_evaluations == runs[1].n_evaluations
    assert [e.expression.key() for e in runs[0].archive.front()] == [e.expression.key() for e in runs[1].archive.front()]
    other = run_search(X, y, RandomPolicy(), rng=8, budget=Budget(max_evaluations=3000))
    assert [e.expression.key() for e in other.archive.front()] != [e.expression.key() for e in runs[0].archive.front()]


@pytest.mark.parametrize("mode", ["never", "best", "all"])
def test_evaluation_budget_is_respected(mode):
    X = _data(seed=2)
    y = np.exp(0.3 * X[:, 0]) - X[:, 1]
    config = SearchConfig(constant_fitting=mode, n_samples=8)
    result = run_search(X, y, RandomPolicy(), config=config, rng=0, budget=Budget(max_evaluations=1500))
    assert result.stop_reason == "evaluations"
    # Checked before every child: at most one evaluation, or one minimal constant fit, over.
    assert 1500 <= result.n_evaluations <= 1500 + 2
    assert all(math.isfinite(e.mse) and math.isfinite(e.r2) for e in result.archive.front())


def test_time_limit_stops_the_search():
    X = _data(seed=3)
    y = np.cos(X[:, 0] * X[:, 1]) + X[:, 0]
    result = run_search(X, y, RandomPolicy(), rng=0, budget=Budget(max_time=0.5))
    assert result.stop_reason == "time"
    assert result.elapsed < 5.0


def test_terminal_root_ends_trials_and_max_trials_stops():
    X = _data()
    y = X[:, 0]
    policy = ScriptedPolicy(roots=[])  # no proposal at all: the root is terminal at once
    result = run_search(X, y, policy, config=SearchConfig(max_trials=3), rng=0, budget=Budget(max_evaluations=100))
    assert result.stop_reason == "trials" and result.n_trials == 3
    assert policy.calls == 3 and result.n_evaluations == 0 and result.best is None


def test_invalid_and_non_finite_children_are_counted_not_kept():
    X = _data()
    y = X[:, 0] + 1
    bad_node = Mutation(5, "sin")  # out of range on a one-node expression
    policy = ScriptedPolicy(roots=[(parse("x0"), 0.5), (parse("log(x0 - 10)"), 0.5)], grow=[bad_node])
    result = run_search(X, y, policy, config=SearchConfig(max_trials=1, iterations_per_trial=5), rng=0)
    stats = result.mutation_stats
    assert stats["invalid:node_out_of_range"] >= 1
    assert stats["non_finite"] == 1
    assert stats["valid"] == 1
    assert [e.expression.key() for e in result.archive.front()][-1] != parse("log(x0 - 10)").key()


def test_evaluations_are_cached_across_trials():
    X = _data()
    y = 2 * X[:, 0] + X[:, 1]
    policy = ScriptedPolicy(roots=[(parse("x0 + x1"), 1.0)])
    result = run_search(X, y, policy, config=SearchConfig(max_trials=4), rng=0)
    assert result.n_trials == 4
    assert result.n_evaluations == 1.0


def test_selection_follows_equation_3_and_backprop_adds_decayed_values():
    X = _data()
    y = X[:, 0] * 0.0 + np.linspace(0, 1, len(X))  # nothing here is solved
    a, b = parse("x0"), parse("x1")
    policy = ScriptedPolicy(roots=[(a, 0.9), (b, 0.1)], values={"x0": 0.2, "x1": 0.6})
    config = SearchConfig(p_uct=1.0, depth_decay=0.5, progressive_widening=0.0)
    evaluator = Evaluator(X, y, config, Budget().start(), ParetoArchive(), np.random.default_rng(0))
    trial = Trial(0, policy, None, evaluator, config, np.random.default_rng(0), __import__("collections").Counter())
    trial.iterate(fit=False)
    root = trial.root
    assert [c.expression.key() for c in root.children] == [a.key(), b.key()]
    assert root.visits == 2
    assert root.value_sum == pytest.approx(0.5 * (0.2 + 0.6))
    # Equation 3: V + p_uct * P * sqrt(sum N) / (1 + N) = 0.2 + 0.9*sqrt(2)/2 vs 0.6 + 0.1*sqrt(2)/2.
    scores = [c.value_sum / c.visits + c.prior * math.sqrt(2) / 2 for c in root.children]
    assert scores[0] > scores[1]
    assert trial._select() is root.children[0]


def test_value_is_one_for_solutions_else_the_critic():
    X = _data()
    y = X[:, 0]
    policy = ScriptedPolicy(roots=[(parse("x0"), 0.5), (parse("x1"), 0.5)], values={"x1": 0.25})
    config = SearchConfig(progressive_widening=0.0)
    evaluator = Evaluator(X, y, config, Budget().start(), ParetoArchive(), np.random.default_rng(0))
    trial = Trial(0, policy, None, evaluator, config, np.random.default_rng(0), __import__("collections").Counter())
    trial.iterate(fit=False)
    values = {str(c.expression): c.value_sum for c in trial.root.children}
    assert values == {"x0": 1.0, "x1": 0.25}


def test_accuracy_value_is_monotone_and_bounded():
    r2s = [-5, 0.0, 0.5, 0.9, 0.95, 0.98, 0.989, 0.99, 1.0]
    values = [accuracy_value(r) for r in r2s]
    assert values[0] == 0.0 and values[-1] == 1.0 and values[-2] == 1.0
    assert all(b >= a for a, b in itertools.pairwise(values))
    assert values[-3] < 1.0


@pytest.mark.parametrize(("mode", "solved"), [("never", False), ("best", True), ("all", True)])
def test_constant_fitting_modes(mode, solved):
    X = _data(seed=4)
    y = np.exp(0.7 * X[:, 0])
    start = parse("exp(1.0*x0)")  # right shape, wrong constant: linear scaling alone cannot fix it
    policy = ScriptedPolicy(roots=[(start, 1.0)])
    config = SearchConfig(constant_fitting=mode, max_trials=1, iterations_per_trial=2)
    result = run_search(X, y, policy, config=config, rng=0)
    assert (result.best.r2 > 1 - 1e-9) is solved
    if solved:
        assert result.best.expression.constants[0] == pytest.approx(0.7, rel=1e-5)


@pytest.mark.parametrize("shape", CTRL_C_SHAPES, ids=["python", "compiled"])
def test_interrupt_returns_what_was_found(shape):
    X = _data()
    y = X[:, 0] ** 2

    class Interrupting(RandomPolicy):
        def __init__(self):
            super().__init__()
            self.n = 0

        def propose(self, context, expression, k, rng):
            self.n += 1
            if self.n == 20:
                shape()
            return super().propose(context, expression, k, rng)

    result = run_search(X, y, Interrupting(), rng=0)
    assert result.stop_reason == "interrupted"
    assert result.archive.front() and result.n_evaluations > 0


def test_training_data_path_rebuilds_the_solution():
    X = _data()
    y = X[:, 0] * X[:, 1] + X[:, 1]
    config = SearchConfig(record_training_data=True, iterations_per_trial=300, min_visits=2)
    result = run_search(X, y, RandomPolicy(), config=config, rng=3, budget=Budget(max_evaluations=30_000))
    solved = [t for t in result.trials if t.solution_path]
    assert solved, "the random policy solves this within the budget"
    path = solved[0].solution_path
    expr = Expression.empty()
    for state, mutation in path:
        assert state == expr
        expr = apply_mutation(expr, mutation)
    assert r2_score(y, evaluate(expr, X)) >= 0.99 or result.best.r2 >= 0.99
    targets = solved[0].critic_targets
    assert targets and all(0.0 <= t <= 1.0 for _, t in targets)
    assert any(t == 1.0 for _, t in targets)


def test_best_path_replays_to_the_trials_most_accurate_expression():
    X = _data()
    y = np.sin(X[:, 0]) * np.exp(X[:, 1]) + X[:, 0] ** 3  # not found in this budget
    config = SearchConfig(record_training_data=True, iterations_per_trial=40)
    result = run_search(X, y, RandomPolicy(), config=config, rng=1, budget=Budget(max_evaluations=400))
    trial = result.trials[0]
    assert not trial.solution_path and trial.best_path
    assert trial.best_path_r2 == trial.best_r2  # the most accurate node of the trial
    expr = Expression.empty()
    for state, mutation in trial.best_path:
        assert state == expr
        expr = apply_mutation(expr, mutation)
    assert expr.size > 0


def test_warm_start_keeps_the_archive():
    X = _data()
    y = X[:, 0] / X[:, 1]
    first = run_search(X, y, RandomPolicy(), rng=0, budget=Budget(max_evaluations=500))
    before = {e.size: e.mse for e in first.archive.front()}
    second = run_search(X, y, RandomPolicy(), rng=1, budget=Budget(max_evaluations=500), archive=first.archive)
    assert second.archive is first.archive
    after = {e.size: e.mse for e in second.archive.front()}
    assert min(after.values()) <= min(before.values())


def test_config_rejects_bad_values():
    with pytest.raises(ValueError, match="constant_fitting"):
        SearchConfig(constant_fitting="sometimes")
    with pytest.raises(ValueError, match="depth_decay"):
        SearchConfig(depth_decay=0.0)
    with pytest.raises(ValueError, match="n_samples"):
        SearchConfig(n_samples=0)


def test_row_subset_counts_fractional_evaluations():
    X = _data(n=5000)
    y = X[:, 0] + X[:, 1]
    policy = ScriptedPolicy(roots=[(parse("x0 + x1"), 0.5), (parse("x0"), 0.5)])
    config = SearchConfig(max_trials=1, max_rows=1000)
    result = run_search(X, y, policy, config=config, rng=0)
    assert result.n_evaluations == pytest.approx(2 * 1000 / 5000)
    assert result.best.r2 == pytest.approx(1.0)
    full = run_search(X, y, policy, config=SearchConfig(max_trials=1, max_rows=None), rng=0)
    assert full.n_evaluations == 2.0


def test_overflowing_predictions_are_invalid_not_errors():
    X = _data()
    y = X[:, 0]
    huge = Expression.constant(1e200)
    policy = ScriptedPolicy(roots=[(Expression.combine("add", parse("x0"), huge), 0.5),
                                   (Expression.combine("mul", parse("x0"), huge), 0.5)])
    result = run_search(X, y, policy, config=SearchConfig(max_trials=1), rng=0)
    assert all(math.isfinite(e.mse) for e in result.archive.front())


def test_a_policy_without_critic_values_nodes_by_accuracy():
    X = _data()
    y = X[:, 0] + 0.3 * np.sin(3 * X[:, 1])
    config = SearchConfig(progressive_widening=0.0)
    evaluator = Evaluator(X, y, config, Budget().start(), ParetoArchive(), np.random.default_rng(0))
    trial = Trial(0, RandomPolicy(), 2, evaluator, config, np.random.default_rng(0), __import__("collections").Counter())
    trial.iterate(fit=False)
    children = trial.root.children
    assert children
    for c in children:
        assert c.value_sum == pytest.approx(accuracy_value(c.r2))
    assert len({round(c.value_sum, 9) for c in children}) > 1  # not a constant value


@pytest.mark.parametrize("linear_terms", [True, False])
def test_sums_get_a_weight_per_term(linear_terms):
    X = _data()
    y = 3.0 * X[:, 0] - 0.7 * np.sin(X[:, 1]) + 1.0
    policy = ScriptedPolicy(roots=[(parse("x0 + sin(x1)"), 1.0)])
    config = SearchConfig(max_trials=1, linear_terms=linear_terms, constant_fitting="never")
    result = run_search(X, y, policy, config=config, rng=0)
    if linear_terms:
        assert result.best.r2 == pytest.approx(1.0, abs=1e-12)
        np.testing.assert_allclose(evaluate(result.best.expression, X), y, rtol=1e-9)
    else:
        assert result.best.r2 < 0.999  # one shared scale for both terms cannot fit it


def test_children_are_valued_with_their_inner_constants_fitted_and_kept_that_way():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(300, 3))
    y = 2.5 * np.sin(1.3 * (X[:, 0] - 0.4) * (X[:, 1] + 0.7)) + X[:, 2]
    child = parse("sin(1.1*(x0 - 0.3)*(x1 + 0.5)) + x2")
    plain = Evaluator(X, y, SearchConfig(), Budget().start(), ParetoArchive(), np.random.default_rng(0))
    r2_plain, form_plain = plain.score_child(child, child.key())
    assert form_plain is child and plain.budget.evaluations == 1.0
    config = SearchConfig(inner_fit_steps=8, inner_fit_rows=64)
    fitting = Evaluator(X, y, config, Budget().start(), ParetoArchive(), np.random.default_rng(0))
    r2_fit, form = fitting.score_child(child, child.key())
    assert form.symbols == child.symbols and form.constants != child.constants
    assert r2_plain < 0.9 and r2_fit > 0.999999  # valued at what the structure reaches once fitted
    # the fit's passes over 64 of 300 rows count as fractions (CONTRACTS §2), plus one full scoring
    spent = fitting.budget.evaluations - 1.0
    assert 0 < spent < 20 * 64 / 300 and (spent * 300 / 64) == pytest.approx(round(spent * 300 / 64))
    # the same child again costs nothing more: its fitted form is cached by the child's key
    before = fitting.budget.evaluations
    assert fitting.score_child(child, child.key()) == (r2_fit, form) and fitting.budget.evaluations == before


def test_a_proposal_carrying_a_child_over_the_size_limit_is_applied_again_and_refused():
    big = parse("x0*x0*x0*x0*x0*x0 + x0")  # 13 nodes: over the search's max_size of 8

    class CarriesChildren:
        has_critic = False

        def prepare(self, X, y, rng):
            return None

        def propose(self, context, expression, k, rng):
            if not expression.is_empty:
                return []
            # a root mutation whose carried child is wrong and too large: the search must not keep it
            return [Proposal(Mutation(0, "root", parse("x0")), 1.0, child=big)]

        def value(self, context, expressions):
            return np.full(len(expressions), np.nan)

    X = np.random.default_rng(0).normal(size=(30, 1))
    result = run_search(X, X[:, 0] * 3.0, CarriesChildren(), config=SearchConfig(max_size=8, max_trials=1),
                        rng=0, budget=Budget(max_evaluations=50))
    sizes = [e.size for e in result.archive.front()]
    assert sizes and max(sizes) <= 8 + 4  # the applied child x0 (and its scaled form), never `big`
    assert all(e.expression.symbols != big.symbols for e in result.archive.front())


def test_a_search_that_only_finds_what_it_has_scored_stops_as_exhausted():
    # A policy with nothing new to offer after its first trial: the search stops after
    # max_idle_trials trials in a row that scored nothing, long before its evaluation budget.
    X = _data()
    y = X[:, 0] + X[:, 1]
    policy = ScriptedPolicy([(parse("x0", ["x0", "x1"]), 0.5), (parse("x1", ["x0", "x1"]), 0.5)],
                            grow=[Mutation(0, "sin")])
    config = SearchConfig(max_idle_trials=5, iterations_per_trial=20)
    result = run_search(X, y, policy, config=config, rng=0, budget=Budget(max_evaluations=100_000))
    assert result.stop_reason == "exhausted"
    assert [t.evaluations > 0 for t in result.trials] == [True] + [False] * 5
    off = SearchConfig(max_idle_trials=None, iterations_per_trial=20, max_trials=12)
    result = run_search(X, y, policy, config=off, rng=0, budget=Budget(max_evaluations=100_000))
    assert result.stop_reason == "trials" and len(result.trials) == 12


def test_the_search_runs_its_matrix_products_on_one_blas_thread_and_restores_the_callers():
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_threads() -> list[int]:
        return [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]

    X = np.random.default_rng(0).normal(size=(40, 2))
    seen: list[list[int]] = []
    with threadpool_limits(limits=2, user_api="blas"):
        callers = blas_threads()
        if not callers or max(callers) < 2:
            pytest.skip("no BLAS library here runs two threads")
        run_search(X, X[:, 0] * 2.0, RandomPolicy(), rng=0, budget=Budget(max_evaluations=300),
                   on_progress=lambda p: seen.append(blas_threads()))
        assert blas_threads() == callers
    assert len(seen) >= 2 and all(max(threads) == 1 for threads in seen[:-1])  # the last: after the search

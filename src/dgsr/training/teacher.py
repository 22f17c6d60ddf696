"""Distillation examples whose target mutation depends on the data: the semantic policy as teacher.

The dismantling corpus (:mod:`dgsr.training.corpus`) labels a state with the next step of a *random*
dismantling order of the ground truth; many orders are equally right, so the label is mostly
predictable from the expression alone and a network can lower its loss without reading y.
:class:`dgsr.policies.semantic.policy.SemanticPolicy` instead picks the mutation whose operand best matches
what the data asks of a node (semantic backpropagation + least squares): its choice is a function
of the x-y pairing. Training on ``(X, y, state, teacher's best mutation)`` therefore rewards a
policy for reading the data (issue 13, item 3).

States come from two places:

* the ground truth's dismantling path (the states pre-training already shows), and
* the teacher's own greedy rollout from the empty expression (the states a search driven by
  such a policy visits; training on them is what DAgger-style imitation asks for).

A third, slower source labels whole paths instead of single choices: :func:`search_path_examples`
runs the MCTS with the semantic policy on a problem and, when it reaches R² >= 0.99, keeps the
shortest mutation path to a solution (the expert-iteration target of Section 3.2, with the
semantic search as the expert). Each step of such a path is a mutation that led to a fit of
*these* data, ground truth or not. A search costs about a third of a second, too slow to run inside a
training step, so :func:`collect_search_paths` gathers paths ahead of time
(``bench/training/collect_paths.py``) and pre-training mixes them in (``dgsr pretrain --paths``).

Pure functions of their seed; numpy only (torch is not imported here).
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from dgsr.core.expression import Expression
from dgsr.policies.semantic.policy import SemanticPolicy
from dgsr.search.mutations import InvalidMutation, Mutation, apply_mutation
from dgsr.training.corpus import TrainingExample, training_problems
from dgsr.training.dismantle import mutation_path
from dgsr.training.generator import DEFAULT_CONFIG, GeneratorConfig

#: greedy teacher steps taken from the empty expression per problem
ROLLOUT_STEPS = 4
#: labelled states drawn from each generated problem by default
STEPS_PER_PROBLEM = 4
#: evaluations of one teacher search (:func:`search_path_examples`)
SEARCH_EVALUATIONS = 2000


def teacher_policy() -> SemanticPolicy:
    """The teacher: the semantic policy with no random share (its ranking only) and without
    parametric operands (the teacher of the shipped weights; their per-problem fits would
    multiply the cost of labelling, docs/notes/design_history.md)."""
    return SemanticPolicy(random_share=0.0, parametric_operands=False, additive_roots=False, power_laws=False)


def teacher_examples(X: np.ndarray, y: np.ndarray, target: Expression, rng: np.random.Generator, *,
                     teacher: SemanticPolicy | None = None, mutation_size: float = 10,
                     rollout_steps: int = ROLLOUT_STEPS) -> list[TrainingExample]:
    """Every labelled state of one problem: dismantling-path states and greedy-rollout states, each
    with the teacher's best mutation (states where the teacher has nothing valid are skipped)."""
    teacher = teacher or teacher_policy()
    context = teacher.prepare(X, y, rng)
    # One label per state: asking the teacher twice about a state would return its second choice
    # (a policy widening a node moves down its ranking).
    labels: dict[tuple, tuple[Expression, Mutation | None]] = {}

    def label(state: Expression) -> Mutation | None:
        key = state.key()
        if key not in labels:
            best = teacher.propose(context, state, 1, rng)
            labels[key] = (state, best[0].mutation if best else None)
        return labels[key][1]

    for state, _ in mutation_path(target, rng, mutation_size):
        label(state)
    current = Expression.empty()
    for _ in range(rollout_steps):
        mutation = label(current)
        if mutation is None:
            break
        try:
            current = apply_mutation(current, mutation, max_size=teacher.max_size)
        except InvalidMutation:
            break
    return [TrainingExample(X, y, state, mutation, target)
            for state, mutation in labels.values() if mutation is not None]


def teacher_stream(seed: int | Sequence[int], *, config: GeneratorConfig = DEFAULT_CONFIG,
                   mutation_size: float = 10, n_points: int = 100, steps_per_problem: int = STEPS_PER_PROBLEM,
                   exclude: frozenset | None = None) -> Iterator[TrainingExample]:
    """Endless, seeded stream of teacher-labelled examples, ``steps_per_problem`` per drawn problem
    (in random order); held-out expressions are excluded as in :func:`dgsr.training.corpus.example_stream`."""
    rng = np.random.default_rng(seed)
    teacher = teacher_policy()
    for problem in training_problems(rng, config, n_points, exclude):
        examples = teacher_examples(problem.X, problem.y, problem.expression, rng, teacher=teacher,
                                    mutation_size=mutation_size)
        for i in rng.permutation(len(examples))[:steps_per_problem]:
            yield examples[i]


def search_path_examples(X: np.ndarray, y: np.ndarray, target: Expression, rng: np.random.Generator, *,
                         evaluations: int = SEARCH_EVALUATIONS, teacher: SemanticPolicy | None = None,
                         X_check: np.ndarray | None = None, y_check: np.ndarray | None = None,
                         partial_r2: float | None = None) -> list[TrainingExample]:
    """The shortest mutation path to a solution (R² >= 0.99) found by an MCTS with the semantic
    policy in ``evaluations`` evaluations, one example per step; empty when the search fails.

    With ``X_check, y_check`` (other rows of the same problem) the path is kept only when the
    search's solution also reaches R² >= 0.99 on them: a label should lead to the law, not to a
    formula that fits these rows only.

    ``partial_r2`` also labels searches that fail: the path to the most accurate expression of
    the search's best trial, when that expression reaches ``partial_r2`` (on the check rows too,
    when given). These are the moves that made progress on problems the teacher cannot solve in
    its budget, which solution paths alone never show.
    """
    from dgsr.core.budget import Budget
    from dgsr.core.evaluate import evaluate, r2_score
    from dgsr.search.mcts import SearchConfig, run_search

    config = SearchConfig(n_samples=16, record_training_data=True)
    fallback = SemanticPolicy(parametric_operands=False, additive_roots=False, power_laws=False)
    result = run_search(X, y, teacher or fallback, config=config, rng=rng,
                        budget=Budget(max_evaluations=evaluations, target_r2=config.solved_r2))

    def best_fits_check(threshold: float) -> bool:
        # the archive's most accurate entry is the searched expression with its fitted constants
        if X_check is None or y_check is None:
            return True
        best = result.archive.best()
        with np.errstate(all="ignore"):
            pred = evaluate(best.expression, X_check) if best is not None else None
        return pred is not None and bool(np.all(np.isfinite(pred))) and r2_score(y_check, pred) >= threshold

    paths = [t.solution_path for t in result.trials if t.solution_path]
    if paths:
        path = min(paths, key=len)
        threshold = config.solved_r2
    elif partial_r2 is not None:
        trial = max(result.trials, key=lambda t: t.best_path_r2, default=None)
        if trial is None or not trial.best_path or trial.best_path_r2 < partial_r2:
            return []
        path, threshold = trial.best_path, partial_r2
    else:
        return []
    if not best_fits_check(threshold):
        return []
    return [TrainingExample(X, y, state, mutation, target) for state, mutation in path]


def collect_search_paths(seed: int | Sequence[int], *, n_problems: int | None = None,
                         seconds: float | None = None, config: GeneratorConfig = DEFAULT_CONFIG,
                         n_points: int = 100, evaluations: int = SEARCH_EVALUATIONS,
                         exclude: frozenset | None = None, check_points: int = 0,
                         partial_r2: float | None = None) -> Iterator[tuple[int, list[TrainingExample]]]:
    """Run :func:`search_path_examples` on freshly drawn training problems (held-out ones excluded)
    until ``n_problems`` were tried or ``seconds`` passed; yields ``(problem index, examples)``
    for each solved problem. ``check_points > 0`` draws that many more rows per problem and keeps
    only paths whose solution also fits them; ``partial_r2`` labels failed searches too
    (:func:`search_path_examples`)."""
    if n_problems is None and seconds is None:
        raise ValueError("give n_problems or seconds")
    rng = np.random.default_rng(seed)
    teacher = SemanticPolicy(parametric_operands=False, additive_roots=False, power_laws=False)
    start = time.perf_counter()
    for i, problem in enumerate(training_problems(rng, config, n_points + check_points, exclude)):
        if (n_problems is not None and i >= n_problems) or \
                (seconds is not None and time.perf_counter() - start >= seconds):
            return
        X, y = problem.X[:n_points], problem.y[:n_points]  # rows are i.i.d.: any split is random
        check = (problem.X[n_points:], problem.y[n_points:]) if check_points else (None, None)
        examples = search_path_examples(X, y, problem.expression, rng, evaluations=evaluations,
                                        teacher=teacher, X_check=check[0], y_check=check[1],
                                        partial_r2=partial_r2)
        if examples:
            yield i, examples


def save_search_paths(path: str | Path, paths: list[list[TrainingExample]]) -> None:
    """Write collected paths (a pickle: a local training artefact, not an exchange format)."""
    with open(path, "wb") as f:
        pickle.dump({"version": 1, "paths": paths}, f, protocol=pickle.HIGHEST_PROTOCOL)


def load_search_paths(*files: str | Path) -> list[list[TrainingExample]]:
    """Paths written by :func:`save_search_paths` (only load files you made: pickle runs code)."""
    out: list[list[TrainingExample]] = []
    for file in files:
        with open(file, "rb") as f:
            data = pickle.load(f)
        if not isinstance(data, dict) or data.get("version") != 1:
            raise ValueError(f"{file} is not a search-path file written by dgsr.training.teacher.save_search_paths")
        out.extend(data["paths"])
    return out

"""Run (method, dataset, seed) jobs in separate processes under a hard time limit, resumably.

Each run is one spawned process with one thread (CONTRACTS §2), so a run that hangs or crashes is
killed from outside and recorded as a failure while the others go on. Each finished run is one JSON
line appended (and flushed) to ``runs.jsonl``; a second invocation skips runs already there.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import math
import multiprocessing as mp
import os
import signal
import time
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from dgsr.runtime.threads import one_thread_env

from .datasets import DatasetRef, list_datasets, load_problem, parse_formula, quick_datasets
from .methods import RunBudget, get_method

RESULTS_FILE = "runs.jsonl"
SIZE_CAP_S = 10.0  # cap on simplifying one model for its size
SOLUTION_CAP_S = 10.0  # cap on one exact-solution check


@dataclass(frozen=True)
class RunSpec:
    """One run. ``evals`` None = the method's default evaluation budget."""

    method: str
    suite: str
    dataset: str
    seed: int
    noise: float
    time: float
    evals: int | None
    data_dir: str

    def key(self) -> tuple:
        return run_key(asdict(self))


def run_key(row: dict[str, Any]) -> tuple:
    """Identity of a run for resuming: (method, dataset, seed, noise, time, evals)."""
    evals = row.get("evals")
    return (row["method"], row["dataset"], int(row["seed"]), float(row["noise"]), float(row["time"]),
            None if evals is None else int(evals))


def default_hard_limit(budget_s: float) -> float:
    """Wall seconds after which a run is killed: twice its budget plus start-up and post-processing."""
    return 2.0 * budget_s + 30.0


def plan_runs(*, data_dir: Path, suites: Sequence[str], methods: Sequence[str], seeds: Sequence[int],
              time_s: float, evals: int | None = None, noise: float = 0.0, datasets: Sequence[str] | None = None,
              limit: int | None = None, quick: bool = False, half: str | None = None) -> list[RunSpec]:
    """The runs of a benchmark, ordered seed, dataset, method so partial results stay comparable.

    ``half`` (``develop``, ``confirm`` or ``all``; None: ``develop`` for the laws, ``all`` for
    the other suites) selects the part of each suite that one develops on or confirms with
    (CONTRACTS §3a): the laws' families as :mod:`.laws` splits them, every other suite by
    position in its list (even: develop, odd: confirm). ``limit`` applies after it.
    """
    if quick:
        refs = quick_datasets(data_dir)
    else:
        refs = []
        for suite in suites:
            suite_refs = list_datasets(suite, data_dir)
            suite_half = half or ("develop" if suite == "laws" else "all")
            if suite == "laws":
                from .laws import laws_in_half

                wanted_half = {law.name for law in laws_in_half(suite_half)}
                suite_refs = [r for r in suite_refs if r.name in wanted_half]
            else:
                suite_refs = in_half(suite_refs, suite_half)
            refs.extend(suite_refs[:limit] if limit else suite_refs)
    if datasets:
        wanted = set(datasets)
        missing = wanted - {r.name for r in refs}
        if missing:
            raise KeyError(f"datasets not in the chosen suites: {', '.join(sorted(missing))}")
        refs = [r for r in refs if r.name in wanted]
    for name in methods:
        get_method(name)  # fail early on a typo, not in every worker
    return [RunSpec(m, r.suite, r.name, int(s), float(noise), float(time_s), evals, str(data_dir))
            for s in seeds for r in refs for m in methods]


def in_half(refs: Sequence[Any], half: str) -> list[Any]:
    """The ``develop`` (even positions), ``confirm`` (odd) or ``all`` part of a suite's list: the
    fixed split of CONTRACTS §3a for the suites that are not the law catalogue."""
    if half not in ("develop", "confirm", "all"):
        raise ValueError(f"unknown half {half!r}; choose develop, confirm or all")
    if half == "all":
        return list(refs)
    return [r for i, r in enumerate(refs) if (i % 2 == 0) == (half == "develop")]


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Every JSON line of a results file; a torn last line (killed harness) is ignored."""
    rows = []
    if path.is_file():
        for line in path.read_text().splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                if line.strip():
                    rows.append(json.loads(line))
    return rows


def _append_row(path: Path, row: dict[str, Any]) -> None:
    with path.open("a") as f:
        f.write(json.dumps(row) + "\n")
        f.flush()


# ---------------------------------------------------------------- inside the worker process


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def shown_r2(model: Any, split: Any) -> float | None:
    """Test R² of the formula a method shows (its ``model``), evaluated on the test rows: where it
    differs from the R² of the method's own predictions, the formula is not what the method fitted
    (a defect of its display). None where it cannot be evaluated there."""
    from .law_metrics import model_predictions
    from .protocol import r2_score

    try:
        return _finite(r2_score(split.y_test, model_predictions(model, split.X_test)))
    except Exception:  # noqa: BLE001  (a formula SymPy or numpy cannot evaluate: no figure, not a crash)
        return None


def _solution(result, truth) -> tuple[bool, str | None]:
    """Whether the model is the truth by SRBench's check, and the form that passed: ``"shown"``,
    or ``"fitted"`` where only the model as the method evaluates it does (a display that
    simplified under the data's signs, ``c**3*m/sqrt(c**2 - v**2)`` for
    ``m*c**2/sqrt(1 - v**2/c**2)``, is the same function on the data but not for SymPy)."""
    from .protocol import is_symbolic_solution as check

    if check(result.model, truth, SOLUTION_CAP_S):
        return True, "shown"
    fitted = getattr(result, "fitted_model", None)
    if fitted is not None and str(fitted) != str(result.model) and check(fitted, truth, SOLUTION_CAP_S):
        return True, "fitted"
    return False, None


def execute_run(spec: RunSpec, send=None) -> dict[str, Any]:
    """Run one spec in this process and return its row; ``send(row)`` also gets the row before the
    (slow, capped) SymPy post-processing, so a kill during it still keeps the accuracy."""
    from .protocol import SOLUTION_R2_GATE, make_split, model_size, r2_score

    row: dict[str, Any] = {**asdict(spec), "status": "error", "error": None}
    row.pop("data_dir")
    t_start = time.perf_counter()
    problem = load_problem(DatasetRef(spec.suite, spec.dataset), Path(spec.data_dir), spec.seed)
    law, noise = None, spec.noise
    if spec.suite == "laws":
        from .laws import get_law

        law = get_law(spec.dataset)
        noise = law.noise or spec.noise  # an entry's own noise level is part of its definition
        row["noise_train"] = noise
    split = dataclasses.replace(make_split(problem.X, problem.y, spec.seed, noise=noise), dataset=spec.dataset)
    row.update(n_train=len(split.y_train), n_test=len(split.y_test), n_features=split.X_train.shape[1])
    method = get_method(spec.method)
    t_fit = time.perf_counter()
    try:
        result = method.fn(split, RunBudget(spec.time, spec.evals, spec.seed))
    except Exception as exc:  # noqa: BLE001  (a failing method is a result to record, not a harness crash)
        row.update(error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc(limit=8)[-4000:],
                   fit_time=time.perf_counter() - t_fit)
        return row
    row["fit_time"] = time.perf_counter() - t_fit
    r2 = r2_score(split.y_test, result.predictions)
    row.update(
        status="ok" if _finite(r2) is not None else "invalid",
        error=None if _finite(r2) is not None else "non-finite test predictions",
        r2_test=_finite(r2), model=None if result.model is None else str(result.model),
        n_evaluations=None if result.n_evaluations is None else _finite(float(result.n_evaluations)),
        curve=None if result.curve is None else [[float(e), _finite(float(v))] for e, v in result.curve],
        info=result.info or None, size=None, solution=None, post="pending",
    )
    if send is not None:
        send(dict(row))
    if result.model is not None:
        row["r2_shown"] = shown_r2(result.model, split)
    try:
        if result.model is not None:
            row["size"] = model_size(result.model, SIZE_CAP_S)
        if problem.formula is not None:
            row["solution"] = False
            gate = row["r2_test"] is not None and row["r2_test"] > SOLUTION_R2_GATE
            if result.model is not None and gate:
                truth = parse_formula(problem.formula, problem.variables)
                row["solution"], row["solution_form"] = _solution(result, truth)
        if law is not None:
            from .law_metrics import law_fields

            row.update(law_fields(law, result.model, split, spec.seed, row["r2_test"], exact=row["solution"],
                                  seconds=SOLUTION_CAP_S))
        row["post"] = "done"
    except Exception as exc:  # noqa: BLE001  (the accuracy stands even if SymPy chokes on the model)
        row["post"] = f"error: {type(exc).__name__}: {exc}"
    row["wall_time"] = time.perf_counter() - t_start
    return row


def _worker(spec: RunSpec, module: str, conn) -> None:
    """Process entry point: own session (so the parent can kill the whole group), then run."""
    with contextlib.suppress(OSError):
        os.setsid()
    try:
        importlib.import_module(module)  # registers methods defined outside dgsr.bench.methods
        row = execute_run(spec, send=conn.send)
    except BaseException as exc:  # noqa: BLE001  (data errors etc.: report them rather than die silently)
        row = {"status": "error", "error": f"{type(exc).__name__}: {exc}",
               "traceback": traceback.format_exc(limit=8)[-4000:]}
    conn.send(row)
    conn.close()


# ---------------------------------------------------------------- in the harness process


@dataclass
class _Active:
    spec: RunSpec
    proc: Any
    conn: Any
    started: float
    last: dict[str, Any] | None = None
    final: bool = False


def _kill(proc) -> None:
    if hasattr(os, "killpg"):
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)  # the worker leads its own group: this ends its children too
    with contextlib.suppress(Exception):
        proc.kill()
    proc.join(5)


def _drain(active: _Active) -> None:
    with contextlib.suppress(EOFError, OSError):
        while active.conn.poll():
            message = active.conn.recv()
            if active.last is not None and "method" not in message:
                message = {**active.last, **message}  # worker-level error after a partial row
            active.last = message
            active.final = message.get("post") != "pending"


def _row_for(active: _Active, status: str, error: str) -> dict[str, Any]:
    base = {k: v for k, v in asdict(active.spec).items() if k != "data_dir"}
    if active.last is not None and active.last.get("post") == "pending":
        # The method finished and was scored; only the SymPy post-processing was cut short.
        return {**base, **active.last, "post": f"killed ({error})"}
    return {**base, **(active.last or {}), "status": status, "error": error}


def run_benchmark(specs: Iterable[RunSpec], out_dir: str | os.PathLike, *, jobs: int = 2,
                  hard_limit: float | None = None, retry_failed: bool = False,
                  progress: bool = True) -> list[dict[str, Any]]:
    """Run every spec not already in ``out_dir/runs.jsonl``; return the rows written by this call.

    ``hard_limit`` (seconds from process start) defaults to :func:`default_hard_limit` of each run's budget.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results = out / RESULTS_FILE
    done = {run_key(r) for r in read_rows(results) if "method" in r and (not retry_failed or r.get("status") == "ok")}
    queue = [s for s in specs if s.key() not in done]
    os.environ.update(one_thread_env())  # inherited by spawned workers before they import numpy or torch
    ctx = mp.get_context("spawn")
    written: list[dict[str, Any]] = []
    running: list[_Active] = []
    bar = _ProgressBar(len(queue)) if progress else None

    def finish(active: _Active, row: dict[str, Any]) -> None:
        row["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%S")
        _append_row(results, row)
        written.append(row)
        active.conn.close()
        if bar is not None:
            bar.advance(row)

    try:
        while queue or running:
            while queue and len(running) < max(1, jobs):
                spec = queue.pop(0)
                receiver, sender = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_worker, args=(spec, get_method(spec.method).module, sender), daemon=True)
                proc.start()
                sender.close()  # the worker holds the only writer, so a dead worker reads as EOF
                running.append(_Active(spec, proc, receiver, time.monotonic()))
            for active in list(running):
                _drain(active)
                limit = hard_limit if hard_limit is not None else default_hard_limit(active.spec.time)
                if active.final:
                    active.proc.join(5)
                    if active.proc.is_alive():  # result delivered but stuck on exit (e.g. a library thread)
                        _kill(active.proc)
                    row = dict(active.last or {})
                    row = {**{k: v for k, v in asdict(active.spec).items() if k != "data_dir"}, **row}
                    finish(active, row)
                elif not active.proc.is_alive():
                    _drain(active)
                    if active.final:
                        continue  # picked up on the next pass
                    finish(active, _row_for(active, "crash", f"worker exited with code {active.proc.exitcode}"))
                elif time.monotonic() - active.started > limit:
                    _kill(active.proc)
                    finish(active, _row_for(active, "timeout", f"killed after the hard limit of {limit:.0f} s"))
                else:
                    continue
                running.remove(active)
            time.sleep(0.05)
    finally:
        for active in running:  # Ctrl-C or an error in the harness: leave no worker behind
            _kill(active.proc)
        if bar is not None:
            bar.close()
    return written


class _ProgressBar:
    """A rich progress bar (runs done, elapsed, ETA) that also prints each failure as it happens."""

    def __init__(self, total: int) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(TextColumn("[bold]bench"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[failed]} failed"), TimeElapsedColumn(),
                                 TextColumn("ETA"), TimeRemainingColumn())
        self.failed = 0
        self.progress.start()
        self.task = self.progress.add_task("runs", total=total, failed=0)

    def advance(self, row: dict[str, Any]) -> None:
        if row.get("status") != "ok":
            self.failed += 1
            self.progress.console.print(
                f"[red]{row.get('status')}[/red] {row.get('method')} {row.get('dataset')} seed {row.get('seed')}: "
                f"{row.get('error')}")
        self.progress.update(self.task, advance=1, failed=self.failed)

    def close(self) -> None:
        self.progress.stop()

"""Pre-training corpus: the example stream, the torch dataset, the held-out set and `dgsr data`."""

from __future__ import annotations

import gzip
import json
import math
import subprocess
import sys
from itertools import islice

import numpy as np
import pytest

from dgsr.core.evaluate import evaluate
from dgsr.core.expression import Expression
from dgsr.core.operators import OPERATORS
from dgsr.neural.tokens import POINT_WIDTH, vocabulary
from dgsr.search.mutations import apply_mutation, validity_violation
from dgsr.training.corpus import (
    HELDOUT_PER_DOMAIN,
    ExampleEncoder,
    TrainingExample,
    build_heldout,
    encode_example,
    example_stream,
    expression_key,
    heldout_keys,
    heldout_path,
    load_heldout,
    read_heldout,
    write_heldout,
)
from dgsr.training.generator import GeneratorConfig

pytestmark = pytest.mark.timeout(60, method="thread")


def summary(ex: TrainingExample) -> tuple:
    return ex.state.key(), str(ex.mutation), ex.target.key(), ex.X.tobytes(), ex.y.tobytes()


def test_stream_examples_are_consistent_steps_towards_their_target():
    targets = {}
    for ex in islice(example_stream(0, n_points=40, exclude=frozenset()), 300):
        assert ex.X.shape[0] == 40 and ex.y.shape == (40,)
        np.testing.assert_array_equal(evaluate(ex.target, ex.X), ex.y)
        after = apply_mutation(ex.state, ex.mutation)  # the engine accepts every target action
        assert after.size <= ex.target.size
        assert ex.mutation.size <= 10
        targets.setdefault(ex.target.key(), []).append((ex.state, after))
    assert len(targets) > 20
    for key, steps in targets.items():
        # the steps of one target chain from the empty expression to the target
        states = {s.key(): a for s, a in steps}
        if Expression.empty().key() not in states:
            continue  # the last problem of the slice may be cut short
        cur = Expression.empty()
        while cur.key() in states:
            cur = states[cur.key()]
        assert cur.key() == key


def test_stream_is_deterministic_per_seed():
    a = [summary(e) for e in islice(example_stream(3, exclude=frozenset()), 50)]
    b = [summary(e) for e in islice(example_stream(3, exclude=frozenset()), 50)]
    c = [summary(e) for e in islice(example_stream(4, exclude=frozenset()), 50)]
    assert a == b and a != c


def test_stream_options():
    first = next(example_stream(5, exclude=frozenset())).target
    skipped = next(example_stream(5, exclude=frozenset({expression_key(first)}))).target
    assert expression_key(skipped) != expression_key(first)
    one = list(islice(example_stream(5, exclude=frozenset(), steps_per_problem=1), 20))
    assert len({e.target.key() for e in one}) == 20
    whole = list(islice(example_stream(5, exclude=frozenset(), mutation_size=math.inf), 10))
    assert all(e.state.is_empty and e.mutation.operand == e.target for e in whole)
    small = GeneratorConfig(max_variables=2, max_operators=6)
    for ex in islice(example_stream(5, config=small, mutation_size=1, exclude=frozenset()), 100):
        assert ex.X.shape[1] <= 2 and ex.mutation.size <= 1


def test_encode_example_shapes():
    ex = next(example_stream(1, exclude=frozenset()))
    enc = encode_example(ex)
    v = vocabulary()
    assert enc["points"].shape == (100, POINT_WIDTH)
    assert v.decode_action(list(enc["action"])).op == ex.mutation.op
    assert enc["expression"].dtype == np.int64 and enc["expression"].ndim == 1
    # the encoder's points cache is keyed by the problem: always equal to a fresh encoding, and one
    # array for the consecutive steps of one problem
    encoder, last_X, last_points = ExampleEncoder(), None, None
    for ex in islice(example_stream(2, exclude=frozenset(), n_points=10), 40):
        points = encoder(ex)["points"]
        np.testing.assert_array_equal(points, v.encode_points(ex.X, ex.y))
        assert (points is last_points) == (ex.X is last_X)
        last_X, last_points = ex.X, points


def test_importing_corpus_does_not_import_torch():
    code = "import sys, dgsr.training.corpus, dgsr.cli.data, dgsr.training.generator, dgsr.training.dismantle; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------------------- held-out set
def n_operators(expr: Expression) -> int:
    return sum(1 for s in expr.symbols if s in OPERATORS)


def test_shipped_heldout_set():
    items = load_heldout()
    assert len(items) == 2 * HELDOUT_PER_DOMAIN == 1000
    assert len(load_heldout("in")) == len(load_heldout("out")) == 500
    assert heldout_path().stat().st_size < 1 << 20
    assert len({expression_key(it.expression) for it in items}) == 1000
    assert heldout_keys() == frozenset(expression_key(it.expression) for it in items)
    for it in items:
        assert validity_violation(it.expression) is None and it.expression.size <= 60
        assert n_operators(it.expression) <= (25 if it.domain == "in" else 40)
        assert max(it.expression.variables) < it.n_variables <= 10
    sizes = {d: np.mean([it.expression.size for it in load_heldout(d)]) for d in ("in", "out")}
    assert sizes["out"] > sizes["in"]


def test_heldout_problems_regenerate_their_data():
    with gzip.open(heldout_path(), "rt") as f:
        records = [json.loads(line) for line in islice(f, 0, None, 50)]
    items = {it.name: it for it in load_heldout()}
    for rec in records:
        problem = items[rec["name"]].problem()
        assert problem.X.shape == (rec["n_points"], rec["n_variables"])
        assert np.all(np.isfinite(problem.y)) and np.ptp(problem.y) > 0
        assert float(np.mean(problem.y)) == pytest.approx(rec["y_mean"], rel=1e-5, abs=1e-12)
        again = items[rec["name"]].problem()
        np.testing.assert_array_equal(problem.X, again.X)
        np.testing.assert_array_equal(items[rec["name"]].X, problem.X)
        np.testing.assert_array_equal(items[rec["name"]].y, problem.y)
        assert not problem.X.flags.writeable  # the shared benchmark data cannot be changed by accident


def test_heldout_generation_is_reproducible(tmp_path):
    shipped = load_heldout()
    fresh = build_heldout(per_domain=8)
    assert fresh[:8] == shipped[:8] and fresh[8:] == shipped[500:508]
    a = write_heldout(tmp_path / "a.jsonl.gz", fresh)
    b = write_heldout(tmp_path / "b.jsonl.gz", fresh)
    assert a.read_bytes() == b.read_bytes()  # no timestamp in the gzip header
    assert read_heldout(a) == fresh


# ---------------------------------------------------------------------------- command line
def test_cli_data_sample(capsys):
    from dgsr.cli.app import main

    assert main(["data", "sample", "--n", "2", "--seed", "4", "--mutation-size", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count("f* = ") == 2 and "<0, root," in out and "tokens: I0 root" in out
    assert main(["data", "sample", "--n", "1", "--mutation-size", "inf"]) == 0
    assert capsys.readouterr().out.count("    m") == 1
    assert main(["data", "sample", "--n", "-1"]) == 2


def test_cli_data_heldout_write_and_check(tmp_path, capsys, monkeypatch):
    import dgsr.training.corpus
    from dgsr.cli.app import main

    small = build_heldout(per_domain=2)
    # the full set takes ~6 s to draw; the command's logic is the same on a small one
    monkeypatch.setattr(dgsr.training.corpus, "build_heldout", lambda: small)
    out = tmp_path / "h.jsonl.gz"
    assert main(["data", "heldout", "--out", str(out)]) == 0
    assert read_heldout(out) == small
    assert main(["data", "heldout", "--check", "--out", str(out)]) == 0
    assert "identical" in capsys.readouterr().out
    write_heldout(out, small[:3])
    assert main(["data", "heldout", "--check", "--out", str(out)]) == 1
    assert "DIFFERS" in capsys.readouterr().out

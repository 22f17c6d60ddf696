"""The laws catalogue, its split, data generation, recovery metrics and a tiny end-to-end run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sympy

from dgsr.bench.datasets import list_datasets
from dgsr.bench.law_metrics import extrapolation_r2, law_fields, recovery
from dgsr.bench.laws import (
    evaluate_truth,
    generate_law,
    get_law,
    law_expression,
    laws_in_half,
    load_catalogue,
    parse_range,
    sample_inputs,
)
from dgsr.bench.protocol import make_split
from dgsr.bench.report import write_report
from dgsr.bench.runner import RunSpec, execute_run, plan_runs

LAWS = load_catalogue()
WITH_TRUTH = [law for law in LAWS if law.has_truth]
NOISE_FREE = [law for law in WITH_TRUTH if law.noise == 0]
ALLOWED_FUNCTIONS = {"exp", "log", "sin", "cos", "tan", "sqrt"}
# Benchmark lists the catalogue must stay out of (SRBench and the classic GP lists).
FOREIGN = ("feynman", "strogatz", "nguyen", "keijzer", "koza", "vladislavleva", "jin", "korns", "livermore",
           "pagie", "friedman")


def test_catalogue_size_and_unique_names():
    names = [law.name for law in LAWS]
    assert len(names) == len(set(names))
    assert len(LAWS) >= 110
    assert len({law.family for law in WITH_TRUTH}) >= 110  # distinct laws, variants not counted
    assert not [n for n in names if n.lower().startswith(FOREIGN)]
    assert all(law.field and law.source and law.rows > 0 for law in LAWS)
    assert 1 <= max(len(law.variables) for law in WITH_TRUTH) <= 6


def test_formulas_use_only_the_allowed_vocabulary():
    for law in LAWS:
        names = set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", re.sub(r"\d[eE][+-]?\d", "", law.formula)))
        assert names <= set(law.variables) | ALLOWED_FUNCTIONS, (law.name, names)


@pytest.mark.parametrize("stretched", [False, True], ids=["training-box", "stretched-box"])
def test_every_formula_parses_and_is_finite(stretched):
    rng = np.random.default_rng(7)
    for law in LAWS:
        expr = law_expression(law)
        if law.has_truth:
            assert {s.name for s in expr.free_symbols} == set(law.variables), law.name
        X = sample_inputs(law, 300, rng, stretched=stretched)
        assert np.all(np.isfinite(evaluate_truth(law, X))), law.name


def _constant_inside_nonlinear(expr) -> bool:
    """A number other than ±1 inside exp/log/sin/cos/tan or a power's base, or a non-integer exponent."""
    for node in sympy.preorder_traversal(expr):
        if isinstance(node, sympy.Pow):
            base, exponent = node.args
            if exponent.is_Number and not exponent.is_integer:
                return True
            if exponent != 1 and any(abs(a) != 1 for a in base.atoms(sympy.Number)):
                return True
        elif isinstance(node, sympy.Function) and any(abs(a) != 1 for a in node.atoms(sympy.Number)):
            return True
    return False


def test_most_laws_have_constants_inside_nonlinear_parts_or_fractional_exponents():
    hits = [law.name for law in NOISE_FREE if _constant_inside_nonlinear(law_expression(law))]
    assert len(hits) >= 0.4 * len(NOISE_FREE), len(hits)
    assert not _constant_inside_nonlinear(sympy.sympify("3*x**2 + x*y"))


def test_split_is_fixed_disjoint_and_complete():
    develop, confirm = laws_in_half("develop"), laws_in_half("confirm")
    assert {law.name for law in develop}.isdisjoint({law.name for law in confirm})
    assert len(develop) + len(confirm) == len(LAWS) == len(laws_in_half("all"))
    families = list(dict.fromkeys(law.family for law in LAWS))
    for law in LAWS:  # the rule: even position of the law's family -> develop
        assert law.half == ("develop" if families.index(law.family) % 2 == 0 else "confirm")
    load_catalogue.cache_clear()
    assert [law.half for law in load_catalogue()] == [law.half for law in LAWS]
    for half in (develop, confirm):  # every kind of case in both halves
        kinds = {law.kind for law in half}
        assert kinds >= {"base", "noise 0.01", "noise 0.1", "distractors", "tiny", "no-signal"}
    assert [r.name for r in list_datasets("laws", Path("."))] == [law.name for law in LAWS]


def test_plan_runs_selects_the_half(tmp_path):
    specs = plan_runs(data_dir=tmp_path, suites=["laws"], methods=["linear"], seeds=[0], time_s=1, limit=3,
                      half="confirm")
    assert [s.dataset for s in specs] == [law.name for law in laws_in_half("confirm")[:3]]


def test_generation_is_deterministic_per_seed():
    a, b, c = (generate_law("michaelis_menten", s) for s in (0, 0, 1))
    assert a.X.equals(b.X) and np.array_equal(a.y, b.y)
    assert not np.array_equal(a.y, c.y)
    assert len(a.y) == get_law("michaelis_menten").rows


def test_noise_variant_noises_training_targets_only():
    law = get_law("gompertz_growth__noise10")
    assert law.noise == 0.1 and law.formula == get_law("gompertz_growth").formula
    problem = generate_law(law.name, 0)
    clean = make_split(problem.X, problem.y, 0)
    noisy = make_split(problem.X, problem.y, 0, noise=law.noise)
    assert np.array_equal(clean.y_test, noisy.y_test)
    ratio = np.std(noisy.y_train - clean.y_train) / np.sqrt(np.mean(clean.y_train ** 2))
    assert 0.08 < ratio < 0.12


def test_distractors_and_tiny_variants():
    law = get_law("emax_model__distract3")
    problem = generate_law(law.name, 0)
    assert list(problem.X.columns) == ["c", "extra1", "extra2", "extra3"]
    shuffled = problem.X.copy()
    shuffled[["extra1", "extra2", "extra3"]] = shuffled[["extra1", "extra2", "extra3"]].iloc[::-1].to_numpy()
    assert np.array_equal(evaluate_truth(law, shuffled), problem.y)  # the target ignores the extra columns
    tiny = generate_law("langmuir_isotherm__tiny", 0)
    assert len(tiny.y) == 30 and tiny.X.shape[1] == 1


def test_no_signal_target_is_independent_of_the_columns():
    controls = [law for law in LAWS if law.no_signal]
    assert len(controls) >= 3
    for law in controls:
        for seed in (0, 1):
            problem = generate_law(law.name, seed)
            assert problem.X.shape == (200, 5) and problem.formula is None
            corr = [abs(np.corrcoef(problem.X[c], problem.y)[0, 1]) for c in problem.X.columns]
            assert max(corr) < 0.25, (law.name, corr)


def test_stretched_box_widens_within_the_domain():
    r = parse_range("x", "2:4").stretched()
    assert (r.lo, r.hi) == (1.0, 5.0)
    assert parse_range("x", "1:10").stretched().lo == 0.5  # positive: halfway to 0, not below it
    assert parse_range("x", "-9:-4").stretched().hi == -1.5  # room enough: the full half width
    assert parse_range("x", "-9:-2").stretched().hi == -1.0  # negative: halfway to 0, not past it
    log = parse_range("x", "1:100:log").stretched()
    assert np.isclose(log.lo, 0.1) and np.isclose(log.hi, 1000.0)  # 50% of two decades, in log space
    bounded = parse_range("x", "0.1:50:log::350").stretched()
    assert bounded.hi == 200.0  # the ceiling 350 is not reached
    assert parse_range("t", "0:60:u:0").stretched().lo == 0.0


def test_recovered_accepts_the_law_with_rounded_constants():
    law = get_law("logistic_growth")
    truth = law_expression(law)
    assert recovery(truth, law, 0) == {"exact": True, "r2_extrap": 1.0, "recovered": True}
    rounded = truth.xreplace({f: sympy.Float(float(f"{float(f):.3g}")) for f in truth.atoms(sympy.Float)})
    nudged = rounded.xreplace({sympy.Float(14.5): sympy.Float(14.52)})
    result = recovery(nudged, law, 0)
    assert result["recovered"] and result["r2_extrap"] >= 0.999


def test_recovered_rejects_an_interpolating_polynomial():
    law = get_law("logistic_growth")
    problem = generate_law(law.name, 0)
    t = problem.X["t"].to_numpy()
    coef = np.polyfit(t, problem.y, 5)
    fitted = np.polyval(coef, t)
    assert 1 - np.sum((problem.y - fitted) ** 2) / np.sum((problem.y - problem.y.mean()) ** 2) > 0.99
    x = sympy.Symbol("t")
    poly = sum(sympy.Float(c) * x ** (len(coef) - 1 - i) for i, c in enumerate(coef))
    result = recovery(poly, law, 0)
    assert not result["exact"] and not result["recovered"] and result["r2_extrap"] < 0.9
    assert extrapolation_r2(sympy.Symbol("nope"), law, 0) == float("-inf")  # not a column: unusable


def test_law_fields_of_a_no_signal_run():
    problem = generate_law("no_signal_a", 0)
    split = make_split(problem.X, problem.y, 0)
    fields = law_fields(get_law("no_signal_a"), sympy.Float(0.1), split, 0, -0.01)
    assert fields["no_signal"] and fields["half"] == "develop" and fields["r2_linear"] < 0.1


def test_runs_and_report_of_the_laws_suite(tmp_path):
    """In process, with the linear reference (no search): rows carry the law fields; both halves reported."""
    names = ["michaelis_menten", "hill_oxygen_saturation", "michaelis_menten__noise01", "no_signal_a"]
    rows = [execute_run(RunSpec("linear", "laws", n, 0, 0.0, 1.0, None, str(tmp_path))) for n in names]
    by = {r["dataset"]: r for r in rows}
    assert by["michaelis_menten__noise01"]["noise_train"] == 0.01
    assert by["michaelis_menten"]["recovered"] is False and by["michaelis_menten"]["r2_extrap"] < 0.9
    assert by["no_signal_a"]["r2_linear"] == pytest.approx(by["no_signal_a"]["r2_test"])
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = write_report(tmp_path).read_text()
    assert "### Half: develop" in text and "### Half: confirm" in text and "No-signal controls" in text
    assert (tmp_path / "laws.csv").is_file()


def test_cli_smoke_run_writes_a_report(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2] / "src"),
                                                        os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "out"
    command = [sys.executable, "-m", "dgsr.bench", "--suite", "laws", "--limit", "2", "--time", "1",
               "--methods", "dgsr", "--seeds", "1", "--quiet", "--out", str(out)]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=240, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "laws half: develop" in proc.stdout
    text = (out / "report.md").read_text()
    assert "## Laws catalogue" in text and "### Half: develop" in text
    assert len((out / "runs.jsonl").read_text().splitlines()) == 2


def test_other_suites_split_by_position_and_run_whole_by_default():
    # the classic list ships with the package, so this needs no benchmark data
    every = plan_runs(data_dir=Path("."), suites=["classic"], methods=["linear"], seeds=[0], time_s=1)
    develop = plan_runs(data_dir=Path("."), suites=["classic"], methods=["linear"], seeds=[0], time_s=1,
                        half="develop")
    confirm = plan_runs(data_dir=Path("."), suites=["classic"], methods=["linear"], seeds=[0], time_s=1,
                        half="confirm")
    names = [s.dataset for s in every]
    assert [s.dataset for s in develop] == names[0::2] and [s.dataset for s in confirm] == names[1::2]
    assert len(names) > 10

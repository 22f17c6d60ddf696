"""dgsr.bench.datasets on a tiny generated data folder (never ../shared/data)."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dgsr.bench.datasets import (
    DataNotFound,
    DatasetRef,
    generate_feynman,
    is_friedman,
    list_datasets,
    load_problem,
    read_table,
    resolve_data_dir,
    stable_seed,
)

EQUATIONS = [
    # name, set, formula, variables, ranges
    ("feynman_lin", "feynman", "2*a + 3*b + 1", "a,b", "1:5,1:5"),
    # I, gamma and beta clash with SymPy built-ins: they must stay plain symbols
    ("feynman_clash", "feynman_bonus", "I*gamma/beta", "I,gamma,beta", "1:2,1:3,2:4"),
    ("strogatz_toy", "strogatz", "x - x*y", "x,y", "0:1,0:1"),
]


def _write_gz_tsv(path: Path, df: pd.DataFrame) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as f:
        df.to_csv(f, sep="\t", index=False)


def make_data_dir(root: Path) -> Path:
    """A miniature copy of the shared data layout: 2 Feynman, 1 Strogatz, 2 black-box (1 in the 57 set)."""
    data = root / "data"
    (data / "feynman").mkdir(parents=True)
    pd.DataFrame(EQUATIONS, columns=["name", "set", "formula", "variables", "ranges"]).assign(
        n_vars=lambda d: d["variables"].str.count(",") + 1, target="y", source_id="-", formula_original="-",
    ).to_csv(data / "feynman" / "equations.tsv", sep="\t", index=False)
    rng = np.random.default_rng(0)
    x1, x2 = rng.uniform(0, 1, 80), rng.uniform(0, 1, 80)
    _write_gz_tsv(data / "pmlb" / "bb_in.tsv.gz", pd.DataFrame({"u": x1, "v": x2, "target": 3 * x1 - x2}))
    _write_gz_tsv(data / "pmlb" / "bb_out.tsv.gz", pd.DataFrame({"u": x1, "target": x1**2}))
    pd.DataFrame({"name": ["bb_in", "bb_out"], "in_e2e_57": [True, False]}).to_csv(
        data / "pmlb" / "MANIFEST.tsv", sep="\t", index=False)
    # Strogatz files put the target first
    _write_gz_tsv(data / "strogatz" / "strogatz_toy.tsv.gz", pd.DataFrame({"target": x1 - x1 * x2, "x": x1, "y": x2}))
    return data


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return make_data_dir(tmp_path)


@pytest.mark.timeout(30)
def test_resolve_explicit_env_and_search(tmp_path, monkeypatch, data_dir):
    assert resolve_data_dir(str(data_dir)) == data_dir.resolve()
    with pytest.raises(DataNotFound):
        resolve_data_dir(tmp_path / "missing")
    monkeypatch.setenv("DGSR_DATA", str(data_dir))
    assert resolve_data_dir() == data_dir.resolve()
    # ../shared/data is found from a working directory nested below the project
    monkeypatch.delenv("DGSR_DATA")
    shared = make_data_dir(tmp_path / "shared_root")
    (tmp_path / "shared").mkdir()
    shared.rename(tmp_path / "shared" / "data")
    project = tmp_path / "project" / "sub"
    project.mkdir(parents=True)
    monkeypatch.chdir(project)
    assert resolve_data_dir() == (tmp_path / "shared" / "data").resolve()


@pytest.mark.timeout(30)
def test_gz_tsv_loading_and_target_by_name(data_dir):
    df = read_table(data_dir / "pmlb" / "bb_in.tsv.gz")
    assert list(df.columns) == ["u", "v", "target"] and len(df) == 80
    bb = load_problem(DatasetRef("blackbox", "bb_in"), data_dir)
    assert list(bb.X.columns) == ["u", "v"] and bb.formula is None
    np.testing.assert_allclose(bb.y, 3 * bb.X["u"] - bb.X["v"])
    st = load_problem(DatasetRef("strogatz", "strogatz_toy"), data_dir)
    assert list(st.X.columns) == ["x", "y"] and st.formula == "x - x*y"
    np.testing.assert_allclose(st.y, st.X["x"] - st.X["x"] * st.X["y"])


@pytest.mark.timeout(30)
def test_suites(data_dir):
    assert [r.name for r in list_datasets("blackbox", data_dir)] == ["bb_in"]
    assert [r.name for r in list_datasets("blackbox-narrow", data_dir)] == ["bb_in", "bb_out"]
    assert [r.name for r in list_datasets("feynman", data_dir)] == ["feynman_clash", "feynman_lin"]
    assert [r.name for r in list_datasets("strogatz", data_dir)] == ["strogatz_toy"]
    assert len(list_datasets("all", data_dir)) == 4
    with pytest.raises(ValueError):
        list_datasets("nope", data_dir)


@pytest.mark.timeout(30)
def test_feynman_regeneration_is_deterministic_and_matches_formula(data_dir):
    a = generate_feynman(data_dir, "feynman_clash", seed=1)
    b = generate_feynman(data_dir, "feynman_clash", seed=1)
    c = generate_feynman(data_dir, "feynman_clash", seed=2)
    assert len(a.y) == 10_000 and list(a.X.columns) == ["I", "gamma", "beta"]
    pd.testing.assert_frame_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    assert not np.allclose(a.X.to_numpy(), c.X.to_numpy())
    X = a.X
    np.testing.assert_allclose(a.y, X["I"] * X["gamma"] / X["beta"], rtol=1e-12)  # real, not the imaginary unit
    for col, (lo, hi) in zip(X.columns, [(1, 2), (1, 3), (2, 4)]):
        assert X[col].between(lo, hi).all()
    lin = generate_feynman(data_dir, "feynman_lin", seed=0, n_rows=50)
    np.testing.assert_allclose(lin.y, 2 * lin.X["a"] + 3 * lin.X["b"] + 1)


def test_stable_seed_is_crc32_not_hash():
    assert stable_seed("feynman_I_6_2", 3) == zlib.crc32(b"feynman_I_6_2|3")
    assert stable_seed("feynman_I_6_2", 3) != stable_seed("feynman_I_6_2", 4)


@pytest.mark.timeout(60)
@pytest.mark.skipif(not Path(__file__).resolve().parents[3].joinpath("shared", "data", "feynman").is_dir(),
                    reason="shared benchmark data not present")
def test_real_suite_sizes():
    data = Path(__file__).resolve().parents[3] / "shared" / "data"
    assert len(list_datasets("blackbox", data)) == 57
    assert len(list_datasets("feynman", data)) == 119
    assert len(list_datasets("strogatz", data)) == 14


# ------------------------------------------------------------------ after a pip install (issue 12, item 8)
def _pmlb_cache(root: Path, names) -> Path:
    """A cache folder as pmlb's fetch_data leaves it (``pmlb/<name>/<name>.tsv.gz``), from tiny fixtures."""
    rng = np.random.default_rng(1)
    for name in names:
        u, v = rng.uniform(0, 1, 40), rng.uniform(0, 1, 40)
        _write_gz_tsv(root / "pmlb" / name / f"{name}.tsv.gz", pd.DataFrame({"u": u, "v": v, "target": u - 2 * v}))
    return root


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a network connection fails the test."""
    import socket

    def refuse(*args, **kwargs):
        raise AssertionError("the test tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.mark.timeout(30)
def test_formula_lists_ship_inside_the_package_and_are_small():
    from dgsr.bench.datasets import PACKAGED_DATA, QUICK_BLACKBOX, QUICK_FEYNMAN

    files = [PACKAGED_DATA / "feynman" / "equations.tsv", PACKAGED_DATA / "pmlb" / "MANIFEST.tsv"]
    assert all(f.is_file() and f.stat().st_size < 64 * 1024 for f in files)
    eq = pd.read_csv(files[0], sep="\t", dtype=str)
    assert (eq["set"] != "strogatz").sum() == 119 and (eq["set"] == "strogatz").sum() == 14
    manifest = pd.read_csv(files[1], sep="\t", dtype=str)
    in_57 = set(manifest.loc[manifest["in_e2e_57"] == "True", "name"])
    assert len(in_57) == 57 and set(QUICK_BLACKBOX) <= in_57 and set(QUICK_FEYNMAN) <= set(eq["name"])
    assert not list(PACKAGED_DATA.rglob("*.gz"))  # formula lists and names only, no dataset rows


@pytest.mark.timeout(30)
def test_without_a_data_folder_the_cache_holds_the_packaged_lists(tmp_path, monkeypatch):
    from dgsr.bench.datasets import quick_datasets

    monkeypatch.delenv("DGSR_DATA", raising=False)
    monkeypatch.setenv("DGSR_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr("dgsr.bench.datasets._looks_like_data", lambda path: False)  # no ../shared/data
    data = resolve_data_dir()
    assert data == (tmp_path / "cache").resolve()
    assert len(list_datasets("feynman", data)) == 119 and len(list_datasets("blackbox", data)) == 57
    assert len(quick_datasets(data)) == 25  # the whole quick subset, black-box files fetched on demand
    # Feynman needs nothing else: regenerated from the packaged formulas.
    problem = load_problem(DatasetRef("feynman", "feynman_I_12_11"), data, seed=0)
    assert problem.X.shape == (10_000, 5) and np.isfinite(problem.y).all()


@pytest.mark.timeout(90)
def test_quick_bench_runs_offline_from_a_pmlb_cache(tmp_path, capsys, no_network):
    from dgsr.bench.cli import main
    from dgsr.bench.datasets import QUICK_BLACKBOX
    from dgsr.bench.runner import RESULTS_FILE, read_rows

    cache = _pmlb_cache(tmp_path / "cache", QUICK_BLACKBOX)
    # The whole quick plan resolves from the cache, without touching the network.
    assert main(["--quick", "--cache", str(cache), "--methods", "linear", "--dry-run"]) == 0
    assert "25 runs; data from" in capsys.readouterr().out
    out = tmp_path / "res"
    assert main(["--quick", "--cache", str(cache), "--methods", "linear", "--datasets",
                 "1030_ERA,228_elusage,feynman_I_12_11", "--time", "1", "--jobs", "1", "--out", str(out),
                 "--quiet", "--no-report"]) == 0
    rows = read_rows(out / RESULTS_FILE)
    assert sorted(r["dataset"] for r in rows) == ["1030_ERA", "228_elusage", "feynman_I_12_11"]
    assert all(r["status"] == "ok" for r in rows)
    # The black-box rows are the cached fixtures (target = u - 2v, which a linear model fits exactly).
    assert all(r["r2_test"] > 0.999 for r in rows if r["suite"] == "blackbox")


@pytest.mark.timeout(30)
def test_real_pmlb_fetch_data_reads_the_cache_offline(tmp_path, no_network):
    pmlb = pytest.importorskip("pmlb")
    cache = _pmlb_cache(tmp_path, ["1030_ERA"])
    df = pmlb.fetch_data("1030_ERA", local_cache_dir=str(cache / "pmlb"))
    assert list(df.columns) == ["u", "v", "target"] and len(df) == 40


@pytest.mark.timeout(30)
def test_missing_datasets_are_fetched_through_pmlb_into_the_cache(tmp_path, monkeypatch):
    import types

    from dgsr.bench.datasets import fetch_missing, prepare_cache

    data = prepare_cache(tmp_path / "cache")
    calls = []

    def fake_fetch_data(name, local_cache_dir=None, **kwargs):  # what pmlb does after a download
        calls.append((name, local_cache_dir))
        _pmlb_cache(Path(local_cache_dir).parent, [name])

    monkeypatch.setitem(__import__("sys").modules, "pmlb", types.SimpleNamespace(fetch_data=fake_fetch_data))
    refs = [DatasetRef("blackbox", "1030_ERA"), DatasetRef("feynman", "feynman_I_12_11")]
    assert fetch_missing(refs, data) == ["1030_ERA"]
    assert calls == [("1030_ERA", str(data / "pmlb"))]
    assert load_problem(refs[0], data).X.shape == (40, 2)
    assert fetch_missing(refs, data) == [] and len(calls) == 1  # cached: not fetched again

    def offline(name, local_cache_dir=None, **kwargs):
        raise OSError("network is unreachable")

    monkeypatch.setitem(__import__("sys").modules, "pmlb", types.SimpleNamespace(fetch_data=offline))
    with pytest.raises(DataNotFound, match=r"228_elusage.*internet.*--data"):
        fetch_missing([DatasetRef("blackbox", "228_elusage")], data)
    monkeypatch.setitem(__import__("sys").modules, "pmlb", None)  # pmlb not installed
    with pytest.raises(DataNotFound, match=r"pip install pmlb"):
        fetch_missing([DatasetRef("blackbox", "228_elusage")], data)


@pytest.mark.timeout(30)
def test_bench_names_the_missing_extra_before_running(monkeypatch):
    import importlib.util

    from dgsr.bench.cli import _check_method_packages

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyoperon" else object())
    with pytest.raises(ValueError, match=r"operon needs pyoperon: pip install 'dgsr\[bench\]'.*--methods dgsr,gplearn"):
        _check_method_packages(["dgsr", "operon", "gplearn"])
    _check_method_packages(["dgsr", "gplearn"])  # nothing missing: no error


@pytest.mark.timeout(60)
def test_classic_suite_regenerates_each_law_from_the_packaged_list(tmp_path):
    import sympy

    from dgsr.bench.datasets import CLASSIC_ROWS, PACKAGED_DATA, generate_classic, load_problem, parse_formula

    assert (PACKAGED_DATA / "classic" / "equations.tsv").stat().st_size < 16 * 1024
    refs = list_datasets("classic", tmp_path)  # the list is packaged: any data folder lists it
    names = [r.name for r in refs]
    assert len(names) == 31 and names == sorted(names) and {"nguyen_1", "pagie_1", "vladislavleva_4"} <= set(names)
    for ref in refs:
        problem = load_problem(ref, tmp_path, seed=0)
        assert problem.X.shape[0] == CLASSIC_ROWS and list(problem.X.columns) == list(problem.variables)
        assert np.isfinite(problem.y).all() and np.ptp(problem.y) > 0, ref.name
    # The values are the formula's, at inputs drawn inside the ranges, and the draw follows the seed.
    k = generate_classic("keijzer_11", seed=1)
    x, y = k.X["x"].to_numpy(), k.X["y"].to_numpy()
    np.testing.assert_allclose(k.y, x * y + np.sin((x - 1) * (y - 1)), rtol=1e-12)
    assert x.min() >= -3 and x.max() <= 3
    np.testing.assert_array_equal(generate_classic("keijzer_11", seed=1).y, k.y)
    assert not np.allclose(generate_classic("keijzer_11", seed=2).y, k.y)
    v4 = generate_classic("vladislavleva_4", seed=0)
    truth = parse_formula(v4.formula, v4.variables)
    assert truth.free_symbols == {sympy.Symbol(f"x{i}") for i in range(1, 6)}
    with pytest.raises(KeyError, match="classic"):
        generate_classic("no_such_law", seed=0)


def test_the_friedman_sets_are_told_from_the_other_black_box_sets_by_name():
    assert is_friedman("612_fri_c1_1000_5") and is_friedman("fri_c0_100_5")
    assert not any(is_friedman(n) for n in ("1096_FacultySalaries", "banana", "564_fried", "feynman_I_6_2"))

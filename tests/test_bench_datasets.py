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
@pytest.mark.skipif(not Path(__file__).resolve().parents[2].joinpath("shared", "data", "feynman").is_dir(),
                    reason="shared benchmark data not present")
def test_real_suite_sizes():
    data = Path(__file__).resolve().parents[2] / "shared" / "data"
    assert len(list_datasets("blackbox", data)) == 57
    assert len(list_datasets("feynman", data)) == 119
    assert len(list_datasets("strogatz", data)) == 14

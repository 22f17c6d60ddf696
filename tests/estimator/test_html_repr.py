"""``_repr_html_`` (issue 50 item 7): a notebook shows a fitted estimator's front as an HTML table
with the selected row marked; an unfitted one keeps scikit-learn's HTML; equations are escaped."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from dgsr import SymbolicRegressor
from dgsr.core.display import FrontTable, front_html


def _rows(html: str) -> list[str]:
    return re.findall(r"<tr[^>]*>.*?</tr>", html.split("<tbody>")[1])


def test_unfitted_estimator_keeps_sklearns_html():
    html = SymbolicRegressor(max_size=12)._repr_html_()
    assert "sk-" in html and "max_size" in html and "dgsr-front" not in html


def test_fitted_estimator_shows_its_front_with_the_selected_row_marked():
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"a": rng.uniform(1, 3, 60), "b": rng.uniform(1, 3, 60)})
    est = SymbolicRegressor(max_evaluations=2000, max_time=None, random_state=0).fit(df, 2 * df.a + df.b**2)
    html = est._repr_html_()
    table = est.equations_
    for column in ("equation", "complexity", "loss", "r2", "score"):
        assert f"<th>{column}</th>" in html
    rows = _rows(html)
    assert len(rows) == len(table)
    marked = [i for i, row in enumerate(rows) if 'class="selected"' in row]
    assert marked == [est.best_index_]
    assert "→" in rows[est.best_index_] and "font-weight:bold" in rows[est.best_index_]
    assert all("→" not in row for i, row in enumerate(rows) if i != est.best_index_)
    assert table["equation"].iloc[est.best_index_] in rows[est.best_index_]


def test_front_table_html_marks_its_selected_row_and_escapes_equations():
    table = FrontTable({"complexity": [1, 3], "loss": [2.0, 0.5], "r2": [0.1, 0.9], "score": [0.0, 1.2],
                        "equation": ["`a<b`", "`x&y` + 1"]})
    table.selected_row = 1
    html = table._repr_html_()
    assert html == front_html(table, selected=1)
    rows = _rows(html)
    assert 'class="selected"' in rows[1] and 'class="selected"' not in rows[0]
    assert "`a&lt;b`" in rows[0] and "`x&amp;y` + 1" in rows[1] and "a<b" not in html

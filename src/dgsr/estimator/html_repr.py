"""What a notebook shows for a fitted ``SymbolicRegressor``: its front as an HTML table.

An unfitted estimator keeps scikit-learn's own HTML (its parameters); a fitted one shows a line
naming the selected formula and ``equations_`` as :func:`dgsr.core.display.front_html` draws it,
the selected row in bold and marked.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from dgsr.core.display import front_html

if TYPE_CHECKING:  # the regressor imports this module
    from dgsr.estimator.regressor import SymbolicRegressor


def fitted_html(est: SymbolicRegressor) -> str:
    """The fitted estimator ``est`` as HTML: its class, the selected row and the front table (one
    of each per target after a fit on several, headed by the target's name)."""
    outputs = est.__dict__.get("estimators_")
    if outputs is not None:
        return "".join(f"<p>target <b>{html.escape(str(o.target_name_))}</b></p>{fitted_html(o)}" for o in outputs)
    table = est.equations_
    best = int(est.best_index_)
    equation = html.escape(str(table["equation"].iloc[best]))
    return (f'<div class="dgsr-regressor"><p><b>{type(est).__name__}</b>: the selected formula '
            f"(row {best}, →) is <code>{equation}</code></p>{front_html(table, selected=best)}</div>")

"""The scikit-learn estimator :class:`SymbolicRegressor` and the functions it calls: input checks,
feature pre-selection, the search call, polishing, model selection, display and export."""

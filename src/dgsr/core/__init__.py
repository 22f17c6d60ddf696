"""Numbers and formulas: operators, expressions, parsing and display, evaluation, gradients,
constant fitting, scaling, the Pareto archive and the budget. No search, no torch."""

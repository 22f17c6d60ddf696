"""The compiled (numba) kernels of the search's hot path, one module per job.

``compiler`` how a kernel is compiled and cached (and the ``AVAILABLE`` switch of the callers
with a numpy path of their own); ``codes`` the op codes and expressions encoded as programs;
``rows`` the operators over whole row arrays; ``linalg`` Cholesky solves and normal equations;
``forward`` a program's values and Jacobian in one pass; ``fit`` the inner constant fit
(Levenberg-Marquardt on a weighted sum of terms); ``structure`` a structure taken apart into its
terms and its inner-fit model; ``scoring`` a candidate's moments and term weights on all rows;
``child`` a new child's inner fit and scoring in one call. Each module lists its public names in
``__all__``; nothing outside a module uses its underscored names (tests/test_private_names.py).
"""

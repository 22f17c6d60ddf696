"""The transformer policy: token vocabulary, model, constrained sampling, the Policy wrapper and
weight files. torch is imported here, in :mod:`dgsr.training` and in :mod:`dgsr.online` only."""

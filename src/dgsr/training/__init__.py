"""Offline pre-training of the neural policy: random formulas, their dismantling into mutation
paths, corpora, the semantic teacher and the pre-training loop."""

"""Mutation policies that need no training: uniform, semantic and mixtures. Turning a ``policy=``
argument into a policy object is the estimator's job (:func:`dgsr.estimator.policy_loading.load_policy`):
it may load the neural policy, which lives in a later layer than this one."""

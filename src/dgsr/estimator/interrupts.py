"""Ctrl-C during ``fit``: the first one ends the fit early with the best result reached so far.

After it the rest of ``fit`` skips polishing and simplification, so that a second Ctrl-C, which
no one catches, aborts at once. :class:`FitLedger` carries what one fit has spent and whether a
first Ctrl-C came, from step to step of :func:`dgsr.estimator.fit_front.fit_front`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dgsr.estimator.user_warnings import warn_user


def warn_interrupted(where: str, consequence: str) -> None:
    """Say that a first Ctrl-C came during ``where`` and what that leaves out (``consequence``)."""
    warn_user(f"Interrupted (Ctrl-C) during {where}: returning the best result reached so far; "
              f"{consequence} and the equations are not simplified. Press Ctrl-C again to abort.")


@dataclass
class FitLedger:
    """What one fit has spent so far and how its search ended (mutable while it runs).

    ``evaluations`` counts in fractions (a pass over a row subset, a share of a constant fit);
    ``history`` and ``n_trials`` are the search's.
    """

    evaluations: float = 0.0
    stop_reason: str = ""
    interrupted: bool = False
    history: list = field(default_factory=list)
    n_trials: int = 0

    def note_interrupt(self, where: str, consequence: str) -> None:
        """Record a first Ctrl-C (``interrupted``, ``stop_reason``) and say so."""
        self.interrupted = True
        self.stop_reason = "interrupted"
        warn_interrupted(where, consequence)

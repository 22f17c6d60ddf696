"""The Monte-Carlo tree search over expressions: the policy seam, mutations, the MCTS and the
parallel runner. Imports only :mod:`dgsr.core`; never torch or SymPy."""

from dgsr.search.mcts import SearchConfig, SearchProgress, SearchResult, run_search
from dgsr.search.mutations import Mutation
from dgsr.search.policy import Policy, Proposal

__all__ = ["Mutation", "Policy", "Proposal", "SearchConfig", "SearchProgress", "SearchResult", "run_search"]

"""The shape of a :class:`~dgsr.neural.model.PolicyModel`: :class:`ModelConfig`, its presets, and
what the auxiliary symbol head predicts. Stored as JSON in model files, so it imports no torch."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from dgsr.core.expression import Expression
from dgsr.core.operators import CONSTANT, TABLE_ONE, variable_symbol
from dgsr.neural.tokens import FLOAT_WIDTH, MAX_VARIABLES, vocabulary
from dgsr.search.mutations import MAX_SIZE

#: Longest expression in tokens: every node a constant triple (60 nodes, 3 tokens each) + margin.
MAX_EXPRESSION_TOKENS = FLOAT_WIDTH * MAX_SIZE + 4
#: Longest action: node + op + operand (<= 60 nodes of 3 tokens) + eos.
MAX_ACTION_TOKENS = FLOAT_WIDTH * MAX_SIZE + 3


@dataclass(frozen=True)
class ModelConfig:
    """Shape of the model; stored as JSON in checkpoint metadata.

    The presets: ``small`` is sized for a 2-core CPU, ``large`` for GPU training, ``tiny`` for
    tests. Files written before an option existed load with the value that reproduces them (see
    :meth:`from_dict`).
    """

    d_model: int = 128
    n_heads: int = 4
    point_layers: int = 2
    expr_layers: int = 2
    dec_layers: int = 2
    ff_mult: int = 4
    #: width of each float token's embedding inside the point embedder (concatenated: 33 x this)
    point_token_dim: int = 24
    #: point encoder: "variables" (one memory token per variable plus one for y, from a shared MLP
    #: over each point's (x_i, y) pair; the default for new models) or "points" (the paper's one
    #: token per data point)
    encoder: str = "variables"
    #: hidden width of the "variables" encoder's per-point MLP
    pair_width: int = 64
    #: add numeric features of each point (per-column standardised value, magnitude, scale) to its
    #: token embedding; False in checkpoints written before this option existed
    point_features: bool = False
    #: a training-only head on the pooled point encoding that predicts which operators and
    #: variables the ground truth contains (an auxiliary task that makes the point encoder read y)
    target_symbols: bool = False
    #: a bilinear pointer from the decoder's state to each variable's memory token, added to the
    #: logits of x0..x9 ("variables" encoder only): naming a variable then reads that variable's
    #: encoding of its pairing with y directly, instead of through cross-attention the decoder must
    #: first learn to route (issue 13); False in files written before this option existed, and
    #: always False with the "points" encoder
    variable_pointer: bool = False
    vocab_size: int = 0  # 0 = the dgsr.neural.tokens vocabulary
    max_points: int = 100
    max_expression_tokens: int = MAX_EXPRESSION_TOKENS
    max_action_tokens: int = MAX_ACTION_TOKENS
    dropout: float = 0.0

    def __post_init__(self) -> None:
        if self.vocab_size == 0:
            object.__setattr__(self, "vocab_size", len(vocabulary()))
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be a multiple of n_heads={self.n_heads}")
        if self.encoder not in ENCODERS:
            raise ValueError(f"unknown point encoder {self.encoder!r}; choose from {ENCODERS}")
        if self.encoder != "variables":  # the pointer needs one memory token per variable
            object.__setattr__(self, "variable_pointer", False)

    def to_dict(self) -> dict:
        """The fields as a JSON-ready dict (what model files store)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> ModelConfig:
        """The config :meth:`to_dict` wrote (unknown fields are an error)."""
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown ModelConfig fields: {sorted(unknown)}")
        # files written before the encoder option existed used one token per point
        return cls(**{"encoder": "points", **data})

    @classmethod
    def preset(cls, name: str) -> ModelConfig:
        """``"small"`` (CPU default), ``"medium"`` (GPU-trained, ships in half precision),
        ``"large"`` (GPU, too large to ship in the package) or ``"tiny"`` (tests)."""
        try:
            return cls(**PRESETS[name])
        except KeyError:
            raise ValueError(f"unknown model preset {name!r}; choose from {sorted(PRESETS)}") from None


ENCODERS = ("variables", "points")

PRESETS: dict[str, dict] = {
    "tiny": {"d_model": 32, "n_heads": 2, "point_layers": 1, "expr_layers": 1, "dec_layers": 1, "ff_mult": 2,
             "point_token_dim": 8, "point_features": True, "encoder": "variables", "pair_width": 32,
             "variable_pointer": True},
    "small": {"d_model": 128, "n_heads": 4, "point_layers": 2, "expr_layers": 2, "dec_layers": 2, "ff_mult": 4,
              "point_token_dim": 24, "point_features": True, "encoder": "variables", "pair_width": 64,
              "variable_pointer": True},
    # the largest preset whose weights ship in half precision under the 16 MiB limit (7.7M
    # parameters, 14.6 MiB): what a lent GPU trains for the package
    "medium": {"d_model": 192, "n_heads": 6, "point_layers": 3, "expr_layers": 3, "dec_layers": 4, "ff_mult": 4,
               "point_token_dim": 32, "point_features": True, "encoder": "variables", "pair_width": 96,
               "variable_pointer": True},
    "large": {"d_model": 512, "n_heads": 8, "point_layers": 4, "expr_layers": 4, "dec_layers": 8, "ff_mult": 4,
              "point_token_dim": 64, "point_features": True, "encoder": "variables", "pair_width": 128,
              "variable_pointer": True},
}
#: what the auxiliary symbol head predicts: every operator, every variable, "has a constant"
SYMBOLS: tuple[str, ...] = (*TABLE_ONE, *(variable_symbol(i) for i in range(MAX_VARIABLES)), CONSTANT)


def symbol_targets(expression: Expression) -> list[float]:
    """Multi-hot over :data:`SYMBOLS` of the symbols in ``expression``."""
    present = set(expression.symbols)
    return [1.0 if s in present else 0.0 for s in SYMBOLS]

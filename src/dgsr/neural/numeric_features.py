"""The numbers behind point tokens, and the order-1 features the point encoders read from them.

Point tokens (:meth:`dgsr.neural.tokens.Vocabulary.encode_points`) are decoded back to float64
values (:func:`decode_point_values`); :func:`column_features` gives the ``"variables"`` encoder its
per-point ranks, standardised values and log-magnitudes and per-column statistics, and
:func:`point_features` gives the ``"points"`` encoder its optional per-point features.
"""

from __future__ import annotations

import math

import torch

from dgsr.neural.tokens import FLOAT_WIDTH, MAX_EXPONENT, MAX_MANTISSA, MAX_VARIABLES, vocabulary

#: features per point and column of :func:`point_features`
N_POINT_FEATURES = 5


def decode_point_values(points: torch.Tensor, point_mask: torch.Tensor | None = None
                        ) -> tuple[torch.Tensor, torch.Tensor]:
    """The numbers behind point tokens [B, P, POINT_WIDTH]: (values float64 [B, P, C], present [B, P, C])
    with C = MAX_VARIABLES + 1 columns (the last is y); padded variables and masked points are absent
    (value 0). Float64 because the tokens reach 1e104."""
    v = vocabulary()
    b, p, _ = points.shape
    ids = points.view(b, p, MAX_VARIABLES + 1, FLOAT_WIDTH)
    present = ids[..., 0] != v.pad  # [B, P, C]
    if point_mask is not None:
        present = present & point_mask[:, :, None]
    sign = torch.where(ids[..., 0] == v.minus, -1.0, 1.0).double()
    mantissa = (ids[..., 1] - v.mantissa0).clamp(0, MAX_MANTISSA).double()
    exponent = (ids[..., 2] - v.exponent0 - MAX_EXPONENT).clamp(-MAX_EXPONENT, MAX_EXPONENT).double()
    return torch.where(present, sign * mantissa * torch.pow(10.0, exponent), 0.0), present


def _column_moments(value: torch.Tensor, present: torch.Tensor
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(weight, count [B, 1, C], mean, standard deviation) of each column over its present points."""
    weight = present.double()
    count = weight.sum(1, keepdim=True).clamp_min(1.0)
    mean = (value * weight).sum(1, keepdim=True) / count
    spread = (((value - mean) ** 2 * weight).sum(1, keepdim=True) / count).sqrt()
    return weight, count, mean, spread


_TINY = 1e-300


def point_features(points: torch.Tensor, point_mask: torch.Tensor | None = None) -> torch.Tensor:
    """Numeric features [B, P, 5 x (MAX_VARIABLES + 1)] of point tokens [B, P, POINT_WIDTH] (the
    ``"points"`` encoder's ``point_features`` option).

    Each column gets five features per point: present, value standardised over the dataset's
    points (clipped), signed log-magnitude, and the column's log-scale and mean/scale (the same
    for every point).
    """
    value, present = decode_point_values(points, point_mask)
    b, p, _ = value.shape
    weight, _, mean, spread = _column_moments(value, present)
    z = torch.where(spread > _TINY, (value - mean) / spread.clamp_min(_TINY), 0.0).clamp(-6.0, 6.0) / 3.0
    magnitude = (torch.asinh(value) / 10.0).clamp(-3.0, 3.0)
    log_scale = torch.log10(spread.clamp_min(1e-30)).clamp(-30.0, 30.0).expand_as(value) / 10.0
    centre = torch.where(spread > _TINY, mean / spread.clamp_min(_TINY), 0.0).clamp(-10.0, 10.0).expand_as(value) / 5.0
    feats = torch.stack([weight, z, magnitude, log_scale, centre], dim=-1) * weight[..., None]
    return feats.reshape(b, p, -1).float()


#: per point and column, for the "variables" encoder: rank, standardised value, log-magnitude
N_PAIR_FEATURES = 3
#: per column, for the "variables" encoder: log-scale, centre, share of negative values, log of the
#: largest magnitude, a constant column
N_COLUMN_STATS = 5


#: Legendre polynomials of degree 1..N_LEGENDRE in the "variables" encoder's rank co-moments
N_LEGENDRE = 3


def legendre_basis(uniform: torch.Tensor) -> torch.Tensor:
    """Orthonormal Legendre polynomials of degree 1..3 [..., 3] of ranks scaled to unit variance
    (``u = uniform / sqrt(3)`` in [-1, 1]): mean 0 and variance 1 each over uniform ranks."""
    u = uniform / math.sqrt(3.0)
    return torch.stack([math.sqrt(3.0) * u, math.sqrt(5.0) * (3.0 * u * u - 1.0) / 2.0,
                        math.sqrt(7.0) * (5.0 * u ** 3 - 3.0 * u) / 2.0], dim=-1)


def column_features(points: torch.Tensor, point_mask: torch.Tensor | None = None
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Inputs of the ``"variables"`` encoder, all of order 1: (per-point features [B, P, C, 3],
    column statistics [B, C, 5], present [B, P, C]) of point tokens [B, P, POINT_WIDTH].

    Per point: the value's rank among the column's present points (ties share their mean rank),
    scaled to a uniform of unit variance, which makes any monotone relation between x_i and y
    visible whatever the scales; the value standardised over the column (clipped at 5); and its
    signed log10-magnitude (clipped at 8), which keeps the absolute scale that a rank drops.
    Absent entries are 0.
    """
    value, present = decode_point_values(points, point_mask)
    weight, count, mean, spread = _column_moments(value, present)
    # ranks: sort each column with absent entries last (+inf), count the entries below each value
    cols = torch.where(present, value, math.inf).transpose(1, 2).contiguous()  # [B, C, P]
    ordered = cols.sort(dim=-1).values
    below = torch.searchsorted(ordered, cols, right=False)
    upto = torch.searchsorted(ordered, cols, right=True)
    rank = ((below + upto - 1).double() / 2.0).transpose(1, 2)  # mean 0-based rank [B, P, C]
    uniform = ((rank + 0.5) / count - 0.5) * math.sqrt(12.0)
    z = torch.where(spread > _TINY, (value - mean) / spread.clamp_min(_TINY), 0.0).clamp(-5.0, 5.0)
    magnitude = (torch.sign(value) * torch.log10(1.0 + value.abs())).clamp(-8.0, 8.0)
    per_point = torch.stack([uniform, z, magnitude], dim=-1) * weight[..., None]
    log_scale = torch.log10(spread.clamp_min(1e-30)).clamp(-8.0, 8.0)
    centre = torch.where(spread > _TINY, mean / spread.clamp_min(_TINY), 0.0).clamp(-5.0, 5.0)
    negative = ((value < 0).double() * weight).sum(1, keepdim=True) / count * 2.0 - 1.0
    largest = torch.log10(1.0 + value.abs().amax(1, keepdim=True)).clamp(0.0, 8.0)
    constant = (spread <= _TINY).double()
    stats = torch.cat([log_scale, centre, negative, largest, constant], dim=1).transpose(1, 2)  # [B, C, 5]
    column_present = present.any(1)[..., None]  # [B, C, 1]
    return per_point.float(), (stats * column_present).float(), present

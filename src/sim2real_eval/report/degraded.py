"""How the ranking of GPS models changes when the receiver degrades (docs/demo.md, "GNSS-degraded drives").

Two scored GPS studies on the same drives: ``normal`` (demo.yaml: the normal receiver on both sides) and
``degraded`` (degraded_gnss.yaml: the real receiver degraded by an urban-canyon layer; each model once
as it is and once with the same layer, the ``<model>_urban`` presets).  ``compare`` ranks the same
models in both, gives Kendall's τ between the two orders and every pair whose order flips, saying for
each whether both studies separate it (``metrics.separation``: paired interval, permutation p and the
judge-noise floor), so a flip inside the precision is not read as a change of verdict.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from ..metrics import separation
from ..metrics.judge_agreement import kendall_tau  # the one τ (τ-b; NaN below two common models)

SUFFIX = "_urban"  # the degraded study's variant of a model with the degradation layer


@dataclass(frozen=True)
class Ranking:
    """One study's order of the compared models: {model: VEPD} and the variant each model played."""

    vepd: dict
    variants: dict

    @property
    def order(self) -> list:
        return sorted(self.vepd, key=self.vepd.get)


def ranking(result, models, suffix: str = "") -> Ranking:
    """The models' VEPD in a ``metrics.StudyResult`` (variant = model + ``suffix``); absent ones left out."""
    variants = {m: m + suffix for m in models if m + suffix in result.combined}
    return Ranking({m: float(result.combined[v]["VEPD"]) for m, v in variants.items()}, variants)


def flipped_pairs(first: Ranking, second: Ranking) -> list:
    """Pairs (a, b) with a ahead of b in ``first`` and behind it in ``second`` (ties are no flip)."""
    common = [m for m in first.order if m in second.vepd]
    out = []
    for a, b in combinations(common, 2):  # a before b in the first order
        if first.vepd[a] < first.vepd[b] and second.vepd[a] > second.vepd[b]:
            out.append((a, b))
    return out


def _separated(result, rank: Ranking, a: str, b: str) -> bool:
    better, worse = sorted((a, b), key=rank.vepd.get)
    return separation.separated(result, rank.variants[better], rank.variants[worse]) is True


def feature_ahead(result, rank: Ranking, feature: dict) -> dict:
    """Whether every model with ``feature`` ({model: bool}) ranks ahead of every model without it
    (``ahead``), and whether the two nearest across that line are separable (``separable``)."""
    having = [m for m in rank.order if feature[m]]
    lacking = [m for m in rank.order if not feature[m]]
    if not having or not lacking:
        return {"ahead": False, "separable": False}
    ahead = rank.order.index(having[-1]) < rank.order.index(lacking[0])
    separable = ahead and separation.separated(result, rank.variants[having[-1]],
                                               rank.variants[lacking[0]]) is True
    return {"ahead": ahead, "separable": separable}


def compare(normal, degraded, models, suffix: str = SUFFIX, feature=None) -> dict:
    """The comparison record (YAML/JSON-friendly) of two scored studies (``metrics.StudyResult``);
    ``feature`` ({model: bool}, e.g. "reports a covariance"): ``feature_ahead`` in each ranking."""
    normal_rank = ranking(normal, models)
    sides = {"modelled": ranking(degraded, models, suffix), "unmodelled": ranking(degraded, models)}
    out = {"models": list(models), "normal": {"order": normal_rank.order, "vepd": normal_rank.vepd}}
    if feature is not None:
        out["normal"]["feature_ahead"] = feature_ahead(normal, normal_rank, feature)
    for name, rank in sides.items():
        flips = [{"pair": [a, b], "separable_normal": _separated(normal, normal_rank, a, b),
                  "separable_degraded": _separated(degraded, rank, a, b)}
                 for a, b in flipped_pairs(normal_rank, rank)]
        out[name] = {"order": rank.order, "vepd": rank.vepd, "flips": flips, "verdict": verdict(flips),
                     "kendall_tau": kendall_tau(normal_rank.vepd, rank.vepd)}
        if feature is not None:
            out[name]["feature_ahead"] = feature_ahead(degraded, rank, feature)
    out["layer"] = {m: {"with": sides["modelled"].vepd[m], "without": sides["unmodelled"].vepd[m],
                        "separable": _layer_separated(degraded, m, suffix)}
                    for m in models if m in sides["modelled"].vepd and m in sides["unmodelled"].vepd}
    return out


def _layer_separated(degraded, model: str, suffix: str) -> bool:
    """The model with the degradation layer and without it are separable in the degraded study."""
    with_layer, without = model + suffix, model
    a, b = sorted((with_layer, without), key=lambda v: degraded.combined[v]["VEPD"])
    return separation.separated(degraded, a, b) is True


def verdict(flips: list) -> str:
    """"changes" (a flip both studies separate), "not separable" (flips, none separable in both) or
    "unchanged" (the same order)."""
    if any(f["separable_normal"] and f["separable_degraded"] for f in flips):
        return "changes"
    return "not separable" if flips else "unchanged"

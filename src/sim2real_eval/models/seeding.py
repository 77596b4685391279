"""Seeds: one reproducible, independent random stream per (study seed, run key, sensor).

``sensor_seed(3, "ch_rw", "circle", 0, "gps")`` always gives the same ``SeedSequence``; strings are
hashed with SHA-256 (never Python's salted ``hash()``), so streams are stable across processes,
machines and Python versions.  Inside a model, each noise term draws from its own child stream
(``child(seq, i)``), which is what makes streaming and batch sampling bit-identical.
"""

from __future__ import annotations

import hashlib
from typing import List, Union

import numpy as np

from ..errors import UserError

# Tags keep the key types apart: the integer 5 and the string "5" give different streams.
_INT_TAG = 1
_STR_TAG = 2


def _key_words(key) -> List[int]:
    if isinstance(key, (bool, np.bool_)):
        raise UserError(f"sensor_seed: keys must be integers or strings, got {key!r}")
    if isinstance(key, (int, np.integer)) and key >= 0:
        key = int(key)
        words = []
        while True:  # little-endian uint32 words, so large integers keep all their bits
            words.append(key & 0xFFFFFFFF)
            key >>= 32
            if not key:
                break
        return [_INT_TAG, len(words)] + words
    if isinstance(key, (int, np.integer, str)):
        digest = hashlib.sha256(str(key).encode("utf-8")).digest()
        return [_STR_TAG] + [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]
    raise UserError(f"sensor_seed: keys must be integers or strings, got {type(key).__name__} {key!r}")


def sensor_seed(seed: Union[int, str], *keys) -> np.random.SeedSequence:
    """The SeedSequence of one sensor stream: entropy = (seed, tagged words of every key)."""
    entropy = _key_words(seed)
    for key in keys:
        entropy += _key_words(key)
    return np.random.SeedSequence(entropy)


def as_seed_sequence(seed, source: str = "seed") -> np.random.SeedSequence:
    """Accept a SeedSequence, a non-negative int, or None (fixed seed 0: reproducible by default)."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if seed is None:
        return np.random.SeedSequence(0)
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0:
        return np.random.SeedSequence(int(seed))
    raise UserError(f"{source}: expected a numpy SeedSequence or a non-negative integer, got {seed!r}")


def child(seq: np.random.SeedSequence, index: int) -> np.random.SeedSequence:
    """The ``index``-th child of ``seq``, like ``seq.spawn`` but without mutating ``seq``."""
    return np.random.SeedSequence(
        seq.entropy, spawn_key=tuple(seq.spawn_key) + (int(index),), pool_size=seq.pool_size
    )


def generator(seq: np.random.SeedSequence, index: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(child(seq, index)))

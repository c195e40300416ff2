"""Which GPU models a request's ``gpu_models`` names: whole words, in any order.

A name the user gives (``A100``, ``H100 80GB``, ``MI300X``) matches a GPU whose model (as its
inventory names it: ``NVIDIA A100-SXM4-80GB``, ``AMD Instinct MI300X``) contains every word
of it, case aside; words are the runs of letters and digits. So ``A100`` matches every A100
and ``A100 80GB`` only the 80 GB ones, while ``T4`` never matches a ``T400``.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["model_matches", "model_words"]

_WORD = re.compile(r"[a-z0-9]+")


@lru_cache(maxsize=4096)
def model_words(name: str) -> frozenset[str]:
    """The words of a model name, lower case."""
    return frozenset(_WORD.findall(name.lower()))


def model_matches(asked: str, model: str) -> bool:
    """``model`` has every word of ``asked`` (a name without words matches nothing)."""
    words = model_words(asked)
    return bool(words) and words <= model_words(model)

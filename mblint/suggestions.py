"""Did-you-mean suggestions, in one place: ``suggest`` for names in configurations and
settings (difflib's similarity), ``nearest_names`` for rule ids and names (edit distance)."""

from __future__ import annotations

from typing import Iterable

# Unknown names given a did-you-mean in one message (each costs an edit distance to every
# rule id and name): the others are counted.
MAX_SUGGESTED = 10


def suggest(name: str, choices: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The choice most similar to ``name`` (difflib's ratio at least ``cutoff``), or None."""
    import difflib  # imported when a name is unknown, not by every run

    match = difflib.get_close_matches(name, list(choices), n=1, cutoff=cutoff)
    return match[0] if match else None


def nearest_names(word: str, candidates: list[str], most: int = 2) -> list[str]:
    """The candidates within a few edits of ``word`` (case ignored), nearest first: for rule
    ids and names, short words where an edit count tells more than a similarity ratio
    (``PK0O1`` is one edit from ``PK001``)."""
    limit = max(1, len(word) // 3)
    scored = sorted((_edits(word.upper(), candidate.upper()), candidate) for candidate in candidates)
    return [candidate for distance, candidate in scored if distance <= limit][:most]


def _edits(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions)."""
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        current = [i]
        for j, other in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char != other)))
        previous = current
    return previous[-1]

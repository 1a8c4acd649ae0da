"""The agreement record: what every collective reduces with MAX before it runs
(``Engine.agree``), one definition for Python and the compiled path (``_hot.pyx`` reads its
offsets from ``RECORD`` at import).

A field and its negation, both reduced with MAX, say whether every rank sent the same value:
it did where max(x) == -max(-x). Fields a call does not use stay zero, so every rank sends the
same length whatever it calls, valid or not (``Engine.agree_failed``).
"""

from __future__ import annotations

import numpy as np

#: The fields in order: name, doubles, what each rank puts there.
FIELDS = (
    ("settings", 1, "the settings digest of the call"),
    ("neg_settings", 1, "its negation"),
    ("invalid", 1, "1 where this rank's arguments were invalid"),
    ("token", 1, 'codec="auto": the key\'s state (``Chooser.token``)'),
    ("neg_token", 1, "its negation"),
    ("elapsed", 1, "codec=\"auto\": the last trial's time, or the kept pick's recent calls'"),
    ("statistics", 2, "the bound's: (max, -min) of the values sent, or (max |x|, rms)"),
    ("figures", 12, 'codec="auto": this rank\'s link, codec and ratio figures (``cost.Figures``)'),
)
RECORD = np.dtype(
    [(name, np.float64, (n,)) if n > 1 else (name, np.float64) for name, n, _ in FIELDS]
)
#: The record's length in doubles.
LENGTH = RECORD.itemsize // 8


def offset(name: str) -> int:
    """Where field ``name`` starts, in doubles."""
    return RECORD.fields[name][1] // 8


def size(name: str) -> int:
    """How many doubles field ``name`` holds."""
    return RECORD.fields[name][0].itemsize // 8


def blank() -> tuple[np.ndarray, np.void]:
    """A zeroed record: the doubles MPI reduces, and the same memory by field name."""
    doubles = np.zeros(LENGTH)
    return doubles, doubles.view(RECORD)[0]


def of(doubles: object) -> np.void:
    """A record read by field name from ``LENGTH`` doubles (the compiled path's)."""
    return np.asarray(doubles, dtype=np.float64).view(RECORD)[0]

"""The store's key-value table on rank 0, with torch's Store semantics (no MPI here)."""

from __future__ import annotations

import threading
from typing import Any

from pycomm.distributed._store_wire import Op

#: The values ``add`` may leave (its reply is an int64, as torch's stores' is).
INT64 = range(-(2**63), 2**63)


class Table:
    """The key-value table; every method is called with ``cv`` held."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.cv = threading.Condition()

    def apply(self, op: Op, args: tuple) -> Any:
        d = self.data
        if op == Op.SET:
            d[args[0]] = bytes(args[1])
        elif op == Op.ADD:
            try:
                value = int(d.get(args[0], b"0")) + int(args[1])
            except ValueError:
                raise ValueError(f"add: the value of {args[0]!r} is not an integer") from None
            if value not in INT64:  # the reply carries an int64: refuse before storing
                raise ValueError(f"add: {args[0]!r} would become {value}, outside int64")
            d[args[0]] = str(value).encode()
            return value
        elif op == Op.CAS:
            key, expected, desired = args
            current = d.get(key)
            if (current is None and not expected) or current == bytes(expected):
                d[key] = bytes(desired)
                return bytes(desired)
            return bytes(expected) if current is None else current
        elif op == Op.APPEND:
            d[args[0]] = d.get(args[0], b"") + bytes(args[1])
        elif op == Op.MSET:
            for key, value in zip(args[0], args[1], strict=True):
                d[key] = bytes(value)
        elif op == Op.CHECK:
            return all(k in d for k in args[0])
        elif op == Op.DEL:
            return d.pop(args[0], None) is not None
        elif op == Op.NUM:
            return len(d)
        else:
            raise ValueError(f"unknown store operation {op!r}")
        return None

    def ready(self, op: Op, keys: list[str]) -> tuple[bool, Any]:
        """(True, answer) when every key exists, else (False, None)."""
        d = self.data
        if not all(k in d for k in keys):
            return False, None
        if op == Op.GET:
            return True, d[keys[0]]
        if op == Op.MGET:
            return True, [d[k] for k in keys]
        return True, None

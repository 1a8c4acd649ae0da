"""The store's messages on the wire: a fixed little-endian header, then length-prefixed bytes.

A request is ``version u8 | op u8 | reply tag u16 | request id u32 | timeout f64 | n u32``
followed by n parts, each ``length u32 | bytes``; a reply is
``version u8 | status u8 | 0 u16 | request id u32 | n u32`` and n parts. Keys travel as UTF-8,
values as the bytes the caller gave, integers as i64, booleans as one byte. What a request's
parts mean depends on its op, and the server checks them (count, sizes, UTF-8) before use:
nothing from another rank is ever unpickled or evaluated.
"""

from __future__ import annotations

import enum
import math
import struct
from typing import Any

VERSION = 1
FIRST_REPLY_TAG = 2
REPLY_TAGS = 32000  # MPI guarantees tags up to 32767

_REQUEST = struct.Struct("<BBHIdI")
_REPLY = struct.Struct("<BBHII")
_LENGTH = struct.Struct("<I")
_I64 = struct.Struct("<q")
OK, FAILED = 0, 1


class WireError(ValueError):
    """A message that does not follow the store's format."""


class Op(enum.IntEnum):
    SET = 1
    GET = 2
    ADD = 3
    CAS = 4
    APPEND = 5
    MGET = 6
    MSET = 7
    WAIT = 8
    CHECK = 9
    DEL = 10
    NUM = 11


#: Requests that wait until their keys exist (parked on rank 0 until then or their deadline).
WAITING = frozenset({Op.GET, Op.MGET, Op.WAIT})
#: Requests that change the table (parked requests are looked at again after them).
CHANGING = frozenset({Op.SET, Op.ADD, Op.CAS, Op.APPEND, Op.MSET})


def _parts(parts: list[bytes]) -> list[bytes]:
    out = []
    for p in parts:
        out.append(_LENGTH.pack(len(p)))
        out.append(p)
    return out


def _read_parts(buf: memoryview, offset: int, count: int) -> list[bytes]:
    if count > (len(buf) - offset) // _LENGTH.size:
        raise WireError(f"{count} parts cannot fit in {len(buf) - offset} bytes")
    parts = []
    for _ in range(count):
        if offset + _LENGTH.size > len(buf):
            raise WireError("truncated part length")
        (n,) = _LENGTH.unpack_from(buf, offset)
        offset += _LENGTH.size
        if n > len(buf) - offset:
            raise WireError(f"part of {n} bytes overruns the message")
        parts.append(bytes(buf[offset : offset + n]))
        offset += n
    if offset != len(buf):
        raise WireError(f"{len(buf) - offset} stray bytes after the last part")
    return parts


# -- requests --


class Request:
    """A decoded request header and its raw parts."""

    __slots__ = ("op", "tag", "rid", "timeout", "parts")

    def __init__(self, op: int, tag: int, rid: int, timeout: float, parts: list[bytes]) -> None:
        self.op, self.tag, self.rid, self.timeout, self.parts = op, tag, rid, timeout, parts


def encode_request(op: Op, tag: int, rid: int, timeout: float, args: tuple) -> bytes:
    parts = _args_to_parts(op, args)
    head = _REQUEST.pack(VERSION, op, tag, rid, timeout, len(parts))
    return b"".join([head, *_parts(parts)])


def decode_request(buf: bytes | bytearray | memoryview) -> Request:
    """The request in buf; WireError if even its header cannot be trusted (no one to answer)."""
    view = memoryview(buf).cast("B")
    if len(view) < _REQUEST.size:
        raise WireError(f"{len(view)} bytes are shorter than a request header")
    version, op, tag, rid, timeout, count = _REQUEST.unpack_from(view, 0)
    if version != VERSION:
        raise WireError(f"request format version {version}, expected {VERSION}")
    if not FIRST_REPLY_TAG <= tag < FIRST_REPLY_TAG + REPLY_TAGS:
        raise WireError(f"reply tag {tag} out of range")
    parts = _read_parts(view, _REQUEST.size, count)
    return Request(op, tag, rid, timeout, parts)


def _key(raw: bytes) -> str:
    try:
        return raw.decode()
    except UnicodeDecodeError as exc:
        raise WireError(f"a key is not UTF-8: {exc}") from None


def _expect(op: Op, parts: list[bytes], n: int) -> None:
    if len(parts) != n:
        raise WireError(f"{op.name.lower()} takes {n} parts, got {len(parts)}")


def parse_args(req: Request) -> tuple[Op, tuple]:
    """The operation and its typed arguments (as ``_Table.apply`` takes them); WireError if bad."""
    try:
        op = Op(req.op)
    except ValueError:
        raise WireError(f"unknown store operation {req.op}") from None
    if not (math.isfinite(req.timeout) and req.timeout >= 0):
        raise WireError(f"timeout {req.timeout} is not a finite number of seconds")
    p = req.parts
    if op in (Op.SET, Op.APPEND):
        _expect(op, p, 2)
        return op, (_key(p[0]), p[1])
    if op == Op.ADD:
        _expect(op, p, 2)
        if len(p[1]) != _I64.size:
            raise WireError(f"add's amount is {len(p[1])} bytes, expected {_I64.size}")
        return op, (_key(p[0]), _I64.unpack(p[1])[0])
    if op == Op.CAS:
        _expect(op, p, 3)
        return op, (_key(p[0]), p[1], p[2])
    if op == Op.MSET:
        if len(p) % 2:
            raise WireError(f"multi_set takes key-value pairs, got {len(p)} parts")
        return op, ([_key(k) for k in p[0::2]], list(p[1::2]))
    if op in (Op.GET, Op.DEL):
        _expect(op, p, 1)
        key = _key(p[0])
        return op, ([key],) if op == Op.GET else (key,)
    if op == Op.NUM:
        _expect(op, p, 0)
        return op, ()
    return op, ([_key(k) for k in p],)  # MGET, WAIT, CHECK


def _args_to_parts(op: Op, args: tuple) -> list[bytes]:
    if op in (Op.SET, Op.APPEND, Op.CAS):
        return [args[0].encode(), *args[1:]]
    if op == Op.ADD:
        return [args[0].encode(), _I64.pack(args[1])]
    if op == Op.MSET:
        return [x for k, v in zip(*args, strict=True) for x in (k.encode(), v)]
    if op == Op.DEL:
        return [args[0].encode()]
    if op == Op.NUM:
        return []
    return [k.encode() for k in args[0]]  # GET, MGET, WAIT, CHECK


# -- replies --


def encode_reply(rid: int, op: Op, value: Any) -> bytes:
    """A success reply carrying ``value``, the result of ``op``."""
    if op in (Op.GET, Op.CAS):
        parts = [value]
    elif op == Op.MGET:
        parts = list(value)
    elif op in (Op.ADD, Op.NUM):
        parts = [_I64.pack(value)]
    elif op in (Op.CHECK, Op.DEL):
        parts = [b"\x01" if value else b"\x00"]
    else:
        parts = []
    return b"".join([_REPLY.pack(VERSION, OK, 0, rid, len(parts)), *_parts(parts)])


def encode_error(rid: int, text: str) -> bytes:
    body = text.encode(errors="replace")
    return b"".join([_REPLY.pack(VERSION, FAILED, 0, rid, 1), *_parts([body])])


def decode_reply(buf: bytes | bytearray | memoryview) -> tuple[int, bool, list[bytes]]:
    """(request id, ok, parts) of a reply; WireError if malformed."""
    view = memoryview(buf).cast("B")
    if len(view) < _REPLY.size:
        raise WireError(f"{len(view)} bytes are shorter than a reply header")
    version, status, _, rid, count = _REPLY.unpack_from(view, 0)
    if version != VERSION or status not in (OK, FAILED):
        raise WireError(f"reply version {version}, status {status}")
    return rid, status == OK, _read_parts(view, _REPLY.size, count)


def result(op: Op, parts: list[bytes]) -> Any:
    """The Python value of a success reply's parts for ``op``."""
    if op in (Op.GET, Op.CAS):
        _expect(op, parts, 1)
        return parts[0]
    if op == Op.MGET:
        return parts
    if op in (Op.ADD, Op.NUM):
        _expect(op, parts, 1)
        if len(parts[0]) != _I64.size:
            raise WireError(f"integer reply of {len(parts[0])} bytes")
        return _I64.unpack(parts[0])[0]
    if op in (Op.CHECK, Op.DEL):
        _expect(op, parts, 1)
        return parts[0] == b"\x01"
    _expect(op, parts, 0)
    return None


def error_text(parts: list[bytes]) -> str:
    return b"".join(parts).decode(errors="replace")

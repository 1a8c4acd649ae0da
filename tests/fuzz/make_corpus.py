"""Write the seed corpus of the fuzz targets (tests/fuzz/corpus/<target>/).

Golden frames (tests/golden/frames) seed the decoders, the header reader and ebq_add;
hand-made inputs (special values, every option byte) seed the round trips, the rANS stage and
the index unpacker. Deterministic: rerunning gives the same files. Run from anywhere:
python3 tests/fuzz/make_corpus.py. Files named regress-* are inputs that once made a target
fail (kept by hand, not written here): the corpus replay keeps them passing.
"""

import math
import struct
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOLDEN = HERE.parent / "golden" / "frames"
CORPUS = HERE / "corpus"

DECODERS = {
    "fuzz_decode_raw": ["raw-"],
    "fuzz_decode_fp16": ["fp16-"],
    "fuzz_decode_bf16": ["bf16-"],
    "fuzz_decode_int8": ["int8-"],
    "fuzz_decode_int4": ["int4-"],
    "fuzz_decode_sign": ["sign-"],
    "fuzz_decode_qsgd": ["qsgd-"],
    "fuzz_decode_topk": ["topk-"],
    "fuzz_decode_ebq_fast": [
        "ebq-f32-abs-fast",
        "ebq-f32-rel-fast",
        "ebq-f32-specials",
        "ebq-f32-empty",
    ],
    "fuzz_decode_ebq_dense": [
        "ebq-f32-abs-dense",
        "ebq-f64-abs-dense",
        "ebq-f64-rel-dense",
        "ebq-f32-dense-wide",
        "v1-ebq-",  # older format versions still decode
        "v2-ebq-",
    ],
}

F32_SPECIALS = [
    0.0,
    -0.0,
    math.inf,
    -math.inf,
    math.nan,
    3.4028234663852886e38,
    1e-45,
    -1e-45,
    1.17549435e-38,
    1e-3,
    -7.25,
    65504.0,
    65520.0,
]
F64_SPECIALS = [
    0.0,
    -0.0,
    math.inf,
    -math.inf,
    math.nan,
    1.7976931348623157e308,
    5e-324,
    2.2250738585072014e-308,
    1e300,
    -1e-300,
    3.5e38,
    0.1,
]


def write(target: str, name: str, data: bytes) -> None:
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)


def golden(prefixes: list[str]) -> list[Path]:
    return sorted(p for p in GOLDEN.glob("*.bin") if any(p.name.startswith(x) for x in prefixes))


def ramp(n: int, scale: float) -> list[float]:
    return [math.sin(i * 0.37) * scale * (1 + i % 5) for i in range(n)]


def main() -> None:
    for target, prefixes in DECODERS.items():
        for p in golden(prefixes):
            write(target, p.name, p.read_bytes())
            write(target, "short-" + p.name, p.read_bytes()[: max(64, p.stat().st_size // 2)])
    for p in golden(["raw-empty", "int8-f32.bin", "ebq-f32-empty", "sign-", "raw-f32-checksum"]):
        write("fuzz_header", p.name, p.read_bytes())
    write("fuzz_header", "magic-only", b"\x89MUC")

    ebq = golden(["ebq-"])
    for i, a in enumerate(ebq):
        b = ebq[(i + 1) % len(ebq)]
        fa, fb = a.read_bytes(), a.read_bytes() if i % 2 else b.read_bytes()
        write("fuzz_ebq_add", f"pair-{i}", bytes([1]) + struct.pack("<H", len(fa)) + fa + fb)

    # round trips: option byte, bound byte (raw f64 with bit 7), 8 bound bytes, elements
    for opt in (0, 1, 2, 3, 5, 7, 12, 15, 21, 26, 31, 42, 47, 53, 60, 63):
        f64 = opt & 1
        vals = (F64_SPECIALS if f64 else F32_SPECIALS) + ramp(40 + opt, 10.0 ** (opt % 7 - 3))
        body = struct.pack(f"<{len(vals)}{'d' if f64 else 'f'}", *vals)
        write("fuzz_roundtrip_ebq", f"opt-{opt:02x}", bytes([opt, opt % 16]) + bytes(8) + body)
    write(
        "fuzz_roundtrip_ebq",
        "raw-bound",
        bytes([0, 0x80]) + struct.pack("<d", 2.5e-3) + struct.pack("<8f", *ramp(8, 1)),
    )
    for opt in range(0, 256, 11):
        dtype = (opt >> 3) & 3  # f32, f64, f16, bf16
        vals = F32_SPECIALS + ramp(50 + opt % 40, 10.0 ** (opt % 5 - 2))
        if dtype == 0:
            body = struct.pack(f"<{len(vals)}f", *vals)
        elif dtype == 1:
            vals = F64_SPECIALS + vals
            body = struct.pack(f"<{len(vals)}d", *vals)
        elif dtype == 2:
            body = struct.pack(
                f"<{len(vals)}e",
                *[v if abs(v) <= 65504 or not math.isfinite(v) else 65504.0 for v in vals],
            )
        else:
            body = b"".join(struct.pack("<f", v)[2:] for v in vals)
        head = bytes([opt, opt % 5, opt % 130 + 1]) + struct.pack(
            "<Q", opt * 0x9E3779B97F4A7C15 % 2**64
        )
        write("fuzz_roundtrip_quant", f"opt-{opt:02x}", head + body)

    # rANS: 2 bytes of count, then a stream (raw, constant); the rest is also the symbols
    write("fuzz_rans", "raw-mode", struct.pack("<H", 8) + bytes([0]) + bytes(range(8)))
    write("fuzz_rans", "const-mode", struct.pack("<H", 300) + bytes([1, 7]))
    write(
        "fuzz_rans",
        "geometric",
        bytes(min(255, int(-math.log(1 - (i * 0.6180339) % 1) * 3)) for i in range(600)),
    )
    write("fuzz_rans", "runs", bytes((i // 37) % 4 for i in range(500)))

    # unpack: 2 bytes of count, then width bytes and packed blocks
    write("fuzz_unpack_indices", "zeros", struct.pack("<H", 64) + bytes([0, 0]))
    write(
        "fuzz_unpack_indices",
        "width1",
        struct.pack("<H", 32) + bytes([1]) + bytes([0x55, 0xAA, 0x0F, 0xF0]),
    )
    write("fuzz_unpack_indices", "width32", struct.pack("<H", 32) + bytes([32]) + bytes(range(128)))
    write(
        "fuzz_unpack_indices",
        "short-tail",
        struct.pack("<H", 33) + bytes([0, 2]) + bytes([3, 0, 0, 0, 0, 0, 0, 0]),
    )


if __name__ == "__main__":
    main()

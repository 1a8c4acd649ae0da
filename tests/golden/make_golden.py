"""Write the frozen frames of tests/golden (run after any intended format change):

    python tests/golden/make_golden.py

For every case whose codec this build has, compresses a deterministic input and writes
frames/<name>.bin plus manifest.json (codec, params, input generator, sha256 of the input, of
the frame and of the decoded values). test_golden.py checks that today's code makes the same
bytes and decodes the stored frames to the same values. Codecs missing from the build are
left out of the manifest (and reported). When a case's frame moves to a newer format version,
its previous frame stays as a decode-only case, v<version>-<name> ("remake": false): older
frames must keep decoding.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pycodecs

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifest.json"
FRAMES = HERE / "frames"


def f32(**input_kw):
    """An input generator: 600 normal float32 values unless the keywords say otherwise."""
    return {
        "dtype": "float32",
        "kind": "normal",
        "n": 600,
        "seed": 1,
        "scale": 1.0,
        "specials": False,
        **input_kw,
    }


def f64(**input_kw):
    return f32(**{**input_kw, "dtype": "float64"})


# name -> (codec, compress keywords, input generator)
CASES = {
    "raw-f32": ("raw", {}, f32(specials=True)),
    "raw-f64": ("raw", {}, f64(specials=True)),
    "raw-f16": ("raw", {}, {**f32(specials=True), "dtype": "float16"}),
    "raw-bf16": ("raw", {}, {**f32(specials=True), "dtype": "bfloat16"}),
    "raw-f32-checksum": ("raw", {"checksum": True}, f32(n=100)),
    "raw-empty": ("raw", {}, f32(n=0)),
    "ebq-f32-abs-fast": ("ebq", {"error_bound": 1e-3}, f32()),
    "ebq-f32-abs-dense-delta": (
        "ebq",
        {"error_bound": 1e-3, "level": "dense", "predictor": "delta"},
        f32(kind="smooth"),
    ),
    "ebq-f32-rel-fast-delta": (
        "ebq",
        {"error_bound": 1e-4, "mode": "rel", "predictor": "delta"},
        f32(kind="smooth"),
    ),
    "ebq-f32-specials": ("ebq", {"error_bound": 1e-2}, f32(specials=True)),
    "ebq-f64-abs-dense": ("ebq", {"error_bound": 1e-6, "level": "dense"}, f64()),
    "ebq-f64-rel-dense-delta": (
        "ebq",
        {
            "error_bound": 1e-5,
            "mode": "rel",
            "level": "dense",
            "predictor": "delta",
            "checksum": True,
        },
        f64(kind="smooth", specials=True),
    ),
    "ebq-f32-empty": ("ebq", {"error_bound": 1e-3}, f32(n=0)),
    # format v2: two rANS segments of 2^20 symbols, mostly zeros so that the frame stays small
    "ebq-f32-dense-segments": (
        "ebq",
        {"error_bound": 1e-3, "level": "dense"},
        f32(n=(1 << 20) + 1000, scale=3e-4, specials=True),
    ),
    # format v3: indices in the tens of thousands (wide symbols and their extra bits)
    "ebq-f32-dense-wide": ("ebq", {"error_bound": 1e-4, "level": "dense"}, f32(specials=True)),
    "fp16-f32": ("fp16", {}, f32(specials=True)),
    "fp16-f64": ("fp16", {}, f64()),
    "bf16-f32": ("bf16", {}, f32(specials=True)),
    "int8-f32": ("int8", {}, f32()),
    "int8-f32-stochastic": ("int8", {"block_size": 64, "rounding": "stochastic", "seed": 5}, f32()),
    "int8-f64": ("int8", {}, f64()),
    "int4-f32": ("int4", {}, f32()),
    "sign-f32": ("sign", {}, f32()),
    "qsgd-f32": ("qsgd", {"levels": 8, "rounding": "stochastic", "seed": 3}, f32()),
    "topk-f32": ("topk", {"levels": 4, "block_size": 64}, f32()),
}


def bf16_bits(v: np.ndarray) -> np.ndarray:
    u = v.astype(np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF
    r = np.where((u & 0x7FFFFFFF) > 0x7F800000, (u >> 16) | 0x40, r)
    return r.astype(np.uint16).view(np.int16)


def make_input(spec: dict) -> np.ndarray:
    """The deterministic input of a case (bfloat16 as int16 bits)."""
    n = spec["n"]
    if spec["kind"] == "normal":
        v = np.random.default_rng(spec["seed"]).standard_normal(n) * spec["scale"]
    elif spec["kind"] == "smooth":
        v = np.sin(np.linspace(0.0, 12.0, n)) * spec["scale"] + np.linspace(0.0, 0.5, n)
    else:
        raise ValueError(spec["kind"])
    dtype = spec["dtype"]
    if spec["specials"] and n >= 16:
        info = np.finfo(np.float32 if dtype in ("float16", "bfloat16") else dtype)
        v[:9] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-3, -7.25, 2.0**-20, 100.0]
        if dtype in ("float32", "float64"):
            v[9:12] = [info.max, -info.max, info.smallest_subnormal]
    with np.errstate(over="ignore"):
        return bf16_bits(v) if dtype == "bfloat16" else v.astype(dtype)


def sha256(data) -> str:
    return hashlib.sha256(bytes(data)).hexdigest()


def compress_case(codec: str, params: dict, spec: dict) -> bytes:
    x = make_input(spec)
    dtype = "bfloat16" if spec["dtype"] == "bfloat16" else None
    return bytes(pycodecs.compress(x, codec, dtype=dtype, **params))


def available(codec: str) -> bool:
    """False when the C library reports the codec unsupported (probe: one element)."""
    probe = {"ebq": {"error_bound": 1e-3}, "qsgd": {"levels": 8}, "topk": {"levels": 1}}
    try:
        pycodecs.compress(np.zeros(1, np.float32), codec, **probe.get(codec, {}))
    except pycodecs.CodecError as e:
        return e.status_name != "MPIUCC_ERR_UNSUPPORTED"
    return True


def older_frames(new_versions: dict[str, int]) -> list[dict]:
    """Decode-only entries: those already kept, and the stored frames of cases whose new frame
    has another format version (their files are copied to v<version>-<name>.bin)."""
    if not MANIFEST.exists():
        return []
    kept = []
    for e in json.loads(MANIFEST.read_text())["cases"]:
        path = HERE / e["frame"]
        if e.get("remake") is False:
            kept.append(e)
            continue
        if not path.exists() or e["name"] not in new_versions:
            continue
        old = path.read_bytes()
        if old[4] == new_versions[e["name"]]:
            continue
        name = f"v{old[4]}-{e['name']}"
        (FRAMES / f"{name}.bin").write_bytes(old)
        kept.append({**e, "name": name, "frame": f"frames/{name}.bin", "remake": False})
    return kept


def main() -> int:
    FRAMES.mkdir(exist_ok=True)
    entries, missing = [], set()
    made = {}
    for name, (codec, params, spec) in CASES.items():
        if available(codec):
            made[name] = compress_case(codec, params, spec)
    kept = older_frames({name: frame[4] for name, frame in made.items()})
    for name, (codec, params, spec) in CASES.items():
        if not available(codec):
            missing.add(codec)
            continue
        frame = made[name]
        (FRAMES / f"{name}.bin").write_bytes(frame)
        decoded = pycodecs.decompress(frame)
        entries.append(
            {
                "name": name,
                "codec": codec,
                "params": params,
                "input": spec,
                "input_sha256": sha256(make_input(spec).tobytes()),
                "frame": f"frames/{name}.bin",
                "frame_size": len(frame),
                "frame_sha256": sha256(frame),
                "decoded_sha256": sha256(decoded.tobytes()),
            }
        )
    entries += kept
    for stale in FRAMES.glob("*.bin"):
        if stale.stem not in {e["name"] for e in entries}:
            stale.unlink()
    manifest = {
        "format_version": pycodecs._ext.FORMAT_VERSION,
        "codecs_missing_from_build": sorted(missing),
        "cases": entries,
    }
    MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {len(entries)} frames; codecs not built (left out): {sorted(missing) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

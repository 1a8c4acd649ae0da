"""Frozen frames: today's code must make the same bytes and decode them to the same values.

A failure here means the frame format (or a codec's arithmetic) changed. If that was
intended, bump the format version where needed and regenerate:
python tests/golden/make_golden.py
"""

import hashlib
import json

import pycodecs
import pytest
from make_golden import CASES, FRAMES, MANIFEST, available, compress_case, make_input

MANIFEST_DATA = json.loads(MANIFEST.read_text())
ENTRIES = MANIFEST_DATA["cases"]


def sha256(data) -> str:
    return hashlib.sha256(bytes(data)).hexdigest()


def simd_levels():
    before = pycodecs.simd_level()
    levels = ["generic"]
    if pycodecs.set_simd_level("avx2") == "avx2":
        levels.append("avx2")
    pycodecs.set_simd_level(before)
    return levels


@pytest.fixture(params=ENTRIES, ids=[e["name"] for e in ENTRIES])
def entry(request):
    e = request.param
    if not available(e["codec"]):
        pytest.skip(f"codec {e['codec']} not in this C library")
    return e


def test_stored_frame_is_intact(entry):
    frame = (FRAMES.parent / entry["frame"]).read_bytes()
    assert len(frame) == entry["frame_size"] and sha256(frame) == entry["frame_sha256"]


def test_input_generator_unchanged(entry):
    assert sha256(make_input(entry["input"]).tobytes()) == entry["input_sha256"]


def test_compressing_again_gives_the_same_bytes(entry):
    if entry.get("remake") is False:
        pytest.skip("a frame of an older format version: decoded, never made again")
    stored = (FRAMES.parent / entry["frame"]).read_bytes()
    before = pycodecs.simd_level()
    try:
        for level in simd_levels():
            pycodecs.set_simd_level(level)
            frame = compress_case(entry["codec"], entry["params"], entry["input"])
            assert frame == stored, f"{entry['name']}: frame differs ({level} kernels)"
    finally:
        pycodecs.set_simd_level(before)


def test_stored_frame_decodes_to_the_stored_values(entry):
    frame = (FRAMES.parent / entry["frame"]).read_bytes()
    h = pycodecs.header(frame)
    assert (h.codec, h.count) == (entry["codec"], entry["input"]["n"])
    before = pycodecs.simd_level()
    try:
        for level in simd_levels():
            pycodecs.set_simd_level(level)
            assert sha256(pycodecs.decompress(frame).tobytes()) == entry["decoded_sha256"]
    finally:
        pycodecs.set_simd_level(before)


def test_every_built_codec_has_golden_frames():
    frozen = {e["codec"] for e in ENTRIES}
    wanted = {codec for codec, _, _ in CASES.values()}
    unfrozen = sorted(c for c in wanted - frozen if available(c))
    assert not unfrozen, (
        f"codecs {unfrozen} are built but have no golden frames: "
        "run python tests/golden/make_golden.py"
    )


def test_older_format_versions_still_decode():
    """Version 1 dense frames (one rANS stream) are kept and checked above."""
    old = [e for e in ENTRIES if e.get("remake") is False]
    assert any(e["name"].startswith("v1-") and e["params"].get("level") == "dense" for e in old)
    for e in old:
        assert (FRAMES.parent / e["frame"]).read_bytes()[4] < pycodecs._ext.FORMAT_VERSION


def test_manifest_matches_format_version():
    assert MANIFEST_DATA["format_version"] == pycodecs._ext.FORMAT_VERSION

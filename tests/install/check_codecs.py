"""The codec API from the installed wheel: round trips within the bound, the same frames from
the SIMD and the generic kernels (chosen at run time), the frame header."""

import hashlib
import os
import subprocess
import sys

import numpy as np
import pycodecs
from _where import check_installed

check_installed()
x = np.random.default_rng(0).standard_normal(1 << 16).astype(np.float32)
frame = pycodecs.compress(x, codec="ebq", error_bound=1e-4, mode="rel")
y = pycodecs.decompress(frame)
assert np.max(np.abs(y.astype(np.float64) - x)) <= 1e-4 * float(x.max() - x.min())
digest = hashlib.sha256(frame).hexdigest()
head = pycodecs.header(frame)
assert head.count == x.size and len(frame) < x.nbytes, head
QUANTIZERS = {"fp16": {}, "bf16": {}, "int8": {}, "int4": {}, "sign": {}}
QUANTIZERS.update(qsgd={"levels": 16}, topk={"levels": 8})
for codec, kw in QUANTIZERS.items():
    assert pycodecs.decompress(pycodecs.compress(x, codec=codec, **kw)).shape == x.shape, codec

if os.environ.get("MPIUCC_FORCE_GENERIC") != "1":  # again on the generic path: same bytes
    env = dict(os.environ, MPIUCC_FORCE_GENERIC="1")
    code = [sys.executable, __file__]
    generic = subprocess.run(code, env=env, capture_output=True, text=True, timeout=60)
    assert generic.returncode == 0, generic.stderr
    assert generic.stdout.split()[-1] == digest, "generic and SIMD frames differ"
    print(f"codec API: passed (SIMD level {pycodecs.simd_level()}, generic path identical)")
else:
    assert pycodecs.simd_level() == "generic", pycodecs.simd_level()
    print(digest)

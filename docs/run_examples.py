"""Run every code example of the docs pages, so that none can go stale (``make docs``).

Each fenced block in python, bash, sh or console in ``docs/**/*.md`` runs, as the HTML comment
on the line before it says:

- no comment (python): in this process, in one namespace per page, in page order;
- ``<!-- run: mpiexec -n 2 -->`` (python): on 2 MPI ranks, in one namespace per page and rank;
  every page's MPI blocks run in one launch, a page after the other;
- ``<!-- run: shell -->`` (bash, sh): by bash in a scratch folder, ``.venv/bin`` first on PATH;
- ``<!-- not run: REASON -->``: not run, with the reason (a cluster, a GPU, a long job).

A shell block without a comment is an error, so that every example is either run or says why
not. ``text`` blocks (outputs, tables) are not examples. The root files that pages include
(ARCHITECTURE, BENCHMARKS, RELIABILITY, FORMAT) are not scanned: only the pages' own text.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent
BIN = Path(sys.executable).parent
FENCE = re.compile(r"^(`{3,})([\w-]*)[^\n]*\n(.*?)^\1[ \t]*$", re.S | re.M)
MARK = re.compile(r"<!--\s*(run|not run):\s*(.*?)\s*-->\s*$")
PYTHON = {"python", "py", "python3"}
SHELL = {"bash", "sh", "console", "shell"}
MPI_TIMEOUT = 240


class Example:
    def __init__(self, page: str, line: int, lang: str, code: str, mark: tuple[str, str] | None):
        self.page, self.line, self.lang, self.code, self.mark = page, line, lang, code, mark

    @property
    def where(self) -> str:
        return f"docs/{self.page}:{self.line}"

    def kind(self) -> str:
        """``local``, ``mpi``, ``shell`` or ``skip``; raises for a block that says neither."""
        what, arg = self.mark or ("", "")
        if what == "not run":
            if not arg:
                raise ValueError(f"{self.where}: 'not run' needs a reason")
            return "skip"
        if what == "run":
            if arg == "mpiexec -n 2" and self.lang in PYTHON:
                return "mpi"
            if arg == "shell" and self.lang in SHELL:
                return "shell"
            raise ValueError(f"{self.where}: 'run: {arg}' does not fit a {self.lang} block")
        if self.lang in PYTHON:
            return "local"
        raise ValueError(f"{self.where}: a {self.lang} block needs <!-- run: shell --> or "
                         "<!-- not run: REASON --> on the line before it")  # fmt: skip


def examples() -> list[Example]:
    """Every fenced example of the docs pages, in page order."""
    found = []
    for path in sorted(DOCS.rglob("*.md")):
        text = path.read_text()
        for m in FENCE.finditer(text):
            lang = m.group(2).lower()
            if lang not in PYTHON | SHELL:
                continue
            line = text.count("\n", 0, m.start()) + 1
            before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
            mark = MARK.search(before)
            found.append(Example(str(path.relative_to(DOCS)), line, lang, m.group(3),
                                 (mark.group(1), mark.group(2)) if mark else None))  # fmt: skip
    return found


def run_local(blocks: list[Example], scratch: Path) -> None:
    namespaces: dict[str, dict] = {}
    cwd = os.getcwd()
    os.chdir(scratch)
    out = io.StringIO()
    try:
        for ex in blocks:
            ns = namespaces.setdefault(ex.page, {"__name__": "__main__"})
            try:
                with contextlib.redirect_stdout(out):
                    exec(compile(ex.code, ex.where, "exec"), ns)
            except BaseException:
                sys.stdout.write(out.getvalue())
                raise
    finally:
        os.chdir(cwd)


def run_shell(ex: Example, scratch: Path) -> None:
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
               MPIUCC_REPO=str(REPO), OMP_NUM_THREADS="1")  # fmt: skip
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", ex.code], cwd=scratch, env=env,
                          capture_output=True, text=True, timeout=MPI_TIMEOUT)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"{ex.where}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")


def run_mpi(blocks: list[Example], scratch: Path) -> None:
    spec = scratch / "mpi_examples.json"
    spec.write_text(json.dumps([(ex.page, ex.where, ex.code) for ex in blocks]))
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")
    cmd = [str(BIN / "mpiexec"), "-n", "2", sys.executable, __file__, "--mpi-worker", str(spec)]
    try:
        proc = subprocess.run(cmd, cwd=scratch, env=env, capture_output=True, text=True,
                              timeout=MPI_TIMEOUT)  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        why = f"the MPI examples hung (> {MPI_TIMEOUT} s)\n{exc.stdout}\n{exc.stderr}"
        raise RuntimeError(why) from None
    if proc.returncode != 0:
        raise RuntimeError(f"the MPI examples failed (exit {proc.returncode})\n"
                           f"{proc.stdout}\n{proc.stderr}")  # fmt: skip


def mpi_worker(spec: Path) -> None:
    """One rank: each page's MPI blocks in one namespace; a failure aborts every rank."""
    from mpi4py import MPI

    namespaces: dict[str, dict] = {}
    page = None
    for page_of, where, code in json.loads(spec.read_text()):
        if page_of != page:
            _end_page()
            page = page_of
        try:
            exec(
                compile(code, where, "exec"), namespaces.setdefault(page, {"__name__": "__main__"})
            )
        except BaseException:
            traceback.print_exc()
            sys.stderr.write(f"rank {MPI.COMM_WORLD.rank}: {where} failed\n")
            sys.stderr.flush()
            MPI.COMM_WORLD.Abort(1)
    _end_page()


def _end_page() -> None:
    """A page's torch process group ends with the page, so the next page may make its own."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_initialized():
        dist.destroy_process_group()


def main() -> int:
    if sys.argv[1:2] == ["--mpi-worker"]:
        mpi_worker(Path(sys.argv[2]))
        return 0
    start = time.perf_counter()
    try:
        found = examples()
        kinds = {ex: ex.kind() for ex in found}
    except ValueError as exc:
        print(f"docs examples: {exc}", file=sys.stderr)
        return 1
    by = {k: [ex for ex in found if kinds[ex] == k] for k in ("local", "mpi", "shell", "skip")}
    with tempfile.TemporaryDirectory(prefix="mpiucc-docs-") as tmp:
        scratch = Path(tmp)
        try:
            t = time.perf_counter()
            run_local(by["local"], scratch)
            t_local = time.perf_counter() - t
            t = time.perf_counter()
            for ex in by["shell"]:
                run_shell(ex, scratch)
            t_shell = time.perf_counter() - t
            t = time.perf_counter()
            if by["mpi"]:
                run_mpi(by["mpi"], scratch)
            t_mpi = time.perf_counter() - t
        except Exception:
            traceback.print_exc()
            return 1
    for ex in by["skip"]:
        print(f"docs examples: not run, {ex.where}: {ex.mark[1]}")
    print(f"docs examples: {len(by['local'])} python ({t_local:.1f} s), "
          f"{len(by['shell'])} shell ({t_shell:.1f} s), "
          f"{len(by['mpi'])} python on 2 MPI ranks ({t_mpi:.1f} s), "
          f"{len(by['skip'])} not run; {time.perf_counter() - start:.1f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

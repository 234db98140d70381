#!/usr/bin/env python3
"""Real single-commit changes of source files, for the diff exactness benchmark.

Usage: commit-pairs.py OUT_DIR GIT_DIR... [--per-repo N]

Walks each git directory's first-parent history from HEAD, newest first, and takes every file a
non-merge commit modified (not added, deleted or renamed) ending in .py, .js, .ts or .rs. Left
out: commits touching more than 5 such files (refactors, reformatting; the corpus is what an
agent's commit looks like), `.d.ts` and minified files, vendored, dist/build and test-fixture
paths, files over 80 KB or not UTF-8 on either side, and changes that leave the bytes as they
were. Writes OUT_DIR/<lang>-<repo>-<sha10>-<path>/before.<ext> and after.<ext>, at most N
(default 40) pairs per repository. The repository's name is the git directory's (a trailing
`repo` or `.git` component skipped, an `owner+` prefix dropped), so
/work/.mirror/psf+requests/repo is `requests`. Deterministic: the same history gives the same
pairs, and existing pairs are rewritten identically.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path, PurePosixPath
from typing import Iterator

MAX_BYTES = 80 * 1024
MAX_SOURCE_FILES = 5
PER_REPO = 40
LANG = {".py": "python", ".js": "javascript", ".ts": "typescript", ".rs": "rust"}
# Path components that mark code nobody edits by hand in a commit: vendored copies, build
# output and test fixtures / snapshots.
SKIP_DIRS = {
    "vendor", "vendored", "_vendor", "third_party", "third-party", "thirdparty", "external",
    "node_modules", "bower_components", "dist", "build", "out", "lib-cov", "coverage",
    "generated", "__generated__", "fixtures", "fixture", "__fixtures__", "testdata",
    "test_data", "test-data", "__snapshots__", "snapshots", "golden", "expected",
}


def source_ext(path: str) -> str | None:
    ext = PurePosixPath(path).suffix
    return ext if ext in LANG else None


def excluded_path(path: str) -> bool:
    p = PurePosixPath(path)
    name = p.name.lower()
    if name.endswith(".d.ts") or ".min." in name or "-min." in name or ".bundle." in name:
        return True
    return any(part.lower() in SKIP_DIRS for part in p.parts[:-1])


def minified(text: str) -> bool:
    lines = text.splitlines() or [""]
    longest = max(len(line) for line in lines)
    return longest > 1000 or len(text) / len(lines) > 300


def repo_name(git_dir: Path) -> str:
    path = git_dir.resolve()
    if path.name in ("repo", ".git") and path.parent != path:
        path = path.parent
    name = path.name.removesuffix(".git")
    return name.rsplit("+", 1)[-1]


def commits(git_dir: Path) -> Iterator[tuple[str, list[tuple[str, str, str, str]]]]:
    """(sha, [(status, old blob, new blob, path)]) along the first-parent chain, newest first."""
    proc = subprocess.Popen(
        ["git", f"--git-dir={git_dir}", "-c", "core.quotePath=false", "log", "--first-parent",
         "--no-merges", "--no-renames", "--raw", "--no-abbrev", "-z", "--format=C%H", "HEAD"],
        stdout=subprocess.PIPE)
    assert proc.stdout is not None

    def tokens() -> Iterator[bytes]:
        rest = b""
        while chunk := proc.stdout.read(1 << 16):
            rest += chunk
            *done, rest = rest.split(b"\0")
            yield from done
        if rest:
            yield rest

    try:
        sha, changes = None, []
        it = tokens()
        for token in it:
            token = token.lstrip(b"\n")
            if token.startswith(b":"):
                path = next(it).decode("utf-8", "surrogateescape")
                _, _, old, new, status = token[1:].decode().split(" ")
                changes.append((status, old, new, path))
            elif token.startswith(b"C"):
                if sha is not None:
                    yield sha, changes
                sha, changes = token[1:].decode(), []
        if sha is not None:
            yield sha, changes
    finally:
        proc.kill()
        proc.wait()


class Blobs:
    """Blob contents through one `git cat-file --batch`."""

    def __init__(self, git_dir: Path) -> None:
        self.proc = subprocess.Popen(["git", f"--git-dir={git_dir}", "cat-file", "--batch"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def read(self, sha: str) -> bytes:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(sha.encode() + b"\n")
        self.proc.stdin.flush()
        header = self.proc.stdout.readline().split()
        if len(header) != 3:
            raise RuntimeError(f"cat-file: {header!r} for {sha}")
        data = self.proc.stdout.read(int(header[2]))
        self.proc.stdout.read(1)
        return data

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def write_if_changed(path: Path, data: bytes) -> None:
    if not path.is_file() or path.read_bytes() != data:
        path.write_bytes(data)


def pair_name(lang: str, repo: str, sha: str, path: str) -> str:
    tail = re.sub(r"[^A-Za-z0-9_.-]", "_", path)
    if len(tail) > 150:
        tail = tail[-150:]
    return re.sub(r"[^A-Za-z0-9_.-]", "_", f"{lang}-{repo}-{sha[:10]}-") + tail


def take(git_dir: Path, out: Path, per_repo: int) -> dict[str, int]:
    repo = repo_name(git_dir)
    blobs = Blobs(git_dir)
    seen = {"commits": 0, "too many files": 0, "pairs": 0}
    skipped: dict[str, int] = {}
    try:
        for sha, changes in commits(git_dir):
            if seen["pairs"] >= per_repo:
                break
            seen["commits"] += 1
            sources = [c for c in changes if source_ext(c[3])]
            if len(sources) > MAX_SOURCE_FILES:
                seen["too many files"] += 1
                continue
            for status, old, new, path in sorted(sources, key=lambda c: c[3]):
                if seen["pairs"] >= per_repo:
                    break
                reason = None
                if status != "M":
                    reason = "not modified"
                elif excluded_path(path):
                    reason = "path"
                if reason is None:
                    a, b = blobs.read(old), blobs.read(new)
                    if a == b:
                        reason = "identical"
                    elif len(a) > MAX_BYTES or len(b) > MAX_BYTES:
                        reason = "size"
                    else:
                        try:
                            ta, tb = a.decode("utf-8"), b.decode("utf-8")
                        except UnicodeDecodeError:
                            reason = "not utf-8"
                        else:
                            if "\0" in ta or "\0" in tb or minified(ta) or minified(tb):
                                reason = "minified"
                if reason is not None:
                    skipped[reason] = skipped.get(reason, 0) + 1
                    continue
                ext = source_ext(path)
                assert ext is not None
                pair = out / pair_name(LANG[ext], repo, sha, path)
                pair.mkdir(parents=True, exist_ok=True)
                write_if_changed(pair / f"before{ext}", a)
                write_if_changed(pair / f"after{ext}", b)
                seen["pairs"] += 1
                seen[LANG[ext]] = seen.get(LANG[ext], 0) + 1
    finally:
        blobs.close()
    langs = ", ".join(f"{k} {v}" for k, v in sorted(seen.items())
                      if k in LANG.values())
    why = ", ".join(f"{k} {v}" for k, v in sorted(skipped.items()))
    print(f"{repo}: {seen['pairs']} pairs ({langs or 'none'}) from {seen['commits']} commits; "
          f"{seen['too many files']} commits over {MAX_SOURCE_FILES} source files; "
          f"files skipped: {why or 'none'}", file=sys.stderr)
    return seen


def main() -> None:
    args = sys.argv[1:]
    per_repo = PER_REPO
    if "--per-repo" in args:
        i = args.index("--per-repo")
        per_repo = int(args[i + 1])
        del args[i:i + 2]
    if len(args) < 2:
        sys.exit(__doc__)
    out, git_dirs = Path(args[0]), [Path(a) for a in args[1:]]
    out.mkdir(parents=True, exist_ok=True)
    total: dict[str, int] = {}
    for git_dir in git_dirs:
        for lang, n in take(git_dir, out, per_repo).items():
            if lang in LANG.values():
                total[lang] = total.get(lang, 0) + n
    print(f"{sum(total.values())} pairs in {out}: "
          + ", ".join(f"{k} {v}" for k, v in sorted(total.items())), file=sys.stderr)


if __name__ == "__main__":
    main()

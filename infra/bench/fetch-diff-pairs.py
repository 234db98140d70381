#!/usr/bin/env python3
"""Fetch real change history for the diff-score benchmark: the same source file in two
consecutive released versions of packages from PyPI, npm and crates.io.

Usage: fetch-diff-pairs.py OUT_DIR
Writes OUT_DIR/<lang>-<package>-<file>/before.<ext> and after.<ext> for every file that exists
in both versions, differs, and is at most 80 KB on both sides. Idempotent: downloads are cached
in OUT_DIR/.downloads and existing pairs are rewritten identically.
"""
from __future__ import annotations

import io
import re
import subprocess
import sys
import tarfile
import urllib.request
import zipfile
from pathlib import Path

MAX_BYTES = 80 * 1024
PER_PACKAGE = 12

# (registry, package, older, newer, extension)
RELEASES = [
    ("pypi", "requests", "2.31.0", "2.32.0", ".py"),
    ("pypi", "click", "8.1.3", "8.1.7", ".py"),
    ("pypi", "attrs", "23.1.0", "23.2.0", ".py"),
    ("pypi", "rich", "13.6.0", "13.7.0", ".py"),
    ("npm", "express", "4.18.2", "4.19.2", ".js"),
    ("npm", "axios", "1.6.0", "1.6.2", ".js"),
    ("npm", "commander", "11.0.0", "11.1.0", ".js"),
    ("npm", "rxjs", "7.8.0", "7.8.1", ".ts"),
    ("npm", "@tanstack/query-core", "5.8.1", "5.12.0", ".ts"),
    ("crates", "anyhow", "1.0.75", "1.0.80", ".rs"),
    ("crates", "regex-syntax", "0.8.2", "0.8.3", ".rs"),
    ("crates", "serde_json", "1.0.108", "1.0.114", ".rs"),
    ("crates", "clap_builder", "4.4.8", "4.5.1", ".rs"),
]

LANG = {".py": "python", ".js": "javascript", ".ts": "typescript", ".rs": "rust"}


def download(registry: str, package: str, version: str, cache: Path) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    slug = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{registry}-{package}-{version}")
    done = cache / slug
    if done.exists():
        return done
    tmp = cache / (slug + ".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    if registry == "pypi":
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        "-q", "-d", str(tmp), f"{package}=={version}"], check=True)
        archive = next(tmp.iterdir())
    elif registry == "npm":
        subprocess.run(["npm", "pack", "--silent", f"{package}@{version}"], cwd=tmp, check=True,
                       stdout=subprocess.DEVNULL)
        archive = next(tmp.glob("*.tgz"))
    else:
        url = f"https://static.crates.io/crates/{package}/{package}-{version}.crate"
        archive = tmp / f"{package}-{version}.crate"
        archive.write_bytes(urllib.request.urlopen(url, timeout=60).read())
    files: dict[str, bytes] = {}
    if archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as z:
            for name in z.namelist():
                files[name] = z.read(name)
    else:
        with tarfile.open(archive) as t:
            for member in t.getmembers():
                if member.isfile():
                    data = t.extractfile(member)
                    if data is not None:
                        files[member.name] = data.read()
    tmp.rename(done)
    out = done / "files"
    for name, data in files.items():
        # Drop the archive's top directory (package/, requests-2.31.0/, ...).
        relative = name.split("/", 1)[1] if "/" in name else name
        target = out / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return done


def main() -> None:
    out = Path(sys.argv[1])
    cache = out / ".downloads"
    pairs = 0
    for registry, package, old, new, ext in RELEASES:
        before_root = download(registry, package, old, cache) / "files"
        after_root = download(registry, package, new, cache) / "files"
        taken = 0
        for before in sorted(before_root.rglob(f"*{ext}")):
            if taken == PER_PACKAGE:
                break
            relative = before.relative_to(before_root)
            after = after_root / relative
            if ".d.ts" in before.name or not after.is_file():
                continue
            a, b = before.read_bytes(), after.read_bytes()
            if a == b or len(a) > MAX_BYTES or len(b) > MAX_BYTES:
                continue
            try:
                a.decode("utf-8"), b.decode("utf-8")
            except UnicodeDecodeError:
                continue
            name = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{LANG[ext]}-{package}-{relative}")
            pair = out / name
            pair.mkdir(parents=True, exist_ok=True)
            (pair / f"before{ext}").write_bytes(a)
            (pair / f"after{ext}").write_bytes(b)
            taken += 1
            pairs += 1
        print(f"{package} {old} -> {new}: {taken} pairs", file=sys.stderr)
    print(f"{pairs} pairs in {out}", file=sys.stderr)


if __name__ == "__main__":
    main()

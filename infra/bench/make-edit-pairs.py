#!/usr/bin/env python3
"""Synthetic agent-sized edits of real files, for the diff exactness benchmark.

Usage: make-edit-pairs.py PAIRS_DIR OUT_DIR [PER_FILE]

Takes every `before.*` of PAIRS_DIR (written by fetch-diff-pairs.py) and writes PER_FILE
(default 3) edited copies per file to OUT_DIR/<pair>-<kind>-<k>/{before,after}.<ext>. The edits
are what agents do to a file: rename an identifier everywhere, move a statement, delete a line,
wrap a line in a guard, insert a guard, drop a link from a method chain or add one, and swap
two adjacent lines. Seeded: the same input gives the same pairs.
"""
from __future__ import annotations

import random
import re
import sys
from pathlib import Path

IDENT = re.compile(r"\b[a-z_][A-Za-z0-9_]{3,}\b")
CHAIN_LINK = re.compile(r"\.[A-Za-z_][A-Za-z0-9_]*\(")
KEYWORDS = {"self", "this", "return", "function", "const", "import", "from", "true", "false",
            "None", "null", "async", "await", "yield", "while", "break", "continue", "else",
            "elif", "match", "impl", "struct", "enum", "type", "class", "export", "default",
            "static", "crate", "super", "where", "with", "pass", "raise", "except", "lambda",
            "assert", "global", "typeof", "instanceof", "delete", "void", "case", "switch",
            "throw", "catch", "finally", "extends", "interface", "public", "private",
            "protected", "readonly", "unsafe", "trait", "loop", "move", "pub", "use", "let",
            "undefined", "print", "require", "module", "exports"}


def balanced(line: str) -> bool:
    """A whole statement on one line: brackets closed, not the tail of a multi-line one."""
    text = line.strip()
    return (all(text.count(o) == text.count(c) for o, c in ("()", "[]", "{}"))
            and not text.startswith((")", "]", "}", ".", "&&", "||", "?", ":"))
            and not text.endswith((",", "(", "[", "{", ":", "\\", "&&", "||", "+", "=")))


def code_lines(lines: list[str]) -> list[int]:
    """Lines holding one whole statement: what an agent moves, deletes or wraps."""
    return [i for i, line in enumerate(lines)
            if line.strip() and balanced(line)
            and not line.strip().startswith(("#", "//", "/*", "*", '"""', "'''", "@"))]


def indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def balanced_end(text: str, open_at: int) -> int | None:
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def rename(src: str, lines: list[str], rng: random.Random, ext: str) -> str | None:
    counts: dict[str, int] = {}
    for name in IDENT.findall(src):
        if name not in KEYWORDS:
            counts[name] = counts.get(name, 0) + 1
    names = sorted(n for n, c in counts.items() if 2 <= c <= 12)
    if not names:
        return None
    name = rng.choice(names)
    return re.sub(rf"\b{re.escape(name)}\b", name + "_renamed", src)


def move(src: str, lines: list[str], rng: random.Random, ext: str) -> str | None:
    candidates = code_lines(lines)
    if len(candidates) < 4:
        return None
    i = rng.choice(candidates)
    same = [j for j in candidates if j != i and indent_of(lines[j]) == indent_of(lines[i])
            and abs(j - i) <= 12]
    if not same:
        return None
    j = rng.choice(same)
    out = lines[:]
    line = out.pop(i)
    out.insert(j, line)
    return "".join(out)


def delete(src: str, lines: list[str], rng: random.Random, ext: str) -> str | None:
    candidates = [i for i in code_lines(lines) if lines[i].rstrip().endswith((";", ")"))]
    if not candidates:
        return None
    i = rng.choice(candidates)
    return "".join(lines[:i] + lines[i + 1:])


def guard(ext: str, pad: str) -> tuple[str, str]:
    if ext == ".py":
        return f"{pad}if value is not None:\n", ""
    if ext == ".rs":
        return f"{pad}if value.is_some() {{\n", f"{pad}}}\n"
    return f"{pad}if (value != null) {{\n", f"{pad}}}\n"


DECLARATIONS = ("use ", "pub ", "mod ", "fn ", "impl ", "struct ", "enum ", "type ", "import ",
                "from ", "export ", "def ", "class ", "function ", "const ", "static ", "let ")


def wrap(src: str, lines: list[str], rng: random.Random, ext: str) -> str | None:
    # Statements, not declarations: an agent guards a call, not an import.
    candidates = [i for i in code_lines(lines) if lines[i].rstrip().endswith((";", ")"))
                  and indent_of(lines[i]) and not lines[i].strip().startswith(DECLARATIONS)]
    if not candidates:
        return None
    i = rng.choice(candidates)
    pad = indent_of(lines[i])
    head, tail = guard(ext, pad)
    unit = "    " if ext != ".rs" or "    " in pad else "  "
    wrapped = [head, unit + lines[i]] + ([tail] if tail else [])
    return "".join(lines[:i] + wrapped + lines[i + 1:])


def insert_guard(src: str, lines: list[str], rng: random.Random, ext: str) -> str | None:
    candidates = [i for i in code_lines(lines) if lines[i].strip().startswith("return")]
    if not candidates:
        return None
    i = rng.choice(candidates)
    pad = indent_of(lines[i])
    if ext == ".py":
        new = [f"{pad}if value is None:\n", f"{pad}    return None\n"]
    elif ext == ".rs":
        new = [f"{pad}if value.is_none() {{\n", f"{pad}    return None;\n", f"{pad}}}\n"]
    else:
        new = [f"{pad}if (value == null) {{\n", f"{pad}    return null;\n", f"{pad}}}\n"]
    return "".join(lines[:i] + new + lines[i:])


def drop_link(src: str, lines: list[str], rng: random.Random, ext: str) -> str | None:
    links = []
    for m in CHAIN_LINK.finditer(src):
        end = balanced_end(src, m.end() - 1)
        # A link in the middle of a chain: another call follows it.
        if end and end < len(src) and src[end] == "." and m.start() > 0 and src[m.start() - 1] in ")]":
            links.append((m.start(), end))
    if not links:
        return None
    start, end = rng.choice(links)
    return src[:start] + src[end:]


def add_link(src: str, lines: list[str], rng: random.Random, ext: str) -> str | None:
    links = []
    for m in CHAIN_LINK.finditer(src):
        end = balanced_end(src, m.end() - 1)
        if end and end < len(src) and src[end] == ".":
            links.append(end)
    if not links:
        return None
    at = rng.choice(links)
    link = ".clone()" if ext == ".rs" else (".copy()" if ext == ".py" else ".slice()")
    return src[:at] + link + src[at:]


def swap(src: str, lines: list[str], rng: random.Random, ext: str) -> str | None:
    candidates = [i for i in code_lines(lines)[:-1]
                  if i + 1 < len(lines) and indent_of(lines[i]) == indent_of(lines[i + 1])
                  and lines[i + 1].strip()]
    if not candidates:
        return None
    i = rng.choice(candidates)
    out = lines[:]
    out[i], out[i + 1] = out[i + 1], out[i]
    return "".join(out)


EDITS = {"rename": rename, "move": move, "delete": delete, "wrap": wrap, "guard": insert_guard,
         "droplink": drop_link, "addlink": add_link, "swap": swap}


def main() -> None:
    pairs, out = Path(sys.argv[1]), Path(sys.argv[2])
    per_file = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    rng = random.Random(20261124)
    written = 0
    for pair in sorted(p for p in pairs.iterdir() if p.is_dir() and not p.name.startswith(".")):
        befores = sorted(pair.glob("before.*"))
        if not befores:
            continue
        before = befores[0]
        src = before.read_text(encoding="utf-8", errors="replace")
        if "\n" not in src[:2000]:
            continue  # minified bundles: no lines to edit
        lines = src.splitlines(keepends=True)
        kinds = sorted(EDITS)
        rng.shuffle(kinds)
        made = 0
        for kind in kinds:
            if made == per_file:
                break
            after = EDITS[kind](src, lines, rng, before.suffix)
            if after is None or after == src:
                continue
            target = out / f"{pair.name}-{kind}"
            target.mkdir(parents=True, exist_ok=True)
            (target / before.name).write_text(src, encoding="utf-8")
            (target / ("after" + before.suffix)).write_text(after, encoding="utf-8")
            made += 1
            written += 1
    print(f"{written} edited pairs in {out}")


if __name__ == "__main__":
    main()

"""Docker's ``.dockerignore`` rules, read as Docker reads them (moby's patternmatcher), to
say which files of a tree a build's context carries.

A pattern is a path relative to the context's root, cleaned, a leading ``/`` dropped; ``*``
and ``?`` match within one path element, ``**`` any number of them; a pattern that matches
a directory matches everything under it; ``!`` makes an exception; the last pattern that
matches a path decides.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

__all__ = ["context_files", "read_patterns"]


def read_patterns(path: Path) -> list[tuple[re.Pattern[str], bool, str]]:
    """``(pattern, exception, text)`` of a ``.dockerignore``'s lines, comments and blanks
    dropped."""
    patterns = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        exception = line.startswith("!")
        text = os.path.normpath(line.removeprefix("!").strip()).lstrip("/")
        patterns.append((re.compile(_regex(text)), exception, text))
    return patterns


def _regex(pattern: str) -> str:
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return out + "$"


def _excluded(relative: str, patterns: list[tuple[re.Pattern[str], bool, str]]) -> bool:
    parts = relative.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    excluded = False
    for regex, exception, _ in patterns:
        if any(regex.match(prefix) for prefix in prefixes):
            excluded = not exception
    return excluded


def context_files(root: Path) -> Iterator[Path]:
    """Every file under ``root`` that a build context of ``root`` carries."""
    ignore = root / ".dockerignore"
    patterns = read_patterns(ignore) if ignore.exists() else []
    exceptions = [text for _, exception, text in patterns if exception]
    for directory, subdirectories, files in os.walk(root):
        # an excluded directory is not walked unless an exception could bring a file back
        subdirectories[:] = [
            name
            for name in subdirectories
            if not _excluded((relative := _relative(root, Path(directory) / name)), patterns)
            or any(text.startswith(f"{relative}/") or "*" in text for text in exceptions)
        ]
        for name in files:
            path = Path(directory) / name
            if not _excluded(_relative(root, path), patterns):
                yield path


def _relative(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()

"""A ``.cu`` file's spec opener: the first block comment that opens with ``/* mmcheck`` alone on its line, or a
comment that was meant to open one and is written almost right (``/** mmcheck``, ``// mmcheck``, ``/* mmchek``),
whose error says what to write.  What tells a kernel file from any other ``.cu`` file."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

__all__ = ["OPENER", "NO_SPEC", "BLOCK", "Opener", "opener"]

# The spec is the first block comment that opens with "/* mmcheck" alone on its line.
OPENER = "/* mmcheck"
NO_SPEC = (f"no mmcheck spec: a kernel file holds a comment that opens with {OPENER} alone on its line, then "
           "[[kernel]] tables (docs/spec.md, \"Adding a kernel\"); mmcheck init {path} writes one")
BLOCK = re.compile(r"/\*[ \t]+mmcheck[ \t]*(?=\r?\n|\*/)(.*?)\*/", re.S)
# Any comment's start and the rest of its line, where a spec opener written almost right is looked for.
_COMMENT = re.compile(r"(/\*+!?|//+!?)([^\n]*)")
_WORD = re.compile(r"[A-Za-z][A-Za-z_\- ]{0,15}\Z")  # one word alone (maybe spaced: "mm check")
_FIRST = re.compile(r"[A-Za-z][A-Za-z_\-]*")  # the first word after a comment's start


@dataclass(frozen=True)
class Opener:
    """What a ``.cu`` file opens its spec with: a spec (``spec``), a comment that was meant to open one but is
    written almost right (``near``: the error that says what to write), or neither (not a kernel file)."""

    spec: bool = False
    near: str = ""

    @property
    def kernel_file(self) -> bool:
        """Whether mmcheck reads the file: it has a spec, or one it cannot use for its opener."""
        return self.spec or bool(self.near)


def opener(text: str) -> Opener:
    """The spec opener of a file's text.  A comment is taken for an opener written almost right where its first
    word is ``mmcheck`` once case, spaces, hyphens and underscores are set aside, or one letter off (added,
    dropped, changed or two swapped), and that word is alone on its line or the comment holds ``[[kernel``:
    ``/** mmcheck``, ``/* MMCHECK``, ``/*mmcheck``, ``/* mm-check``, ``// mmcheck``, ``/* mmchek``,
    ``/* mmcheck v2`` above a table.  A comment that goes on in words (``// mmcheck reads the spec below``) is
    prose, not an opener."""
    if BLOCK.search(text):
        return Opener(spec=True)
    for match in _COMMENT.finditer(text):
        start, line = match.group(1), match.group(2)
        rest = line.strip().removesuffix("*/").strip().removesuffix(":")
        alone, first = _WORD.match(rest), _FIRST.match(rest)
        if (alone and _near("mmcheck", re.sub(r"[\s_\-]", "", rest.lower()))) or (
                first and _near("mmcheck", first.group().lower().replace("-", "").replace("_", ""))
                and "[[kernel" in _comment_body(text, match)):
            number = text.count("\n", 0, match.start()) + 1
            written = f"{start}{line}".strip()
            return Opener(near=f"line {number}: {written!r} is not a spec opener; write {OPENER!r} (slash, one "
                               "star, a space, mmcheck in lower case, alone on its line)")
    return Opener()


def _comment_body(text: str, match: re.Match[str]) -> str:
    """The text of the comment ``match`` opens: up to its ``*/``, or its run of ``//`` lines."""
    if match.group(1).startswith("/*"):
        end = text.find("*/", match.end(1))
        return text[match.end(1):end if end >= 0 else len(text)]
    lines = text[match.start():].splitlines()
    return "\n".join(itertools.takewhile(lambda ln: ln.lstrip().startswith("//"), lines))


def _near(word: str, other: str) -> bool:
    """Whether ``other`` is ``word`` or one edit away: a letter added, dropped or changed, or two beside each other
    swapped."""
    if word == other:
        return True
    if abs(len(word) - len(other)) > 1:
        return False
    if len(word) == len(other):
        diff = [i for i, (a, b) in enumerate(zip(word, other)) if a != b]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                                  and word[diff[0]] == other[diff[1]] and word[diff[1]] == other[diff[0]])
    short, long = sorted((word, other), key=len)
    return any(long[:i] + long[i + 1:] == short for i in range(len(long)))

#!/usr/bin/env python3
"""Count the sentences of the Go comments and list those over a word
limit (CONTRIBUTING.md: aim under 25 words; 40 is too many).

A comment is a run of // lines (directives and indented code in doc
comments left out). A blank comment line and a list item ("- ", "1. ")
start a new sentence. A sentence ends at ".", "?" or "!" followed by a
space or the end.

Usage: scripts/comment_sentences.py [--limit N] [--list] [DIR]"""
import os
import re
import sys

END = re.compile(r'(?<=[.?!])\s+(?=[A-Z0-9"`(\[])')
ITEM = re.compile(r'^\s*(?:[-*]|\d+\.)\s+')


def comments(path):
    """Yield (line number, text) for each comment block of path. A blank
    comment line ends a paragraph, a list item starts one, and the lines
    indented under a list item continue it."""
    block, start, in_item = [], 0, False
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            s = line.strip()
            if s.startswith("//") and not s.startswith("//go:") and not s.startswith("//nolint"):
                body = s[2:]
                if not block:
                    start = n
                if body.strip() == "":
                    block.append("\n")
                    in_item = False
                elif ITEM.match(body):
                    block.append("\n" + body.strip())
                    in_item = True
                elif in_item and body.startswith("  ") and not body.startswith("\t"):
                    block.append(body.strip())
                elif body.startswith("\t") or body.startswith("    "):
                    continue  # code in a doc comment
                else:
                    block.append(body.strip())
                    in_item = False
                continue
            if block:
                yield start, " ".join(block)
                block, in_item = [], False
    if block:
        yield start, " ".join(block)


def sentences(text):
    for part in text.split("\n"):
        part = ITEM.sub("", part.strip())
        for s in END.split(part):
            if s.strip():
                yield s.strip()


def main(argv):
    limit, listing, root = 40, False, "."
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--limit":
            limit = int(args.pop(0))
        elif a == "--list":
            listing = True
        else:
            root = a
    total, over = 0, []
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(".") and x not in ("var", "bin", "testdata", "node_modules")]
        for name in sorted(files):
            if not name.endswith(".go"):
                continue
            path = os.path.join(d, name)
            for line, text in comments(path):
                for s in sentences(text):
                    total += 1
                    words = len(s.split())
                    if words > limit:
                        over.append((os.path.relpath(path, root), line, words, s))
    if listing:
        for path, line, words, s in sorted(over):
            print(f"{path}:{line}: {words} words: {s[:100]}")
    pct = 100.0 * len(over) / total if total else 0.0
    print(f"{len(over)} of {total} comment sentences over {limit} words ({pct:.2f} %)")


if __name__ == "__main__":
    main(sys.argv[1:])

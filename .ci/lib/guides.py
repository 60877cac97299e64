#!/usr/bin/env python3
"""Copies the guides (Documentation/*.md) into a DocC catalog as articles.

    guides.py GUIDES_DIR CATALOG_DIR

The guides are written for GitHub: they link to each other as `[text](Stack.md)`,
`[text](Stack.md#per-user-stores)` or `[text](#a-heading)`. DocC needs `doc:` links instead, which
it checks: this rewrites each such link to `[text](doc:Stack#Per-user-stores)`. Absolute URLs are
kept. Any other relative link (to a file that is not a guide, a heading that does not exist, an
image) is an error, listed with its place, so that every link in the guides resolves in both.
"""
import os
import re
import sys

LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(?:.+?)\1", re.S)


def outside_code(text):
    """Yields (is_code, chunk) so that fenced code blocks are left alone."""
    chunk, in_code = [], False
    for line in text.splitlines(keepends=True):
        if FENCE.match(line):
            if chunk and not in_code:
                yield False, "".join(chunk)
                chunk = []
            chunk.append(line)
            if in_code:
                yield True, "".join(chunk)
                chunk = []
            in_code = not in_code
        else:
            chunk.append(line)
    if chunk:
        yield in_code, "".join(chunk)


def plain(heading):
    return re.sub(r"[`*_]", "", re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)).strip()


def github_slug(heading):
    text = re.sub(r"[^\w\- ]", "", plain(heading).lower())
    return text.replace(" ", "-")


def docc_fragment(heading):
    return re.sub(r"[^\w-]", "", "-".join(plain(heading).split()))


def headings(text):
    """GitHub anchor -> DocC fragment for every heading outside code blocks."""
    anchors = {}
    for is_code, chunk in outside_code(text):
        if is_code:
            continue
        for line in chunk.splitlines():
            match = HEADING.match(line)
            if match:
                anchors.setdefault(github_slug(match.group(1)), docc_fragment(match.group(1)))
    return anchors


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    source, catalog = argv[1], argv[2]
    guides = {}
    for name in sorted(os.listdir(source)):
        if name.endswith(".md"):
            with open(os.path.join(source, name)) as f:
                guides[name] = f.read()
    anchors = {name: headings(text) for name, text in guides.items()}
    errors = []
    for name, text in guides.items():
        article = name[:-3]
        out = []
        for is_code, chunk in outside_code(text):
            if is_code:
                out.append(chunk)
                continue
            offset = sum(piece.count("\n") for piece in out)

            def rewrite(match, base):
                image, label, target = match.groups()
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                    return match.group(0)  # https:, mailto:, doc: ...
                line = offset + chunk.count("\n", 0, base + match.start()) + 1
                file, _, anchor = target.partition("#")
                file = file or name
                if image or file not in guides:
                    errors.append(f"{source}/{name}:{line}: link to {target!r}: not another guide")
                    return match.group(0)
                if anchor and anchor not in anchors[file]:
                    errors.append(f"{source}/{name}:{line}: link to {target!r}: no such heading in {file}")
                    return match.group(0)
                fragment = "#" + anchors[file][anchor] if anchor else ""
                return f"[{label}](doc:{file[:-3]}{fragment})"

            # Links in the text between code spans (a span may show a link's syntax).
            pieces, start = [], 0
            for span in CODE_SPAN.finditer(chunk):
                pieces.append(LINK.sub(lambda m: rewrite(m, start), chunk[start:span.start()]))
                pieces.append(span.group(0))
                start = span.end()
            pieces.append(LINK.sub(lambda m: rewrite(m, start), chunk[start:]))
            out.append("".join(pieces))
        target = os.path.join(catalog, article + ".md")
        if os.path.exists(target):
            errors.append(f"{source}/{name}: the catalog has its own {article}.md; rename one")
            continue
        with open(target, "w") as f:
            f.write("".join(out))
    for error in errors:
        print(error)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

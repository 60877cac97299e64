#!/usr/bin/env python3
"""Every public symbol a module declares has a doc comment of its own.

    doc-coverage.py SYMBOL_GRAPH_DIR SOURCE_DIR OUR_MODULE...

Reads the symbol graphs of one module (SYMBOL_GRAPH_DIR/*.symbols.json, public symbols, made by
swift-symbolgraph-extract) and lists the symbols declared under SOURCE_DIR without a `///`
comment. A member that implements a requirement of a documented protocol of OUR_MODULEs inherits
that comment and counts as documented; one that only inherits a comment from another module
(`description` from CustomStringConvertible, `==` from Equatable...) does not: say what it does
here. Extension blocks need no comment of their own, their members do. Exits 1 when there are undocumented symbols.
"""
import glob
import json
import os
import sys
from urllib.parse import unquote, urlparse


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    graph_dir, source_dir, ours = argv[1], os.path.abspath(argv[2]) + os.sep, set(argv[3:])
    missing = set()
    for path in glob.glob(os.path.join(graph_dir, "*.symbols.json")):
        with open(path) as f:
            graph = json.load(f)
        for symbol in graph["symbols"]:
            uri = symbol.get("location", {}).get("uri")
            if not uri or "::SYNTHESIZED::" in symbol["identifier"]["precise"]:
                continue  # a member inherited through a protocol extension or a superclass
            if symbol["kind"]["identifier"] == "swift.extension":
                continue  # an extension block of another module's type: its members count
            file = unquote(urlparse(uri).path)
            if not file.startswith(source_dir):
                continue
            comment = symbol.get("docComment") or {}
            text = "".join(line["text"] for line in comment.get("lines", [])).strip()
            if text and comment.get("module", next(iter(ours))) in ours:
                continue
            line = symbol["location"]["position"]["line"] + 1
            title = ".".join(symbol["pathComponents"])
            kind = symbol["kind"]["displayName"].lower()
            missing.add((os.path.relpath(file), line, f"{kind} {title}"))
    for file, line, what in sorted(missing):
        print(f"{file}:{line}: undocumented public {what}")
    if missing:
        print(f"{len(missing)} public symbol(s) without a doc comment")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

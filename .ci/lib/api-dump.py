#!/usr/bin/env python3
"""Turns swift-api-digester dumps into stable public-API baselines, and lists them.

    api-dump.py normalize RAW_DUMP OUT_JSON
        Keeps the public API only and makes it independent of source order, of the toolchain's
        own libraries and of details that are not API: removes `package`/internal declarations
        (isInternal) and conformances to them; on other modules' types, keeps only the members
        and conformances this module adds (not their attributes and availability); drops the
        conformances every type has implicitly (Copyable, Escapable, SendableMetatype) and the
        attributes that only steer code generation (@inlinable, @inline(__always), stored or
        computed...); sorts declarations and conformances. The result is still a dump that
        swift-api-digester -diagnose-sdk reads.
    api-dump.py list DUMP_JSON
        One line per public declaration, "path: attributes kind signature", sorted by path, for
        a readable diff (names of the module itself and of Swift are written unqualified).
"""
import json
import sys

IMPLICIT_CONFORMANCES = {"Copyable", "Escapable", "SendableMetatype"}
CODEGEN_ATTRIBUTES = {"Transparent", "Optimize", "Inline", "Inlinable", "UsableFromInline", "Semantics",
                      "EagerMove", "HasStorage", "HasInitialValue", "AddressableForDependencies"}
CODEGEN_KEYS = {"hasStorage", "isFromExtension"}
DECL_KINDS = {"TypeDecl", "Var", "Function", "Constructor", "Subscript", "TypeAlias", "AssociatedType",
              "Import", "EnumElement", "Accessor", "Macro"}


def is_decl(node):
    return node.get("kind") in DECL_KINDS


def sort_key(node):
    return (node.get("kind", ""), node.get("name", ""), node.get("printedName", ""), node.get("usr", ""))


def internal_usrs(node, found):
    if node.get("isInternal") and "usr" in node:
        found.add(node["usr"])
    for child in node.get("children", []):
        internal_usrs(child, found)
    return found


def clean(node, hidden, external):
    """Returns the cleaned node, or None when it is not public API."""
    if node.get("isInternal"):
        return None
    node = {key: value for key, value in node.items() if key not in CODEGEN_KEYS}
    if "declAttributes" in node:
        node["declAttributes"] = [a for a in node["declAttributes"] if a not in CODEGEN_ATTRIBUTES]
        if not node["declAttributes"]:
            del node["declAttributes"]
    if "conformances" in node:
        kept = [c for c in node["conformances"]
                if c["name"] not in IMPLICIT_CONFORMANCES and c.get("usr") not in hidden
                and not (node.get("isExternal") and c.get("usr") not in external)]
        node["conformances"] = sorted(kept, key=lambda c: (c["name"], c.get("usr", "")))
    for key in ("children", "accessors"):
        if key not in node:
            continue
        children = [clean(child, hidden, external) for child in node[key]]
        children = [child for child in children if child is not None]
        if children and all(is_decl(child) for child in children):
            children.sort(key=sort_key)  # declarations: order does not matter; types: it does
        node[key] = children
    if node.get("kind") == "TypeDecl" and node.get("isExternal"):
        if not node.get("children") and not node.get("conformances"):
            return None  # another module's type this module adds nothing public to
        # Its attributes and availability are the other module's.
        node = {key: value for key, value in node.items() if key != "declAttributes" and not key.startswith("intro_")}
    return node


def normalize(raw_path, out_path):
    with open(raw_path) as f:
        dump = json.load(f)
    root = dump["ABIRoot"]
    hidden = internal_usrs(root, set())
    # Public protocols of this module: the only conformances worth recording on other modules' types.
    external = {child["usr"] for child in root["children"]
                if child.get("declKind") == "Protocol" and not child.get("isInternal") and not child.get("isExternal")}
    dump["ABIRoot"] = clean(root, hidden, external)
    with open(out_path, "w") as f:
        json.dump(dump, f, indent=1, sort_keys=True)
        f.write("\n")


def type_name(node, modules):
    name = node.get("printedName", "?") if node else "?"
    for module in modules:
        name = name.replace(module + ".", "")
    return name


def signature(node, modules):
    """The declaration's kind, attributes and type, as one line of text."""
    kind = node["kind"]
    words = []
    for attribute in node.get("declAttributes", []):
        if "@" + attribute not in words:
            words.append("@" + attribute)
    words += [flag for flag, key in (("static", "static"), ("open", "isOpen")) if node.get(key)]
    if node.get("funcSelfKind") == "Mutating":
        words.append("mutating")
    generic = type_name({"printedName": node.get("genericSig", "")}, modules)
    children = node.get("children", [])
    first = type_name(children[0], modules) if children else "?"
    if kind == "TypeDecl":
        inherited = node.get("superclassNames", [])[:1] + [c["name"] for c in node.get("conformances", [])]
        inherited = list(dict.fromkeys(type_name({"printedName": n}, modules) for n in inherited))
        words.append(node["declKind"].lower() + generic + (" : " + ", ".join(inherited) if inherited else ""))
    elif kind in ("Function", "Constructor", "Subscript"):
        params = ", ".join(type_name(c, modules) + (" = default" if c.get("hasDefaultArg") else "")
                           for c in children[1:])
        throws = " throws" if node.get("throwing") else ""
        keyword = {"Function": "func", "Constructor": "init", "Subscript": "subscript"}[kind]
        words.append(f"{keyword}{generic}({params}){throws} -> {first}")
    elif kind == "Var":
        words.append(("let" if node.get("isLet") else "var") + f" {first}")
    elif kind == "TypeAlias":
        words.append(f"typealias{generic} = {first}")
    else:
        words.append(kind.lower())
    accessors = [a.get("accessorKind", "") for a in node.get("accessors", [])]
    if accessors:
        words.append("{ " + " ".join(accessors) + " }")
    return " ".join(words)


def listing(node, parent, modules, lines):
    for child in node.get("children", []):
        if not is_decl(child):
            continue
        name = child["printedName"] if child["kind"] in ("Function", "Constructor", "Subscript") else child["name"]
        path = f"{parent}.{name}" if parent else name
        lines.append((path, signature(child, modules)))
        if child["kind"] == "TypeDecl":
            listing(child, path, modules, lines)
    return lines


def main(argv):
    if len(argv) == 4 and argv[1] == "normalize":
        normalize(argv[2], argv[3])
    elif len(argv) == 3 and argv[1] == "list":
        with open(argv[2]) as f:
            root = json.load(f)["ABIRoot"]
        for path, text in sorted(listing(root, "", [root["name"], "Swift"], [])):
            print(f"{path}: {text}")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)

#!/usr/bin/env python3
"""What .ci/docs and .ci/api-check need to know about the package, from `swift package describe`.

    package.py modules DESCRIBE_JSON [NAME...]
        One line per library module, "name<TAB>source directory": the Swift targets of the
        package's library products and the Swift targets they depend on (the layers a product
        re-exports), sorted, or only the NAMEs given (each must be one of them).
    package.py products DESCRIBE_JSON [NAME...]
        The same for the Swift targets of the library products only.
    package.py layers DESCRIBE_JSON NAME
        The Swift targets NAME depends on, directly or not, comma-separated.
    package.py includes DESCRIBE_JSON BIN_PATH
        One directory per line to pass with -I so that the toolchain's tools can load the
        modules' C dependencies (system-library and C targets).
"""
import json
import os
import sys


def swift_dependencies(targets, name):
    """The Swift targets `name` depends on, directly or not."""
    found, queue = set(), list(targets[name].get("target_dependencies", []))
    while queue:
        n = queue.pop()
        if n in found or n not in targets:
            continue
        found.add(n)
        queue.extend(targets[n].get("target_dependencies", []))
    return {n for n in found if targets[n].get("module_type") == "SwiftTarget"}


def library_modules(describe, with_layers=True):
    targets = {t["name"]: t for t in describe["targets"]}
    names = set()
    for product in describe["products"]:
        if "library" in product["type"]:
            names.update(n for n in product["targets"] if targets[n].get("module_type") == "SwiftTarget")
    if with_layers:
        for n in list(names):
            names.update(swift_dependencies(targets, n))
    return {name: targets[name]["path"] for name in sorted(names)}


def pkg_config_includes(name):
    """The -I directories pkg-config gives for the system-library target `name` of
    Package.swift (`describe` does not record its `pkgConfig`), or none."""
    import re
    import subprocess
    try:
        with open("Package.swift") as f:
            manifest = f.read()
    except OSError:
        return []
    match = re.search(r'\.systemLibrary\(\s*name:\s*"' + re.escape(name) + r'"[^)]*?pkgConfig:\s*"([^"]+)"', manifest)
    if not match:
        return []
    try:
        flags = subprocess.run(["pkg-config", "--cflags-only-I", match.group(1)], capture_output=True, text=True).stdout
    except OSError:
        return []
    return [flag[2:] for flag in flags.split() if flag.startswith("-I")]


def include_dirs(describe, bin_path):
    dirs = []
    for target in describe["targets"]:
        kind = target.get("module_type")
        if kind == "SystemLibraryTarget":
            dirs.append(target["path"])
            dirs.extend(pkg_config_includes(target["name"]))
        elif kind == "ClangTarget":
            # A module map of its own under include/, or the one SwiftPM generates in the build.
            own = os.path.join(target["path"], "include")
            generated = os.path.join(bin_path, target["name"] + ".build")
            dirs.append(own if os.path.exists(os.path.join(own, "module.modulemap")) else generated)
    return sorted(set(dirs))


def main(argv):
    if len(argv) < 3 or argv[1] not in ("modules", "products", "layers", "includes"):
        sys.exit(__doc__)
    with open(argv[2]) as f:
        describe = json.load(f)
    if argv[1] == "layers":
        targets = {t["name"]: t for t in describe["targets"]}
        print(",".join(sorted(swift_dependencies(targets, argv[3]))))
    elif argv[1] in ("modules", "products"):
        modules = library_modules(describe, with_layers=argv[1] == "modules")
        wanted = argv[3:] or list(modules)
        unknown = [name for name in wanted if name not in modules]
        if unknown:
            sys.exit(f"not a library module of this package: {', '.join(unknown)} "
                     f"(library modules: {', '.join(modules)})")
        for name in wanted:
            print(f"{name}\t{modules[name]}")
    else:
        for directory in include_dirs(describe, argv[3]):
            print(directory)


if __name__ == "__main__":
    main(sys.argv)

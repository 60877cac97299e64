# Sourced by .ci/docs and .ci/api-check (from the package root).
#
#   find_tool NAME
#
# Prints the path of a tool of the Swift toolchain (docc, swift-api-digester...).
#
#   load_modules [NAME...]
#
# Builds the package's library modules: the modules of its library products and the layers they
# re-export, or the product modules only when MODULE_SET=products (or only the NAMEs given) in the ordinary debug build, the
# one `swift test` uses, so a tested tree is not compiled again, and sets:
#   MODULES        the module names, sorted
#   MODULE_DIRS    an associative array: module name -> source directory (relative)
#   TOOL_FLAGS     the flags swift-symbolgraph-extract and swift-api-digester need to load them
#                  (target triple, SDK, search paths, a module cache under .build/ci)

find_tool() {
    command -v "$1" 2>/dev/null || xcrun --find "$1" 2>/dev/null \
        || { echo "$1 not found: it ships with the Swift toolchain" >&2; return 1; }
}

load_modules() {
    local here describe bin modules_path triple name dir
    here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
    mkdir -p .build/ci
    describe=.build/ci/describe.json
    swift package describe --type json >"$describe"

    DESCRIBE="$describe"
    MODULES=()
    declare -gA MODULE_DIRS=()
    while IFS=$'\t' read -r name dir; do
        MODULES+=("$name")
        MODULE_DIRS["$name"]="$dir"
    done < <(python3 "$here/package.py" "${MODULE_SET:-modules}" "$describe" "$@")
    [ "${#MODULES[@]}" -gt 0 ] || { echo "no library modules" >&2; return 1; }

    for name in "${MODULES[@]}"; do
        if ! swift build --target "$name" >.build/ci/build.log 2>&1; then
            cat .build/ci/build.log >&2
            echo "swift build --target $name failed" >&2
            return 1
        fi
    done

    bin="$(swift build --show-bin-path)"
    modules_path="$bin/Modules"                  # SwiftPM 6 keeps .swiftmodule files here,
    [ -d "$modules_path" ] || modules_path="$bin" # older versions next to the products
    triple="$(swiftc -print-target-info | python3 -c 'import json, sys; print(json.load(sys.stdin)["target"]["triple"])')"

    TOOL_FLAGS=(-target "$triple" -I "$modules_path" -module-cache-path .build/ci/ModuleCache)
    if [ "$(uname)" = Darwin ]; then TOOL_FLAGS+=(-sdk "$(xcrun --show-sdk-path)"); fi
    while read -r dir; do
        TOOL_FLAGS+=(-I "$dir")
    done < <(python3 "$here/package.py" includes "$describe" "$bin")
}

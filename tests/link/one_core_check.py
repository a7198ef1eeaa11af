#!/usr/bin/env python3
"""one_core_check.py: every Onyx binary carries one copy of the core.

Usage: one_core_check.py [--require FILE]... DIR...

Reads every ELF executable and shared library below the DIRs (a build's bin/
and lib/, or an installed prefix) with `nm -C` and `readelf -d`, and fails when

  1. a class or namespace of Onyx's (onyx::runtime::Tensor, onyx::Tensor,
     onyx::checkpoint, ...) has code in more than one of the files one program
     loads: the binary and the Onyx libraries it needs (libonyx). An executable
     that links the static core and libonyx, as the CLI once did through the
     checkpoint library, defines onyx::runtime::* twice and is reported;
  2. a plugin (a file under lib/onyx/) carries core code: plugins see the host
     only through the C ABI. lib/onyx/workers/ holds onyx-worker, the
     out-of-process mode's program (docs/architecture.md): an executable with
     its own static core, checked by rule 1 like any program, not a plugin.

Not counted: onyx::util (a stateless leaf library each binary may link
statically by design), onyx::sdk (the header-only plugin SDK, compiled into
each plugin by design), and anything in an anonymous namespace (local to one
source file). Stripped files only show exported symbols; they are listed.
--require names files that must be among those read (so that an empty or
half-built tree does not pass by having nothing to check).
"""
import os
import re
import subprocess
import sys
from collections import defaultdict

SHARED_BY_DESIGN = ("onyx::util", "onyx::sdk")
CORE_PREFIXES = ("onyx::runtime", "onyx::checkpoint", "onyx::training")
CODE_TYPES = set("TtWw")  # functions, including inline ones kept as weak symbols


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def elf_files(dirs):
    found = []
    for d in dirs:
        for root, _, names in os.walk(d):
            for name in sorted(names):
                path = os.path.join(root, name)
                if os.path.islink(path) or name.endswith((".o", ".a")) or not is_elf(path):
                    continue
                found.append(os.path.realpath(path))
    return sorted(set(found))


def dynamic_info(path):
    """(soname, [needed]) from the dynamic section."""
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True).stdout
    soname = re.search(r"\(SONAME\)\s+Library soname: \[(.+?)\]", out)
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", out)
    return (soname.group(1) if soname else None), needed


def scope_of(name):
    """The class or namespace a demangled function name is defined in, template
    arguments dropped: "onyx::runtime::StatusOr<int>::value() &&" ->
    "onyx::runtime::StatusOr". None when it has no scope."""
    name = name.replace("(anonymous namespace)", "{anonymous}")
    depth, parts, current = 0, [], ""
    i = 0
    while i < len(name):
        c = name[i]
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif depth == 0 and c == "(":
            break  # the parameter list
        elif depth == 0 and c == " " and not current.endswith("operator"):
            parts, current = [], ""  # what came before was a return type
            i += 1
            continue
        elif depth == 0 and name.startswith("::", i):
            parts.append(current)
            current = ""
            i += 2
            continue
        if depth == 0 and c not in "<>":
            current += c
        i += 1
    return "::".join(parts) if parts else None


def onyx_scopes(path):
    """The Onyx scopes with code in `path`, and whether only exported symbols could be read."""
    result = subprocess.run(["nm", "-C", "--defined-only", path], capture_output=True, text=True)
    stripped = "no symbols" in result.stderr or not result.stdout.strip()
    if stripped:
        result = subprocess.run(["nm", "-C", "-D", "--defined-only", path], capture_output=True, text=True)
    scopes = set()
    for line in result.stdout.splitlines():
        fields = line.split(" ", 2)
        if len(fields) != 3 or fields[1] not in CODE_TYPES or not fields[2].startswith("onyx::"):
            continue
        scope = scope_of(fields[2])
        if not scope or not (scope + "::").startswith("onyx::") or "{anonymous}" in scope \
                or scope.startswith(SHARED_BY_DESIGN):
            continue
        scopes.add(scope)
    return scopes, stripped


def main(argv):
    required, dirs = [], []
    args = iter(argv)
    for a in args:
        if a == "--require":
            required.append(os.path.realpath(next(args)))
        else:
            dirs.append(a)
    if not dirs:
        print(__doc__)
        return 2
    files = elf_files(dirs)
    missing = [r for r in required if r not in files]
    if missing:
        print("not built, so not checked: " + ", ".join(missing))
        return 1

    scopes, soname_to_file, needed, stripped = {}, {}, {}, []
    for f in files:
        scopes[f], was_stripped = onyx_scopes(f)
        if was_stripped:
            stripped.append(f)
        soname, needed[f] = dynamic_info(f)
        if soname:
            soname_to_file[soname] = f

    problems = []
    for f in files:
        # The files one program loads: f and the Onyx libraries it needs, transitively.
        closure, queue = [f], list(needed[f])
        while queue:
            lib = soname_to_file.get(queue.pop())
            if lib and lib not in closure:
                closure.append(lib)
                queue.extend(needed[lib])
        owners = defaultdict(list)
        for member in closure:
            for scope in scopes[member]:
                owners[scope].append(member)
        twice = defaultdict(list)  # the files -> the scopes with code in all of them
        for scope, where in sorted(owners.items()):
            if len(where) > 1:
                twice[tuple(where)].append(scope)
        for where, names in twice.items():
            problems.append(f"{f}: {len(names)} Onyx scopes have code in each of " + ", ".join(where) +
                            ": " + ", ".join(names[:8]) + (", ..." if len(names) > 8 else ""))
        if "/lib/onyx/" in f and "/lib/onyx/workers/" not in f:
            core = sorted(s for s in scopes[f] if s.startswith(CORE_PREFIXES))
            if core:
                problems.append(f"{f}: a plugin carrying core code ({', '.join(core[:5])}, ...)")

    for f in stripped:
        print(f"note: {f} is stripped; only its exported symbols were read")
    for p in problems:
        print("FAIL " + p)
    print(f"{len(files)} binaries read, {len(problems)} problems"
          f" ({sum(len(s) for s in scopes.values())} Onyx scopes with code)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

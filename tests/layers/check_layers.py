#!/usr/bin/env python3
"""The layering check: each file of a layer includes only its own layer's
headers and those of the loupe libraries its layer links.

usage: check_layers.py <layers.txt> [<architecture.md> | --skip-if-missing]

layers.txt is written by the build (cmake/LoupeLayers.cmake). A target may
include:
  - its own files, public or internal;
  - the public and internal headers of the targets it links;
  - the public headers that those public headers include in turn (the
    runtime links loupe_record, whose record.h includes trace_format.h).
A target built on the profiler rather than in it (the CLI, the viewer, the
Python module: a `public_only` line) may include only its own files and
the public headers of what it links, never a library's internal ones.
An include is resolved as the compiler would (the including file's folder,
then every target's include folders) and belongs to the target whose
public header it is, or else to the target whose folder holds it. An
include that resolves to no target's file (a system or generated header)
is not checked. Exits 1 and names each file and line that breaks the rule.

Given docs/architecture.md too, it checks that the document's table of
libraries ("| `loupe_store` | `src/store` | files |") says what each
profiler library links, so the document and the build cannot drift apart.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"', re.M)


class Target:
    def __init__(self, name):
        self.name = name
        self.root = self.dir = None
        self.uses = []
        self.headers = {}  # as included -> path
        self.sources = []
        self.public_only = False


def read_manifest(path):
    """Reads layers.txt; relative paths are relative to its folder."""
    base = os.path.dirname(os.path.abspath(path))
    targets, current = {}, None
    with open(path, encoding="utf-8") as manifest:
        for number, line in enumerate(manifest, 1):
            key, _, value = line.rstrip("\n").partition(" ")
            if key != "target" and current is None:
                sys.exit(f"{path}:{number}: '{key}' before any 'target' line")
            if key == "target":
                current = targets[value] = Target(value)
            elif key in ("root", "dir"):
                setattr(current, key, os.path.normpath(os.path.join(base, value)))
            elif key == "uses":
                current.uses.append(value)
            elif key == "header":
                included, _, header_path = value.partition(" ")
                current.headers[included] = os.path.normpath(os.path.join(base, header_path))
            elif key == "source":
                current.sources.append(os.path.normpath(os.path.join(base, value)))
            elif key == "public_only":
                current.public_only = True
            else:
                sys.exit(f"{path}:{number}: unknown line '{line.strip()}'")
    return targets


def includes_of(path):
    """(line number, included name) of each quoted include in the file."""
    with open(path, encoding="utf-8") as source:
        text = source.read()
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in INCLUDE.finditer(text)]


class Layers:
    def __init__(self, targets):
        self.targets = targets
        self.header_owner = {p: t.name for t in targets.values() for p in t.headers.values()}
        search = [t.root for t in targets.values()]
        search += [p[: -len(inc)] for t in targets.values() for inc, p in t.headers.items()]
        self.search = list(dict.fromkeys(search))

    def resolve(self, including_file, included):
        for folder in [os.path.dirname(including_file)] + self.search:
            candidate = os.path.normpath(os.path.join(folder, included))
            if os.path.isfile(candidate):
                return candidate
        return None

    def owner(self, path):
        if path in self.header_owner:
            return self.header_owner[path]
        best = None
        for t in self.targets.values():
            if path.startswith(t.dir + os.sep) and (best is None or len(t.dir) > len(self.targets[best].dir)):
                best = t.name
        return best

    def exposed_headers(self, names):
        """Public headers of the named targets and those they include, transitively."""
        pending = [p for n in names for p in self.targets[n].headers.values()]
        seen = set()
        while pending:
            header = pending.pop()
            if header in seen:
                continue
            seen.add(header)
            for _, included in includes_of(header):
                resolved = self.resolve(header, included)
                if resolved in self.header_owner:
                    pending.append(resolved)
        return seen

    def files_of(self, target):
        """Its sources and every header in its own folder."""
        files = set(target.sources)
        for folder, _, names in os.walk(target.dir):
            files.update(os.path.join(folder, n) for n in names if n.endswith((".h", ".inc")))
        return sorted(files)

    def violations(self, target):
        exposed = self.exposed_headers({target.name, *target.uses})
        allowed = {target.name} if target.public_only else {target.name, *target.uses}
        found = []
        for path in self.files_of(target):
            for number, included in includes_of(path):
                resolved = self.resolve(path, included)
                owner = resolved and self.owner(resolved)
                if owner is None or owner in allowed or resolved in exposed:
                    continue
                if target.public_only and owner in target.uses:
                    found.append(f"{path}:{number}: includes \"{included}\", internal to {owner}, but "
                                 f"{target.name} is built on the profiler and includes only public headers")
                    continue
                links = ", ".join(target.uses) or "no loupe library"
                found.append(f"{path}:{number}: includes \"{included}\" of {owner}, "
                             f"but {target.name} links {links}")
        return found


DOC_ROW = re.compile(r"^ *\| `(\w+)` \| `src/\w+` \| ([\w, ]+) \|$", re.M)


def document_differences(targets, document_path):
    """Where the document's table of libraries and the build disagree."""
    with open(document_path, encoding="utf-8") as document:
        rows = {m.group(1): m.group(2) for m in DOC_ROW.finditer(document.read())}
    differences = []
    for name, target in targets.items():
        if not target.dir.endswith(os.sep + name.removeprefix("loupe_")):
            continue  # not a profiler layer (the runtime)
        built = ", ".join(sorted(u.removeprefix("loupe_") for u in target.uses)) or "none"
        if name not in rows:
            differences.append(f"{document_path}: no row for {name} (it uses {built})")
        elif ", ".join(sorted(rows[name].split(", "))) != built:
            differences.append(f"{document_path}: {name} uses \"{rows[name]}\" there, but the build links {built}")
    differences += [f"{document_path}: row for {n}, which the build does not make" for n in rows if n not in targets]
    return differences


def main(argv):
    if len(argv) not in (2, 3):
        sys.exit("usage: check_layers.py <layers.txt> [<architecture.md> | --skip-if-missing]")
    if argv[2:] == ["--skip-if-missing"]:
        if not os.path.isfile(argv[1]):
            print(f"{argv[1]}: no such build here; skipped")
            return 77
        argv = argv[:2]
    layers = Layers(read_manifest(argv[1]))
    found = [v for t in layers.targets.values() for v in layers.violations(t)]
    if len(argv) == 3:
        found += document_differences(layers.targets, argv[2])
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} problem(s): docs/architecture.md says which layer may use which")
        return 1
    print(f"layers: {len(layers.targets)} targets, every include within the libraries each links")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

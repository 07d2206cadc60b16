#!/usr/bin/env python3
"""Import cycles between sibling modules of each crate.

Usage: scripts/module-cycles.py [CRATE_DIR ...]   (default: every crates/*)

The module tree comes from the file layout under src/ (`foo.rs`,
`foo/mod.rs`) and from inline `mod x { ... }` blocks. A module refers to
another through `crate::`, `super::` and `self::` paths, in `use` (grouped
ones too: `use crate::{a::X, b::{Y, Z}}`) as in expressions and types;
comments, string literals and `#[cfg(test)]` items are left out. Two
siblings A and B have an edge A -> B when anything in A's subtree refers to
anything in B's; a module using its own ancestors or descendants is no edge.
Every strongly connected set of more than one sibling is reported, with one
`file:line` for each of its edges. Exit status: 1 when any crate has a
cycle, else 0.
"""

import pathlib
import re
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|::|\S")
RAW_STRING = re.compile(r'[bc]?r(#*)"')


def blank(text, start, end):
    """`text` with start..end replaced by spaces, keeping its newlines."""
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def strip(text):
    """The source with comments, strings and char literals blanked out."""
    out, i, n = [], 0, len(text)
    while i < n:
        c, nxt = text[i], text[i + 1 : i + 2]
        raw = None if text[i - 1 : i].isidentifier() else RAW_STRING.match(text, i)
        if c == "/" and nxt == "/":
            end = text.find("\n", i)
            end = n if end < 0 else end
        elif c == "/" and nxt == "*":
            depth, end = 1, i + 2
            while end < n and depth:
                pair = text[end : end + 2]
                depth += (pair == "/*") - (pair == "*/")
                end += 2 if pair in ("/*", "*/") else 1
        elif raw:
            close = '"' + raw.group(1)
            end = text.find(close, raw.end())
            end = n if end < 0 else end + len(close)
        elif c == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            end += 1
        elif c == "'" and (nxt == "\\" or text[i + 2 : i + 3] == "'"):
            end = max(text.find("'", i + 3 if nxt == "\\" else i + 2) + 1, i + 1)
        else:
            out.append(c)
            i += 1
            continue
        out.append(re.sub(r"[^\n]", " ", text[i:end]))
        i = end
    return "".join(out)


def drop_test_items(text, test_mods):
    """Blanks every item behind `#[cfg(test)]`, up to its `;` or its block;
    adds the names of the `mod x;` among them to `test_mods`."""
    for m in reversed(list(re.finditer(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]", text))):
        depth, end = 0, m.end()
        while end < len(text):
            c = text[end]
            end += 1
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
                if depth == 0 and c == "}":
                    break
            elif c == ";" and depth == 0:
                break
        declared = re.fullmatch(r"\s*(pub\s*(\(.*?\))?)?\s*mod\s+(\w+)\s*;", text[m.end() : end])
        test_mods.update([declared.group(3)] if declared else [])
        text = blank(text, m.start(), end)
    return text


def tokens(text):
    """(token, line) pairs, `pub(in path)` left out."""
    text = re.sub(r"\bpub\s*\(\s*in\b[^)]*\)", lambda m: blank(m.group(), 0, m.end()), text)
    line, seen = 1, 0
    for m in TOKEN.finditer(text):
        line, seen = line + text.count("\n", seen, m.start()), m.start()
        yield m.group(), line


def paths(toks, i):
    """Every path starting at toks[i] (groups expanded), and the index after."""
    segments = []
    while i < len(toks):
        tok = toks[i][0]
        if tok == "{":
            found, i = [], i + 1
            while i < len(toks) and toks[i][0] != "}":
                if toks[i][0] in (",", "as"):  # `as` skips the name after it
                    i += 1 if toks[i][0] == "," else 2
                    continue
                inner, after = paths(toks, i)
                found += [segments + p for p in inner if p]
                i = max(after, i + 1)
            return found or [segments], i + 1
        if not (tok.isidentifier() or tok == "*"):
            break
        segments.append(tok)
        if i + 1 < len(toks) and toks[i + 1][0] == "::":
            i += 2
        else:
            i += 1
            break
    return [segments], i


def scan(crate_src, file, modules, refs, test_only):
    """Adds `file`'s modules to `modules`, its references to `refs`, and the
    modules it declares behind `#[cfg(test)]` to `test_only`."""
    rel = file.relative_to(crate_src).with_suffix("").parts
    if rel[-1] == "mod" or rel in (("lib",), ("main",)):
        rel = rel[:-1]
    modules.add(rel)
    test_mods = set()
    toks = list(tokens(drop_test_items(strip(file.read_text()), test_mods)))
    test_only.update(rel + (name,) for name in test_mods)
    shown = file.relative_to(REPO) if file.is_relative_to(REPO) else file
    scopes, depth, i = [(rel, -1)], 0, 0
    while i < len(toks):
        tok, line = toks[i]
        if tok == "mod" and i + 2 < len(toks) and toks[i + 2][0] == "{":
            scopes.append((scopes[-1][0] + (toks[i + 1][0],), depth))
            modules.add(scopes[-1][0])
            i += 2
            continue
        if tok == "{":
            depth += 1
        elif tok == "}":
            depth -= 1
            if scopes[-1][1] == depth:
                scopes.pop()
        elif tok in ("crate", "super", "self") and toks[i + 1 : i + 2] and toks[i + 1][0] == "::":
            if i == 0 or toks[i - 1][0] != "::":
                found, after = paths(toks, i)
                where = f"{shown}:{line}"
                refs += [(scopes[-1][0], p, where) for p in found]
                i = after
                continue
        i += 1


def resolve(current, path, modules):
    """The deepest module `path`, seen from `current`, names (None: none)."""
    base, rest = current, list(path)
    if rest and rest[0] == "crate":
        base, rest = (), rest[1:]
    while rest and rest[0] in ("self", "super"):
        if rest.pop(0) == "super":
            if not base:
                return None
            base = base[:-1]
    while rest and base + (rest[0],) in modules:
        base += (rest.pop(0),)
    return base


def cycles(edges):
    """The strongly connected sets of more than one node of `edges`."""
    reached = {}
    for v in edges:
        reached[v], todo = set(), [v]
        while todo:
            new = set(edges.get(todo.pop(), ())) - reached[v]
            reached[v] |= new
            todo += new
    found = []
    for v in sorted(edges):
        component = sorted({v} | {w for w in reached[v] if v in reached.get(w, ())})
        if len(component) > 1 and component not in found:
            found.append(component)
    return found


def check(crate):
    """Prints the crate's sibling cycles; whether it has any."""
    src = crate / "src"
    modules, refs, test_only = set(), [], set()
    for file in sorted(src.rglob("*.rs")):
        if "bin" not in file.relative_to(src).parts[:1]:
            scan(src, file, modules, refs, test_only)
    refs = [r for r in refs if not any(r[0][: len(t)] == t for t in test_only)]
    edges = {}  # parent -> from child -> to child -> example
    for current, path, where in refs:
        target = resolve(current, path, modules)
        if target is None:
            continue
        common = 0
        while common < min(len(current), len(target)) and current[common] == target[common]:
            common += 1
        if common in (len(current), len(target)):
            continue  # the same module, an ancestor or a descendant
        parent, a, b = current[:common], current[: common + 1], target[: common + 1]
        edges.setdefault(parent, {}).setdefault(a, {}).setdefault(b, where)
    found = [(p, c) for p in sorted(edges) for c in cycles(edges[p])]
    if not found:
        print(f"{crate.name}: no module cycles")
    for parent, component in found:
        names = ["/".join(m) for m in component]
        print(f"{crate.name}: cycle among {(' <-> ' if len(names) == 2 else ', ').join(names)}")
        for a in component:
            for b, where in sorted(edges[parent][a].items()):
                if b in component:
                    print(f"    {'/'.join(a)} -> {'/'.join(b)}: {where}")
    return bool(found)


def main(args):
    crates = [pathlib.Path(a).resolve() for a in args]
    failed = [check(c) for c in crates or sorted(p.parent for p in REPO.glob("crates/*/src"))]
    return 1 if any(failed) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

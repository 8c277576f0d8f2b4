#!/usr/bin/env python3
"""The house rule's figures, reproducibly: the largest files and functions (lines) in harness/
and gates/ (the rule: no file over 400 lines, no function over ~60).

  python3 scripts/code_stats.py            # the top 5 of each
  python3 scripts/code_stats.py --top 20
  python3 scripts/code_stats.py --check    # exit 1 when a file is over 400 or a function over 60

A function is a brace block opened at namespace or class level after a ')' (a definition; a
lambda inside a function counts toward that function). Comments, string and character
literals are blanked first, so a brace in them does not count. Stdlib only.
"""
import argparse, os, re, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ("harness",)
SOURCES = (".cpp", ".h")

LITERALS = re.compile(r'R"(?P<d>[^(\s]*)\(.*?\)(?P=d)"|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/',
                      re.S)


def blank(text):
    """Literals and comments replaced by spaces, newlines kept (line numbers stay right)."""
    return LITERALS.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def functions(path):
    """(lines, first line, name) of every function definition in a file, its signature counted."""
    text = blank(open(path, encoding="utf-8").read())
    out, stack, head, line, head_line = [], [], "", 1, 1
    for ch in text:
        if ch == "\n":
            line += 1
        if not head.strip():
            head_line = line  # where the declaration before the next brace begins
        if ch == "{":
            outer = all(kind in ("namespace", "type") for kind, _, _ in stack)
            words = head.split()
            if "namespace" in words:
                kind = "namespace"
            elif outer and ")" in head and not {"class", "struct", "enum", "union"} & set(words[:2]):
                kind = "function"
            elif {"class", "struct", "enum", "union"} & set(words):
                kind = "type"
            else:
                kind = "block"
            name = re.findall(r"([~\w:]+)\s*\(", head)
            stack.append((kind, head_line, name[0] if name else "?"))
            head = ""
        elif ch == "}":
            if stack:
                kind, start, name = stack.pop()
                if kind == "function":
                    out.append((line - start + 1, start, name))
            head = ""
        elif ch == ";":
            head = ""
        else:
            head += ch
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--check", action="store_true", help="exit 1 past 400 lines a file or 60 a function")
    args = ap.parse_args()
    files, funcs = [], []
    for folder in FOLDERS:
        for dirpath, _, names in os.walk(os.path.join(ROOT, folder)):
            for n in sorted(names):
                if not n.endswith(SOURCES):
                    continue
                path = os.path.join(dirpath, n)
                rel = os.path.relpath(path, ROOT)
                files.append((sum(1 for _ in open(path, encoding="utf-8")), rel))
                funcs += [(n_lines, f"{rel}:{start}", name) for n_lines, start, name in functions(path)]
    files.sort(key=lambda f: (-f[0], f[1]))
    funcs.sort(key=lambda f: (-f[0], f[1]))
    print(f"largest files in {' and '.join(FOLDERS)}/ ({len(files)} files):")
    for n, rel in files[: args.top]:
        print(f"  {n:5d}  {rel}")
    print(f"largest functions ({len(funcs)} functions):")
    for n, where, name in funcs[: args.top]:
        print(f"  {n:5d}  {name}  ({where})")
    if args.check:
        over = [f for f in files if f[0] > 400] + [f for f in funcs if f[0] > 60]
        for o in over:
            print(f"over the limit: {o}", file=sys.stderr)
        return 1 if over else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())

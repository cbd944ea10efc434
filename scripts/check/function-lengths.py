#!/usr/bin/env python3
"""Lists the functions longer than a limit in the C++ sources (issue 12: none over 60 lines).

A function is a definition whose signature starts at column 0 (this tree's clang-format
style: namespaces are not indented), whose body opens at the end of that line or of an
indented continuation line, and closes with a "}" at column 0; the count is of the lines
between the signature's first line and the closing brace, inclusive. A member function
defined inside a class or struct is one too: its signature is a line of the class body, one
level in, that ends with "{", and its body closes with a "}" at the signature's indentation.
Usage: scripts/check/function-lengths.py [--limit N] DIR...   (exit 1 if any is longer)
"""
import pathlib
import re
import sys

NOT_FUNCTIONS = re.compile(r"^(namespace|struct|class|enum|union|extern|typedef)\b|=\s*\{$")
CLASS_OPENS = re.compile(r"^(\s*)(?:template\s*<.*>\s*)?(class|struct)\b[^;()]*\{$")
NOT_MEMBERS = re.compile(r"^\s*(if|for|while|switch|else|do|catch|try|return|case|namespace|struct|class|enum|union)\b|[=\[]")


def long_member_functions(lines, limit, path):
    """Functions defined inside a class body (its members are indented one level, 2 spaces)."""
    found = []
    classes = []  # the indentation of each class body we are in
    start = None  # (line, indentation) of the member function being measured
    signature = None  # the first line of a member's signature whose "{" has not come yet
    for number, line in enumerate(lines):
        indent = len(line) - len(line.lstrip(" "))
        if start is not None:
            if line.rstrip() == " " * start[1] + "}":
                length = number - start[0] + 1
                if length > limit:
                    found.append((length, f"{path}:{start[0] + 1}: {lines[start[0]].strip()[:90]}"))
                start = None
            continue
        opened = CLASS_OPENS.match(line)
        if opened:
            classes.append(len(opened.group(1)))
            continue
        if classes and line.rstrip() == " " * classes[-1] + "};":
            classes.pop()
            continue
        if not classes:
            continue
        if indent == classes[-1] + 2 and "(" in line and not NOT_MEMBERS.search(line):
            signature = number  # its "{" may end a continuation line below
        elif indent <= classes[-1] + 2 or line.rstrip().endswith(";"):
            signature = None
        if signature is not None and line.endswith("{"):
            start = (signature, len(lines[signature]) - len(lines[signature].lstrip(" ")))
            signature = None
    return found


def long_functions(path, limit):
    lines = path.read_text(encoding="utf-8").splitlines()
    found = []
    start = None
    for number, line in enumerate(lines):
        if start is None:
            if not line.endswith("{") or line[:1] in ("#", "/", "}", ""):
                continue
            # The signature may span lines, its "{" on an indented continuation line: go back
            # to its first line, which must start at column 0.
            first = number
            while first > 0 and lines[first - 1][:1] in (" ", "\t") and not lines[first - 1].rstrip().endswith((";", "}", "{")):
                first -= 1
            if line[:1] in (" ", "\t"):
                if first == 0:
                    continue
                first -= 1  # the continuation lines follow the signature's column-0 line
            head = lines[first]
            if head[:1] in (" ", "\t", "#", "/", "}", "") or NOT_FUNCTIONS.search(head) or head.rstrip().endswith((";", "}")):
                continue
            start = first
        elif line == "}" or line.startswith("}  //"):
            length = number - start + 1
            if length > limit:
                found.append((length, f"{path}:{start + 1}: {lines[start].strip()[:90]}"))
            start = None
    return found + long_member_functions(lines, limit, path)


def main(argv):
    limit = 60
    if len(argv) >= 2 and argv[0] == "--limit":
        limit, argv = int(argv[1]), argv[2:]
    found = []
    for root in argv:
        for path in sorted(pathlib.Path(root).rglob("*")):
            if path.suffix in (".cc", ".h", ".cu", ".c"):
                found += long_functions(path, limit)
    for length, where in sorted(found, reverse=True):
        print(f"{length:4d} lines  {where}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

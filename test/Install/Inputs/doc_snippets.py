"""Checks that docs/EMBEDDING.md quotes examples/embed/main.cpp as it is: every region between two
`// [docs/EMBEDDING.md: NAME]` lines of the source, dedented, appears in the document as
consecutive lines. Prints one line per region; exits 1 on the first one that does not appear.

usage: doc_snippets.py SOURCE DOC"""

import re
import sys
import textwrap

source, doc = sys.argv[1], sys.argv[2]
tag = re.compile(r"^\s*// \[docs/EMBEDDING\.md: ([\w-]+)\]\s*$")
regions, open_name, lines = [], None, []
for line in open(source).read().splitlines():
    m = tag.match(line)
    if not m:
        if open_name:
            lines.append(line)
        continue
    if open_name is None:
        open_name, lines = m.group(1), []
    elif m.group(1) == open_name:
        regions.append((open_name, textwrap.dedent("\n".join(lines))))
        open_name = None
    else:
        sys.exit(f"{source}: region {open_name} is closed by {m.group(1)}")
if open_name:
    sys.exit(f"{source}: region {open_name} is not closed")
if not regions:
    sys.exit(f"{source}: no [docs/EMBEDDING.md: NAME] regions")

text = open(doc).read()
for name, body in regions:
    if "\n" + body + "\n" not in text:
        print(f"region {name} of {source} is not quoted verbatim in {doc}:\n{body}")
        sys.exit(1)
    print(f"region {name}: quoted")

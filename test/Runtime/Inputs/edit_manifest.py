"""Writes an edited copy of a manifest, to test qattn-run's validation.

usage: edit_manifest.py SOURCE.json DEST_DIR STATEMENT

Loads SOURCE.json as `m`, executes the Python STATEMENT on it (for example
'm["version"] = 2'), and writes the result to DEST_DIR/manifest.json.
"""
import json
import os
import sys

source, dest_dir, statement = sys.argv[1:]
with open(source) as f:
    m = json.load(f)
exec(statement)
os.makedirs(dest_dir, exist_ok=True)
with open(os.path.join(dest_dir, "manifest.json"), "w") as f:
    json.dump(m, f, indent=2)

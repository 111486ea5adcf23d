"""Writes an edited copy of a manifest, to test qattn-run's validation.

usage: edit_manifest.py SOURCE.json DEST_DIR STATEMENT

Loads SOURCE.json as `m`, executes the Python STATEMENT on it (for example
'm["version"] = 2', or 'pass' for a plain copy), and writes the result to
DEST_DIR/manifest.json.

Before STATEMENT runs, `library_sha256` (and `ptx_sha256`) become the SHA-256
of DEST_DIR's library (and PTX) where that file exists, as qattn-compile
would record them; otherwise they keep SOURCE's placeholders.
"""
import hashlib
import json
import os
import sys

source, dest_dir, statement = sys.argv[1:]
with open(source) as f:
    m = json.load(f)
for file_key, hash_key in [("library", "library_sha256"), ("ptx", "ptx_sha256")]:
    path = os.path.join(dest_dir, str(m.get(file_key, "")))
    if file_key in m and os.path.isfile(path):
        with open(path, "rb") as f:
            m[hash_key] = hashlib.sha256(f.read()).hexdigest()
exec(statement)
os.makedirs(dest_dir, exist_ok=True)
with open(os.path.join(dest_dir, "manifest.json"), "w") as f:
    json.dump(m, f, indent=2)

#!/usr/bin/python3
"""Mutation fuzzer for qattn's tools (docs/FUZZING.md).

Mutates the test inputs (test/**/*.mlir, the manifests and .npy files, the
artifact libraries) and drives qattn-opt (parse and verify, each qattn pass
and pipeline), qattn-compile and qattn-run with them. An outcome is fine when
the tool exits 0, or 1 (2 for qattn-run's failed checks) with a message on
stderr; it is a finding when the tool dies by a signal, prints an LLVM stack
dump ("PLEASE submit a bug report"), an assertion or an LLVM fatal error,
runs past the timeout, exits 1 without a word on stderr, or exits with
another status. Each finding's input goes to FINDINGS/<signature>/ with the
command, the output and, when --minimize allows, a smaller input that fails
the same way.

Python 3 standard library only. Iteration i draws from its own stream
(seed, i), so a run is reproducible whatever --jobs is.

usage: scripts/fuzz/fuzz.py [--build DIR] [--time S] [--iterations N]
                            [--seed N] [--jobs N] [--targets opt,compile,run]
                            [--findings DIR] [--timeout S] [--fail-on-findings]
"""

import argparse
import hashlib
import json
import multiprocessing
import os
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

#===-----------------------------------------------------------------------===#
# Seeds
#===-----------------------------------------------------------------------===#

def mlir_seeds():
    """Every test .mlir, split at `// -----`, with the qattn-opt arguments of
    its RUN lines (the passes that make sense for it)."""
    seeds = []
    for base, _, files in os.walk(os.path.join(ROOT, "test")):
        if "Inputs" in base.split(os.sep):
            continue
        for name in sorted(files):
            if not name.endswith(".mlir"):
                continue
            path = os.path.join(base, name)
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            runs = []
            for line in re.findall(r"^// RUN:(.*)$", text, re.M):
                m = re.search(r"qattn-opt\s+%s\s+(.*?)(\||$)", line)
                if m:
                    args = [a for a in m.group(1).split()
                            if a not in ("-split-input-file", "--split-input-file",
                                         "-verify-diagnostics",
                                         "--verify-diagnostics")
                            and not a.startswith("2>")]
                    runs.append(args)
            for chunk in text.split("\n// -----\n"):
                body = "\n".join(l for l in chunk.split("\n")
                                 if not l.startswith("// RUN")
                                 and not l.startswith("// CHECK"))
                if body.strip():
                    seeds.append({"file": os.path.relpath(path, ROOT),
                                  "text": body, "runs": runs})
    return seeds


def qattn_passes(opt):
    """The qattn passes and pipelines that `qattn-opt --help` lists."""
    out = subprocess.run([opt, "--help"], capture_output=True, text=True).stdout
    names = sorted(set(re.findall(r"^\s+--(qattn-[a-z0-9-]+)\s", out, re.M)))
    return [n for n in names if n != "qattn-opt"]


# Values a fuzzer should try wherever a number goes.
INTERESTING_INTS = [0, 1, -1, 2, 3, 7, 8, 16, 63, 64, 65, 127, 128, 255, 256,
                    1023, 1024, 4096, 65535, 65536, 2**31 - 1, 2**31, 2**32,
                    2**53, 2**63 - 1, -2**31, -2**63]
INTERESTING_FLOATS = ["0.0", "-0.0", "1.0e308", "1.0e-308", "nan", "inf",
                      "-inf", "0x7FC00000", "1.5", "-6.0"]
TOKENS = ["f32", "f16", "bf16", "f64", "i8", "i4", "i2", "i32", "i64", "index",
          "?", "x", "0", "1", "-1", "true", "false", "tensor<", ">", "(", ")",
          "{", "}", "[", "]", ",", ":", "=", "%0", "%arg0", "^bb0", "#qattn.",
          "!qattn.", "qattn.", "func.func", "return", "\"", "<", "0x", "dense<",
          "causal", "bits", "group", "block"]

#===-----------------------------------------------------------------------===#
# Mutators
#===-----------------------------------------------------------------------===#

def mutate_text(rng, text, corpus):
    """One to four edits of MLIR-ish text: numbers, tokens, lines, splices.
    Half the inputs get a single edit, which more often still parses and so
    reaches the verifiers and passes."""
    for _ in range(rng.choice([1, 1, 1, 2, 3, 4])):
        choice = rng.random()
        if not text:
            text = rng.choice(corpus)["text"]
        if choice < 0.30:
            nums = list(re.finditer(r"-?\b\d+\b", text))
            if nums:
                m = rng.choice(nums)
                text = text[:m.start()] + str(rng.choice(INTERESTING_INTS)) + \
                    text[m.end():]
                continue
        if choice < 0.40:
            floats = list(re.finditer(r"-?\d+\.\d+(e[-+]?\d+)?", text))
            if floats:
                m = rng.choice(floats)
                text = text[:m.start()] + rng.choice(INTERESTING_FLOATS) + \
                    text[m.end():]
                continue
        if choice < 0.55:
            words = list(re.finditer(r"[A-Za-z_][A-Za-z0-9_.]*|[<>(){}\[\],:=?x]",
                                     text))
            if words:
                m = rng.choice(words)
                repl = rng.choice(TOKENS) if rng.random() < 0.5 else \
                    rng.choice(words).group(0)
                text = text[:m.start()] + repl + text[m.end():]
                continue
        lines = text.split("\n")
        if choice < 0.65 and len(lines) > 1:
            del lines[rng.randrange(len(lines))]
        elif choice < 0.72:
            i = rng.randrange(len(lines))
            lines.insert(rng.randrange(len(lines) + 1), lines[i])
        elif choice < 0.78 and len(lines) > 1:
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif choice < 0.86:
            other = rng.choice(corpus)["text"].split("\n")
            k = rng.randrange(len(other))
            lines[rng.randrange(len(lines)):rng.randrange(len(lines)) + 1] = \
                other[k:k + rng.randint(1, 4)]
        elif choice < 0.93:
            pos = rng.randrange(len(text) + 1)
            text = text[:pos] + rng.choice(TOKENS) + text[pos:]
            continue
        elif choice < 0.97:
            text = text[:rng.randrange(len(text) + 1)]
            continue
        else:
            pos = rng.randrange(len(text) + 1)
            text = text[:pos] + chr(rng.choice([0, 1, 0x7f, 0xff, 0x2028])) + \
                text[pos:]
            continue
        text = "\n".join(lines)
    return text


def json_paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from json_paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from json_paths(v, path + (i,))


def json_get(value, path):
    for p in path:
        value = value[p]
    return value


def random_json(rng, depth=0):
    r = rng.random()
    if r < 0.3:
        return rng.choice(INTERESTING_INTS + [0.5, -0.0, 1e308, 1e-320, 3.5])
    if r < 0.55:
        return rng.choice(["", "B", "N", "f32", "i8", "module.so", "module.ptx",
                           "../x", "/etc/passwd", "a\u0000b", "x" * 300, "arg",
                           "result", "buffer", "dim", "mul", "add", "ceil_div",
                           "attention", "roundtrip", "none", "sm_90a", "cpu",
                           "cuda", "_mlir_ciface_copy_f32", "\u00e9", "0" * 64])
    if r < 0.65:
        return rng.choice([True, False, None])
    if depth > 2 or r < 0.8:
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    keys = ["arg", "result", "buffer", "dim", "mul", "add", "ceil_div", "name",
            "dtype", "shape", "kind"]
    return {rng.choice(keys): random_json(rng, depth + 1)
            for _ in range(rng.randint(0, 2))}


def mutate_json(rng, doc):
    """Structural edits of a parsed manifest (deep-copied by the caller)."""
    for _ in range(rng.randint(1, 3)):
        paths = list(json_paths(doc))[1:]
        if not paths:
            return doc
        path = rng.choice(paths)
        parent = json_get(doc, path[:-1])
        key = path[-1]
        r = rng.random()
        if r < 0.2:
            del parent[key]
        elif r < 0.55:
            parent[key] = random_json(rng)
        elif r < 0.7 and isinstance(parent[key], (int, float)) and \
                not isinstance(parent[key], bool):
            parent[key] = rng.choice(INTERESTING_INTS)
        elif r < 0.8 and isinstance(parent, list):
            parent.insert(rng.randrange(len(parent) + 1),
                          json.loads(json.dumps(rng.choice(parent))))
        elif r < 0.9:
            other = json_get(doc, rng.choice(paths))
            parent[key] = json.loads(json.dumps(other))
        else:
            if isinstance(parent, dict):
                parent[rng.choice(["ptx", "buffers", "early", "reference",
                                   "shared_bytes", "chip", "extra"])] = \
                    random_json(rng)
    return doc


def mutate_bytes(rng, data):
    data = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        r = rng.random()
        if not data:
            break
        if r < 0.5:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif r < 0.7:
            data[rng.randrange(len(data))] = rng.choice([0, 0xff, 0x7f, 0x80])
        elif r < 0.85:
            del data[rng.randrange(len(data)):][:rng.randint(1, 64)]
        else:
            return bytes(data[:rng.randrange(len(data))])
    return bytes(data)


NPY_DESCRS = ["<f8", "<f4", "<f2", "<u2", "<i8", "<i4", "|i1", "|u1", ">f4",
              "<c8", "|b1", "<f16", "O", "<U3", "<V4"]


def make_npy(descr, shape, payload, version=1, fortran=False, header=None):
    if header is None:
        shape_text = "(" + "".join(f"{s}, " for s in shape)[:-2] + \
            ("," if len(shape) == 1 else "") + ")"
        header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
            descr, fortran, shape_text)
    prefix = 10 if version == 1 else 12
    pad = (-(prefix + len(header) + 1)) % 64
    header = header + " " * pad + "\n"
    size = struct.pack("<H" if version == 1 else "<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + size + header.encode("latin1") + \
        payload


def mutate_npy(rng, descr, shape, itemsize):
    """An .npy for an argument of `shape`: well formed but odd, or broken."""
    count = 1
    for s in shape:
        count *= s
    shape = list(shape)
    payload = bytes(rng.getrandbits(8) for _ in range(min(count * itemsize, 1 << 16)))
    if rng.random() < 0.3:  # NaN, inf, huge values
        special = rng.choice([struct.pack("<d", float("nan")),
                              struct.pack("<d", float("inf")),
                              struct.pack("<d", 1e308)])
        if descr == "<f4":
            special = rng.choice([b"\x00\x00\xc0\x7f", b"\x00\x00\x80\x7f",
                                  b"\xff\xff\x7f\x7f"])
        payload = special * (len(payload) // max(1, len(special)))
    version = 1
    fortran = False
    header = None
    r = rng.random()
    if r < 0.2:
        descr = rng.choice(NPY_DESCRS)
    elif r < 0.35 and shape:
        shape[rng.randrange(len(shape))] = rng.choice([0, 1, 2, 2**31, 2**62, -1])
    elif r < 0.45:
        shape = shape + [rng.choice([1, 2])] if rng.random() < 0.5 else shape[:-1]
    elif r < 0.5:
        fortran = True
    elif r < 0.55:
        version = rng.choice([2, 3])
    elif r < 0.7:
        header = rng.choice([
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 5), 'x': 1}",
            "{'descr': '<f4', 'shape': (2, 3, 5), }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 5, }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3, 5), }",
            "{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3, 5), }",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2,3,5)",
            "{'shape': (99999999999999999999999, 1), 'descr': '<f4', 'fortran_order': False}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (), }",
            "", "{", "\x00" * 10, "{'descr': '" + "<" * 200 + "'}"])
    data = make_npy(descr, shape, payload, version, fortran, header)
    if rng.random() < 0.3:
        data = mutate_bytes(rng, data)
    return data

#===-----------------------------------------------------------------------===#
# Running and classifying
#===-----------------------------------------------------------------------===#

SIGNAL_NAMES = {-s.value: s.name for s in signal.Signals}


def classify(tool, rc, out, err, timed_out, ok_codes):
    """(kind, detail) of a finding, or None for a fine outcome."""
    text = err + out
    if timed_out:
        return "timeout", ""
    if "PLEASE submit a bug report" in text or "Stack dump:" in text:
        return "stackdump", stack_key(text)
    if re.search(r"Assertion .* failed|assertion failed", text):
        m = re.search(r"Assertion (.*) failed", text)
        return "assertion", m.group(1)[:120] if m else ""
    if rc < 0:
        return SIGNAL_NAMES.get(rc, "signal%d" % -rc), stack_key(text)
    if "LLVM ERROR" in text:
        m = re.search(r"LLVM ERROR: ([^\n]*)", text)
        return "fatal", m.group(1)[:120]
    if rc not in ok_codes:
        return "exit%d" % rc, ""
    if rc == 1 and not err.strip():
        return "silent-exit1", ""
    return None


def stack_frames(text):
    """(module, function) of each frame of an LLVM stack dump, symbolized
    ("#4 0x... mlir::Foo::bar() (libMLIR.so+0x...)") or not
    ("4  libMLIR.so.22.1 0x... mlir::Foo::bar() + 3")."""
    frames = []
    for line in text.split("\n"):
        m = re.match(r"\s*#\d+ 0x[0-9a-f]+ (.*?)(?: \((\S+?)\+0x[0-9a-f]+\))?$", line)
        if m:
            frames.append((os.path.basename(m.group(2) or ""), m.group(1)))
            continue
        m = re.match(r"\s*\d+\s+(\S+)\s+0x[0-9a-f]+\s*(.*?)(?: \+ \d+)?$", line)
        if m:
            frames.append((os.path.basename(m.group(1)), m.group(2)))
    skip = ("PrintStackTrace", "RunSignalHandlers", "SignalHandler",
            "__restore_rt", "raise", "abort", "__pthread_kill")
    return [(mod, fn) for mod, fn in frames
            if not any(k in fn for k in skip) and not mod.startswith("libc.so")]


def stack_key(text):
    """What names a crash: the stack dump's context lines (the pass, the op
    parser) and its first named frames, without addresses."""
    context = [c.strip() for c in re.findall(r"^\d+\.\t(.*)$", text, re.M)
               if not c.startswith("Program arguments")]
    names = [re.sub(r"\(.*", "", fn).strip()[:80]
             for _, fn in stack_frames(text) if fn][:3]
    return " | ".join(context[-2:] + names)


# Crashes inside upstream MLIR alone that docs/FUZZING.md lists (out of scope
# for a fix here), by a part of their stack key: reported, not findings, so
# that a change to the seed corpus (the test files) that meets one does not
# fail a run.
KNOWN_UPSTREAM = {
    "linalg::BroadcastOp::parse": "linalg.broadcast's parser, a malformed dimensions list",
}


def known_upstream(record):
    """The docs/FUZZING.md entry of an upstream crash `record` is, or None."""
    if record["site"] != "upstream?":
        return None
    return next((v for k, v in KNOWN_UPSTREAM.items() if k in record["detail"]), None)


def crash_site(tool, text):
    """"qattn" when a frame above the driver's main loop is qattn's (its
    name, or the tool's own binary, which links qattn statically), else
    "upstream?": a crash inside MLIR or LLVM alone, to be checked by hand."""
    for mod, fn in stack_frames(text):
        if any(k in fn for k in ("MlirOptMain", "splitAndProcessBuffer",
                                 "PassManager::run", "parseSourceFile",
                                 "__libc_start_main", "main")):
            break
        if "qattn" in fn or mod == tool or mod.startswith("libqattn"):
            return "qattn"
    return "upstream?"


def execute(cmd, timeout, cwd=None):
    env = dict(os.environ)
    # glibc checks the heap on every malloc/free: corruption aborts at once.
    env["MALLOC_CHECK_"] = "3"
    env["MALLOC_PERTURB_"] = "165"
    env["LLVM_DISABLE_SYMBOLIZATION"] = "0"
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=timeout, cwd=cwd,
                           env=env, stdin=subprocess.DEVNULL)
        return p.returncode, p.stdout.decode("utf-8", "replace")[-20000:], \
            p.stderr.decode("utf-8", "replace")[-20000:], False
    except subprocess.TimeoutExpired as e:
        return -9, "", "", True

#===-----------------------------------------------------------------------===#
# Targets
#===-----------------------------------------------------------------------===#

class Context:
    """What every worker shares: tools, seeds, and the base artifacts."""

    def __init__(self, args):
        self.args = args
        self.bin = args.build + "/bin"
        self.opt = self.bin + "/qattn-opt"
        self.compile = self.bin + "/qattn-compile"
        self.run = self.bin + "/qattn-run"
        self.seeds = mlir_seeds()
        self.passes = qattn_passes(self.opt) if os.access(self.opt, os.X_OK) \
            else []
        self.work = args.work
        self.artifacts = []  # (dir, manifest dict)
        self.options = {}


def setup_artifacts(ctx):
    """A fake cpu artifact (test/Runtime/Inputs), a compiled one, and the
    cuda fixtures (for --plan-only and the manifest checks)."""
    inputs = os.path.join(ROOT, "test", "Runtime", "Inputs")
    arts = []

    def stamp(directory, manifest):
        for f, h in [("library", "library_sha256"), ("ptx", "ptx_sha256")]:
            p = os.path.join(directory, str(manifest.get(f, "")))
            if f in manifest and os.path.isfile(p):
                with open(p, "rb") as fh:
                    manifest[h] = hashlib.sha256(fh.read()).hexdigest()
        with open(os.path.join(directory, "manifest.json"), "w") as fh:
            json.dump(manifest, fh, indent=1)
        arts.append(directory)

    for name, flags in [("manifest.json", []), ("dims-manifest.json",
                                                ["-DQATTN_FAKE_DIMS"]),
                        ("cuda-manifest.json", None),
                        ("cuda-dims-manifest.json", None)]:
        d = os.path.join(ctx.work, "base-" + name.replace(".json", ""))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(inputs, name)) as f:
            manifest = json.load(f)
        if flags is not None:
            rc = subprocess.call(["cc", "-shared", "-fPIC", "-O1", *flags,
                                  os.path.join(inputs, "fake_kernels.c"), "-o",
                                  os.path.join(d, "module.so"), "-lm"])
            if rc:
                sys.exit("fuzz: cannot build the fake artifact")
        stamp(d, manifest)
    d = os.path.join(ctx.work, "base-compiled")
    src = os.path.join(ROOT, "examples", "attention.mlir")
    if os.access(ctx.compile, os.X_OK) and subprocess.call(
            [ctx.compile, src, "-o", d], stdout=subprocess.DEVNULL) == 0:
        arts.append(d)
    return arts


def target_opt(ctx, rng, tmp):
    seed = rng.choice(ctx.seeds)
    text = mutate_text(rng, seed["text"], ctx.seeds)
    r = rng.random()
    if r < 0.15:
        passes = []  # parse and verify
    elif r < 0.55 and seed["runs"]:
        passes = list(rng.choice(seed["runs"]))
    else:
        passes = ["--" + p for p in rng.sample(ctx.passes,
                                               rng.randint(1, min(3, len(ctx.passes))))]
    if rng.random() < 0.2:
        passes = [mutate_pass_option(rng, p) for p in passes]
    path = os.path.join(tmp, "input.mlir")
    with open(path, "w", encoding="utf-8", errors="surrogatepass") as f:
        f.write(text)
    return {"tool": "qattn-opt", "cmd": [ctx.opt, path] + passes,
            "files": {"input.mlir": text.encode("utf-8", "surrogatepass")},
            "ok": (0, 1), "minimize": "input.mlir"}


def mutate_pass_option(rng, arg):
    """--qattn-tile="block-q=64" -> an odd value for one option."""
    m = re.match(r"(--?[a-z0-9-]+)(=?\"?)(.*?)(\"?)$", arg)
    if not m:
        return arg
    opts = [o for o in m.group(3).split() if o]
    value = rng.choice(["0", "-1", "3", "1000000", "2147483648", "abc", "",
                        "sm_100", "true"])
    key = rng.choice([o.split("=")[0] for o in opts] +
                     ["block-q", "block-kv", "splits", "num-stages", "chip",
                      "bits", "heads", "max-2bit", "file"])
    opts = [o for o in opts if o.split("=")[0] != key] + [key + "=" + value]
    return "%s=\"%s\"" % (m.group(1), " ".join(opts)) if m.group(1).startswith("--") \
        else arg


def target_compile(ctx, rng, tmp):
    seed = rng.choice(ctx.seeds)
    text = mutate_text(rng, seed["text"], ctx.seeds) if rng.random() < 0.9 \
        else seed["text"]
    path = os.path.join(tmp, "input.mlir")
    with open(path, "w", encoding="utf-8", errors="surrogatepass") as f:
        f.write(text)
    cmd = [ctx.compile, path, "-o", os.path.join(tmp, "out")]
    r = rng.random()
    if r < 0.3:
        cmd += ["--target=cuda", "--no-cubin"]
    elif r < 0.35:
        cmd += ["--target=" + rng.choice(["tpu", "", "cuda"]), "--no-cubin"]
    if rng.random() < 0.1:
        cmd += ["--allow-unquantized"]
    return {"tool": "qattn-compile", "cmd": cmd,
            "files": {"input.mlir": text.encode("utf-8", "surrogatepass")},
            "ok": (0, 1), "minimize": "input.mlir"}


DTYPE_NPY = {"f64": ("<f8", 8), "f32": ("<f4", 4), "f16": ("<f2", 2),
             "bf16": ("<u2", 2), "i64": ("<i8", 8), "i32": ("<i4", 4),
             "i8": ("|i1", 1)}


def target_run(ctx, rng, tmp):
    base = rng.choice(ctx.artifacts)
    art = os.path.join(tmp, "art")
    shutil.copytree(base, art)
    with open(os.path.join(art, "manifest.json")) as f:
        manifest_text = f.read()
    manifest = json.loads(manifest_text)
    functions = [f for f in manifest.get("functions", [])]
    fn = rng.choice(functions)
    files = {}
    cmd = [ctx.run, art]
    if len(functions) > 1 or rng.random() < 0.5:
        cmd += ["--function", fn["name"]]
    what = rng.random()
    if what < 0.45:  # the manifest
        if rng.random() < 0.8:
            doc = mutate_json(rng, json.loads(manifest_text))
            text = json.dumps(doc, indent=rng.choice([None, 1]))
        else:
            text = mutate_bytes(rng, manifest_text.encode()).decode("latin1")
        with open(os.path.join(art, "manifest.json"), "w", encoding="latin1") as f:
            f.write(text)
        files["manifest.json"] = text.encode("latin1")
    elif what < 0.6:  # the library, as it is (the hash refuses it)
        lib = os.path.join(art, manifest["library"])
        if os.path.isfile(lib):
            with open(lib, "rb") as f:
                data = mutate_bytes(rng, f.read())
            os.unlink(lib)
            with open(lib, "wb") as f:
                f.write(data)
            files[manifest["library"]] = data
    symbols = {}
    for arg in fn.get("args", []):
        dtype = arg.get("dtype")
        shape = []
        for s in arg.get("shape", []):
            if isinstance(s, str):
                symbols.setdefault(s, rng.choice([1, 1, 2, 3, 5, 17]))
                shape.append(symbols[s])
            else:
                shape.append(s)
        give = dtype not in ("f64", "f32", "f16", "bf16") or rng.random() < 0.5
        if give and dtype in DTYPE_NPY:
            descr, itemsize = DTYPE_NPY[dtype]
            if what >= 0.6:
                data = mutate_npy(rng, descr, shape, itemsize)
            else:
                count = 1
                for s in shape:
                    count *= s
                data = make_npy(descr, shape, bytes(count * itemsize))
            name = arg["name"] + ".npy"
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(data)
            files[name] = data
            cmd += ["--input", "%s=%s" % (arg["name"], os.path.join(tmp, name))]
    for s, v in symbols.items():
        if rng.random() < 0.7:
            cmd += ["--dim", "%s=%d" % (s, rng.choice([v, v, 0, 2**40, 3]))]
    if manifest.get("target") == "cuda" and rng.random() < 0.8:
        cmd += ["--plan-only"]
    else:
        for opt, values in [("--seed", ["0", "7", "18446744073709551615"]),
                            ("--dist", ["normal", "uniform", "outlier"]),
                            ("--max-rel-error", ["0.1", "0", "1e308"]),
                            ("--min-sqnr", ["10", "-1e300"]),
                            ("--repeat", ["2"]),
                            ("--output-dir", [os.path.join(tmp, "o")])]:
            if rng.random() < 0.15:
                cmd += [opt, rng.choice(values)]
    if rng.random() < 0.05:
        cmd.insert(rng.randrange(1, len(cmd) + 1),
                   rng.choice(["--quiet", "--verbose", "--bogus", "--dim",
                               "--input=x", "--random=q=normal", "--help-hidden"]))
    return {"tool": "qattn-run", "cmd": cmd, "files": files, "ok": (0, 1, 2),
            "minimize": None}


TARGETS = {"opt": target_opt, "compile": target_compile, "run": target_run}
WEIGHTS = {"opt": 6, "compile": 1, "run": 3}

#===-----------------------------------------------------------------------===#
# The loop
#===-----------------------------------------------------------------------===#

CTX = None


def init_worker(ctx):
    global CTX
    CTX = ctx
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def one_iteration(i):
    ctx = CTX
    rng = random.Random("%d:%d" % (ctx.args.seed, i))
    names = [t for t in ctx.args.targets]
    target = rng.choices(names, [WEIGHTS[t] for t in names])[0]
    tmp = tempfile.mkdtemp(prefix="it%d-" % i, dir=ctx.work)
    try:
        job = TARGETS[target](ctx, rng, tmp)
        rc, out, err, timed_out = execute(job["cmd"], ctx.args.timeout, cwd=tmp)
        finding = classify(job["tool"], rc, out, err, timed_out, job["ok"])
        if not finding:
            return target, rc, None
        kind, detail = finding
        sig = hashlib.sha1(("%s|%s|%s" % (job["tool"], kind, detail)).encode()
                           ).hexdigest()[:10]
        record = {"iteration": i, "seed": ctx.args.seed, "tool": job["tool"],
                  "kind": kind, "detail": detail, "signature": sig,
                  "site": crash_site(job["tool"], err) if kind in (
                      "stackdump", "assertion") or rc < 0 else "qattn",
                  "cmd": [c.replace(tmp, "$TMP") for c in job["cmd"]],
                  "rc": rc, "stderr": err[-4000:], "stdout": out[-2000:]}
        save_finding(ctx, record, job, tmp)
        return target, rc, record
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def save_finding(ctx, record, job, tmp):
    name = "%s-%s-%s" % (record["tool"], record["kind"], record["signature"])
    d = os.path.join(ctx.args.findings, name)
    first = not os.path.isdir(d)
    d_it = os.path.join(d, "it%d" % record["iteration"])
    os.makedirs(d_it, exist_ok=True)
    for fname, data in job["files"].items():
        with open(os.path.join(d_it, fname), "wb") as f:
            f.write(data)
    with open(os.path.join(d_it, "finding.json"), "w") as f:
        json.dump(record, f, indent=2)
    if first and job["minimize"] and ctx.args.minimize > 0:
        minimized = minimize(ctx, job, tmp, record)
        if minimized is not None:
            with open(os.path.join(d, "minimized-" + job["minimize"]), "wb") as f:
                f.write(minimized)


def minimize(ctx, job, tmp, record):
    """Line-wise delta debugging of the input while the finding reproduces
    with the same kind and detail, within --minimize seconds."""
    path = os.path.join(tmp, job["minimize"])
    lines = job["files"][job["minimize"]].split(b"\n")
    deadline = time.time() + ctx.args.minimize

    def same(candidate):
        with open(path, "wb") as f:
            f.write(b"\n".join(candidate))
        rc, out, err, to = execute(job["cmd"], ctx.args.timeout, cwd=tmp)
        return classify(job["tool"], rc, out, err, to, job["ok"]) == \
            (record["kind"], record["detail"])

    chunk = max(1, len(lines) // 2)
    while chunk >= 1 and time.time() < deadline:
        i = 0
        changed = False
        while i < len(lines) and time.time() < deadline:
            candidate = lines[:i] + lines[i + chunk:]
            if candidate and same(candidate):
                lines = candidate
                changed = True
            else:
                i += chunk
        if not changed:
            chunk //= 2
    return b"\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"),
                    help="build directory with bin/qattn-opt, ... (default: build)")
    ap.add_argument("--time", type=float, default=0,
                    help="stop after this many seconds (0: no limit)")
    ap.add_argument("--iterations", type=int, default=0,
                    help="stop after this many iterations (0: no limit)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the run")
    ap.add_argument("--jobs", type=int, default=1, help="parallel processes")
    ap.add_argument("--targets", default="opt,compile,run",
                    help="comma-separated subset of opt, compile, run")
    ap.add_argument("--findings", default=os.path.join(ROOT, "fuzz-findings"),
                    help="where findings go (default: fuzz-findings)")
    ap.add_argument("--timeout", type=float, default=20,
                    help="seconds before a run counts as a hang (default 20)")
    ap.add_argument("--minimize", type=float, default=30,
                    help="seconds to spend minimizing each new finding (0: none)")
    ap.add_argument("--progress", type=float, default=10,
                    help="seconds between progress lines (default 10)")
    ap.add_argument("--fail-on-findings", action="store_true",
                    help="exit 1 if anything was found")
    args = ap.parse_args()
    if not args.time and not args.iterations:
        ap.error("give --time or --iterations")
    args.targets = [t for t in args.targets.split(",") if t]
    for t in args.targets:
        if t not in TARGETS:
            ap.error("unknown target %r (known: opt, compile, run)" % t)
    os.makedirs(args.findings, exist_ok=True)
    args.work = tempfile.mkdtemp(prefix="qattn-fuzz-")
    try:
        ctx = Context(args)
        needs = {"opt": ctx.opt, "compile": ctx.compile, "run": ctx.run}
        for target in args.targets:
            if not os.access(needs[target], os.X_OK):
                sys.exit("fuzz: no %s (build first, or pass --build)" %
                         needs[target])
        if "run" in args.targets:
            ctx.artifacts = setup_artifacts(ctx)
        print("fuzz: seed %d, %d mlir seeds, %d qattn passes, %d artifacts, "
              "targets %s, jobs %d" % (args.seed, len(ctx.seeds), len(ctx.passes),
                                      len(ctx.artifacts), ",".join(args.targets),
                                      args.jobs), flush=True)
        return loop(ctx)
    finally:
        shutil.rmtree(args.work, ignore_errors=True)


def loop(ctx):
    args = ctx.args
    start = time.time()
    counts = {t: 0 for t in args.targets}
    statuses = {t: {} for t in args.targets}
    findings, known = {}, {}
    last = start
    def more(i):
        return (not args.iterations or i < args.iterations) and \
            (not args.time or time.time() - start < args.time)

    with multiprocessing.Pool(args.jobs, init_worker, (ctx,)) as pool:
        # A few iterations in flight per process, so that --time stops
        # the run within about one iteration.
        pending = []
        i = 0
        try:
            while True:
                while len(pending) < 2 * args.jobs and more(i):
                    pending.append(pool.apply_async(one_iteration, (i,)))
                    i += 1
                if not pending:
                    break
                target, rc, record = pending.pop(0).get()
                counts[target] += 1
                statuses[target][rc] = statuses[target].get(rc, 0) + 1
                if record and known_upstream(record):
                    key = record["signature"]
                    if key not in known:
                        print("fuzz: known upstream crash %s (iteration %d): %s"
                              % (key, record["iteration"], known_upstream(record)),
                              flush=True)
                    known.setdefault(key, []).append(record)
                elif record:
                    key = record["signature"]
                    if key not in findings:
                        print("fuzz: FINDING %s %s %s (iteration %d, %s): %s"
                              % (record["tool"], record["kind"], key,
                                 record["iteration"], record["site"],
                                 record["detail"]), flush=True)
                    findings.setdefault(key, []).append(record)
                now = time.time()
                if now - last >= args.progress:
                    last = now
                    total = sum(counts.values())
                    print("fuzz: %6.0f s  %d iterations (%.1f/s)  %s  %d findings"
                          % (now - start, total, total / (now - start),
                             " ".join("%s=%d" % kv for kv in counts.items()),
                             len(findings)), flush=True)
        except KeyboardInterrupt:
            pool.terminate()
    total = sum(counts.values())
    print("fuzz: done: %d iterations in %.0f s (%s), %d distinct findings%s" % (
        total, time.time() - start,
        ", ".join("%s=%d" % kv for kv in counts.items()), len(findings),
        (" in " + args.findings) if findings else ""), flush=True)
    if known:
        print("fuzz: %d known upstream crashes (docs/FUZZING.md), not findings: %s" % (
            sum(len(r) for r in known.values()), ", ".join(sorted(known))), flush=True)
    print("fuzz: exit statuses: " + "; ".join(
        "%s %s" % (t, " ".join("%d:%d" % kv for kv in sorted(st.items())))
        for t, st in statuses.items()), flush=True)
    for key, records in sorted(findings.items()):
        r = records[0]
        print("  %s %s %s x%d (%s): %s" % (r["tool"], r["kind"], key,
                                           len(records), r["site"], r["detail"]))
    return 1 if findings and args.fail_on_findings else 0


if __name__ == "__main__":
    sys.exit(main())

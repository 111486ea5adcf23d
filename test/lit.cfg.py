# -*- Python -*-
# lit configuration for qattn. Optional capabilities are lit features, so a
# test that needs one says REQUIRES: and is reported as unsupported without it.

import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config

config.name = "qattn"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".py"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.qattn_obj_root, "test")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.qattn_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# Debian's python3 carries numpy; a pyenv python3 earlier on PATH may not.
python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3"
config.substitutions.append(("%python", python))
config.substitutions.append(("%cc", config.c_compiler))
config.substitutions.append(("%qattn_src", config.qattn_src_root))
config.substitutions.append(("%qattn_obj", config.qattn_obj_root))
llvm_config.with_environment(
    "PYTHONPATH", os.path.join(config.qattn_src_root, "python"), append_path=True)
# The Python package's runtime binding (ctypes) and compiler driver, from this build.
config.environment["QATTN_RUNTIME_LIB"] = os.path.join(
    config.qattn_obj_root, "lib", "libqattn_runtime_c.so")
config.environment["QATTN_COMPILE"] = os.path.join(config.qattn_tools_dir, "qattn-compile")

if subprocess.call([python, "-c", "import numpy"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
    config.available_features.add("numpy")
# PyTorch (any version: the CPU tests of qattn.torch_quant and the cache's torch backend use
# nothing recent; the custom ops need CUDA and run in scripts/torch-check on the GPU machine).
if subprocess.call([python, "-c", "import torch, numpy"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
    config.available_features.add("torch")

# The real tiny LM for accuracy work lives beside the clone, never in it.
shared_data = os.path.abspath(
    os.path.join(config.qattn_src_root, "..", "shared", "data"))
if os.path.exists(os.path.join(shared_data, "stories260K", "stories260K.bin")):
    config.available_features.add("stories260k")
config.substitutions.append(("%shared_data", shared_data))

ptxas = shutil.which("ptxas") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas")
    else None)
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
if shutil.which("nvidia-smi") and subprocess.call(
        ["nvidia-smi"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
    config.available_features.add("cuda-device")

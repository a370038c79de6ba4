"""The layering rules of shared/ARCHITECTURE.md, checked on the sources: the graph, compile,
runtime, importer and core layers include no backend header (op semantics live in src/graph/ and
backends read them from there), and outside the backends and the backend registry no code names a
concrete backend."""
import pathlib
import re

import pytest

SRC = pathlib.Path(__file__).resolve().parents[2] / "src"
LAYERS = ["graph", "compile", "runtime", "onnx", "core"]
BACKEND_NAMES = re.compile(r'"(cpu|reference|vulkan|cuda|metal)"')


def sources(layer):
    return sorted(p for p in (SRC / layer).rglob("*") if p.suffix in (".h", ".cc"))


def code_lines(path):
    """(line number, text) of every line, with // comments dropped."""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        yield number, line.split("//", 1)[0]


@pytest.mark.parametrize("layer", LAYERS)
def test_layer_includes_no_backend_header(layer):
    found = [f"{p.relative_to(SRC)}:{n}" for p in sources(layer) for n, line in code_lines(p)
             if re.match(r'\s*#\s*include\s+"backends/', line)]
    assert sources(layer), f"no sources under src/{layer}"
    assert not found, "backend headers included outside src/backends: " + ", ".join(found)


@pytest.mark.parametrize("layer", ["graph", "compile", "runtime", "onnx"])
def test_layer_names_no_concrete_backend(layer):
    found = [f"{p.relative_to(SRC)}:{n}: {line.strip()}" for p in sources(layer)
             for n, line in code_lines(p) if BACKEND_NAMES.search(line)]
    assert not found, "concrete backends named outside the registry: " + "; ".join(found)


def test_no_backend_runs_the_reference_behind_the_router():
    """The reference backend is a test oracle: a backend's kernel never looks up and runs one of
    its kernels (which would hide from placement, `lumen inspect` and profiles what really runs)."""
    found = [f"{p.relative_to(SRC)}:{n}: {line.strip()}"
             for backend in (SRC / "backends").iterdir()
             if backend.is_dir() and backend.name != "reference"
             for p in sorted(backend.rglob("*")) if p.suffix in (".h", ".cc")
             for n, line in code_lines(p) if 'kernel_registry("reference")' in line]
    assert not found, "backends running reference kernels: " + "; ".join(found)

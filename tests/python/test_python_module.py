#!/usr/bin/env python3
"""The modules `spgen gen --python` writes: generated, compiled on first use and called on numpy
arrays, scipy.sparse matrices, COO tuples and packed tensors, each result checked against numpy
evaluating the spec itself (an einsum per product, by index names); then the errors a user can
meet, each by its type and message.

Usage: test_python_module.py SPGEN SOURCE_ROOT
Each case (a kernel, or the errors) is one test case of the summary line doctest prints, which
.ci/count_tests.py sums; without numpy or scipy, all are skipped.
"""
import importlib.util
import inspect
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from types import SimpleNamespace

try:
    import numpy as np
    import scipy.sparse
except ImportError as error:
    print(f"skipped: {error} (install python3-numpy and python3-scipy)")
    print("[doctest] test cases: 1 | 0 passed | 0 failed | 1 skipped")
    sys.exit(0)

SPGEN, ROOT = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
WORD = re.compile(r"\w+")
SCRATCH = tempfile.mkdtemp(prefix="spgen-python-")
# Fast builds: the kernels' speed is not what is tested here.
os.environ["CXXFLAGS"] = "-O0"
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print(f"FAIL: {what}")


# ---- the reference: the spec evaluated with numpy, by index names ----

class Named:
    """An array whose axes are named by index variables. A product keeps every name, a sum the union
    of its operands' (broadcast); reference() sums each top-level term over the names the output
    lacks (index notation's scope of a reduction)."""

    dims = {}
    output = ""

    def __init__(self, array, names):
        self.array, self.names = np.asarray(array, np.float64), names

    @staticmethod
    def lift(x):
        return x if isinstance(x, Named) else Named(np.array(float(x)), "")

    def __mul__(self, other):
        other = Named.lift(other)
        names = self.names + "".join(n for n in other.names if n not in self.names)
        return Named(np.einsum(f"{self.names},{other.names}->{names}", self.array, other.array), names)

    __rmul__ = __mul__

    def reduced(self):
        keep = "".join(n for n in self.names if n in Named.output)
        return Named(np.einsum(f"{self.names}->{keep}", self.array), keep)

    def expanded(self, names):
        order = [self.names.index(n) for n in names if n in self.names]
        shape = [Named.dims[n] if n in self.names else 1 for n in names]
        return np.broadcast_to(np.transpose(self.array, order).reshape(shape), [Named.dims[n] for n in names])

    def __add__(self, other):
        a, b = self, Named.lift(other)
        names = a.names + "".join(n for n in b.names if n not in a.names)
        return Named(a.expanded(names) + b.expanded(names), names)

    __radd__ = __add__

    def __truediv__(self, other):
        other = Named.lift(other)
        names = self.names + "".join(n for n in other.names if n not in self.names)
        return Named(self.expanded(names) / other.expanded(names), names)

    def __sub__(self, other):
        return self + (-1.0) * Named.lift(other)

    def __neg__(self):
        return (-1.0) * self


def reference(spec_text, inputs, dims, initial):
    statement = [line.split("#")[0] for line in spec_text.splitlines() if line.split("#")[0].strip()][0]
    lhs, op, rhs = re.match(r"\s*(\w+\([^)]*\))\s*(\+?=)\s*(.*)", statement).groups()
    out_names = "".join(re.findall(r"\w+", lhs.split("(")[1]))
    Named.dims, Named.output = dims, out_names
    def access(match):
        return f"_t({match.group(1)!r}, {''.join(re.findall(WORD, match.group(2)))!r})"

    python = re.sub(r"(\w+)\(([^)]*)\)", access, rhs)
    result = np.zeros([dims[n] for n in out_names])
    for sign, term in top_level_terms(python):
        value = eval(term, {"_t": lambda name, names: Named(inputs[name], names)})
        result = result + sign * Named.lift(value).reduced().expanded(out_names)
    return result + (initial if op == "+=" else 0)


def top_level_terms(expr):
    """The terms of `expr` at its top-level + and - (outside parentheses), with their signs."""
    terms, depth, start, sign = [], 0, 0, 1.0
    for k, ch in enumerate(expr):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and ch in "+-" and expr[start:k].strip():
            terms.append((sign, expr[start:k]))
            sign, start = (1.0 if ch == "+" else -1.0), k + 1
        elif depth == 0 and ch in "+-":
            sign, start = sign * (1.0 if ch == "+" else -1.0), k + 1
    terms.append((sign, expr[start:]))
    return terms


# ---- generating and importing ----

def generate(spec, config, out_dir, *extra):
    os.makedirs(out_dir, exist_ok=True)
    return subprocess.run([SPGEN, "gen", os.path.join(ROOT, spec), "--config", os.path.join(ROOT, config), "-o", out_dir,
                           "--python", *extra], capture_output=True, text=True)


def load(path, name):
    spec = importlib.util.spec_from_file_location(f"{name}_{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def densify(result, shape):
    if isinstance(result, tuple):
        coords, values, dims = result
        out = np.zeros(dims)
        np.add.at(out, tuple(coords.T), values)
        return out
    if scipy.sparse.issparse(result):
        return result.toarray()
    return np.asarray(result, np.float64).reshape(shape)


def random_input(t, dims, rng):
    shape = [dims[v] for v in t["vars"]]
    array = rng.uniform(-1, 1, shape)
    if "dense-variable" in t["levels"] and len(shape) == 2:  # ragged: each row holds its columns 0..len-1
        lengths = rng.integers(0, shape[1] + 1, shape[0])
        array *= np.arange(shape[1])[None, :] < lengths[:, None]
    elif not all(level == "dense" for level in t["levels"]):
        array *= rng.random(shape) < 0.3
        width = min([w for w in t["widths"] if w > 0], default=0)
        if width:  # an ELL level: at most `width` entries per row (of the innermost mode)
            for row in array.reshape(-1, shape[-1]):
                row[np.flatnonzero(row)[width:]] = 0
    return array


def as_given(array, form, module, name):
    """The input in one of the forms a user may pass."""
    if form == "dense" or array.ndim != 2 and form in ("csr", "csc"):
        return array
    if form == "csr":
        return scipy.sparse.csr_matrix(array)
    if form == "csc":
        return scipy.sparse.csc_array(array)
    if form == "coo":
        where = np.nonzero(array)
        return np.stack(where, axis=1), array[where], array.shape
    if not module._TENSORS[name]["previous"]:
        return module.pack(name, scipy.sparse.csr_matrix(array) if array.ndim == 2 else array)
    return scipy.sparse.csr_matrix(array) if array.ndim == 2 else array


CASES = [
    # spec, config, the forms the sparse inputs are given in
    ("specs/spmm.spg", "specs/spmm_csr.json", ["csr", "csc", "coo", "packed"]),
    ("specs/spmm.spg", "specs/spmm_auto.json", ["csr", "dense"]),
    ("specs/spmm.spg", "specs/spmm_bsr.json", ["csr", "coo"]),
    ("specs/spmm.spg", "specs/spmm_hyb.json", ["csr", "packed", "coo"]),
    ("specs/spmm.spg", "specs/spmm_ragged.json", ["dense", "coo"]),
    ("specs/spmv.spg", "specs/spmv_csr.json", ["csr", "packed"]),
    ("specs/spmv.spg", "specs/spmv_dcsr.json", ["csr", "coo"]),
    ("specs/spmv.spg", "specs/spmv_csc.json", ["csc", "csr"]),
    ("specs/spmv.spg", "specs/spmv_coo.json", ["coo"]),
    ("specs/spmv.spg", "specs/spmv_ell.json", ["csr"]),
    ("specs/spmv.spg", "tests/e2e/cases/spmv_decompose_sell.json", ["csr", "packed"]),
    ("specs/spmv.spg", "tests/e2e/cases/spmv_sell.json", ["csr", "coo", "packed"]),
    ("specs/spmv.spg", "specs/spmv_sv.json", ["csr", "dense"]),
    ("specs/spmv.spg", "specs/spmv_dcsc.json", ["csc"]),
    ("specs/spmm.spg", "tests/e2e/cases/spmm_dense_fused.json", ["dense"]),  # (dense tensors only: no conversion routines)
    ("specs/sddmm.spg", "specs/sddmm_csr.json", ["csr", "coo"]),
    ("specs/spgemm.spg", "specs/spgemm_csr.json", ["csr", "csc"]),
    ("specs/matadd.spg", "specs/matadd_dcsr.json", ["csr", "coo"]),
    ("specs/mttkrp.spg", "specs/mttkrp_csf.json", ["coo", "dense"]),
    ("specs/ttv.spg", "specs/ttv_csf.json", ["coo"]),
    ("tests/e2e/cases/sparse_add.spg", "tests/e2e/cases/sparse_add_coo_out.json", ["csr"]),
    ("tests/e2e/cases/sparse_add.spg", "tests/e2e/cases/sparse_add_csc_out.json", ["csc", "csr"]),
    ("tests/e2e/cases/spgemm_bias.spg", "tests/e2e/cases/spgemm_bias_csc_out.json", ["csr"]),
    ("tests/e2e/cases/sparse_add.spg", "tests/e2e/cases/sparse_add_csr_csc_to_ell_out.json", ["csr", "csc"]),
    ("specs/spgemm.spg", "tests/e2e/cases/spgemm_bsr_out.json", ["csr"]),
    ("specs/spgemm.spg", "tests/e2e/cases/spgemm_ragged_out.json", ["csr"]),
    ("tests/e2e/cases/acc_add.spg", "tests/e2e/cases/acc_add_csc_to_dense.json", ["csc", "coo"]),
    ("tests/e2e/cases/acc_add.spg", "tests/e2e/cases/acc_add_csr.json", ["dense", "coo", "csr"]),
]


def run_case(number, spec, config, forms):
    name = os.path.splitext(os.path.basename(config))[0]
    out_dir = os.path.join(SCRATCH, f"case{number}")
    generated = generate(spec, config, out_dir)
    if generated.returncode != 0:
        check(False, f"{name}: spgen gen --python failed: {generated.stderr}")
        return
    module_path = next(os.path.join(out_dir, f) for f in os.listdir(out_dir) if f.endswith(".py"))
    module = load(module_path, name)
    kernel = getattr(module, module._KERNEL["name"])
    rng = np.random.default_rng(number)
    spec_text = open(os.path.join(ROOT, spec)).read()
    for trial, form in enumerate(forms):
        dims = {v: int(rng.integers(5, 14)) for v in module._KERNEL["vars"]}
        dims.update(module._KERNEL["fixed_sizes"])
        inputs, arguments = {}, {}
        output = next(t for t in module._KERNEL["tensors"] if t["output"])
        out_shape = [dims[v] for v in output["vars"]]
        initial = None
        for t in module._KERNEL["tensors"]:
            if t["output"]:
                continue
            if t["previous"]:  # `+=` into an output assembled anew: its value before, as the output's name (or none)
                initial = random_input(t, dims, rng) if trial % 2 == 0 else None
                arguments[output["name"]] = None if initial is None else as_given(initial, form, module, t["name"])
                continue
            inputs[t["name"]] = random_input(t, dims, rng)
            arguments[t["name"]] = inputs[t["name"]] if t["routines"] is None else as_given(inputs[t["name"]], form, module, t["name"])
        if output["name"] in inspect.signature(kernel).parameters and output["name"] not in arguments:  # a dense `+=` kernel
            initial = rng.uniform(-1, 1, out_shape) if trial % 2 == 0 else None
            arguments[output["name"]] = initial
        for var in module._KERNEL["vars"]:
            if not any(var in t["vars"] for t in module._KERNEL["tensors"] if not t["output"]):
                arguments[var] = dims[var]
        try:
            result = kernel(**arguments)
        except Exception as error:
            check(False, f"{name} ({form}): {type(error).__name__}: {error}")
            continue
        expected = reference(spec_text, inputs, dims, initial if initial is not None else 0)
        got = densify(result, out_shape)
        tolerance = 1e-4 if module._KERNEL["value_type"] == "float32" else 1e-10
        ok = got.shape == expected.shape and np.allclose(got, expected, rtol=tolerance, atol=tolerance)
        check(ok, f"{name} ({form}): result differs from numpy's (max error "
                  f"{np.abs(got - expected).max() if got.shape == expected.shape else got.shape})")
        if scipy.sparse.issparse(result):
            want = "csc" if output["mode_order"] == [1, 0] else "csr"
            check(result.format == want, f"{name}: the output comes back as {result.format}, not {want}")
    print(f"ok: {name} ({', '.join(forms)})")


def expect_error(what, kind, text, call):
    try:
        call()
    except kind as error:
        check(text in str(error), f"{what}: message {str(error)!r} lacks {text!r}")
        return
    except Exception as error:
        check(False, f"{what}: {type(error).__name__} ({error}) instead of {kind.__name__}")
        return
    check(False, f"{what}: no {kind.__name__}")


def error_cases():
    out_dir = os.path.join(SCRATCH, "errors")
    check(generate("specs/spmm.spg", "specs/spmm_csr.json", out_dir, "--size", "k=8").returncode == 0, "gen --size k=8")
    m = load(os.path.join(out_dir, "spmm_csr.py"), "errors")
    A = scipy.sparse.random(6, 5, density=0.4, format="csr", random_state=1, dtype=np.float32)
    B = np.ones((5, 8), np.float32)
    check(np.allclose(m.spmm_csr(A=A, B=B), A @ B), "spmm_csr --size k=8 on k = 8")
    expect_error("a size other than the generated one", ValueError, "k = 8", lambda: m.spmm_csr(A=A, B=np.ones((5, 4))))
    expect_error("mismatched shapes", ValueError, "index j", lambda: m.spmm_csr(A=A, B=np.ones((4, 8))))
    expect_error("a complex dtype", TypeError, "complex128", lambda: m.spmm_csr(A=A, B=B.astype(complex)))
    expect_error("too few dimensions", ValueError, "expected 2 dimensions", lambda: m.spmm_csr(A=A, B=np.ones(5)))
    expect_error("a missing input", TypeError, "'B'", lambda: m.spmm_csr(A=A))
    expect_error("a coordinate out of range", ValueError, "out of range",
                 lambda: m.spmm_csr(A=(np.array([[0, 9]]), np.array([1.0]), (6, 5)), B=B))
    expect_error("COO coords of the wrong shape", ValueError, "shape (nnz, 2)",
                 lambda: m.spmm_csr(A=(np.array([0, 1]), np.array([1.0]), (6, 5)), B=B))
    expect_error("a packed tensor of another input", TypeError, "no input named",
                 lambda: m.pack("C", A))
    # CSR arrays under scipy's attribute names (a torch.sparse_csr tensor's, say) pass as they are, checked.
    def view(indptr=A.indptr, indices=A.indices, data=A.data):
        return SimpleNamespace(format="csr", indptr=np.array(indptr), indices=np.array(indices), data=np.array(data), shape=A.shape)

    check(np.allclose(m.spmm_csr(A=view(), B=B), A @ B), "CSR arrays under scipy's attribute names")
    expect_error("CSR positions that decrease", ValueError, "never decrease",
                 lambda: m.spmm_csr(A=view(indptr=np.r_[A.indptr[:-1], A.indptr[-1] - 1]), B=B))
    expect_error("a CSR index out of range", ValueError, "outside [0, 5)",
                 lambda: m.spmm_csr(A=view(indices=np.r_[A.indices[:-1], 5]), B=B))
    rows = np.repeat(np.arange(6), np.diff(A.indptr))
    first = next(r for r in range(6) if A.indptr[r + 1] - A.indptr[r] >= 2)
    swapped = A.indices.copy()
    swapped[A.indptr[first]], swapped[A.indptr[first] + 1] = swapped[A.indptr[first] + 1], swapped[A.indptr[first]]
    expect_error("CSR indices out of order", ValueError, "strictly increasing", lambda: m.spmm_csr(A=view(indices=swapped), B=B))
    unsorted = scipy.sparse.csr_matrix((A.data, swapped, A.indptr), shape=A.shape)  # scipy's: sorted by the module
    B2 = np.random.default_rng(2).uniform(-1, 1, (5, 8)).astype(np.float32)
    check(np.allclose(m.spmm_csr(A=unsorted, B=B2), unsorted.toarray() @ B2, atol=1e-5) and rows.size == A.nnz,
          "an unsorted scipy CSR matrix")
    # Stale sources are rebuilt; a failing compiler is a BuildError with its command.
    library = m.library_path()
    built = os.path.getmtime(library)
    time.sleep(0.01)
    os.utime(os.path.join(out_dir, "spmm_csr.cpp"))
    check(m.build() == library and os.path.getmtime(library) > built, "a newer spmm_csr.cpp rebuilds the library")
    os.environ["CXX"] = "false"
    expect_error("a failing compiler", m.BuildError, "false", lambda: m.build(force=True))
    os.environ["CXX"] = "c++"
    check(not any(f.endswith(".tmp") for f in os.listdir(out_dir)), "a failed build leaves no temporary behind")
    os.remove(os.path.join(out_dir, "spmm_csr.cpp"))
    expect_error("a missing source", m.BuildError, "is missing", lambda: m.build(force=True))
    # An ELL output's row longer than its width is an error, not a row cut short.
    narrow = os.path.join(SCRATCH, "narrow_ell.json")
    with open(narrow, "w") as config:
        config.write('{"name": "add_ell2", "tensors": {"A": {"format": "csr"}, "B": {"format": "csr"}, "C": {"format": "ell", "width": 2}}}')
    check(generate("tests/e2e/cases/sparse_add.spg", narrow, os.path.join(SCRATCH, "ell")).returncode == 0, "gen of an ELL output")
    ell = load(os.path.join(SCRATCH, "ell", "add_ell2.py"), "ell")
    row3 = scipy.sparse.csr_matrix(np.array([[1.0, 2.0, 3.0], [0.0, 1.0, 0.0]]))
    expect_error("an ELL output row past its width", ValueError, "more than the ELL width 2",
                 lambda: ell.add_ell2(A=row3, B=row3))
    two = scipy.sparse.csr_matrix(np.array([[1.0, 0.0, 3.0], [0.0, 1.0, 0.0]]))
    check(np.allclose(ell.add_ell2(A=two, B=two).toarray(), 2 * two.toarray()), "an ELL output within its width")
    # Kernels the module cannot call are refused when generated.
    refused = generate("specs/spmm.spg", "specs/spmm_csr_cuda.json", os.path.join(SCRATCH, "cuda"))
    check(refused.returncode == 1 and "--python: the Python module calls a cpu kernel" in refused.stderr,
          f"--python on the cuda target: exit {refused.returncode}, {refused.stderr!r}")
    check(not os.listdir(os.path.join(SCRATCH, "cuda")), "a refused --python writes nothing")
    print("ok: errors")


def example():
    """examples/python, as its README runs it, in a scratch copy: cora when ../shared has it."""
    copy = os.path.join(SCRATCH, "example")
    shutil.copytree(os.path.join(ROOT, "examples", "python"), copy, ignore=shutil.ignore_patterns("gen"))
    graph = os.path.join(ROOT, "..", "shared", "data", "cora.mtx")
    result = subprocess.run(["make", "-C", copy, f"SPGEN={SPGEN}", f"SPEC={os.path.join(ROOT, 'specs', 'spmm.spg')}",
                             f"PYTHON={sys.executable}", f"GRAPH={graph}", "run"], capture_output=True, text=True)
    check(result.returncode == 0, f"examples/python: exit {result.returncode}: {result.stdout[-2000:]}{result.stderr[-2000:]}")
    check("max relative error against scipy" in result.stdout, f"examples/python printed {result.stdout!r}")
    # Again, now that the library exists: `import gnn_layer` must still find the module.
    again = subprocess.run(["make", "-C", copy, f"SPGEN={SPGEN}", f"SPEC={os.path.join(ROOT, 'specs', 'spmm.spg')}",
                            f"PYTHON={sys.executable}", f"GRAPH={graph}", "run"], capture_output=True, text=True)
    check(again.returncode == 0, f"examples/python, run again: exit {again.returncode}: {again.stderr[-2000:]}")
    # --check sees the module too: unchanged, then stale.
    gen = os.path.join(copy, "gen")
    command = [SPGEN, "gen", os.path.join(ROOT, "specs", "spmm.spg"), "--config", os.path.join(copy, "gnn_layer.json"),
               "--size", "k=32", "--python", "-o", gen, "--check"]
    check(subprocess.run(command, capture_output=True).returncode == 0, "gen --check --python on fresh files")
    with open(os.path.join(gen, "gnn_layer.py"), "a") as module:
        module.write("# edited\n")
    stale = subprocess.run(command, capture_output=True, text=True)
    check(stale.returncode == 1 and "-# edited" in stale.stdout, f"gen --check --python on an edited module: {stale.stdout!r}")
    print("ok: examples/python")


def pytorch_example():
    """examples/pytorch where torch is installed (for $SPGEN_TORCH_PYTHON, else this interpreter)."""
    python = os.environ.get("SPGEN_TORCH_PYTHON", sys.executable)
    if subprocess.run([python, "-c", "import torch"], capture_output=True).returncode != 0:
        print(f"skipped: examples/pytorch (no torch for {python})")
        return "skipped"
    copy = os.path.join(SCRATCH, "pytorch")
    shutil.copytree(os.path.join(ROOT, "examples", "pytorch"), copy, ignore=shutil.ignore_patterns("gen", "__pycache__"))
    graph = os.path.join(ROOT, "..", "shared", "data", "cora.mtx")
    result = subprocess.run(["make", "-C", copy, f"SPGEN={SPGEN}", f"SPEC={os.path.join(ROOT, 'specs', 'spmm.spg')}",
                             f"PYTHON={python}", f"GRAPH={graph}", "run"], capture_output=True, text=True)
    check(result.returncode == 0 and "max relative error against torch.sparse.mm" in result.stdout,
          f"examples/pytorch: exit {result.returncode}: {result.stdout[-2000:]}{result.stderr[-2000:]}")
    print("ok: examples/pytorch")


def several_statements():
    """A spec of several statements returns each output, as a tuple, in the order they are written."""
    out = os.path.join(SCRATCH, "statements")
    config = os.path.join(out, "walk.json")
    os.makedirs(out, exist_ok=True)
    with open(config, "w") as f:
        f.write('{"name": "walk", "tensors": {"A": {"format": "csr"}}}')
    generated = subprocess.run([SPGEN, "gen", os.path.join(ROOT, "tests/e2e/statements/two_hops.spg"), "--config", config, "-o", out,
                                "--python"], capture_output=True, text=True)
    check(generated.returncode == 0, f"several statements: spgen gen --python failed: {generated.stderr}")
    module = load(os.path.join(out, "walk.py"), "walk")
    rng = np.random.default_rng(7)
    a = scipy.sparse.random(30, 30, density=0.2, format="csr", random_state=3, dtype=np.float32)
    x = rng.standard_normal(30).astype(np.float32)
    t, y = module.walk(A=a, x=x)
    check(np.allclose(t, a @ x, rtol=1e-4, atol=1e-5), "several statements: t = A x")
    check(np.allclose(y, a @ (a @ x), rtol=1e-4, atol=1e-5), "several statements: y = A (A x)")
    # i and j index one mode of t, so A must be square.
    try:
        module.walk(A=scipy.sparse.random(30, 20, density=0.2, format="csr", random_state=3, dtype=np.float32), x=x[:20])
        check(False, "several statements: a non-square A was accepted")
    except ValueError:
        pass
    # Three outputs, one of them sparse on the mask's structure (csr), the others dense.
    generated = subprocess.run([SPGEN, "gen", os.path.join(ROOT, "tests/e2e/statements/attention.spg"), "--config",
                                os.path.join(ROOT, "tests/e2e/statements/attention_outputs_auto.json"), "-o", out, "--python"],
                               capture_output=True, text=True)
    check(generated.returncode == 0, f"several statements: attention --python failed: {generated.stderr}")
    attention = load(os.path.join(out, "attention.py"), "attention")
    mask = scipy.sparse.random(50, 40, density=0.2, format="csr", random_state=2, dtype=np.float32)
    q, k, v = (rng.standard_normal(shape).astype(np.float32) for shape in ((50, 8), (40, 8), (40, 6)))
    m, e, o = attention.attention(M=mask, Q=q, K=k, V=v)
    s = mask.multiply(q @ k.T).tocsr()
    want_m = np.array([s[[i]].data.max() if s[[i]].nnz else -np.inf for i in range(50)])
    check(np.allclose(m, want_m, rtol=1e-4, atol=1e-5), "several statements: the row maxima")
    want_e = scipy.sparse.csr_matrix((np.exp(s.data - np.repeat(want_m, np.diff(s.indptr))), s.indices, s.indptr), shape=s.shape)
    check(np.allclose(e.toarray(), want_e.toarray(), rtol=1e-4, atol=1e-5), "several statements: the numerators, on the mask")
    sums = np.asarray(want_e.sum(axis=1)).ravel()
    check(np.allclose(o, (want_e @ v) / np.where(sums == 0, 1, sums)[:, None], rtol=1e-4, atol=1e-5), "several statements: the output")
    print("ok: several statements")


def every_cpu_e2e_case():
    """SPGEN_PYTHON_SWEEP=1: every cpu config of tests/e2e/cases as well (about 10 minutes)."""
    specs = {os.path.splitext(f)[0]: os.path.join(d, f) for d in ("specs", "tests/e2e/cases")
             for f in os.listdir(os.path.join(ROOT, d)) if f.endswith(".spg")}
    cases = []
    for f in sorted(os.listdir(os.path.join(ROOT, "tests/e2e/cases"))):
        stem = os.path.splitext(f)[0]
        owners = [s for s in specs if stem.startswith(s + "_")]
        if f.endswith(".json") and "cuda" not in stem and owners:
            cases.append((specs[max(owners, key=len)], os.path.join("tests/e2e/cases", f), ["csr", "coo"]))
    return cases


def main():
    cases = [lambda n=n, c=c: run_case(n, *c) for n, c in enumerate(CASES)] + [error_cases, several_statements, example, pytorch_example]
    if os.environ.get("SPGEN_PYTHON_SWEEP") == "1":
        cases += [lambda n=n, c=c: run_case(1000 + n, *c) for n, c in enumerate(every_cpu_e2e_case())]
    failed = skipped = 0
    for case in cases:
        before = len(failures)
        try:
            skipped += case() == "skipped"
        except Exception as error:  # a case that breaks fails alone
            check(False, f"{type(error).__name__}: {error}")
        failed += len(failures) > before
    shutil.rmtree(SCRATCH, ignore_errors=True)
    passed = len(cases) - failed - skipped
    print(f"[doctest] test cases: {len(cases)} | {passed} passed | {failed} failed | {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

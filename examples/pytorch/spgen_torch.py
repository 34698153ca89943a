"""A kernel spgen generated, as a PyTorch custom operator: spgen::gnn_layer(A, B) takes A as a
torch.sparse_csr_tensor and B dense (nodes x 32, float32) and returns A @ B.

The operator hands the tensors' own memory to the generated module (gen/gnn_layer_torch.py),
through A's arrays under scipy's CSR attribute names: with int32 indices, which the kernel is generated for, and
float32 values nothing is copied on the way in (torch's default int64 indices cost one copy). Forward only: a GNN that trains B through it needs A's transpose too (a second
kernel, or torch.sparse.mm in a backward registered with torch.library.register_autograd).
"""
import weakref
from types import SimpleNamespace

import torch

_module = None
# id(A) -> (a weak reference to A, A._version, A packed by the module): A's arrays are checked once
# per tensor, not per call (the check passes over all of A). Any in-place change through torch
# bumps _version, and A is checked again; a tensor that is gone drops its entry. (Keyed by id: a
# WeakKeyDictionary compares tensors with ==, which sparse CSR tensors refuse.)
_packed = {}


def use_module(module):
    """The generated module (gnn_layer_torch) that the operator calls."""
    global _module
    _module = module
    _packed.clear()  # packed for another module's kernel


def _packed_A(A):
    entry = _packed.get(id(A))
    if entry is not None and entry[0]() is A and entry[1] == A._version:
        return entry[2]
    # A's arrays under scipy's CSR attribute names: the module checks them and keeps them as they are.
    view = SimpleNamespace(format="csr", indptr=A.crow_indices().numpy(), indices=A.col_indices().numpy(),
                           data=A.values().numpy(), shape=tuple(A.shape))
    packed = _module.pack("A", view)
    if entry is None or entry[0]() is not A:
        weakref.finalize(A, _packed.pop, id(A), None)
    _packed[id(A)] = (weakref.ref(A), A._version, packed)
    return packed


@torch.library.custom_op("spgen::gnn_layer", mutates_args=())
def gnn_layer(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    if A.layout != torch.sparse_csr or A.device.type != "cpu":
        raise ValueError(f"spgen::gnn_layer: A must be a CPU torch.sparse_csr tensor, not {A.layout} on {A.device}")
    return torch.from_numpy(_module.gnn_layer_torch(A=_packed_A(A), B=B.detach().contiguous().numpy()))


@gnn_layer.register_fake
def _(A, B):
    return B.new_empty((A.shape[0], B.shape[1]))

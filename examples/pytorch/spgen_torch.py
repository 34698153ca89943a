"""A kernel spgen generated, as a PyTorch custom operator: spgen::gnn_layer(A, B) takes A as a
torch.sparse_csr_tensor and B dense (nodes x 32, float32) and returns A @ B.

The operator hands the tensors' own memory to the generated module (gen/gnn_layer_torch.py),
through A's arrays under scipy's CSR attribute names: with int32 indices, which the kernel is generated for, and
float32 values nothing is copied on the way in (torch's default int64 indices cost one copy). Forward only: a GNN that trains B through it needs A's transpose too (a second
kernel, or torch.sparse.mm in a backward registered with torch.library.register_autograd).
"""
from types import SimpleNamespace

import torch

_module = None


def use_module(module):
    """The generated module (gnn_layer_torch) that the operator calls."""
    global _module
    _module = module


@torch.library.custom_op("spgen::gnn_layer", mutates_args=())
def gnn_layer(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    if A.layout != torch.sparse_csr or A.device.type != "cpu":
        raise ValueError(f"spgen::gnn_layer: A must be a CPU torch.sparse_csr tensor, not {A.layout} on {A.device}")
    # A's arrays under scipy's CSR attribute names: the module checks them and passes them as they are.
    view = SimpleNamespace(format="csr", indptr=A.crow_indices().numpy(), indices=A.col_indices().numpy(),
                           data=A.values().numpy(), shape=tuple(A.shape))
    return torch.from_numpy(_module.gnn_layer_torch(A=view, B=B.detach().contiguous().numpy()))


@gnn_layer.register_fake
def _(A, B):
    return B.new_empty((A.shape[0], B.shape[1]))

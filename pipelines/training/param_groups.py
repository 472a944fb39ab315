"""AdamW parameter groups: weight decay on weight matrices only.

The nanoGPT / timm convention (Loshchilov & Hutter 2019 decouple the decay; decaying norms,
biases and tables only pulls them towards zero for no regularizing gain): the weights of
linear, convolutional and recurrent layers are decayed; norms' scales and shifts, biases,
the CLS token, positional tables, embedding tables (nn.Embedding, including the graph
encoder's distance and edge biases) and scalars (a kernel width, a relative-position table)
are not.
"""

from __future__ import annotations

from torch import nn

# modules whose 2-D+ ``weight*`` parameters are the weight matrices that get decay
DECAYED_MODULES: tuple[type[nn.Module], ...] = (nn.Linear, nn.modules.conv._ConvNd, nn.RNNBase)


def weight_decay_groups(module: nn.Module, weight_decay: float) -> list[dict]:
    """Two AdamW groups over ``module``'s trainable parameters: ``weight_decay`` for the weight
    matrices of Linear, Conv and RNN layers, 0 for everything else. A parameter shared by two
    modules is listed once; an empty group is left out."""
    decayed: set[int] = set()
    for sub in module.modules():
        if isinstance(sub, DECAYED_MODULES):
            for name, p in sub.named_parameters(recurse=False):
                if name.startswith("weight") and p.ndim >= 2:
                    decayed.add(id(p))
    decay, no_decay = [], []
    for p in module.parameters():  # deduplicated by PyTorch
        if p.requires_grad:
            (decay if id(p) in decayed else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return [g for g in groups if g["params"]]

"""Weight decay on weight matrices only: which parameters of a TaskModule land in which AdamW group."""

from types import SimpleNamespace

import torch
from torch import nn

from vecset.backbone import Backbone
from vecset.encoders import VectorEncoder
from vecset.heads import SequenceHead
from vecset.pipelines import TaskModule
from vecset.pipelines.training.param_groups import weight_decay_groups


def small_module() -> TaskModule:
    # a learned positional table, a CLS token, relative-position biases, a depthwise conv,
    # attention pooling's query: each kind of parameter that is not a weight matrix
    return TaskModule(VectorEncoder(3, 8, positional="learned", max_len=16),
                      Backbone(8, depth=2, heads=2, mlp_ratio=2.0, cls_token=True, relative_positions=2),
                      SequenceHead(8, 3, pooling="attention"), weight_decay=0.05)


def named_groups(module: nn.Module, groups: list[dict]) -> list[set[str]]:
    names = {id(p): n for n, p in module.named_parameters()}
    return [{names[id(p)] for p in g["params"]} for g in groups]


def test_weight_matrices_are_decayed_and_the_rest_is_not():
    m = small_module()
    groups = weight_decay_groups(m, 0.05)
    assert [g["weight_decay"] for g in groups] == [0.05, 0.0]
    decay, no_decay = named_groups(m, groups)
    blocks = [f"backbone.blocks.{i}" for i in range(2)]
    assert decay == {"encoder.proj.weight", "head.key.weight", "head.mlp.2.weight", "head.mlp.5.weight",
                     *(f"{b}.{w}.weight" for b in blocks for w in ("attn.in_proj", "attn.out_proj", "mlp.0", "mlp.3"))}
    assert {"encoder.positional.table", "backbone.cls", "head.query", "backbone.blocks.0.attn.rel_bias",
            "backbone.blocks.0.norm1.weight", "backbone.norm.weight", "head.mlp.0.weight",
            "encoder.proj.bias", "backbone.blocks.1.attn.in_proj.bias"} <= no_decay
    assert all(n.endswith("bias") or "norm" in n or n.endswith(("table", "cls", "query", "mlp.0.weight"))
               for n in no_decay)
    assert decay | no_decay == {n for n, _ in m.named_parameters()}  # nothing dropped


def test_convolutions_and_lstms_are_decayed_embeddings_are_not():
    m = nn.ModuleDict({"emb": nn.Embedding(5, 4), "conv": nn.Conv1d(4, 4, 3, groups=4), "lstm": nn.LSTM(4, 4),
                       "bn": nn.BatchNorm1d(4)})
    decay, no_decay = named_groups(m, weight_decay_groups(m, 0.1))
    assert decay == {"conv.weight", "lstm.weight_ih_l0", "lstm.weight_hh_l0"}
    assert no_decay == {"emb.weight", "conv.bias", "lstm.bias_ih_l0", "lstm.bias_hh_l0", "bn.weight", "bn.bias"}


def test_frozen_parameters_are_left_out_and_configure_optimizers_uses_the_groups():
    m = small_module()
    for p in m.backbone.parameters():
        p.requires_grad_(False)
    m._trainer = SimpleNamespace(estimated_stepping_batches=100, callbacks=[])  # what configure_optimizers reads
    opt = m.configure_optimizers()["optimizer"]
    assert isinstance(opt, torch.optim.AdamW)
    decay, no_decay = named_groups(m, opt.param_groups)
    assert [g["weight_decay"] for g in opt.param_groups] == [0.05, 0.0]
    assert not any(n.startswith("backbone.") for n in decay | no_decay)
    assert decay == {"encoder.proj.weight", "head.key.weight", "head.mlp.2.weight", "head.mlp.5.weight"}

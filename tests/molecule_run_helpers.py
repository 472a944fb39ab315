"""A debug-sized molecule config that tests train with ``vecset fit`` (tests/pipelines/test_pretrained.py,
test_own_model.py)."""

# a debug-sized FreeSolv model with the 3-D design, 2 conformers per molecule (a random one per training
# draw, conformer 0 to validate and predict) and the solvation atom features (charges, surface); the
# encoder's geometry (distance_gaussian) follows the data's (a linked value)
GEOMETRY_CONFIG = """
seed_everything: 0
trainer: {{max_steps: 2, max_epochs: 1, accelerator: cpu, devices: 1, log_every_n_steps: 1,
          enable_progress_bar: false, enable_model_summary: false}}
model:
  class_path: vecset.pipelines.TaskModule
  init_args:
    encoder: {{class_path: vecset.encoders.GraphEncoder, init_args: {{attention: all_pairs, heads: 2}}}}
    backbone: {{class_path: vecset.backbone.Backbone, init_args: {{d_model: 16, depth: 1, heads: 2, mlp_ratio: 2.0}}}}
    head: {{class_path: vecset.heads.SequenceHead, init_args: {{task: regression, pooling: attention}}}}
    lr: 0.003
data:
  class_path: vecset.pipelines.MoleculeDataModule
  init_args: {{csv_path: {csv}, target_columns: [expt], batch_size: 8, cache_dir: {cache},
              features: {{descriptors: true, geometry: true, charges: true, surface: true, conformers: 2}}}}
"""

"""bench/bf16_profile.py: the op classes of the profile, and a job's own step from its config."""

import pytest

from bench.bf16_profile import job_step, op_class, profile_step


@pytest.mark.parametrize("name, cls", [
    ("aten::mm", "matmul"), ("aten::addmm", "matmul"), ("aten::bmm", "matmul"),
    ("aten::_scaled_dot_product_flash_attention_for_cpu", "attention"),
    ("aten::mkldnn_convolution", "convolution"), ("aten::convolution_backward", "convolution"),
    ("aten::conv2d", "convolution"), ("aten::_to_copy", "casts"), ("aten::copy_", "casts"),
    ("aten::_foreach_mul_", "optimizer"), ("aten::native_layer_norm", "elementwise"), ("aten::gelu", "elementwise"),
])
def test_op_classes(name, cls):
    assert op_class(name) == cls


def test_a_jobs_step_runs_its_config_model_on_its_batches_and_bf16_casts():
    """The debug config's step cycles over the batches asked for; under bf16 the profile holds
    matmuls and more cast calls than fp32's (the autocast path ran). Calls, not time shares: how
    long a cast takes beside a bf16 matmul depends on the CPU (on an AVX512-BF16 EPYC without AMX
    the bf16 share of casts came out below fp32's)."""
    shares = {}
    for bf16 in (False, True):
        step, n = job_step("configs/debug.yaml", bf16, 2)
        assert n == 2
        shares[bf16] = profile_step(step, 2)
        assert shares[bf16]["share_matmul"] > 0
    assert shares[True]["calls_casts"] > shares[False]["calls_casts"]


def test_a_text_jobs_step_gets_its_vocabulary_from_the_training_texts():
    """A text config's encoder learns its vocabulary in the fit's hand-over; the job step does it too."""
    step, n = job_step("configs/g2p_debug.yaml", False, 1)
    assert n == 1 and profile_step(step, 1)["share_matmul"] > 0

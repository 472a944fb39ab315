"""``trainer.precision: auto``: the choice with the hardware probes mocked, the explicit setting
winning, the printed line, results.json, and a tiny debug fit in bf16."""

import json
from pathlib import Path

import pytest
import torch

from vecset.pipelines.cli import run_cli
from vecset.pipelines.training import precision as P

DEBUG = str(Path(__file__).resolve().parents[3] / "configs" / "debug.yaml")

TINY = ["--trainer.enable_progress_bar=false", "--plots=false", "--trainer.max_epochs=1",
        "--data.init_args.n_train=128", "--data.init_args.n_val=64", "--data.init_args.n_test=64"]


@pytest.fixture(autouse=True)
def no_override(monkeypatch):
    monkeypatch.delenv(P.ENV, raising=False)  # tests/conftest.py pins auto to fp32 for the rest of the suite


def cpu(monkeypatch, units):
    monkeypatch.setattr(P, "cpu_bf16_units", lambda: units)


def test_cpu_with_bf16_units_gets_bf16_mixed(monkeypatch):
    cpu(monkeypatch, ["AMX", "AVX512-BF16"])
    choice = P.resolve_precision("auto", "cpu")
    assert choice.precision == "bf16-mixed" and "AMX, AVX512-BF16" in choice.reason


def test_cpu_without_bf16_units_gets_fp32(monkeypatch):
    cpu(monkeypatch, [])
    assert P.resolve_precision("auto", "cpu").precision == "32-true"
    assert P.resolve_precision(None, "cpu").precision == "32-true"


@pytest.mark.parametrize("supported, expected", [(True, "bf16-mixed"), (False, "32-true")])
@pytest.mark.parametrize("accelerator", ["gpu", "cuda", "auto"])
def test_cuda_follows_its_bf16_support(monkeypatch, accelerator, supported, expected):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "Mock GPU")
    monkeypatch.setattr(P, "cuda_bf16_supported", lambda: supported)
    cpu(monkeypatch, ["AMX"] if not supported else [])  # the CPU's units do not decide a GPU run
    choice = P.resolve_precision("auto", accelerator)
    assert choice.precision == expected and "GPU" in choice.reason


def test_auto_without_cuda_is_a_cpu_run(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    cpu(monkeypatch, ["AVX512-BF16"])
    assert P.resolve_precision("auto", "auto").precision == "bf16-mixed"


@pytest.mark.parametrize("given", ["32-true", "16-mixed", "bf16-true", 32])
def test_an_explicit_precision_wins(monkeypatch, given):
    cpu(monkeypatch, ["AMX"])
    monkeypatch.setenv(P.ENV, "bf16-mixed")
    choice = P.resolve_precision(given, "cpu")
    assert choice.precision == str(given) and choice.reason == "set in the config or on the command line"


def test_the_environment_replaces_auto(monkeypatch):
    cpu(monkeypatch, ["AMX"])
    monkeypatch.setenv(P.ENV, "32-true")
    assert P.resolve_precision("auto", "cpu") == P.PrecisionChoice("32-true", f"auto, from ${P.ENV}")


def test_torchs_cpu_probes_name_the_units(monkeypatch):
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: True)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)
    assert P.cpu_bf16_units() == ["AMX"]
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
    assert P.cpu_bf16_units() == []


def test_without_torchs_probes_the_cpuinfo_flags_decide(monkeypatch):
    monkeypatch.delattr(torch.cpu, "_is_amx_tile_supported")
    monkeypatch.setattr(P, "cpu_flags", lambda: {"avx2", "avx512_bf16"})
    assert P.cpu_bf16_units() == ["AVX512-BF16"]
    monkeypatch.setattr(P, "cpu_flags", lambda: {"avx2"})
    assert P.cpu_bf16_units() == []


def test_the_probes_agree_with_cpuinfo():
    """torch's probes and the kernel's flags say the same of this machine's CPU."""
    flags = P.cpu_flags()
    if not flags:
        pytest.skip("no /proc/cpuinfo")
    assert ("AMX" in P.cpu_bf16_units()) == ("amx_bf16" in flags and "amx_tile" in flags)
    assert ("AVX512-BF16" in P.cpu_bf16_units()) == ("avx512_bf16" in flags)


def test_a_narrow_model_gets_fp32_on_a_cpu_with_bf16_units(monkeypatch):
    cpu(monkeypatch, ["AMX"])
    narrow = P.resolve_precision("auto", "cpu", width=64)
    assert narrow == P.PrecisionChoice("32-true", "auto: d_model 64 < 128: at this width bf16 is no faster on "
                                                  "this CPU's bf16 units (AMX) and less accurate")
    wide = P.resolve_precision("auto", "cpu", width=128)
    assert wide == P.PrecisionChoice("bf16-mixed", "auto: this CPU has bf16 matrix units (AMX) and d_model 128 >= 128")
    assert P.resolve_precision("auto", "cpu", width=None).precision == "bf16-mixed"  # width unknown
    assert P.resolve_precision("bf16-mixed", "cpu", width=64).precision == "bf16-mixed"  # explicit wins
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "Mock GPU")
    monkeypatch.setattr(P, "cuda_bf16_supported", lambda: True)
    assert P.resolve_precision("auto", "gpu", width=64).precision == "bf16-mixed"  # the CPU measurement only


def test_the_cli_passes_the_backbone_width(monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    cpu(monkeypatch, ["AMX"])
    cli = run_cli(["--config", DEBUG, *TINY], run=False)  # d_model 32
    assert cli.trainer.precision == "32-true"
    assert "precision: 32-true (auto: d_model 32 < 128: at this width bf16 is no faster on this CPU's bf16 units " \
           "(AMX) and less accurate)" in capsys.readouterr().out.splitlines()


def test_what_lightning_runs_instead_is_recorded_and_said(monkeypatch, tmp_path, capsys):
    """16-mixed on a CPU: Lightning runs bf16-mixed; the line and results.json say so."""
    monkeypatch.chdir(tmp_path)
    cli = run_cli(["--config", DEBUG, *TINY, "--trainer.precision", "16-mixed"], run=False)
    assert cli.trainer.precision == "bf16-mixed"
    assert cli.precision_choice.as_dict() == {
        "precision": "bf16-mixed", "precision_asked": "16-mixed",
        "precision_reason": "16-mixed was asked: Lightning runs bf16-mixed instead on this device"}
    lines = capsys.readouterr().out.splitlines()
    assert "precision: bf16-mixed (16-mixed was asked: Lightning runs bf16-mixed instead on this device)" in lines
    # a short name Lightning spells out is no difference
    assert P.ran_as(P.PrecisionChoice("32", "r"), "32-true") == P.PrecisionChoice("32-true", "r")


def test_the_cli_defaults_to_auto_and_takes_an_explicit_value(monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    cpu(monkeypatch, ["AMX"])
    monkeypatch.setattr(P, "MIN_BF16_WIDTH", 32)  # the debug model's width (the rule: tested above)
    cli = run_cli(["--config", DEBUG, *TINY], run=False)
    assert cli.config.trainer.precision == "auto"
    assert cli.trainer.precision == "bf16-mixed"
    assert "precision: bf16-mixed (auto: this CPU has bf16 matrix units (AMX) and d_model 32 >= 32)" in \
        capsys.readouterr().out.splitlines()
    cli = run_cli(["--config", DEBUG, *TINY, "--trainer.precision", "32-true"], run=False)
    assert cli.trainer.precision == "32-true"
    assert "precision: 32-true (set in the config or on the command line)" in capsys.readouterr().out.splitlines()


def test_a_debug_fit_runs_in_bf16_and_records_it(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    cpu(monkeypatch, ["AVX512-BF16"])
    monkeypatch.setattr(P, "MIN_BF16_WIDTH", 32)  # the debug model's width
    dtypes = set()
    hook = torch.nn.modules.module.register_module_forward_hook(
        lambda m, args, out: dtypes.add(out.dtype) if isinstance(m, torch.nn.Linear) else None)
    try:
        run_cli(["fit", "--config", DEBUG, *TINY])
    finally:
        hook.remove()
    run_cli(["fit", "--config", DEBUG, *TINY, "--trainer.precision", "32-true"])  # the same seed in fp32
    bf16, fp32 = (json.loads((tmp_path / f"runs/debug/version_{v}/results.json").read_text()) for v in (0, 1))
    assert bf16["precision"] == "bf16-mixed" and fp32["precision"] == "32-true"
    assert bf16["precision_reason"] == "auto: this CPU has bf16 matrix units (AVX512-BF16) and d_model 32 >= 32"
    assert torch.bfloat16 in dtypes  # the layers ran under bf16 autocast
    # bf16 keeps 8 bits of mantissa: after 2 steps its test loss is the fp32 one within a few percent
    assert bf16["test"]["test_loss"] == pytest.approx(fp32["test"]["test_loss"], rel=0.05)
    ckpt = torch.load(bf16["checkpoint"], weights_only=False)
    assert all(v.dtype == torch.float32 for v in ckpt["state_dict"].values() if v.is_floating_point())  # fp32 weights

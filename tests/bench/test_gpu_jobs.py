"""bench/gpu_jobs.py --dry: digits through ``vecset fit`` with the CPU loader and with the data on
the device, its step alone and its loader alone, and the JSON rows the issue asks for."""

import json

from bench import gpu_jobs


def test_dry_run_writes_a_row_per_job_with_every_column(tmp_path):
    out = tmp_path / "jobs.json"
    assert gpu_jobs.main(["--dry", "--device", "cpu", "--out", str(out)]) == out
    d = json.loads(out.read_text())
    assert d["device"] == "cpu" and d["command"].startswith("python bench/gpu_jobs.py --dry")
    rows = {r["job"]: r for r in d["rows"]}
    assert set(rows) == {"digits", "digits_on_device"}
    assert rows["digits"]["loader"] == "DataLoader" and rows["digits_on_device"]["loader"] == "DeviceLoader"
    for r in rows.values():
        assert "error" not in r, r
        assert r["device"] == "cpu" and r["batch_size"] == 16
        for k in ("images_per_s", "model_alone_steps_per_s", "loader_batches_per_s", "peak_mem_mb"):
            assert r[k] > 0, (k, r)
        assert r["syncs_per_step"] >= 0

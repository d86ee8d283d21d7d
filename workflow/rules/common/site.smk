# SLURM site settings (README "Running on a SLURM cluster"), from the environment or config `slurm:`.
# Every rule that leaves the submitting host adds CPU_SITE (or record's RECORDING.site_resources) to
# its resources: the executor plugin reads only the `slurm_partition` and `slurm_account` resources,
# and without an account it guesses one from sacct. Empty on a laptop, so one workflow serves every site.


def _site(env_name, key):
    return os.environ.get(env_name) or (config.get("slurm") or {}).get(key)


SITE_PARTITION = _site("DYAFDB_SLURM_PARTITION", "partition")
SITE_GPU_PARTITION = _site("DYAFDB_SLURM_GPU_PARTITION", "gpu_partition") or SITE_PARTITION
SITE_ACCOUNT = _site("DYAFDB_SLURM_ACCOUNT", "account")
SITE_GPU_MODEL = _site("DYAFDB_SLURM_GPU_MODEL", "gpu_model")
CPU_SITE = {k: v for k, v in (("slurm_partition", SITE_PARTITION), ("slurm_account", SITE_ACCOUNT)) if v}

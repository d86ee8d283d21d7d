# Planning shortcuts: what Snakemake would compute per planned job although nothing changes or
# nothing shows it. Each keeps every job, resource and shell command as they were
# (tests/workflow/test_planning.py plans a small suite with and without them), and each relies on a
# detail of the pinned Snakemake (pyproject.toml) that the same tests check.


def fix_callable_signatures():
    """Remember the signature of every function the rules hand to Snakemake.

    Snakemake asks `inspect.signature` of each input, params and resource function (and of its own
    Resource.evaluate, twice per resource) for every job it plans, about 40 us a call: 15 calls a
    record job, 235,000 for the main suite. A signature never changes, so it is computed once here
    and stored where Snakemake looks first (the attribute `snakemake.common.overwrite_function_params`
    sets). Nothing else changes: the same functions get the same arguments.
    """
    import inspect

    from snakemake.common import FUNC_OVERWRITE_PARAMS_ATTR
    from snakemake.resources import Resource

    def fix(func):
        target = getattr(func, "__func__", func)  # a bound method reads its attributes from the function
        if callable(func) and not hasattr(target, FUNC_OVERWRITE_PARAMS_ATTR):
            try:
                setattr(target, FUNC_OVERWRITE_PARAMS_ATTR, inspect.signature(func).parameters)
            except (TypeError, ValueError, AttributeError):
                pass  # a builtin without a signature, or an object that takes no attributes

    fix(Resource(name="probe", value=lambda wildcards: 0).evaluate)
    for step in workflow.rules:
        for item in [*step.input, *step.params]:
            fix(getattr(getattr(item, "_file", None), "callable", None) or getattr(item, "callable", None) or item)
        for res in (step.resources or {}).values():
            fix(getattr(res, "_evaluator", None))
        # the record rule's engine node group; the `group` property reads None while rules load
        fix(getattr(step, "_group", None))


def skip_unshown_job_info():
    """Describe a job only where a log handler would show the description.

    Snakemake's `Job.log_info` (9.27.1) builds each job's description (its shell command three
    times, its message, files, reason and resources) and only then hands it to the log handlers,
    which drop all of it under `--quiet rules`: for the main suite that was 39% of the dry run's CPU
    time. Snakemake calls it for every job it schedules, and a dry run schedules them all. Here the
    handlers are asked first, through their own filters, with one record of each kind the method
    emits (JOB_INFO and SHELLCMD events); when none would pass either, the description is not built.
    A logger plugin, `--printshellcmds` without `--quiet rules`, `-n` alone: a handler passes the
    probe and Snakemake's method runs as before. So do checkpoint and handover jobs (it logs a plain
    line for them). Installed only over the method this was checked against (same parameters, not
    wrapped yet); tests/workflow/test_planning.py fails when the pinned Snakemake no longer takes it.
    """
    import functools
    import inspect
    import logging

    from snakemake.jobs import Job
    from snakemake.logging import logger
    from snakemake_interface_logger_plugins.common import LogEvent

    original = Job.log_info
    if hasattr(original, "__wrapped__") or list(inspect.signature(original).parameters) != ["self", "indent", "printshellcmd"]:
        return
    shown = []  # the handlers are set up before any job is scheduled: asked once, at the first job

    def would_show(event):
        record = logging.LogRecord(logger.name, logging.INFO, __file__, 0, "", None, None)
        record.event = event
        if not logger.isEnabledFor(logging.INFO) or not logger.filter(record):
            return False
        node = logger
        while node is not None:  # the handlers logging.Logger.callHandlers would reach
            if any(record.levelno >= h.level and h.filter(record) for h in node.handlers):
                return True
            node = node.parent if node.propagate else None
        return False

    @functools.wraps(original)
    def log_info(self, indent=False, printshellcmd=True):
        if not shown:
            shown.append(would_show(LogEvent.JOB_INFO) or would_show(LogEvent.SHELLCMD))
        if shown[0] or self.rule.is_checkpoint or self.rule.is_handover:
            return original(self, indent=indent, printshellcmd=printshellcmd)

    Job.log_info = log_info

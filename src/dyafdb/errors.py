"""The errors every stage raises; the CLI turns them into one-line messages and exit codes."""


class InputError(ValueError):
    """Bad user input (config, scenario, design row). The message names the file, the field and the fix."""

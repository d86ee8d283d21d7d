"""One module per `dyafdb <stage>` command.

Each module defines ``NAME`` (the sub-command), ``HELP`` (one line), ``add_arguments(parser)`` and
``run(args) -> int``. The CLI discovers them, so adding a stage never touches a shared file.
"""

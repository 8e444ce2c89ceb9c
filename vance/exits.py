"""Exit codes of `vance`, the same for every command."""

EXIT_OK = 0  # done
EXIT_REFUSED = 1  # the Brain refused (400, 404, 409, …) or the feature is not on this Brain yet
EXIT_USAGE = 2  # bad arguments (argparse's own code)
EXIT_AUTH = 3  # not logged in, or the token was refused (401/403)
EXIT_UNREACHABLE = 4  # the Brain cannot be reached

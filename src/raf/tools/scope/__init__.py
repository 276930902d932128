"""Confining file tools and commands to the workspace: the fd walk every path goes
through, path rules and the outside-the-root policy, each call's budget, and the base of
the scoped tools; the stores of `raf.context` keep their folders through it too."""

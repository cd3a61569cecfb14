#!/usr/bin/env python3
"""Show that the rules of goroutine ownership are tested: apply each
mutation below (one rule removed) in turn, run the tests that guard it,
and report whether they fail. Restores every file.

The loop is scripts/mutations.py (a stale mutation fails the script)."""
from mutations import run

# (name, file, original, mutated, test args)
MUTATIONS = [
    ("sighup-relay-stops", "cmd/patrold/main.go",
     "\t\tcase <-ctx.Done():\n\t\t\treturn\n\t\tcase <-hup:\n", "\t\tcase <-hup:\n",
     ["./cmd/patrold", "-run", "TestRelayReloadsStopsWithItsContext"]),
    ("sighup-relay-folds", "cmd/patrold/main.go",
     "\t\t\tcase reload <- struct{}{}:\n\t\t\tdefault:\n\t\t\t}\n", "\t\t\tcase reload <- struct{}{}:\n\t\t\t}\n",
     ["./cmd/patrold", "-run", "TestRelayReloadsStopsWithItsContext"]),
]

if __name__ == "__main__":
    run(MUTATIONS)

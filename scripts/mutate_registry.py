#!/usr/bin/env python3
"""Show that every pre-check of the agent registry is tested: remove each
entry of the `prechecks` table in agent/precheck.go in turn, run the tests
that exercise it (the agent runtime, the assistant and the adversarial suite
under assistant/testdata/attacks), and report whether they fail. Restores
the file."""
import re
import subprocess
import sys

PATH = "agent/precheck.go"
TESTS = [
    ["go", "test", "./agent", "-count=1", "-run",
     "TestPrecheck|TestRefusals|TestLookBeforeAsking|TestBudgets|TestLoopCounter|TestFailedWrite|TestBatchSecond|TestOnlyVerifying|TestArgumentsBounded|TestApproval"],
    ["go", "test", "./cmd/patrold", "-count=1", "-run", "TestAssistantAttacks"],
]
orig = open(PATH).read()
start = orig.index("var prechecks = []precheck{")
body = orig[start:orig.index("\n}\n", start) + 1]
entries = re.findall(r"(\t\{Check\w+, Code\w+, scope\w+, .*\},\n)", body)
if len(entries) < 10:
    sys.exit(f"only {len(entries)} pre-checks found in {PATH}")
survived = 0
try:
    for entry in entries:
        open(PATH, "w").write(orig.replace(entry, "", 1))
        name = entry.split(",")[0].strip("\t{")
        caught = False
        for cmd in TESTS:
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode:
                caught = True
                break
        survived += not caught
        print(f"{name:24} removed -> {'caught' if caught else 'SURVIVED'}")
finally:
    open(PATH, "w").write(orig)
sys.exit(1 if survived else 0)

#!/usr/bin/env python3
"""Show that every condition of the investigation gate is tested: remove each
`case ... return false, Refuse...` of findings.Gate.ShouldInvestigate in turn,
run TestGateConditions, and report whether it fails. Restores the file."""
import re
import subprocess
import sys

PATH = "findings/gate.go"
orig = open(PATH).read()
start = orig.index("func (g Gate) ShouldInvestigate")
body = orig[start:orig.index('return true, ""', start)]
blocks = re.findall(r"(\tcase [^\n]*\n\t\treturn false, \w+\n)", body)
survived = 0
try:
    for block in blocks:
        open(PATH, "w").write(orig.replace(block, "", 1))
        r = subprocess.run(["go", "test", "./findings", "-run", "TestGateConditions", "-count=1"],
                           capture_output=True, text=True)
        reason = block.strip().split("\n")[1].split()[-1]
        verdict = "caught" if r.returncode else "SURVIVED"
        survived += r.returncode == 0
        print(f"{reason:16} removed -> {verdict}")
finally:
    open(PATH, "w").write(orig)
sys.exit(1 if survived else 0)

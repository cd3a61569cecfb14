"""The loop mutate_net.py and mutate_cluster.py share: apply each mutation
(name, file, original text, mutated text, go test arguments) in turn, run
its tests, and report whether they fail. Every file is restored. A mutation
whose original text is no longer in its file is reported as STALE and
fails the run, so a list cannot rot silently."""
import subprocess
import sys


def run(mutations, extra=None):
    """extra, when given, maps a mutation name to text appended to the file
    (a stand-in the mutated code needs)."""
    extra = extra or {}
    survived = stale = 0
    for name, path, orig, mutated, test in mutations:
        src = open(path).read()
        if orig not in src:
            print(f"{name:28} STALE (original text not found in {path})")
            stale += 1
            continue
        try:
            open(path, "w").write(src.replace(orig, mutated, 1) + extra.get(name, ""))
            r = subprocess.run(["go", "test", "-count=1", "-timeout", "300s"] + test, capture_output=True, text=True)
        finally:
            open(path, "w").write(src)
            # A property test that failed under the mutation leaves its
            # counterexample behind; it belongs to the mutation, not the tree.
            subprocess.run(["git", "clean", "-fdq", "--", ":(glob)**/testdata/rapid/**"], capture_output=True)
        caught = r.returncode != 0 and "build failed" not in r.stdout + r.stderr
        survived += not caught
        print(f"{name:28} removed -> {'caught' if caught else 'SURVIVED'}")
    sys.exit(1 if survived or stale else 0)

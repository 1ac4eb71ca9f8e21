#!/usr/bin/env python3
"""check_docs.py on a made-up document with five broken snippets, written
down by hand, and two that work or are left out:
  - a transcript showing a call site the command no longer prints;
  - a transcript showing a finding of a rule the command does not report;
  - a sh block whose command exits 3;
  - a transcript showing an error the command does not give (it exits 0,
    and prints no such message: two problems);
  - a sh no-run block that would exit 3: not run;
  - a transcript whose output matches, but for the times: fine;
  - a Python block, fine, and one that goes on from it and fails.

usage: check_docs_test.py BUILD_DIR"""
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
DOC = """# A made-up document

```
$ echo "called at samples/a.cpp:12"
called at samples/a.cpp:13
```

```
$ echo " 1. [warning] transfer  3 uploads"
 1. [warning] idle-gap  the device idled
```

```sh
bash -c 'exit 3'
```

```
$ echo fine
loupe: x.db: not a loupe trace
```

```sh no-run
bash -c 'exit 3'
```

```
$ echo " 2. [info] steps  median 1.234 ms at samples/b.cpp:7"
 2. [info] steps  median 9.876 ms at samples/b.cpp:7
```

```python
answer = 42
```

```python continued
assert answer == 41, "not the answer"
```
"""

with tempfile.TemporaryDirectory() as tree:
    os.makedirs(os.path.join(tree, "docs"))
    os.symlink(os.path.join(here, "..", "..", ".venv"), os.path.join(tree, ".venv"))  # the checkout's Python
    with open(os.path.join(tree, "docs", "made_up.md"), "w") as doc:
        doc.write(DOC)
    result = subprocess.run([sys.executable, os.path.join(here, "check_docs.py"), tree, sys.argv[1], "docs/made_up.md"],
                            capture_output=True, text=True)
    expected = [
        "docs/made_up.md:3: `echo \"called at samples/a.cpp:12\"` shows call site samples/a.cpp:13,",
        "docs/made_up.md:8: `echo \" 1. [warning] transfer  3 uploads\"` shows a finding of rule idle-gap,",
        "docs/made_up.md:13: `bash -c 'exit 3'` exited 3:",
        "docs/made_up.md:17: `echo fine` exited 0, where the document shows an error (exit 2):",
        "docs/made_up.md:17: `echo fine` shows the message 'loupe: x.db: not a loupe trace',",
        "docs/made_up.md:35: the Python snippet exited 1:",
    ]
    reported = [line for line in result.stdout.splitlines() if line.startswith("docs/made_up.md:")]
    ok = result.returncode == 1 and len(reported) == len(expected) and all(
        r.startswith(e) for r, e in zip(reported, expected))
    if not ok:
        print(f"exit {result.returncode}, expected 1\n--- reported\n{result.stdout}--- expected\n" + "\n".join(expected))
        sys.exit(1)
print("check_docs reports exactly the problems of the five broken snippets of the made-up document")

#!/usr/bin/env python3
"""The snippets of README.md and docs/ that a user pastes, run as pasted.

usage: check_docs.py SOURCE_DIR BUILD_DIR [DOC.md ...]

Each document's snippets run in order, in a scratch folder of its own
where `build` is the build, and `tests`, `samples` and `.venv` are the
checkout's: what `build/bin/loupe ...` means from a fresh checkout after
`make`; `loupe` alone is build/bin/loupe, on the PATH. A snippet is
  - a ```sh block: each command runs;
  - a ``` block whose first line starts with "$ ": a transcript, each
    "$ " line a command and the lines after it what it printed;
  - a ```sql block of docs/trace-format.md: a query `loupe sql` runs on
    trace.db;
  - a ```python block: a script .venv/bin/python runs, which must exit 0;
    one marked `continued` (```python continued) goes on from the block
    before it, which runs again first.
Each scratch folder starts with trace.db and base.db, two runs of
train_mlp, as `make demo` and the README record them: the traces a
document means when it says trace.db, or base.db for an earlier run.
A block whose info string says `no-run` (```sh no-run) is left out: it
needs a GPU, a program the reader writes, or the network.

A command fails the check when it exits 2 or more (loupe's exit for bad
input, a shell's for a missing command), or dies of a signal; exit 1 is a
verdict (a budget exceeded, a regression) and is allowed. A transcript
whose output starts with "loupe: " shows an error: its command must then
exit 2, with that message. Commands that build or install (make,
scripts/setup*, pip, git) are not run: the test runs after them.

What a transcript shows is held to what the command prints, on the
figures that do not vary between runs: every call site (`file.cpp:123`),
the rule of every finding ("[warning] transfer"), the budget keys of
`loupe check`, the metric names of `loupe diff`, and an error message with
its numbers masked. Times and percentages vary with the machine, and are
not compared.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```(.*)$")
SKIPPED_COMMANDS = ("make", "scripts/setup", "scripts/setup-python", "pip", "git", "sudo", "apt-get", "cd")
CALL_SITE = re.compile(r"[\w./-]+\.(?:cpp|h|py|cu):\d+")
FINDING = re.compile(r"^\s*\d+\. \[(?:info|warning|error)\] (\S+)")
BUDGET = re.compile(r"^(?:pass|FAIL)\s+(\S+)")
DIFF_ROW = re.compile(r"^  (\w+)\s+\S")
NUMBER = re.compile(r"\d[\d,.]*")


def blocks(path):
    """(line number, info string, lines) of each fenced block."""
    out, current = [], None
    with open(path, encoding="utf-8") as doc:
        for number, line in enumerate(doc, 1):
            m = FENCE.match(line.rstrip("\n"))
            if m and current is None:
                current = (number, m.group(1).strip(), [])
            elif m and not m.group(1):
                out.append(current)
                current = None
            elif current is not None:
                current[2].append(line.rstrip("\n"))
    return out


def open_quote(text):
    """Whether a shell quote is still open at the end of `text`."""
    quote = None
    for i, c in enumerate(text):
        if quote is None and c in "'\"" and (i == 0 or text[i - 1] != "\\"):
            quote = c
        elif c == quote and (c == "'" or text[i - 1] != "\\"):
            quote = None
        elif quote is None and c == "#" and (i == 0 or text[i - 1].isspace()):
            break  # a comment: its quotes are prose
    return quote is not None


def commands_of(lines):
    """The commands of a sh block: lines joined at a trailing backslash or
    an open quote, a heredoc kept whole."""
    commands, pending, heredoc = [], "", None
    for line in lines:
        if heredoc is not None:
            pending += "\n" + line
            if line.strip() == heredoc:
                commands.append(pending)
                pending, heredoc = "", None
            continue
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending = pending + "\n" + line if pending else line
        m = re.search(r"<<'?(\w+)'?", line)
        if m:
            heredoc = m.group(1)
        elif line.endswith("\\") or open_quote(pending):
            continue
        else:
            commands.append(pending)
            pending = ""
    if pending:
        commands.append(pending)
    return commands


def transcript(lines):
    """(command, expected output lines) of each "$ " line; a command goes on
    over the lines after it while a quote is open or a line ends in a
    backslash."""
    out, continued = [], False
    for line in lines:
        if line.startswith("$ ") or continued:
            command = line[2:] if line.startswith("$ ") and not continued else line
            if continued:
                out[-1] = (out[-1][0] + "\n" + command, [])
            else:
                out.append((command, []))
            continued = command.endswith("\\") or open_quote(out[-1][0])
        elif out:
            out[-1][1].append(line)
    return out


def skipped(command):
    first = command.split()[0] if command.split() else ""
    return any(first == c or first.startswith(c + " ") for c in SKIPPED_COMMANDS)


def run(command, cwd, env):
    p = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout + p.stderr


def mask(text):
    return NUMBER.sub("N", text)


def expected_but_missing(expected, actual):
    """What the transcript shows that the command did not print."""
    missing = []
    actual_lines = actual.splitlines()
    findings = {m.group(1) for line in actual_lines if (m := FINDING.match(line))}
    budgets = {m.group(1) for line in actual_lines if (m := BUDGET.match(line))}
    rows = {m.group(1) for line in actual_lines if (m := DIFF_ROW.match(line))}
    for line in expected:
        for site in CALL_SITE.findall(line):
            if site not in actual:
                missing.append(f"call site {site}")
        if (m := FINDING.match(line)) and m.group(1) not in findings:
            missing.append(f"a finding of rule {m.group(1)}")
        if (m := BUDGET.match(line)) and m.group(1) not in budgets:
            missing.append(f"budget {m.group(1)}")
        if (m := DIFF_ROW.match(line)) and rows and m.group(1) not in rows:
            missing.append(f"diff row {m.group(1)}")
        if line.startswith("loupe: ") and mask(line) not in mask(actual):
            missing.append(f"the message '{line}'")
    return missing


def check_command(where, command, expected, cwd, env, problems):
    if skipped(command):
        return
    code, output = run(command, cwd, env)
    shows_error = any(line.startswith("loupe: ") for line in expected[:1])
    if shows_error and code != 2:
        problems.append(f"{where}: `{command}` exited {code}, where the document shows an error (exit 2):\n{output}")
    elif not shows_error and (code >= 2 or code < 0):
        problems.append(f"{where}: `{command}` exited {code}:\n{output[-2000:]}")
    for what in expected_but_missing(expected, output):
        problems.append(f"{where}: `{command}` shows {what}, which the command does not print:\n{output[-3000:]}")


def check_python(where, source, cwd, env, problems):
    script = os.path.join(cwd, "snippet.py")
    with open(script, "w", encoding="utf-8") as f:
        f.write(source + "\n")
    code, output = run(".venv/bin/python snippet.py", cwd, env)
    if code != 0:
        problems.append(f"{where}: the Python snippet exited {code}:\n{output[-3000:]}")


def record_demos(build, folder):
    """trace.db and base.db, recorded once for every document."""
    env = dict(os.environ, NO_COLOR="1")
    for trace in ("trace.db", "base.db"):
        run(f"{build}/bin/loupe record -q -o {trace} -- {build}/bin/train_mlp", folder, env)


def check_document(doc, source, build, demos, problems):
    name = os.path.relpath(doc, source)
    with tempfile.TemporaryDirectory(prefix="loupe-docs-") as scratch:
        os.symlink(build, os.path.join(scratch, "build"))
        for linked in ("tests", "samples", ".venv", "docs"):
            if os.path.exists(os.path.join(source, linked)):
                os.symlink(os.path.join(source, linked), os.path.join(scratch, linked))
        # `loupe` alone means build/bin/loupe, as for a reader who put it on
        # the PATH.
        path = os.path.join(build, "bin") + os.pathsep + os.environ.get("PATH", "")
        env = dict(os.environ, NO_COLOR="1", PATH=path)
        # The traces a document means by trace.db and base.db, fresh copies.
        for trace in ("trace.db", "base.db"):
            shutil.copy(os.path.join(demos, trace), scratch)
        demo = os.path.join(scratch, "trace.db")
        python = ""
        for line, info, lines in blocks(doc):
            words = info.split()
            if "no-run" in words:
                continue
            where = f"{name}:{line}"
            if words[:1] == ["sh"]:
                for command in commands_of(lines):
                    check_command(where, command, [], scratch, env, problems)
            elif not words and lines and lines[0].startswith("$ "):
                for command, expected in transcript(lines):
                    check_command(where, command, expected, scratch, env, problems)
            elif words[:1] == ["sql"] and name == os.path.join("docs", "trace-format.md"):
                query = "\n".join(lines)
                code, output = run(f"build/bin/loupe sql {demo} \"$LOUPE_QUERY\"", scratch,
                                   dict(env, LOUPE_QUERY=query))
                if code != 0:
                    problems.append(f"{where}: the query fails:\n{output}")
            elif words[:1] == ["python"]:
                python = (python + "\n" if "continued" in words else "") + "\n".join(lines)
                check_python(where, python, scratch, env, problems)


def main(argv):
    if len(argv) < 3:
        sys.exit("usage: check_docs.py SOURCE_DIR BUILD_DIR [DOC.md ...]")
    source, build = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    docs = argv[3:] or ["README.md"] + sorted(
        os.path.join("docs", f) for f in os.listdir(os.path.join(source, "docs")) if f.endswith(".md"))
    problems = []
    with tempfile.TemporaryDirectory(prefix="loupe-docs-demos-") as demos:
        record_demos(build, demos)
        for doc in docs:
            check_document(os.path.join(source, doc), source, build, demos, problems)
    for p in problems:
        print(p, end="\n\n")
    if problems:
        print(f"{len(problems)} snippet(s) of the docs do not work as pasted")
        return 1
    print(f"docs: every runnable snippet of {len(docs)} documents works as pasted")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

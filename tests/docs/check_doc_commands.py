#!/usr/bin/env python3
"""Checks that README.md and docs/*.md name only what exists, so that no documented command
goes stale without a failing test:

- every `fsq SUBCOMMAND` in a code span or code block is a subcommand of the fsq under test,
  and every --option written after it is one that `fsq SUBCOMMAND --help` lists;
- every scripts/, lib/, tests/, tools/, cmake/, docs/ or .ci/ path named exists in the source
  tree, and every bash script named passes `bash -n`;
- every benchmark binary named (bench_*, build/tests/bench/...) has its source in tests/bench/;
- every FSQ_* variable named is read somewhere in the source tree;
- every relative link [..](path#anchor) points at a file that exists and a heading it has.

  check_doc_commands.py FSQ_BIN SOURCE_DIR
"""
import pathlib
import re
import subprocess
import sys

fsq, root = sys.argv[1], pathlib.Path(sys.argv[2]).resolve()
pages = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
errors = []


def help_text(*args):
    r = subprocess.run([fsq, *args, "--help"], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    return r.stdout


def options_of(text):
    """Option names CLI11 lists at the start of a help line ("  -h,--help", "  --out TEXT")."""
    names = set()
    for line in text.splitlines():
        m = re.match(r"\s+((?:-\w,)?--[\w-]+(?:,--?[\w-]+)*)", line)
        if m:
            names.update(re.findall(r"--[\w-]+", m.group(1)))
    return names


top = help_text()
if top is None:
    sys.exit(f"check-doc-commands: {fsq} --help failed")
section = top.split("Subcommands:", 1)[1] if "Subcommands:" in top else ""
subcommands = set(re.findall(r"^  ([a-z][\w-]*)\s", section, re.M))
if not subcommands:
    sys.exit(f"check-doc-commands: no subcommands in {fsq} --help")
sub_options = {s: options_of(help_text(s) or "") for s in subcommands}
top_options = options_of(top)


def code_pieces(text):
    """Shell code blocks (```sh, bash or shell; continuation lines joined, comments dropped) as
    lines, then the inline code spans of the prose. Other blocks (output, layouts) are not commands."""
    pieces = []
    parts = re.split(r"^```(.*)$", text, flags=re.M)
    # parts: prose, info string, code, "" (closing fence's), prose, ...
    prose = [parts[0]]
    for k in range(1, len(parts) - 1, 4):
        info, code = parts[k].strip(), parts[k + 1]
        if info in ("sh", "bash", "shell"):
            for line in re.sub(r"\\\n", " ", code).splitlines():
                pieces.append(re.sub(r"(^|\s)#.*$", "", line))
        if k + 3 < len(parts):
            prose.append(parts[k + 3])
    for part in prose:
        pieces.extend(m.replace("\\|", "|") for m in re.findall(r"`([^`\n]+)`", part))
    return pieces


# An fsq invocation: fsq, "$FSQ", $FSQ or a path ending in /fsq, then a word.
INVOKE = re.compile(r'(?:(?<![\w./-])fsq|"\$FSQ"|\$FSQ|[\w./-]+/fsq)\s+(--?[\w-]+|[a-z][\w|-]*)')

checked = 0
for page in pages:
    rel = page.relative_to(root)
    text = page.read_text(encoding="utf-8")

    for piece in code_pieces(text):
        found = list(INVOKE.finditer(piece))
        for k, m in enumerate(found):
            end = found[k + 1].start() if k + 1 < len(found) else len(piece)
            segment = piece[m.end():end]
            word = m.group(1)
            if word.startswith("-"):
                if word not in top_options:
                    errors.append(f"{rel}: `fsq {word}`: fsq has no such top-level option")
                continue
            subs = word.split("|")
            for sub in subs:
                if sub not in subcommands:
                    errors.append(f"{rel}: `fsq {sub}` is not a subcommand of fsq ({piece.strip()[:80]})")
                    continue
                checked += 1
                for opt in re.findall(r"(?<![\w-])--[a-z0-9][\w-]*", segment):
                    if opt not in sub_options[sub]:
                        errors.append(f"{rel}: `fsq {sub} ... {opt}`: `fsq {sub} --help` lists no {opt}")

    # Paths into the source tree.
    for m in re.finditer(r"(?<![\w./-])((?:\.\./)*(?:scripts|lib|tests|tools|cmake|docs|\.ci)/[\w./-]*[\w/])", text):
        path = m.group(1)
        if path.startswith("../"):
            target = (page.parent / path).resolve()
            if not str(target).startswith(str(root)):
                continue  # ../shared and other folders beside the checkout
        else:
            target = root / path
        if not target.exists():
            errors.append(f"{rel}: names {path}, which does not exist")
        elif target.suffix == ".sh":
            r = subprocess.run(["bash", "-n", str(target)], capture_output=True, text=True)
            if r.returncode != 0:
                errors.append(f"{rel}: {path} fails bash -n: {r.stderr.strip()}")

    # Benchmark binaries: their sources.
    for name in set(re.findall(r"(?<![\w/])(bench_[a-z0-9_]+)(?![\w.])", text)):
        if not any((root / "tests" / "bench" / (name + ext)).exists() for ext in (".cpp", ".cu")):
            errors.append(f"{rel}: names the benchmark {name}, which has no source in tests/bench/")

    # FSQ_* variables (environment and CMake) are read somewhere.
    for var in sorted(set(re.findall(r"\bFSQ_[A-Z0-9_]*[A-Z0-9]\b", text))):
        r = subprocess.run(["grep", "-rqF", "--include=*.sh", "--include=*.py", "--include=*.cpp", "--include=*.h",
                            "--include=*.cmake", "--include=CMakeLists.txt", "--include=*.cu", "--include=*.cuh",
                            var, "scripts", "lib", "tools", "tests", "cmake", "CMakeLists.txt"],
                           cwd=root)
        if r.returncode != 0:
            errors.append(f"{rel}: names {var}, which no script or source reads")

    # Relative links and their anchors.
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            errors.append(f"{rel}: links to {target}, which does not exist")
            continue
        if anchor and file.suffix == ".md":
            slugs = set()
            for h in re.findall(r"^#+\s+(.*)$", file.read_text(encoding="utf-8"), re.M):
                slugs.add(re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-"))
            if anchor not in slugs:
                errors.append(f"{rel}: links to {target}, but {file.name} has no heading with that anchor")

if checked == 0:
    errors.append("no `fsq SUBCOMMAND` found in README.md or docs/: the check is reading the wrong files")
for e in dict.fromkeys(errors):
    print("check-doc-commands:", e, file=sys.stderr)
if errors:
    sys.exit(1)
print(f"check-doc-commands: {len(pages)} pages, {checked} fsq invocations, every subcommand, option, path, "
      "benchmark, variable and link exists")
